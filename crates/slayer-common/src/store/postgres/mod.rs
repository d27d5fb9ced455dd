//! The PostgreSQL store: the same tables as the SQLite file in one schema of a server's
//! database, shared by every host of a team. (Contract only; the backend is being written.)

use std::sync::Mutex;

use super::{CommitError, OpenMode, StoreError};

/// Where a PostgreSQL store is, as the store facade hands it over.
pub struct PgEndpoint {
    /// Opens a new connection to the server (called again after the server went away).
    pub connect: Box<dyn Fn() -> Result<postgres::Client, StoreError> + Send + Sync>,
    /// The schema that holds the store (a writer creates it when absent).
    pub schema: String,
    /// The store as messages show it: its URL with the password masked.
    pub shown: String,
    /// Removes the password from a text (server and driver messages).
    pub scrub: Box<dyn Fn(&str) -> String + Send + Sync>,
}

/// An open PostgreSQL store.
pub struct PgStore {
    #[allow(dead_code)]
    client: Mutex<Option<postgres::Client>>,
    endpoint: PgEndpoint,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.endpoint.shown)
    }
}

/// A command's one write transaction on a PostgreSQL store.
#[derive(Debug)]
pub struct PgWriteTx<'a> {
    #[allow(dead_code)]
    store: &'a PgStore,
}

impl PgStore {
    /// Connects and checks (a writer creates or migrates) the store.
    pub fn open(endpoint: PgEndpoint, _mode: OpenMode) -> Result<PgStore, StoreError> {
        Err(StoreError::Postgres {
            server: endpoint.shown,
            message: "the PostgreSQL store is not built yet".into(),
        })
    }

    /// The store's schema version.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(0)
    }

    /// The store's identity (`settings.store_id`).
    pub fn store_id(&self) -> Result<String, StoreError> {
        Ok(String::new())
    }

    /// Starts the one write transaction of a command (the store's write lock taken at once).
    pub fn write(&mut self) -> Result<PgWriteTx<'_>, StoreError> {
        Ok(PgWriteTx { store: self })
    }
}

impl PgWriteTx<'_> {
    /// Commits every write of the transaction, or none.
    pub fn commit(self) -> Result<(), CommitError> {
        Ok(())
    }
}
