//! The SQLite store: one file, WAL mode, a busy timeout so concurrent writers wait instead of
//! failing, and a schema version in `PRAGMA user_version` with forward-only migrations
//! (`migrations.rs`). Writers take the write lock up front (`BEGIN IMMEDIATE`) so a command
//! either commits all of its changes or none.
//!
//! [`SqliteStore`] reads through [`StoreRead`]; [`SqliteStore::write`] opens the command's one [`SqliteWriteTx`],
//! which reads and writes through [`StoreRead`] and [`StoreWrite`] (`interface.rs`). The
//! submodules' free functions on a [`Connection`] are the SQL behind them.

use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use super::{CommitError, OpenMode, StoreError};
#[cfg(doc)]
use super::{StoreRead, StoreWrite};

pub mod catalog;
pub mod docs;
pub mod embeddings;
mod explain;
mod interface;
pub mod memories;
mod migrations;
pub mod settings;
#[cfg(test)]
mod tests;

pub use explain::explain_sqlite;
pub use migrations::SCHEMA_VERSION;

/// How long a writer waits for another writer before giving up.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Who checks that a file is a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    /// A reader: the file must be a current store.
    No,
    /// A writer on an absent or 0-byte file, which may become a store.
    MayCreate,
    /// A writer on a file that was there: a store of any version it can migrate.
    Existing,
}

/// The tables every slayer store has, whatever its version.
const CORE_TABLES: [&str; 5] = ["datasources", "models", "memories", "docs", "settings"];

/// An open store.
#[derive(Debug)]
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// A writer on an absent file works on an empty store in memory until its first write:
    /// a command refused before then leaves no file behind.
    unborn: bool,
}

impl SqliteStore {
    /// Opens the store at `path`: writers create and migrate it as needed, readers only check it.
    pub fn open(path: &Path, mode: OpenMode) -> Result<SqliteStore, StoreError> {
        if mode != OpenMode::CreateIfMissing && !path.exists() {
            return Err(StoreError::Missing(path.to_owned()));
        }
        match mode {
            OpenMode::ReadOnly => SqliteStore::open_read_only(path),
            OpenMode::CreateIfMissing if std::fs::symlink_metadata(path).is_err() => {
                SqliteStore::open_unborn(path)
            }
            _ => SqliteStore::open_writer(path),
        }
    }

    fn open_writer(path: &Path) -> Result<SqliteStore, StoreError> {
        // Only an absent or 0-byte file may become a store: an empty database another program
        // made is its, not ours.
        let fresh = std::fs::metadata(path).map_or(true, |m| m.len() == 0);
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        // SQLite quietly opens a file it may not write read-only; a writer says so at once.
        if conn.is_readonly(rusqlite::MAIN_DB)? {
            return Err(StoreError::Sqlite(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_READONLY),
                Some("attempt to write a readonly database".to_owned()),
            )));
        }
        let mut store = SqliteStore {
            conn,
            path: path.to_owned(),
            unborn: false,
        };
        // Checked before anything is written: another program's database is left as it was.
        store.check_is_store(if fresh {
            Writer::MayCreate
        } else {
            Writer::Existing
        })?;
        store.conn.pragma_update(None, "synchronous", "NORMAL")?;
        store.conn.pragma_update(None, "foreign_keys", "ON")?;
        // A write's statement journals (every upsert in a transaction keeps one) stay in
        // memory instead of a temp file: a 2,000-model load 2.7 -> 2.1 s, same peak. Readers
        // keep the default, so a large sort of theirs still spills to disk.
        store.conn.pragma_update(None, "temp_store", "MEMORY")?;
        // A new file gets its schema in one commit before it turns to WAL: until then it is
        // 0 bytes long, so a second writer that opens it meanwhile also takes it for new.
        migrations::migrate(&mut store.conn)?;
        store.conn.pragma_update(None, "journal_mode", "WAL")?;
        Ok(store)
    }

    /// An empty store in memory standing for the absent file at `path`, born on the first
    /// [`SqliteStore::write`].
    fn open_unborn(path: &Path) -> Result<SqliteStore, StoreError> {
        let conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = SqliteStore {
            conn,
            path: path.to_owned(),
            unborn: true,
        };
        migrations::migrate(&mut store.conn)?;
        Ok(store)
    }

    fn open_read_only(path: &Path) -> Result<SqliteStore, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mut store = SqliteStore {
            conn,
            path: path.to_owned(),
            unborn: false,
        };
        match store.check_is_store(Writer::No) {
            // A WAL store in a directory we cannot write has no `-shm` to share: nobody can be
            // writing it, so it is read as an immutable file, unless its log holds frames
            // (past the 32-byte header) that the file would not show.
            Err(StoreError::Sqlite(e)) if cannot_share_wal(&e) => {
                let mut wal = path.as_os_str().to_owned();
                wal.push("-wal");
                let wal = PathBuf::from(wal);
                if std::fs::metadata(&wal).is_ok_and(|m| m.len() > 32) {
                    return Err(StoreError::UnmergedWal {
                        path: path.to_owned(),
                        wal,
                    });
                }
                store.conn = Connection::open_with_flags(immutable_uri(path), flags)?;
                store.check_is_store(Writer::No)?;
            }
            other => other?,
        }
        Ok(store)
    }

    /// Refuses a file that is not a slayer store; a reader also refuses an older version.
    fn check_is_store(&self, opener: Writer) -> Result<(), StoreError> {
        let writer = opener != Writer::No;
        let not_a_store = |why: String| StoreError::NotAStore {
            path: self.path.clone(),
            why,
        };
        let found: i64 = match self.conn.query_row("PRAGMA user_version", [], |r| r.get(0)) {
            Ok(v) => v,
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::NotADatabase =>
            {
                return Err(not_a_store("not an SQLite database".to_owned()))
            }
            Err(e) => return Err(e.into()),
        };
        let tables: Vec<String> = self
            .conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        if found == 0 {
            // A new, empty file becomes a store when a writer opens it.
            if opener == Writer::MayCreate && tables.is_empty() {
                return Ok(());
            }
            return Err(not_a_store(if tables.is_empty() && writer {
                "an empty SQLite database; slayer makes a store only of an absent or 0-byte file"
                    .to_owned()
            } else if tables.is_empty() {
                "an empty database".to_owned()
            } else {
                format!("it has other tables: {}", preview(&tables))
            }));
        }
        if let Some(missing) = CORE_TABLES.iter().find(|t| !tables.iter().any(|x| x == *t)) {
            return Err(not_a_store(format!(
                "schema version {found} but no '{missing}' table"
            )));
        }
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        if !writer && found < SCHEMA_VERSION {
            return Err(StoreError::Outdated {
                path: self.path.clone(),
                found,
                supported: SCHEMA_VERSION,
            });
        }
        Ok(())
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        migrations::schema_version(&self.conn)
    }

    /// The store file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the full-text index of this store lives: `<store>.index/`.
    pub fn index_dir(&self) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(".index");
        PathBuf::from(name)
    }

    /// The SQLite connection, for the callers not yet on [`StoreRead`] (slayer-embed and
    /// slayer-search read through the submodules' free functions).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Starts the one write transaction of a command, taking the write lock at once; the
    /// first write of a writer on an absent file creates the file.
    pub fn write(&mut self) -> Result<SqliteWriteTx<'_>, StoreError> {
        if self.unborn {
            *self = SqliteStore::open_writer(&self.path)?;
        }
        Ok(SqliteWriteTx {
            tx: self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?,
            _busy: crate::shutdown::Busy::start(),
        })
    }

    /// For a writer on an absent file, a transaction on its empty stand-in, always rolled
    /// back: a command tries its write there first, so one that would be refused (an unknown
    /// entity) creates no file. `None` once the file exists.
    pub fn rehearsal(&mut self) -> Result<Option<SqliteWriteTx<'_>>, StoreError> {
        if !self.unborn {
            return Ok(None);
        }
        Ok(Some(SqliteWriteTx {
            tx: self.conn.transaction()?,
            _busy: crate::shutdown::Busy::start(),
        }))
    }
}

/// A command's one write transaction: it reads and writes through [`StoreRead`] and
/// [`StoreWrite`], and writes nothing unless [`SqliteWriteTx::commit`] is called (dropped, it rolls
/// back).
#[derive(Debug)]
pub struct SqliteWriteTx<'a> {
    tx: Transaction<'a>,
    /// A signal waits for the transaction (docs/spec/limits.md §16.9).
    _busy: crate::shutdown::Busy,
}

impl SqliteWriteTx<'_> {
    /// Commits every write of the transaction, or none.
    pub fn commit(self) -> Result<(), CommitError> {
        embeddings::prune_vector_changes(&self.tx).map_err(CommitError)?;
        docs::prune_docs_changes(&self.tx).map_err(CommitError)?;
        Ok(self.tx.commit()?)
    }
}

/// The transaction's connection, for the callers not yet on [`StoreWrite`] (slayer-embed and
/// slayer-search write through the submodules' free functions).
impl Deref for SqliteWriteTx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        &self.tx
    }
}

/// Parses a stored JSON `data` column.
pub(crate) fn parse_row<T: serde::de::DeserializeOwned>(
    table: &'static str,
    key: &str,
    data: &str,
) -> Result<T, StoreError> {
    serde_json::from_str(data).map_err(|e| StoreError::CorruptRow {
        table,
        key: key.to_owned(),
        cause: e.to_string(),
    })
}

/// Serializes a row for a JSON `data` column.
pub(crate) fn to_row<T: serde::Serialize>(
    what: &'static str,
    value: &T,
) -> Result<String, StoreError> {
    serde_json::to_string(value).map_err(|e| StoreError::Serialize {
        what,
        cause: e.to_string(),
    })
}

/// Whether a read-only open failed only because the WAL's shared-memory file cannot be made.
fn cannot_share_wal(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::ReadOnly)
    )
}

/// `file:<path>?immutable=1`, with the characters a URI path cannot carry escaped.
fn immutable_uri(path: &Path) -> String {
    let mut uri = String::from("file:");
    for b in path.as_os_str().as_encoded_bytes() {
        match b {
            b'%' | b'?' | b'#' | b' ' => uri.push_str(&format!("%{b:02X}")),
            b if b.is_ascii() => uri.push(char::from(*b)),
            b => uri.push_str(&format!("%{b:02X}")),
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// The first few names of a list, for messages.
fn preview(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    let more = names.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// SQL predicate "column is `?n` or a strict dotted descendant of it", for entity roots: the
/// one "under this datasource (or model)" test every query uses.
///
/// A byte range rather than `LIKE` (names may contain `_` and `%`) or `substr` (which no index
/// can serve): the strings that start with `root.` are exactly those from `root.` up to
/// `root/`, `/` being the byte after `.`. A `memory:` root takes only itself (memory ids may
/// hold dots).
pub(crate) fn under_sql(column: &str, param: usize) -> String {
    format!(
        "({column} = ?{param} OR (substr(?{param}, 1, 7) <> 'memory:' \
         AND {column} >= ?{param} || '.' AND {column} < ?{param} || '/'))"
    )
}
