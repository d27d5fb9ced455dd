//! Command-line definition.

use std::path::PathBuf;

use clap::Subcommand;

const ABOUT: &str = "Save, forget, list and import agent memories: notes about the warehouse tagged with canonical entities, kept searchable.";

const EXAMPLES: &str = "Examples:
  $ slayer-index import-slayer examples/shop/slayer | slayer-memory import
  $ slayer-memory save --learning 'Amounts are dollars' --entities 'shop.orders.order_total'
  $ slayer-memory save --id kb.refunds --learning 'Exclude returns' --entities 'orders.status'
  $ slayer-memory list --entity shop.orders
  $ slayer-memory show kb.refunds
  $ slayer-memory forget kb.refunds
  $ slayer-memory export | wc -l

Default --format: text (the original's wording), jsonl for export and import.";

/// The command line: the shared flags and one of [`Command`].
pub type Cli = slayer_common::cli::Cli<Command>;

/// What `--help` and `--version` say.
pub const ABOUT_CLI: slayer_common::cli::About =
    slayer_common::about!("slayer-memory", ABOUT, EXAMPLES);

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Save a memory tagged with the entities it is about (or with an example query).
    #[command(after_help = "Examples:
  $ slayer-memory save --learning 'Net revenue excludes returns' --entities 'status, revenue:sum'
  $ slayer-memory save --learning 'Paid revenue' --query @tests/fixtures/paid-revenue.json

References resolve strictly to canonical ids (<ds>, <ds>.<model>, <ds>.<model>.<leaf>,
memory:<id>): aggregation suffixes are stripped (revenue:sum, sum(amount)), bare names are looked
up through models then columns, dotted paths follow joins. Any failure saves nothing (exit 1).
An existing --id is replaced, keeping its created_at.")]
    Save {
        /// The note.
        #[arg(long)]
        learning: String,
        /// Comma-separated entity references.
        #[arg(long)]
        entities: Option<String>,
        /// A SlayerQuery as JSON, or @FILE.
        #[arg(long)]
        query: Option<String>,
        /// Memory id (default: the next integer).
        #[arg(long)]
        id: Option<String>,
        /// One-line summary (at most 500 characters).
        #[arg(long)]
        description: Option<String>,
        /// Do not embed it under the active embedding model (env SLAYER_NO_EMBED).
        #[arg(long, env = "SLAYER_NO_EMBED", value_parser = clap::builder::BoolishValueParser::new())]
        no_embed: bool,
    },
    /// Delete a memory and strip `memory:<id>` from every other memory.
    #[command(after_help = "Examples:
  $ slayer-memory forget 2")]
    Forget {
        /// Memory id.
        id: String,
    },
    /// List memories, optionally only those tagged with an entity or under it.
    #[command(after_help = "Examples:
  $ slayer-memory list
  $ slayer-memory list --entity shop.orders --format jsonl")]
    List {
        /// An entity reference; memories tagged with it or anything under it.
        #[arg(long)]
        entity: Option<String>,
    },
    /// Print one memory.
    #[command(after_help = "Examples:
  $ slayer-memory show 1")]
    Show {
        /// Memory id.
        id: String,
    },
    /// Print every memory as a JSON-lines record (the input of `import`).
    #[command(after_help = "Examples:
  $ slayer-memory export > /dev/null")]
    Export,
    /// Import memory records (JSON lines) in one transaction; one result record per line.
    #[command(after_help = "Examples:
  $ slayer-index import-slayer examples/shop/slayer | slayer-memory import
  $ slayer-memory export | slayer-memory import --format text

Tags are checked for shape, not resolved, so an export imports into a fresh store; a tag that
names nothing in the catalog gets a warning (search ignores it until it exists). An existing id
is replaced, keeping its created_at. A bad line aborts the whole import (exit 2, nothing
written); with --keep-going it becomes an `error` record and the exit status is 1.")]
    Import {
        /// JSON-lines file, or - for stdin.
        #[arg(default_value = "-")]
        file: PathBuf,
        /// Report bad lines as error records and import the rest.
        #[arg(long)]
        keep_going: bool,
        /// Do not embed them under the active embedding model (env SLAYER_NO_EMBED).
        #[arg(long, env = "SLAYER_NO_EMBED", value_parser = clap::builder::BoolishValueParser::new())]
        no_embed: bool,
    },
}
