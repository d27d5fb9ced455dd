//! The SQLite engine: a database file opened read-only, its catalog ([`introspect`]) and the
//! profiling queries in its dialect ([`queries`]).

pub mod introspect;
pub mod queries;

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::query::first_line;

/// Why SQLite failed.
#[derive(Debug, thiserror::Error)]
pub enum LiteError {
    /// Opening the file failed: SQLite's whole message.
    #[error("{0}")]
    Open(rusqlite::Error),
    /// A query failed: the first line of SQLite's message.
    #[error("{}", first_line(.0))]
    Query(rusqlite::Error),
}

impl From<rusqlite::Error> for LiteError {
    fn from(e: rusqlite::Error) -> LiteError {
        LiteError::Query(e)
    }
}

/// Opens a database file read-only, waiting up to 30 s for a writer's lock.
pub fn open(path: &Path) -> Result<Connection, LiteError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(LiteError::Open)?;
    conn.busy_timeout(Duration::from_secs(30))
        .map_err(LiteError::Open)?;
    Ok(conn)
}
