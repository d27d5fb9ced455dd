//! The DuckDB engine: a database file opened read-only, or an in-memory database that reads
//! CSV / Parquet files; its catalog ([`introspect`]) and the profiling queries in its dialect
//! ([`queries`]).
//!
//! The folder shares the crate's name; inside this crate the driver is always `::duckdb`.

pub mod introspect;
pub mod queries;

mod spill;

use std::path::Path;

use ::duckdb::{AccessMode, Config, Connection};

use crate::budget::Budget;
use crate::query::first_line;

pub use spill::SpillDir;

/// Why DuckDB failed.
#[derive(Debug, thiserror::Error)]
pub enum DuckError {
    /// Opening or configuring a connection failed: DuckDB's whole message.
    #[error("{0}")]
    Open(::duckdb::Error),
    /// A query failed: the first line of DuckDB's message.
    #[error("{}", first_line(.0))]
    Query(::duckdb::Error),
    /// A query needed more than `--memory-limit` even after spilling to disk.
    #[error("{}; raise --memory-limit", first_line(.0))]
    OutOfMemory(::duckdb::Error),
}

impl From<::duckdb::Error> for DuckError {
    fn from(e: ::duckdb::Error) -> DuckError {
        if e.to_string().starts_with("Out of Memory Error") {
            DuckError::OutOfMemory(e)
        } else {
            DuckError::Query(e)
        }
    }
}

/// Opens a database file read-only, under `budget`.
pub fn open_file(path: &Path, budget: &Budget) -> Result<Connection, DuckError> {
    let config = config(budget, true)?;
    Connection::open_with_flags(path, config)
        .map_err(DuckError::Open)
        .and_then(utc_session)
}

/// Opens an in-memory database, for reading CSV / Parquet files, under `budget`.
pub fn open_memory(budget: &Budget) -> Result<Connection, DuckError> {
    let config = config(budget, false)?;
    Connection::open_in_memory_with_flags(config)
        .map_err(DuckError::Open)
        .and_then(utc_session)
}

/// Another connection to the same database (the workers share one).
pub fn try_clone(conn: &Connection) -> Result<Connection, DuckError> {
    conn.try_clone().map_err(DuckError::Open)
}

/// DuckDB's settings for one database. Without a `memory_limit` DuckDB takes 80% of the
/// machine's memory and a profile grows with the widest column's distinct values; with one, its
/// hash tables spill to `temp_directory` instead. That folder is set rather than left to
/// DuckDB, whose default sits beside the database file (a read-only source's folder) or in the
/// working directory.
fn config(budget: &Budget, read_only: bool) -> Result<Config, DuckError> {
    let mut config = Config::default()
        .threads(budget.threads.max(1) as i64)
        .and_then(|c| c.enable_autoload_extension(false))
        .and_then(|c| c.max_memory(&format!("{}KiB", budget.memory_bytes / 1024)))
        .map_err(DuckError::Open)?;
    if let Some(dir) = &budget.spill_dir {
        config = config
            .with("temp_directory", dir.to_string_lossy())
            .map_err(DuckError::Open)?;
    }
    if read_only {
        config = config
            .access_mode(AccessMode::ReadOnly)
            .map_err(DuckError::Open)?;
    }
    Ok(config)
}

/// Pins the database's time zone to UTC where the ICU extension is linked (the prebuilt
/// library has it, a `bundled-duckdb` build does not), so zoned values convert as they do
/// without ICU whatever `TZ` or `/etc/localtime` say. Global, so the workers' clones share it.
fn utc_session(conn: Connection) -> Result<Connection, DuckError> {
    let has_time_zone: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM duckdb_settings() WHERE name = 'TimeZone'",
            [],
            |r| r.get(0),
        )
        .map_err(DuckError::Open)?;
    if has_time_zone {
        conn.execute_batch("SET GLOBAL TimeZone = 'UTC'; SET GLOBAL Calendar = 'gregorian'")
            .map_err(DuckError::Open)?;
    }
    Ok(conn)
}
