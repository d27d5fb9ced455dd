//! Command-line definition.

use std::path::PathBuf;

use clap::Parser;
use slayer_common::cli::CommonArgs;
use slayer_common::records::Tier;
use slayer_search::request::Channel;

fn parse_tier(name: &str) -> Result<Tier, slayer_common::records::UnknownTier> {
    Tier::parse(name)
}

const ABOUT: &str = "Search memories and semantic-layer entities: entity-overlap BM25, the full-text index and dense similarity, fused (memories by score, entities by reciprocal rank with model-level evidence) into memories, example_queries and entities.";

const EXAMPLES: &str = "Examples:
  $ slayer-search --question \"what's the revenue of returned orders?\" --format text
  $ slayer-search --entity shop.orders.status --entity 'revenue:sum'
  $ slayer-search --entity orders.status --question 'net revenue' --datasource shop --explain
  $ slayer-search --query @tests/fixtures/paid-revenue.json --max-entities 0
  $ slayer-search --format text
  $ slayer-search --question 'gift card payments' --channels text,dense --explain
  $ slayer-search --question 'revenue by customer country' --schema --format text
  $ slayer-search --question 'refunds by region' --tuning '{\"model_evidence\": {\"models\": 0}}'
  $ slayer-search --plan auto --question 'customer emails, not test' --explain
  $ slayer-search --plan auto --question refunds --inject '{\"synonyms\": [\"returned\"]}'
  $ slayer-search --question 'fiscal year' --project shop --agent etl --tiers semantic,lesson
  $ slayer-search --question 'what changed in refunds last month?' --as-of 2024-06-10
  $ slayer-search --question refunds --confidence-floor 0.5 --expand-ids 1,2
  $ echo '{\"question\": \"gift card\"}' | slayer-search --batch -
  $ slayer-search mcp < /dev/null

With no input at all, the newest memories come back by recency (with a warning). Unresolvable
inputs are warnings and the search goes on; an unknown --datasource is an error (exit 2).
Default --format: json.";

#[derive(Debug, Parser)]
#[command(
    name = "slayer-search",
    version = slayer_common::cli::version(),
    about = ABOUT,
    after_help = EXAMPLES,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(flatten)]
    pub common: CommonArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
    /// An entity reference (repeatable): canonical ids, bare names, `revenue:sum`, `memory:<id>`.
    #[arg(long)]
    pub entity: Vec<String>,
    /// A SlayerQuery as JSON, or @FILE; its entities join the inputs.
    #[arg(long)]
    pub query: Option<String>,
    /// A natural-language question (any punctuation is fine).
    #[arg(long)]
    pub question: Option<String>,
    /// Only this datasource (its statistics too).
    #[arg(long)]
    pub datasource: Option<String>,
    /// Cap of the memories bucket (default 5).
    #[arg(long)]
    pub max_memories: Option<usize>,
    /// Cap of the example_queries bucket (default 2).
    #[arg(long)]
    pub max_example_queries: Option<usize>,
    /// Cap of the entities bucket (default 5).
    #[arg(long)]
    pub max_entities: Option<usize>,
    /// Add each channel's rank, raw score and contribution to every hit.
    #[arg(long)]
    pub explain: bool,
    /// The channels that run, comma-separated: entities, text, dense (default: all). For
    /// ablations and debugging.
    #[arg(long, value_enum, value_delimiter = ',')]
    pub channels: Option<Vec<Channel>>,
    /// Override parts of the ranking, as JSON (docs/spec/fusion.md §8.6): `memory_fusion`,
    /// `entity_fusion` (rrf|score), `memory_weights`, `entity_weights` ({entities, text, dense}),
    /// `name_weight`, `model_evidence` ({models, leaves, window, model_weight, leaf_weight, key_weight, question_weight}), `routing` ({entities, ratio}), `answer_head` (the first places arranged for the question's intent; 0: off).
    /// For ablations; the defaults are the measured ones.
    #[arg(long, value_name = "JSON")]
    pub tuning: Option<String>,
    /// Plan the question (docs/spec/planner.md §15): `auto` expands it (--inject terms, an LLM
    /// named by SLAYER_LLM_MODEL, or pseudo-relevance feedback), gates the terms against the index,
    /// retrieves in two budgeted passes, applies negatives, reranks and blends; `--explain`
    /// shows every step. A question that is an entity's name is looked up exactly.
    /// Default: off.
    #[arg(long, value_enum)]
    pub plan: Option<slayer_search::plan::PlanMode>,
    /// Your own expansion terms, as JSON or @FILE: {"anchors": [..], "phrases": [..],
    /// "synonyms": [..], "negatives": {"hard": [..], "soft": [..]}, "exceptions":
    /// [{"negative": "test", "allow": ["ab test"]}]}. Used with --plan auto.
    #[arg(long, value_name = "JSON|@FILE")]
    pub inject: Option<String>,
    /// The planner's configuration (a `[semantic_search]` TOML table); default: slayer.toml
    /// beside the store, if there is one.
    #[arg(long, value_name = "FILE")]
    pub plan_config: Option<PathBuf>,
    /// The planner's reranker for this run: local (the embedding model), http (the
    /// configured endpoint) or none (default: the configuration's, `local`).
    #[arg(long, value_enum)]
    pub rerank: Option<slayer_search::plan::config::RerankProvider>,
    /// Only memories of these tiers, comma-separated: observation, lesson, semantic,
    /// procedural, crystal, insight, facet (default: all; SLAYER_HIGH_ORDER_SEARCH=false:
    /// lesson only).
    #[arg(long, value_delimiter = ',', value_parser = parse_tier)]
    pub tiers: Vec<Tier>,
    /// The day a question's relative times ("last year", "yesterday") are read against,
    /// YYYY-MM-DD (default: today, UTC).
    #[arg(long, value_name = "DAY")]
    pub as_of: Option<String>,
    /// Skip memories whose confidence is below this (default 0.3; env SLAYER_CONFIDENCE_FLOOR).
    #[arg(long, value_name = "X", allow_negative_numbers = true)]
    pub confidence_floor: Option<f64>,
    /// Only this project's memories and those of every project: no other project's memory is
    /// returned, counted or scores anything.
    #[arg(long)]
    pub project: Option<String>,
    /// Only this agent's memories and those of every agent (of the project).
    #[arg(long)]
    pub agent: Option<String>,
    /// Also answer with the schema an agent writes SQL from (the response's `schema`): the top
    /// models, each with its most relevant columns, the columns the question or a returned
    /// memory names, and the join pairs between the models.
    #[arg(long)]
    pub schema: bool,
    /// The schema answer's most models (default 12).
    #[arg(long, value_name = "N", requires = "schema")]
    pub schema_models: Option<usize>,
    /// The schema answer's most columns in all (default 38; named columns and join keys are
    /// there even past it).
    #[arg(long, value_name = "N", requires = "schema")]
    pub schema_columns: Option<usize>,
    /// Also return these memories whole, of any tiers (comma-separated ids), in `expanded`.
    #[arg(long, value_delimiter = ',', value_name = "ID,...")]
    pub expand_ids: Vec<String>,
    /// Read one JSON request per line (the flags' fields) and write one response per line.
    #[arg(long, value_name = "FILE|-", conflicts_with_all = ["entity", "query", "question", "datasource", "inject", "expand_ids"])]
    pub batch: Option<PathBuf>,
}

/// What else `slayer-search` can be.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Serve the Model Context Protocol on stdin/stdout, or over HTTP with --http (tools:
    /// search, save_memory, forget_memory, show, list_datasources). Every call sees the store as
    /// it is then, writes by other processes included. Register it with an MCP client as the
    /// command `slayer-search` with the arguments `mcp --store /path/to/slayer.db`.
    #[command(after_help = MCP_EXAMPLES)]
    Mcp(McpArgs),
}

const MCP_EXAMPLES: &str = "Examples:
  $ slayer-search mcp < /dev/null
  $ slayer-search mcp --project shop --agent etl < /dev/null
  $ slayer-search mcp --project shop --read-only < /dev/null
  $ slayer-search mcp --project shop --agent etl --review < /dev/null
  $ timeout --preserve-status 1 slayer-search mcp --http 127.0.0.1:0 --read-only

(The --http example serves for a second, with the token in SLAYER_MCP_TOKEN.) The scope (--project, --agent) is the session's: a call may narrow it (an agent within a
project-only session), never widen it; search sees only the scope's memories and those shared
by every project (agent), save_memory writes into the scope, and forget_memory (or a save that
replaces an id) changes only the scope's own memories. --http serves the streamable HTTP
transport at http://ADDR/mcp until SIGTERM or SIGINT; every request needs
`Authorization: Bearer <token>`, the token read from --token-file or SLAYER_MCP_TOKEN (at least
16 characters). It listens on loopback only unless --allow-remote is given.";

/// `slayer-search mcp`'s flags.
#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// Lock the session to this project: memories are searched, saved and forgotten within it.
    #[arg(long)]
    pub project: Option<String>,
    /// Lock the session to this agent (of the project, if one is given).
    #[arg(long)]
    pub agent: Option<String>,
    /// Offer no tool that writes (save_memory and forget_memory are then unknown tools).
    #[arg(long)]
    pub read_only: bool,
    /// Serve MCP's streamable HTTP transport on this address (e.g. 127.0.0.1:8931; port 0
    /// picks a free one) instead of stdin/stdout. The address it listens on goes to stderr.
    #[arg(long, value_name = "IP:PORT")]
    pub http: Option<std::net::SocketAddr>,
    /// The bearer token, read from this file (trimmed); default: SLAYER_MCP_TOKEN.
    #[arg(long, value_name = "PATH", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// Allow --http on an address other than loopback (the token is then all that guards it;
    /// put TLS in front).
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
    /// --http: close a session after this many seconds without a request (clients rarely
    /// send DELETE).
    #[arg(long, value_name = "SECONDS", default_value_t = 300, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub session_idle: u64,
    /// --http: the most sessions open at once; a new one closes the least recently used.
    #[arg(long, value_name = "N", default_value_t = 1024, requires = "http",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,
    /// Save every memory of this session as proposed (it waits for `slayer-memory
    /// approve`), whatever the store's review setting.
    #[arg(long)]
    pub review: bool,
}
