//! The DuckDB engine: a database file opened read-only, or an in-memory database that reads
//! CSV / Parquet files; its catalog ([`introspect`]) and the profiling queries in its dialect
//! ([`queries`]).
//!
//! The folder shares the crate's name; inside this crate the driver is always `::duckdb`.

pub mod introspect;
pub mod queries;

use std::path::Path;

use ::duckdb::{AccessMode, Config, Connection};

use crate::query::first_line;

/// Why DuckDB failed.
#[derive(Debug, thiserror::Error)]
pub enum DuckError {
    /// Opening or configuring a connection failed: DuckDB's whole message.
    #[error("{0}")]
    Open(::duckdb::Error),
    /// A query failed: the first line of DuckDB's message.
    #[error("{}", first_line(.0))]
    Query(::duckdb::Error),
}

impl From<::duckdb::Error> for DuckError {
    fn from(e: ::duckdb::Error) -> DuckError {
        DuckError::Query(e)
    }
}

/// Opens a database file read-only; `threads` bounds DuckDB's own parallelism.
pub fn open_file(path: &Path, threads: usize) -> Result<Connection, DuckError> {
    let config = config(threads, true)?;
    Connection::open_with_flags(path, config)
        .map_err(DuckError::Open)
        .and_then(utc_session)
}

/// Opens an in-memory database, for reading CSV / Parquet files.
pub fn open_memory(threads: usize) -> Result<Connection, DuckError> {
    let config = config(threads, false)?;
    Connection::open_in_memory_with_flags(config)
        .map_err(DuckError::Open)
        .and_then(utc_session)
}

/// Another connection to the same database (the workers share one).
pub fn try_clone(conn: &Connection) -> Result<Connection, DuckError> {
    conn.try_clone().map_err(DuckError::Open)
}

fn config(threads: usize, read_only: bool) -> Result<Config, DuckError> {
    let mut config = Config::default()
        .threads(threads.max(1) as i64)
        .and_then(|c| c.enable_autoload_extension(false))
        .map_err(DuckError::Open)?;
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
