//! Command-line definition.

use std::path::PathBuf;

use clap::Parser;
use slayer_common::cli::OutputArgs;

const ABOUT: &str = "Introspect and profile a DuckDB, SQLite, CSV or Parquet source into catalog records (datasource, then one model per table or view) with sample values.";

const EXAMPLES: &str = "Examples:
  $ slayer-profile examples/shop/data --datasource shop --format text
  $ slayer-profile examples/shop/data/orders.csv | wc -l
  $ slayer-profile examples/shop/data --tables orders | slayer-index load
  $ slayer-profile examples/shop/data --models tests/fixtures/shop.jsonl

Refresh mode (--models): existing model records in, the same records out with only their sample
fields (sampled, sampled_values, distinct_count) filled; SQL-backed models pass unchanged.

Samples: categorical (TEXT, BOOLEAN) columns get their top 50 values by frequency (ties by text),
the top 20 joined into `sampled`, and the exact distinct count; numeric and temporal columns get
`min .. max`. A model's sole primary key and UNKNOWN columns are not profiled.

Names: a table or column whose name a catalog cannot hold (`.`, `:`, control characters, blank or
padded with spaces) or that would collide with another is renamed (sanitised, then `_2`, `_3`…),
with a warning; its real name stays in sql_table / sql.

Exit status: 0 all profiled; 1 a warning was written (a table or column failed or was renamed; the
rest profiled); 2 bad usage or input (a source or --models file that cannot be read; nothing
written).";

#[derive(Debug, Parser)]
#[command(name = "slayer-profile", version, about = ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// A DuckDB or SQLite file; or CSV / Parquet files, globs, or a folder of them (one model each).
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Datasource name (default: the file's stem, or the folder's name).
    #[arg(long)]
    pub datasource: Option<String>,
    /// Datasource type recorded on the datasource record (default: duckdb or sqlite).
    #[arg(long = "type", value_name = "TYPE")]
    pub source_type: Option<String>,
    /// Skip views.
    #[arg(long)]
    pub no_views: bool,
    /// Only these tables (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub tables: Vec<String>,
    /// Skip these tables (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "A,B")]
    pub exclude: Vec<String>,
    /// Refresh mode: fill the samples of these model records (FILE or - for stdin).
    #[arg(long, value_name = "FILE|-")]
    pub models: Option<PathBuf>,
    /// Introspect only; leave the sample fields empty.
    #[arg(long)]
    pub no_samples: bool,
    /// Worker threads (default: the number of cores).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
    #[command(flatten)]
    pub output: OutputArgs,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}
