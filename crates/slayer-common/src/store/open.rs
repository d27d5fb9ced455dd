//! [`Store`]: the store a command opens, whichever backend `--store` names, and its one
//! [`WriteTx`]. Commands see one type; the backend is chosen here and nowhere else.

use std::path::{Path, PathBuf};

use super::location::{Location, ServerStore};
use super::postgres::{PgEndpoint, PgStore, PgWriteTx};
use super::sqlite::{SqliteStore, SqliteWriteTx};
use super::{CommitError, OpenMode, StoreError, StoreRead, StoreWrite};

/// The setting that names the build (version and commit) of the last command that wrote the
/// store: `slayer-index stats` shows it.
pub const WRITTEN_BY: &str = "written_by";

/// How long a store's connection waits for a server that does not answer, where the URL and
/// `PGCONNECT_TIMEOUT` name no limit.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// An open store. Its `Debug` shows the store masked, never `--store` as given.
pub struct Store {
    backend: Backend,
    /// `--store` as given (a server's may hold its password: shown only through
    /// [`Store::shown`]).
    given: PathBuf,
    shown: String,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("store", &self.shown).finish()
    }
}

#[derive(Debug)]
enum Backend {
    Sqlite(SqliteStore),
    Postgres {
        /// Boxed: a connection and its statement cache outweigh an SQLite handle.
        store: Box<PgStore>,
        /// This host's cache folder of the store.
        caches: PathBuf,
    },
}

/// A command's one write transaction: it reads and writes through [`StoreRead`] and
/// [`StoreWrite`], and writes nothing unless [`WriteTx::commit`] is called (dropped, it rolls
/// back).
#[derive(Debug)]
pub enum WriteTx<'a> {
    /// On an SQLite file.
    Sqlite(SqliteWriteTx<'a>),
    /// On a PostgreSQL store.
    Postgres(PgWriteTx<'a>),
}

impl Store {
    /// Opens the store `--store` names: writers create and migrate it as needed, readers only
    /// check it.
    pub fn open(store: &Path, mode: OpenMode) -> Result<Store, StoreError> {
        let location = Location::parse(store)?;
        let shown = location.shown();
        let backend = match location {
            Location::File(path) => Backend::Sqlite(SqliteStore::open(&path, mode)?),
            Location::Server(server) => {
                let pg = PgStore::open(endpoint(&server), mode)?;
                let caches = server.cache_dir(&pg.store_id()?);
                Backend::Postgres {
                    store: Box::new(pg),
                    caches,
                }
            }
        };
        Ok(Store {
            backend,
            given: store.to_owned(),
            shown,
        })
    }

    /// `--store` as given, to open the same store again. It may hold a server's password:
    /// show [`Store::shown`] instead.
    pub fn path(&self) -> &Path {
        &self.given
    }

    /// The store as messages show it: the file's path, or the server's URL with its password
    /// masked.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// Whether the store is on a server (its index and vectors are this host's caches).
    pub fn is_server(&self) -> bool {
        matches!(self.backend, Backend::Postgres { .. })
    }

    /// The store's reads.
    pub fn reader(&self) -> &dyn StoreRead {
        match &self.backend {
            Backend::Sqlite(store) => store,
            Backend::Postgres { store, .. } => store.as_ref(),
        }
    }

    /// The SQLite store, for the few callers that need the file itself (tests, read-only
    /// checks).
    pub fn sqlite(&self) -> Option<&SqliteStore> {
        match &self.backend {
            Backend::Sqlite(store) => Some(store),
            Backend::Postgres { .. } => None,
        }
    }

    /// The schema version of the store.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        match &self.backend {
            Backend::Sqlite(store) => store.schema_version(),
            Backend::Postgres { store, .. } => store.schema_version(),
        }
    }

    /// The schema version this build writes for this store's backend.
    pub fn supported_version(&self) -> i64 {
        match &self.backend {
            Backend::Sqlite(_) => super::SCHEMA_VERSION,
            Backend::Postgres { .. } => super::postgres::PG_SCHEMA_VERSION,
        }
    }

    /// Where the full-text index lives: `<store>.index/` beside a file; this host's cache
    /// folder's `index/` for a server store.
    pub fn index_dir(&self) -> PathBuf {
        match &self.backend {
            Backend::Sqlite(store) => store.index_dir(),
            Backend::Postgres { caches, .. } => caches.join("index"),
        }
    }

    /// Where the vector sidecars live: `<store>.vectors/` beside a file; this host's cache
    /// folder's `vectors/` for a server store.
    pub fn vectors_dir(&self) -> PathBuf {
        match &self.backend {
            Backend::Sqlite(store) => {
                let mut name = store.path().as_os_str().to_owned();
                name.push(".vectors");
                PathBuf::from(name)
            }
            Backend::Postgres { caches, .. } => caches.join("vectors"),
        }
    }

    /// Starts the one write transaction of a command, taking the store's write lock at once.
    pub fn write(&mut self) -> Result<WriteTx<'_>, StoreError> {
        Ok(match &mut self.backend {
            Backend::Sqlite(store) => WriteTx::Sqlite(store.write()?),
            Backend::Postgres { store, .. } => WriteTx::Postgres(store.write()?),
        })
    }

    /// For a writer on an absent SQLite file, a transaction on its empty stand-in, always
    /// rolled back: a command tries its write there first, so one that would be refused
    /// creates no file. `None` once the store exists (always, on a server).
    pub fn rehearsal(&mut self) -> Result<Option<WriteTx<'_>>, StoreError> {
        match &mut self.backend {
            Backend::Sqlite(store) => Ok(store.rehearsal()?.map(WriteTx::Sqlite)),
            Backend::Postgres { .. } => Ok(None),
        }
    }
}

impl WriteTx<'_> {
    /// Commits every write of the transaction, or none, and records this build as the
    /// store's last writer ([`WRITTEN_BY`]; written only when another build wrote last, so a
    /// commit of nothing stays a commit of nothing).
    pub fn commit(self) -> Result<(), CommitError> {
        let build = crate::cli::version();
        if self
            .backend()
            .setting(WRITTEN_BY)
            .map_err(CommitError)?
            .as_deref()
            != Some(build)
        {
            self.backend()
                .set_setting(WRITTEN_BY, build)
                .map_err(CommitError)?;
        }
        match self {
            WriteTx::Sqlite(tx) => tx.commit(),
            WriteTx::Postgres(tx) => tx.commit(),
        }
    }

    pub(super) fn backend(&self) -> &dyn StoreWrite {
        match self {
            WriteTx::Sqlite(tx) => tx,
            WriteTx::Postgres(tx) => tx,
        }
    }
}

/// How the PostgreSQL backend reaches the server of `server`.
fn endpoint(server: &ServerStore) -> PgEndpoint {
    let mut connect_target = server.target.clone();
    // A server that does not answer is an error naming it, not a hang (libpq waits forever).
    connect_target
        .connect_timeout
        .get_or_insert(CONNECT_TIMEOUT);
    let scrub_target = server.target.clone();
    let shown = server.shown();
    let server_shown = shown.clone();
    PgEndpoint {
        connect: Box::new(move || {
            crate::pg::connect(&connect_target).map_err(|message| StoreError::Postgres {
                server: server_shown.clone(),
                message,
            })
        }),
        schema: server.schema.clone(),
        shown,
        scrub: Box::new(move |text| scrub_target.scrub(text)),
    }
}
