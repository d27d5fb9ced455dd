//! Command-line definition.

use std::path::PathBuf;

use clap::Subcommand;
use slayer_common::records::{Standing, Tier};

const ABOUT: &str = "Save, forget, list, import and review agent memories: notes about the warehouse tagged with canonical entities, kept searchable.";

const EXAMPLES: &str = "Examples:
  $ slayer-index import-slayer examples/shop/slayer | slayer-memory import
  $ slayer-memory save --learning 'Amounts are dollars' --entities 'shop.orders.order_total'
  $ slayer-memory save --id kb.refunds --learning 'Exclude returns' --entities 'orders.status'
  $ slayer-memory list --entity shop.orders
  $ slayer-memory show kb.refunds
  $ slayer-memory save --tier semantic --confidence 0.9 --learning 'FY starts Feb' --entities shop
  $ slayer-memory forget kb.refunds
  $ slayer-memory review
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
  $ slayer-memory save --tier procedural --agent etl --learning 'Reload nightly' --entities shop
  $ slayer-memory save --propose --learning 'Refunds post late' --entities shop.orders
  $ slayer-memory save --learning 'Card fees moved to Stripe' --entities shop --event-time 2024-05 --session call-12

References resolve strictly to canonical ids (<ds>, <ds>.<model>, <ds>.<model>.<leaf>,
memory:<id>): aggregation suffixes are stripped (revenue:sum, sum(amount)), bare names are looked
up through models then columns, dotted paths follow joins. Any failure saves nothing (exit 1).
An existing --id is replaced, keeping its created_at. A new memory of a tier other than lesson
gets the tier's id prefix: obs_7, sem_12, proc_3, crys_1, ins_4, fac_9. A proposed memory
(--propose, or --agent while the store requires review) waits for `slayer-memory approve`; no
search returns it before.")]
    Save(SaveArgs),
    /// Delete a memory and strip `memory:<id>` from every other memory.
    #[command(after_help = "Examples:
  $ slayer-memory forget 2
  $ slayer-memory forget --soft 1

--soft keeps the memory (export still writes it, marked \"deleted\": true) but no search returns
or counts it; saving or importing it again without the flag restores it.")]
    Forget {
        /// Memory id.
        id: String,
        /// Mark it deleted instead of removing it.
        #[arg(long)]
        soft: bool,
    },
    /// List memories, optionally only those tagged with an entity or under it.
    #[command(after_help = "Examples:
  $ slayer-memory list
  $ slayer-memory list --entity shop.orders --format jsonl")]
    List {
        /// An entity reference; memories tagged with it or anything under it.
        #[arg(long)]
        entity: Option<String>,
        /// Only memories of these tiers (comma-separated).
        #[arg(long, value_delimiter = ',', value_parser = parse_tier)]
        tiers: Vec<Tier>,
        /// Soft-deleted memories too.
        #[arg(long)]
        deleted: bool,
    },
    /// Print memories by id, of any tiers, in the order asked.
    #[command(after_help = "Examples:
  $ slayer-memory show 1
  $ slayer-memory show 1 2 --format jsonl")]
    Show {
        /// Memory ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// List the proposed memories awaiting review (oldest first), or turn review of agents'
    /// memories on or off.
    #[command(after_help = "Examples:
  $ slayer-memory review --require on
  $ slayer-memory save --agent etl --learning 'Ships in 2 days' --entities shop.orders
  $ slayer-memory review
  $ slayer-memory review --agent etl --format jsonl
  $ slayer-memory review --require off

With review on, a memory saved by an agent (save --agent, the MCP server's save_memory) is
proposed: kept, listed and exported, but no search returns it until `slayer-memory approve`
(or `reject`) decides. `save --propose` and `slayer-search mcp --review` propose whatever the
setting. The default is off. --project and --agent list only that owner's proposals.")]
    Review {
        /// on: agents' saves are proposed until approved; off: saved as asked (the default).
        #[arg(long, value_enum, conflicts_with_all = ["project", "agent"])]
        require: Option<OnOff>,
        /// Only proposals of this project.
        #[arg(long)]
        project: Option<String>,
        /// Only proposals of this agent.
        #[arg(long)]
        agent: Option<String>,
    },
    /// Approve proposed memories: they become ordinary memories, searched at once.
    #[command(after_help = "Examples:
  $ slayer-memory save --propose --id kb.ship --learning 'Ships in 2 days' --entities shop
  $ slayer-memory approve kb.ship

All ids or none: an id that names no memory, or a memory that is not proposed, is an error
naming it (exit 1) and nothing is approved.")]
    Approve {
        /// Memory ids.
        #[arg(required = true)]
        ids: Vec<String>,
    },
    /// Reject proposed memories: each is deleted as `forget` deletes a memory.
    #[command(after_help = "Examples:
  $ slayer-memory save --propose --id kb.guess --learning 'Refunds are rare' --entities shop
  $ slayer-memory reject kb.guess

All ids or none: an id that names no memory, or a memory that is not proposed, is an error
naming it (exit 1) and nothing is deleted.")]
    Reject {
        /// Memory ids.
        #[arg(required = true)]
        ids: Vec<String>,
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
        /// Also forget the memories whose id starts with PREFIX and that the input lacks, in
        /// the same transaction.
        #[arg(long, value_name = "PREFIX")]
        sync: Option<String>,
        /// Print the plan (one record per memory added, changed or forgotten; a summary on
        /// stderr) and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Let --sync forget more than half of the prefix's memories.
        #[arg(long, requires = "sync")]
        allow_shrink: bool,
    },
    /// Ingest a Markdown knowledge base: each .md file one memory (or one per ## section).
    #[command(after_help = "Examples:
  $ slayer-memory ingest examples/kb --dry-run
  $ slayer-memory ingest examples/kb

Each file is the memory `kb.<path without .md, folders joined by .>` (or its front matter's
`id:`); its learning is the Markdown text. YAML front matter may give entities (resolved
strictly: an unknown one is a warning naming file and line), tier, confidence, project, agent
and description. [[datasource.model.column]] links and backticked canonical names in the text
that resolve become tags too. A file whose content did not change is neither written nor
re-embedded; by default the kb. memories whose file is gone are forgotten (--no-sync keeps
them). A sync that would forget more than half of them is refused (exit 2) unless
--allow-shrink. Summary: `3 added, 1 changed, 2 removed, 40 unchanged`.")]
    Ingest {
        /// Folders (or single .md files) of the knowledge base; ids are relative to each.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// One memory per file, or per `##` section.
        #[arg(long, value_enum, default_value = "files")]
        split: slayer_memory::kb::Split,
        /// Keep the kb. memories whose file is gone.
        #[arg(long)]
        no_sync: bool,
        /// Print the plan and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Let the sync forget more than half of the kb. memories.
        #[arg(long)]
        allow_shrink: bool,
        /// Do not embed them (env SLAYER_NO_EMBED).
        #[arg(long, env = "SLAYER_NO_EMBED", value_parser = clap::builder::BoolishValueParser::new())]
        no_embed: bool,
    },
}

/// A switch's two positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    /// Turned on.
    On,
    /// Turned off.
    Off,
}

/// `save`'s flags.
#[derive(Debug, Clone, clap::Args)]
pub struct SaveArgs {
    /// The note.
    #[arg(long)]
    pub learning: String,
    /// Comma-separated entity references.
    #[arg(long)]
    pub entities: Option<String>,
    /// A SlayerQuery as JSON, or @FILE.
    #[arg(long)]
    pub query: Option<String>,
    /// Memory id (default: the next integer).
    #[arg(long)]
    pub id: Option<String>,
    /// One-line summary (at most 500 characters).
    #[arg(long)]
    pub description: Option<String>,
    #[command(flatten)]
    pub standing: StandingArgs,
    /// When what it records happened: a year, month, day or timestamp (2023, 2023-05,
    /// 2023-05-08, 2023-05-08T13:56:00Z), apart from when it is saved; questions with a time
    /// ("in May 2023", "last year", "when …") rank by it.
    #[arg(long, value_name = "TIME")]
    pub event_time: Option<String>,
    /// The session (conversation) it comes from; search can return a hit's neighbours in it.
    #[arg(long)]
    pub session: Option<String>,
    /// Do not embed it under the active embedding model (env SLAYER_NO_EMBED).
    #[arg(long, env = "SLAYER_NO_EMBED", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_embed: bool,
}

/// A memory's tier, trust and owners, as `save` takes them.
#[derive(Debug, Clone, clap::Args)]
pub struct StandingArgs {
    /// observation, lesson (default), semantic, procedural, crystal, insight or facet.
    #[arg(long, value_parser = parse_tier, default_value = "lesson")]
    pub tier: Tier,
    /// How far it is trusted, 0 to 1 (search skips it below the confidence floor, 0.3).
    #[arg(long, default_value_t = 1.0)]
    pub confidence: f64,
    /// How fresh it is, 0 to 1 (its writer decays it; search weighs by it).
    #[arg(long, default_value_t = 1.0)]
    pub strength: f64,
    /// The project it belongs to (default: every project's).
    #[arg(long)]
    pub project: Option<String>,
    /// The agent it belongs to (default: every agent's of its project). While the store
    /// requires review (`slayer-memory review --require on`), a memory saved with an agent
    /// is proposed.
    #[arg(long)]
    pub agent: Option<String>,
    /// Save it as proposed: kept and listed, never searched until `slayer-memory approve`.
    #[arg(long)]
    pub propose: bool,
}

impl StandingArgs {
    /// The standing these flags describe.
    pub fn standing(self) -> Standing {
        Standing {
            tier: self.tier,
            confidence: self.confidence,
            strength: self.strength,
            project: self.project,
            agent: self.agent,
            deleted: false,
            proposed: self.propose,
        }
    }
}

fn parse_tier(name: &str) -> Result<Tier, slayer_common::records::UnknownTier> {
    Tier::parse(name)
}
