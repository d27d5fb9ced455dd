//! The store's errors: one enum for every backend's failures, and the commit's own.

use std::path::PathBuf;

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `--store` / `SLAYER_STORE` is the URL of a server slayer cannot keep a store on;
    /// `shown` has its secrets masked.
    #[error("--store / SLAYER_STORE is the URL {shown}: a store is an SQLite file (a path such as ./slayer.db) or a PostgreSQL database (postgres://user@host/database)")]
    ServerUrl {
        /// The URL, masked.
        shown: String,
    },
    /// `--store` / `SLAYER_STORE` names a PostgreSQL store but does not parse.
    #[error("--store / SLAYER_STORE {shown}: {why}")]
    BadLocation {
        /// The connection string, masked.
        shown: String,
        /// What is wrong, naming the parameter.
        why: String,
    },
    /// The store file is not there and the command only reads.
    #[error("no store at {0}; create one with `slayer-index load` or point --store / SLAYER_STORE at an existing one")]
    Missing(PathBuf),
    /// The file was written by a newer slayer.
    #[error("the store at {path} has schema version {found}, newer than this slayer understands ({supported}); upgrade slayer")]
    TooNew {
        /// Store path.
        path: PathBuf,
        /// Version found in the file.
        found: i64,
        /// Version this build writes.
        supported: i64,
    },
    /// The file is there but is not a slayer store (another program's database, or not SQLite).
    #[error("{path} is not a slayer store ({why}); point --store / SLAYER_STORE at a store made by `slayer-index load` or `slayer-memory save`")]
    NotAStore {
        /// Store path.
        path: PathBuf,
        /// What gave it away.
        why: String,
    },
    /// A command that only reads found a store written by an older slayer: readers never migrate.
    #[error("the store at {path} has schema version {found}, older than this slayer's ({supported}); upgrade it with `slayer-index migrate --store {path}` (any command that writes upgrades it too)")]
    Outdated {
        /// Store path.
        path: PathBuf,
        /// Version found in the file.
        found: i64,
        /// Version this build writes.
        supported: i64,
    },
    /// A row could not be serialized for storage.
    #[error("cannot store {what}: {cause}")]
    Serialize {
        /// What was being stored.
        what: &'static str,
        /// The serializer's message.
        cause: String,
    },
    /// A stored row does not parse.
    #[error("stored {table} row '{key}' cannot be read: {cause}; re-load it or run `slayer-index remove {key}`")]
    CorruptRow {
        /// Table name.
        table: &'static str,
        /// Row key.
        key: String,
        /// Parse error.
        cause: String,
    },
    /// A WAL store in a folder this process cannot write, whose write-ahead log holds changes
    /// not yet merged into the file: read without them it would look whole and be not.
    #[error("the store at {path} has changes in its write-ahead log {wal} that only a process allowed to write its folder can merge; ask its owner to run any slayer command on it (or `sqlite3 {path} 'PRAGMA wal_checkpoint(TRUNCATE)'`), or copy the store and its -wal file to a folder you can write and point --store there")]
    UnmergedWal {
        /// Store path.
        path: PathBuf,
        /// Its write-ahead log.
        wal: PathBuf,
    },
    /// SQLite failed.
    #[error("store error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The PostgreSQL server failed or could not be reached; `server` is the store's URL with
    /// its password masked, `message` the server's (or the driver's) one line, scrubbed of it.
    #[error("PostgreSQL store {server}: {message}")]
    Postgres {
        /// The store, as shown (password masked).
        server: String,
        /// What went wrong.
        message: String,
    },
}

/// A write transaction that could not commit: nothing of it was written. It reads exactly as
/// the backend's failure (so `cannot commit the load: database is locked`), and becomes that
/// [`StoreError`] where a store error is expected.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CommitError(pub StoreError);

impl From<rusqlite::Error> for CommitError {
    fn from(e: rusqlite::Error) -> Self {
        CommitError(StoreError::Sqlite(e))
    }
}

impl From<CommitError> for StoreError {
    fn from(e: CommitError) -> Self {
        e.0
    }
}
