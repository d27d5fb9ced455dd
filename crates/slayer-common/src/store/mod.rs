//! The store: the one source of truth, behind one interface.
//!
//! Commands open a [`Store`] (`open.rs`), read through [`StoreRead`] and write through
//! [`StoreWrite`], each command in one write transaction that commits all of its changes or
//! none (docs/spec/store.md §11.1). The rows they exchange beyond the records are in [`rows`];
//! errors are [`StoreError`]. Two backends implement the traits: the SQLite file of [`sqlite`]
//! (the embedded default) and a schema of a PostgreSQL database, [`postgres`], shared by a
//! team's hosts; [`location`] reads which one `--store` names, and where a server store's
//! per-host caches (the full-text index, the vector sidecar) live.
//!
//! The SQLite modules' free functions on a connection stay public under their old paths
//! (`store::docs`, `store::memories`, …) for the crates not yet on the interface.

mod delegate;
mod error;
pub mod location;
mod open;
pub mod postgres;
mod reads;
pub mod rows;
pub mod sqlite;
mod writes;

pub use error::{CommitError, StoreError};
pub use location::{shown, Location};
pub use open::{Store, WriteTx, WRITTEN_BY};
pub use reads::StoreRead;
pub use sqlite::{
    catalog, docs, embeddings, explain_sqlite, memories, settings, SqliteStore, SCHEMA_VERSION,
};
pub use writes::StoreWrite;

/// The default store path when neither `--store` nor `SLAYER_STORE` is given.
pub const DEFAULT_STORE: &str = "slayer.db";

/// How a command opens the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// A writer that may create the file (and its schema) when it does not exist.
    CreateIfMissing,
    /// A writer that needs an existing store; an older schema is migrated.
    MustExist,
    /// A reader: the file is opened read-only and never changed (no migration, no journal-mode
    /// switch), so it works on a read-only file or directory and leaves a foreign file alone.
    ReadOnly,
}

/// UTC now as stored timestamps are written (the original's `created_at` form).
pub fn now_utc() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    now.format(&format)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
}
