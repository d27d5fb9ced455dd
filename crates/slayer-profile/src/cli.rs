//! Command-line definition.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use slayer_common::cli::OutputArgs;

const ABOUT: &str = "Introspect and profile a DuckDB, SQLite, CSV, Parquet or PostgreSQL source into catalog records (datasource, then one model per table or view) with sample values.";

const EXAMPLES: &str = "Examples:
  $ slayer-profile examples/shop/data --datasource shop --format text
  $ slayer-profile examples/shop/data/orders.csv | wc -l
  $ slayer-profile examples/shop/data --tables orders | slayer-index load
  $ slayer-profile examples/shop/data --models tests/fixtures/shop.jsonl

PostgreSQL: a postgres:// or postgresql:// URL (postgresql://reader@db.example.com/shop?sslmode=
verify-full) or a libpq key=value string; what it leaves out comes from PGHOST, PGPORT, PGUSER,
PGPASSWORD, PGDATABASE, PGSSLMODE, PGSSLROOTCERT and ~/.pgpass. Prefer PGPASSWORD or ~/.pgpass to a
password in the URL (other users can see command lines); the password is never printed: the URL is
shown as postgres://user:****@host:port/db. TLS (rustls): sslmode=require encrypts; verify-ca and
verify-full also check the certificate against sslrootcert (a PEM file, or `system`). Each query
runs in its own read-only transaction under --statement-timeout; --threads N opens N connections.
Tables outside the `public` schema are named schema.table. With PGHOST, PGUSER and PGPASSWORD set:
  $ PGDATABASE=shop slayer-profile postgres:// --schema sales --threads 2 | wc -l
  $ slayer-profile 'dbname=shop sslmode=prefer' --tables sales.orders --format text

MySQL / MariaDB: a mysql:// or mariadb:// URL (mysql://reader@db.example.com:3306/shop?ssl-mode=
VERIFY_IDENTITY&ssl-ca=/etc/ca.pem; a socket as socket=PATH or a percent-encoded host). What it
leaves out comes from MYSQL_HOST, MYSQL_TCP_PORT, MYSQL_UNIX_PORT, MYSQL_PWD and ~/.my.cnf's
[client] group, as the mysql client reads them; the password is never printed. TLS (rustls):
ssl-mode=PREFERRED (the default over TCP) encrypts when the server offers it, REQUIRED always,
VERIFY_CA and VERIFY_IDENTITY also check the certificate. The URL's database is profiled, its
tables unqualified; with none, every database the user can see, as database.table. With
MYSQL_UNIX_PORT (or MYSQL_HOST) and MYSQL_PWD set:
  $ slayer-profile mysql:///shop --tables orders --format text

Refresh mode (--models): existing model records in, the same records out with only their sample
fields (sampled, sampled_values, distinct_count) filled; SQL-backed models pass unchanged.

Samples: categorical (TEXT, BOOLEAN) columns get their top 50 values by frequency (ties by text),
the top 20 joined into `sampled`, and the exact distinct count; numeric and temporal columns get
`min .. max`. A model's sole primary key and UNKNOWN columns are not profiled.

Memory: DuckDB sources (DuckDB, CSV, Parquet) are profiled within --memory-limit (default 256MiB;
the process needs about 70 MiB besides). A categorical column with more distinct values than that
holds (about 1 million at the default) gets its top values from a seeded sample of its rows and an
estimated count, marked `(~N distinct)` in `sampled`; every other column stays exact. For a wider
budget:
  $ slayer-profile examples/shop/data/orders.csv --memory-limit 1GiB --format text

Names: a table or column whose name a catalog cannot hold (`.`, `:`, control characters, blank or
padded with spaces) or that would collide with another is renamed (sanitised, then `_2`, `_3`…),
with a warning; its real name stays in sql_table / sql.

Exit status: 0 all profiled; 1 a warning was written (a table or column failed or was renamed; the
rest profiled); 2 bad usage or input (a source or --models file that cannot be read; nothing
written).";

#[derive(Debug, Parser)]
#[command(name = "slayer-profile", version = slayer_common::cli::version(), about = ABOUT, after_help = EXAMPLES)]
pub struct Cli {
    /// A DuckDB or SQLite file; CSV / Parquet files, globs, or a folder of them (one model
    /// each); or a PostgreSQL URL (postgres://…) or key=value connection string; or a MySQL /
    /// MariaDB URL (mysql://…, mariadb://…).
    #[arg(required = true, value_name = "SOURCE")]
    pub sources: Vec<PathBuf>,
    /// Only this schema (repeat for several; default: every schema but the system ones).
    #[arg(long = "schema", value_name = "S")]
    pub schemas: Vec<String>,
    /// Limit on each query against a server: 500ms, 60s, 5m; 0 for none.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration)]
    pub statement_timeout: Duration,
    /// Datasource name (default: the file's stem, or the folder's name).
    #[arg(long)]
    pub datasource: Option<String>,
    /// Datasource type recorded on the datasource record (default: duckdb or sqlite).
    #[arg(long = "type", value_name = "TYPE")]
    pub source_type: Option<String>,
    /// Skip views.
    #[arg(long)]
    pub no_views: bool,
    /// Only these tables (comma-separated names; schema.table outside the default schema).
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
    /// DuckDB's memory for the whole run, all threads together: 256MiB, 1GB, 2GiB (at least
    /// 32MiB). Past it DuckDB spills to a private folder under TMPDIR, and a column with more
    /// distinct values than fit (about one per 256 bytes) is grouped over a sample of its rows.
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_size)]
    pub memory_limit: u64,
    #[command(flatten)]
    pub output: OutputArgs,
    /// No progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

/// The smallest `--memory-limit`: the 10⁷-row benchmark still profiles in it
/// (docs/performance/profile-memory.md); much less leaves DuckDB too little for its scans.
const MIN_MEMORY: u64 = 32 << 20;

/// Why a `--memory-limit` is not a size.
#[derive(Debug, PartialEq, thiserror::Error)]
enum SizeError {
    /// No number, or a number without a unit.
    #[error("'{0}' is not a size: write 256MiB, 1GB or 2GiB")]
    NotASize(String),
    /// A unit other than those of [`parse_size`].
    #[error("unknown unit '{unit}' in '{text}': use KiB, MiB, GiB (1024) or KB, MB, GB (1000)")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole argument.
        text: String,
    },
    /// Less than DuckDB can profile in.
    #[error("'{0}' is too little memory: give at least 32MiB")]
    TooSmall(String),
}

/// `256MiB`, `1GB`, `1.5GiB`: KiB, MiB, GiB, TiB count 1024s, KB, MB, GB, TB 1000s (as
/// DuckDB reads them), any case; a unit is required, since a bare number could mean either.
fn parse_size(text: &str) -> Result<u64, SizeError> {
    let (value, unit) =
        number_and_unit(text).ok_or_else(|| SizeError::NotASize(text.to_owned()))?;
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" => return Err(SizeError::NotASize(text.to_owned())),
        "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(SizeError::UnknownUnit {
                unit: unit.trim().to_owned(),
                text: text.to_owned(),
            })
        }
    };
    let bytes = value * scale;
    if !bytes.is_finite() || bytes < MIN_MEMORY as f64 {
        return Err(SizeError::TooSmall(text.to_owned()));
    }
    // Past u64 is past any machine; saturate rather than refuse.
    Ok(bytes.min(u64::MAX as f64) as u64)
}

/// Why a `--statement-timeout` is not a duration.
#[derive(Debug, PartialEq, thiserror::Error)]
enum DurationError {
    /// No number where one was expected.
    #[error("'{0}' is not a duration: write 500ms, 60s, 5m or 1h")]
    NotANumber(String),
    /// A unit other than ms, s, m, min or h.
    #[error("unknown unit '{unit}' in '{text}': use ms, s, m or h")]
    UnknownUnit {
        /// The unit as written.
        unit: String,
        /// The whole argument.
        text: String,
    },
    /// More than PostgreSQL's statement_timeout can hold.
    #[error("'{0}' is too long a timeout: at most 24 days (596h)")]
    TooLong(String),
}

/// A leading decimal number and the unit after it (trimmed; empty when none), as `--memory-limit`
/// and `--statement-timeout` are written; `None` without a number.
fn number_and_unit(text: &str) -> Option<(f64, &str)> {
    let t = text.trim();
    let split = t
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    Some((number.parse().ok()?, unit.trim()))
}

/// `500ms`, `60s`, `5m`, `1h`, or a bare number of seconds.
fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let (value, unit) =
        number_and_unit(text).ok_or_else(|| DurationError::NotANumber(text.to_owned()))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "" | "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(DurationError::UnknownUnit {
                unit: other.to_owned(),
                text: text.to_owned(),
            })
        }
    };
    // PostgreSQL's statement_timeout holds up to 2^31 - 1 milliseconds (about 24 days).
    if !(0.0..=2_147_483.0).contains(&seconds) {
        return Err(DurationError::TooLong(text.to_owned()));
    }
    Ok(Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("soon")
            .unwrap_err()
            .to_string()
            .contains("not a duration"));
        assert!(parse_duration("5 weeks")
            .unwrap_err()
            .to_string()
            .contains("unknown unit 'weeks'"));
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("256MiB"), Ok(256 << 20));
        assert_eq!(parse_size("1GB"), Ok(1_000_000_000));
        assert_eq!(parse_size("1.5gib"), Ok(3 << 29));
        assert_eq!(parse_size(" 300 MiB "), Ok(300 << 20));
        assert_eq!(parse_size("32MiB"), Ok(32 << 20));
        let err = |t: &str| parse_size(t).unwrap_err().to_string();
        assert!(
            err("300").contains("not a size: write 256MiB"),
            "{}",
            err("300")
        );
        assert!(err("lots").contains("not a size"));
        assert!(err("300M").contains("unknown unit 'M'"), "{}", err("300M"));
        assert!(err("1MiB").contains("at least 32MiB"));
        assert!(err("0GB").contains("at least 32MiB"));
    }
}
