//! The errors of slayer-index, as sentences a user can act on.

use std::path::PathBuf;

use slayer_common::jsonl::{LineError, ReadError};
use slayer_common::store::StoreError;

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// A bad input record; nothing was written.
    #[error(transparent)]
    Input(#[from] LineError),
    /// The input stream could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A file of a SLayer YAML project is invalid; nothing was written.
    #[error("{path}: {message}")]
    Project {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// `remove` was given something that is not a canonical id.
    #[error("'{0}' is not a canonical id; expected <ds>, <ds>.<model>, <ds>.<model>.<leaf> or memory:<id>")]
    BadTarget(String),
    /// `export --datasource` named a datasource the store does not hold.
    #[error("--datasource: no datasource '{name}' in the store; it holds: {known}")]
    UnknownDatasource {
        /// The name given.
        name: String,
        /// The datasources the store holds, comma-separated (or "none").
        known: String,
    },
    /// `remove` was given an id the store does not hold.
    #[error("nothing named '{0}' is in the store; `slayer-index stats` shows what is")]
    NotFound(String),
    /// Another process held the index writer for too long.
    #[error("the full-text index at {0} stayed locked by another slayer process; try again when it has finished")]
    IndexBusy(PathBuf),
    /// tantivy failed.
    #[error(
        "full-text index error: {0}; `slayer-index rebuild` recreates the index from the store"
    )]
    FullText(#[from] tantivy::TantivyError),
    /// A filesystem operation on the index folder failed.
    #[error("cannot use the index folder {path}: {source}")]
    IndexDir {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<rusqlite::Error> for IndexError {
    fn from(e: rusqlite::Error) -> Self {
        IndexError::Store(StoreError::Sqlite(e))
    }
}
