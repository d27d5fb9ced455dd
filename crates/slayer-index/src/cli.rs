//! Command-line definition.

use std::path::PathBuf;

use clap::Subcommand;

const ABOUT: &str = "Load a semantic-layer catalog into the slayer store, render its search docs and keep the full-text index current.";

const EXAMPLES: &str = "Examples:
  $ slayer-index import-slayer examples/shop/slayer > /dev/null
  $ slayer-index import dbt tests/fixtures/dbt/legacy --load > /dev/null
  $ slayer-index load tests/fixtures/catalog.jsonl
  $ slayer-index render tests/fixtures/catalog.jsonl --format text
  $ slayer-index stats
  $ slayer-index show shop.orders --format text
  $ slayer-index export --datasource shop | wc -l
  $ slayer-index remove shop.payments.payment_method
  $ slayer-index rebuild
  $ slayer-index migrate

Default --format: jsonl for record streams, text for stats.";

/// The formats `import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFormat {
    /// A SLayer YAML project (datasources/, models/<ds>/).
    Slayer,
    /// A dbt project's semantic layer: MetricFlow's spec, the latest one, or the dbt_metrics
    /// package's (dbt 1.0–1.5).
    Dbt,
    /// An Apache Ossie (Open Semantic Interchange) document, or a folder of them.
    Ossie,
    /// A Cube data model: YAML model files with cubes: and views:.
    Cube,
}

/// The command line: the shared flags and one of [`Command`].
pub type Cli = slayer_common::cli::Cli<Command>;

/// What `--help` and `--version` say.
pub const ABOUT_CLI: slayer_common::cli::About =
    slayer_common::about!("slayer-index", ABOUT, EXAMPLES);

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Upsert datasource and model records into the store in one transaction; print the docs whose
    /// text changed (the input of `slayer-embed refresh`).
    #[command(after_help = "Examples:
  $ slayer-index load tests/fixtures/catalog.jsonl
  $ slayer-index import-slayer examples/shop/slayer | wc -l

  $ slayer-index load --sync --dry-run tests/fixtures/catalog.jsonl

A model record replaces the stored model of the same datasource and name; a record equal to the
stored one is not written, and docs are diffed by content hash, so re-loading identical records
writes nothing. A bad line aborts the whole load (exit 2) and nothing is written.

--sync converges the store on the input, as a nightly job needs: for every datasource the input
has records of, the models it lacks are removed (with their docs, embeddings and memory tags;
a memory left with no tag is kept, with a warning). A sync that would remove more than half of
a datasource's models is refused (exit 2) unless --allow-shrink is given.")]
    Load {
        /// JSON-lines file, or - for stdin.
        #[arg(default_value = "-")]
        file: PathBuf,
        /// Also remove the models of the input's datasources that the input lacks.
        #[arg(long)]
        sync: bool,
        /// Print the plan (one record per model added, changed or removed; a summary on
        /// stderr) and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Let --sync remove more than half of a datasource's models.
        #[arg(long, requires = "sync")]
        allow_shrink: bool,
    },
    /// Render catalog (and memory) records to doc records, without a store.
    #[command(after_help = "Examples:
  $ slayer-index render tests/fixtures/catalog.jsonl --format text")]
    Render {
        /// JSON-lines file, or - for stdin.
        #[arg(default_value = "-")]
        file: PathBuf,
    },
    /// Load a SLayer YAML project's catalog into the store; print its memories as records.
    #[command(
        name = "import-slayer",
        after_help = "Examples:
  $ slayer-index import-slayer examples/shop/slayer > /dev/null

Reads datasources/*.yaml, models/<ds>/*.yaml and memories/<id>.md. The memory records on stdout
are for `slayer-memory import`."
    )]
    ImportSlayer {
        /// The project folder.
        dir: PathBuf,
    },
    /// Read another semantic layer's project offline and print its catalog records (or load
    /// them with --load).
    #[command(after_help = "Examples:
  $ slayer-index import dbt tests/fixtures/dbt/legacy | slayer-index load | wc -l
  $ slayer-index import dbt tests/fixtures/dbt/latest --load --report /dev/null | wc -l
  $ slayer-index import slayer examples/shop/slayer --report /dev/null | wc -l
  $ slayer-index import ossie tests/fixtures/ossie/shop.yaml --load | wc -l

Prints the datasource record, then one model record per semantic model (the input of `load`,
and of `slayer-profile --models -` to fill types and samples from the warehouse). Every object
skipped or mapped with a loss is one warning on stderr: file:line, the object, what was lost
and why. --report FILE writes the counts per kind (read, mapped, lossy, skipped) and the
warnings as JSON. A file that cannot be read is skipped and named; the rest imports. Exit 0
when everything mapped, 1 when anything was skipped, 2 when nothing of the project could be
read (nothing is written). dbt saved queries become example-query memories:
`--memories FILE`, then `slayer-memory import FILE`.

Formats: dbt (legacy semantic_models/metrics and the latest spec's semantic_model:, with
target/manifest.json and catalog.json when present), cube (YAML and JavaScript model files,
the JavaScript parsed and never run: `slayer-index import cube ./model --load`), ossie (Apache
Ossie 0.1.1 and 0.2.0.dev0 documents, validated against their schema), slayer (a SLayer YAML
project).")]
    Import {
        /// The project's format.
        #[arg(value_enum, value_name = "FORMAT")]
        layer: ImportFormat,
        /// The project folder.
        path: PathBuf,
        /// The datasource the models belong to (default: the project's name).
        #[arg(long)]
        datasource: Option<String>,
        /// Write the records to the store in one transaction instead of printing them; print
        /// the docs whose text changed, as `load` does.
        #[arg(long)]
        load: bool,
        /// Write counts per kind and every warning as JSON to this file.
        #[arg(long, value_name = "FILE")]
        report: Option<PathBuf>,
        /// dbt: write each saved query as an example-query memory record (JSON lines) to this
        /// file, for `slayer-memory import FILE` once the catalog is loaded.
        #[arg(long, value_name = "FILE")]
        memories: Option<PathBuf>,
        /// ossie: the SQL dialect whose expressions are read (then ANSI_SQL, SNOWFLAKE,
        /// DATABRICKS, BIGQUERY, the first present).
        #[arg(long, default_value = "ANSI_SQL")]
        dialect: String,
    },
    /// Delete a datasource, model, leaf or memory and cascade to docs, embeddings and memory tags.
    #[command(after_help = "Examples:
  $ slayer-index remove shop.payments.payment_method

A target takes itself and its strict dotted descendants (shop.orders takes shop.orders.amount,
never shop.orders_archive); memory:<id> takes only itself. Memories left without tags are kept.
Exit 1 when the store holds no such entity.")]
    Remove {
        /// Canonical id: <ds>, <ds>.<model>, <ds>.<model>.<leaf> or memory:<id>.
        canonical: String,
    },
    /// Print the stored docs of canonical ids (exit 1 if one is missing).
    #[command(after_help = "Examples:
  $ slayer-index show shop.orders shop.orders.status --format text")]
    Show {
        /// Canonical ids: <ds>, <ds>.<model>, <ds>.<model>.<leaf> or memory:<id>.
        #[arg(required = true)]
        canonical: Vec<String>,
    },
    /// Print the stored catalog as records: datasources, then their models (the input of
    /// `slayer-profile --models` and of `load` into another store).
    #[command(after_help = "Examples:
  $ slayer-index export --datasource shop | wc -l
  $ slayer-index export --format json > /dev/null

Refresh the samples of a hand-written catalog:
  slayer-index export --datasource shop | slayer-profile examples/shop/data --models - | slayer-index load")]
    Export {
        /// Only this datasource and its models.
        #[arg(long)]
        datasource: Option<String>,
    },
    /// Recreate the full-text index from the store's docs.
    #[command(after_help = "Examples:
  $ slayer-index rebuild")]
    Rebuild,
    /// Upgrade the store to this version's schema (commands that only read never do).
    #[command(after_help = "Examples:
  $ slayer-index migrate

Any command that writes upgrades the store too; search, list, show, stats and export refuse an
older store and name this command.")]
    Migrate,
    /// Counts per kind, and whether the full-text index agrees with the store.
    #[command(after_help = "Examples:
  $ slayer-index stats
  $ slayer-index stats --format json --check")]
    Stats {
        /// Exit 1 when the index does not agree with the store.
        #[arg(long)]
        check: bool,
    },
}
