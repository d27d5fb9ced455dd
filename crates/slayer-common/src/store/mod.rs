//! The SQLite store: the one source of truth.
//!
//! One file, WAL mode, a busy timeout so concurrent writers wait instead of failing, and a schema
//! version in `PRAGMA user_version` with forward-only migrations. Writers take the write lock up
//! front (`BEGIN IMMEDIATE`) so a command either commits all of its changes or none.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

/// The triggers that keep `tag_counts` and the `memory_count` setting exact: one text for the
/// version 4 migration and for [`memories::resume_counts`].
macro_rules! count_triggers {
    () => {
        "
CREATE TRIGGER tag_counts_insert AFTER INSERT ON memory_entities
WHEN NEW.entity <> 'memory:' || NEW.memory_id BEGIN
    INSERT INTO tag_counts (entity, memories) VALUES (NEW.entity, 1)
        ON CONFLICT(entity) DO UPDATE SET memories = memories + 1;
END;
CREATE TRIGGER tag_counts_delete AFTER DELETE ON memory_entities
WHEN OLD.entity <> 'memory:' || OLD.memory_id BEGIN
    UPDATE tag_counts SET memories = memories - 1 WHERE entity = OLD.entity;
    DELETE FROM tag_counts WHERE entity = OLD.entity AND memories <= 0;
END;
CREATE TRIGGER memory_count_insert AFTER INSERT ON memories BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_count';
END;
CREATE TRIGGER memory_count_delete AFTER DELETE ON memories BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) - 1 WHERE key = 'memory_count';
END;
"
    };
}

pub mod catalog;
pub mod docs;
pub mod embeddings;
pub mod memories;
pub mod settings;

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = 8;

/// The version whose migration rewrites every model skeleton (they gained join names).
const SKELETON_JOIN_NAMES: usize = 5;

/// The version that adds the memories' standing columns and the embeddings' revision.
const STANDING_COLUMNS: usize = 8;

/// `(table, column, definition)` of the columns version 8 adds.
const STANDING_COLUMN_DEFINITIONS: &[(&str, &str, &str)] = &[
    ("memories", "tier", "TEXT NOT NULL DEFAULT 'lesson'"),
    ("memories", "confidence", "REAL NOT NULL DEFAULT 1"),
    ("memories", "strength", "REAL NOT NULL DEFAULT 1"),
    ("memories", "project", "TEXT"),
    ("memories", "agent", "TEXT"),
    ("memories", "deleted", "INTEGER NOT NULL DEFAULT 0"),
    ("embeddings", "model_revision", "TEXT NOT NULL DEFAULT ''"),
];

/// Adds each column a table lacks: SQLite has no `ADD COLUMN IF NOT EXISTS`, and a store whose
/// version number was lowered by hand must still migrate.
fn add_missing_columns(tx: &Connection, columns: &[(&str, &str, &str)]) -> Result<(), StoreError> {
    for (table, column, definition) in columns {
        let present: bool = tx.query_row(
            &format!("SELECT EXISTS (SELECT 1 FROM pragma_table_info('{table}') WHERE name = ?1)"),
            [column],
            |r| r.get(0),
        )?;
        if !present {
            tx.execute_batch(&format!(
                "ALTER TABLE {table} ADD COLUMN {column} {definition};"
            ))?;
        }
    }
    Ok(())
}

/// The default store path when neither `--store` nor `SLAYER_STORE` is given.
pub const DEFAULT_STORE: &str = "slayer.db";

/// How long a writer waits for another writer before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Each entry upgrades the schema from version `index` to `index + 1`.
const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE datasources (
    name TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE models (
    data_source TEXT NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (data_source, name)
);
CREATE TABLE memories (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE memory_entities (
    memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    entity TEXT NOT NULL,
    PRIMARY KEY (memory_id, entity)
);
CREATE INDEX idx_memory_entities_entity ON memory_entities(entity);
CREATE TABLE docs (
    canonical_id TEXT PRIMARY KEY,
    doc_kind TEXT NOT NULL,
    datasource TEXT,
    model TEXT,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    embedding_text TEXT
);
CREATE INDEX idx_docs_datasource ON docs(datasource);
CREATE TABLE index_state (
    canonical_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL
);
CREATE TABLE embeddings (
    canonical_id TEXT NOT NULL,
    model_name TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (canonical_id, model_name)
);
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
"#,
    r#"
-- A counter bumped by every change to docs, so a reader can tell in one lookup whether the
-- full-text index (which records the counter it synced to) is current.
INSERT OR IGNORE INTO settings (key, value) VALUES ('docs_version', '0');
CREATE TRIGGER docs_version_insert AFTER INSERT ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
END;
CREATE TRIGGER docs_version_update AFTER UPDATE ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
END;
CREATE TRIGGER docs_version_delete AFTER DELETE ON docs BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'docs_version';
END;
"#,
    r#"
-- Whether a query is attached, so search can split its buckets without reading the JSON. The
-- JSON is written compactly and omits a null query, so the key's presence is the flag.
ALTER TABLE memories ADD COLUMN has_query INTEGER NOT NULL DEFAULT 0;
UPDATE memories SET has_query = instr(data, '"query":') > 0;
"#,
    concat!(
        r#"
-- How many memories carry each tag (a memory's tag naming itself is not counted), so search
-- gets BM25's corpus statistics without reading every memory. Tag rows are only ever inserted
-- and deleted (a re-save deletes and re-inserts; a memory's deletion cascades), so two
-- triggers keep the counts exact.
CREATE TABLE tag_counts (
    entity TEXT PRIMARY KEY,
    memories INTEGER NOT NULL
) WITHOUT ROWID;
INSERT INTO tag_counts (entity, memories)
    SELECT entity, COUNT(*) FROM memory_entities
    WHERE entity <> 'memory:' || memory_id GROUP BY entity;
-- The number of memories, kept the same way: counting them means reading a whole index.
INSERT OR REPLACE INTO settings (key, value)
    VALUES ('memory_count', (SELECT COUNT(*) FROM memories));
"#,
        count_triggers!(),
        r#"
-- What name resolution reads of a model (names, flags, join targets), in a table of its own:
-- resolving a reference then reads neither the descriptions and samples nor the pages they
-- fill. A model written before this version has no row and falls back to its full JSON.
CREATE TABLE model_skeletons (
    data_source TEXT NOT NULL,
    name TEXT NOT NULL,
    skeleton TEXT NOT NULL,
    PRIMARY KEY (data_source, name)
) WITHOUT ROWID;
CREATE TRIGGER model_skeletons_delete AFTER DELETE ON models BEGIN
    DELETE FROM model_skeletons WHERE data_source = OLD.data_source AND name = OLD.name;
END;
-- Search looks memories up by id for their query flag only: a covering index spares it the
-- rows and their JSON.
CREATE INDEX idx_memories_meta ON memories(id, has_query);
-- Tag lookups (which memories carry a tag) read the memory id from the index, not the row.
DROP INDEX idx_memory_entities_entity;
CREATE INDEX idx_memory_entities_entity ON memory_entities(entity, memory_id);
-- The recency fallback walks memories newest first (ties by id) without sorting them all.
CREATE INDEX idx_memories_recency ON memories(created_at DESC, id);
-- Search reads the few query-bearing memories whole to fill their bucket exactly.
CREATE INDEX idx_memories_with_query ON memories(id) WHERE has_query;
"#
    ),
    // Version 5: skeletons keep each join's name (resolution hops by it); the rows are
    // rewritten from the full models by `catalog::rewrite_skeletons`.
    "",
    r#"
-- A long-lived search keeps every vector in memory. `embeddings_changes` counts the writes
-- that can change which rows are live (a row written or deleted, a doc with a row deleted
-- or added), so one read tells it that nothing changed; when something did, it compares the
-- rows' versions (rowid, content hash, write time) from this index, without reading the
-- vectors' pages, and reads only the rows that changed.
CREATE INDEX IF NOT EXISTS idx_embeddings_versions ON embeddings(model_name, canonical_id, content_hash, updated_at);
INSERT OR IGNORE INTO settings (key, value) VALUES ('embeddings_changes', '0');
CREATE TRIGGER IF NOT EXISTS embeddings_changes_insert AFTER INSERT ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_update AFTER UPDATE ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_delete AFTER DELETE ON embeddings BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_doc_delete AFTER DELETE ON docs
WHEN EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = OLD.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_doc_insert AFTER INSERT ON docs
WHEN EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = NEW.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
CREATE TRIGGER IF NOT EXISTS embeddings_changes_doc_kind AFTER UPDATE OF doc_kind ON docs
WHEN OLD.doc_kind <> NEW.doc_kind
AND EXISTS (SELECT 1 FROM embeddings WHERE canonical_id = NEW.canonical_id) BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'embeddings_changes';
END;
"#,
    r#"
-- The vector sidecar (`<store>.vectors/`) records each row's datasources, and a memory's come
-- from its tags: it is current while `embeddings_changes` and `memory_tags_changes` are what
-- it recorded, in the store `store_id` names (a new store at the same path restarts the
-- counters, never the id).
INSERT OR IGNORE INTO settings (key, value) VALUES ('memory_tags_changes', '0');
INSERT OR IGNORE INTO settings (key, value) VALUES ('store_id', lower(hex(randomblob(16))));
CREATE TRIGGER IF NOT EXISTS memory_tags_changes_insert AFTER INSERT ON memory_entities BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_tags_changes';
END;
CREATE TRIGGER IF NOT EXISTS memory_tags_changes_delete AFTER DELETE ON memory_entities BEGIN
    UPDATE settings SET value = CAST(value AS INTEGER) + 1 WHERE key = 'memory_tags_changes';
END;
"#,
    r#"
-- Tiers, trust and owners (seed 003). Memories written before have none of them in their
-- JSON, so the defaults are theirs. Search reads the few memories that are not plain lessons
-- (another tier, a trust below 1, an owner, a soft delete) from the partial index, never by
-- scanning every row.
-- (The columns are added by `add_missing_columns`, which skips those already there.)
CREATE INDEX IF NOT EXISTS idx_memories_marked ON memories(id, tier, confidence, strength, project, agent, deleted)
WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1 OR project IS NOT NULL
   OR agent IS NOT NULL OR deleted <> 0;
-- Which revision of the model (a hash of its configuration and weights) wrote a vector, so a
-- changed model under the same name is told apart; rows written before carry '' (also added
-- by `add_missing_columns`).
"#,
];

/// Errors from the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `--store` / `SLAYER_STORE` is a server's URL; `shown` has its secrets masked.
    #[error("--store / SLAYER_STORE is the URL {shown}: a store on a server (PostgreSQL) is not supported yet; the store is an SQLite file, so point --store / SLAYER_STORE at a path such as ./slayer.db")]
    ServerUrl {
        /// The URL, masked.
        shown: String,
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
}

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
pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// A writer on an absent file works on an empty store in memory until its first write:
    /// a command refused before then leaves no file behind.
    unborn: bool,
}

impl Store {
    /// Opens the store at `path`: writers create and migrate it as needed, readers only check it.
    pub fn open(path: &Path, mode: OpenMode) -> Result<Store, StoreError> {
        if let Some(refused) = server_url(path) {
            return Err(refused);
        }
        if mode != OpenMode::CreateIfMissing && !path.exists() {
            return Err(StoreError::Missing(path.to_owned()));
        }
        match mode {
            OpenMode::ReadOnly => Store::open_read_only(path),
            OpenMode::CreateIfMissing if std::fs::symlink_metadata(path).is_err() => {
                Store::open_unborn(path)
            }
            _ => Store::open_writer(path),
        }
    }

    fn open_writer(path: &Path) -> Result<Store, StoreError> {
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
        let mut store = Store {
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
        // A new file gets its schema in one commit before it turns to WAL: until then it is
        // 0 bytes long, so a second writer that opens it meanwhile also takes it for new.
        store.migrate()?;
        store.conn.pragma_update(None, "journal_mode", "WAL")?;
        Ok(store)
    }

    /// An empty store in memory standing for the absent file at `path`, born on the first
    /// [`Store::write`].
    fn open_unborn(path: &Path) -> Result<Store, StoreError> {
        let conn = Connection::open_in_memory()?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        let mut store = Store {
            conn,
            path: path.to_owned(),
            unborn: true,
        };
        store.migrate()?;
        Ok(store)
    }

    fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(path, flags)?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let mut store = Store {
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

    fn migrate(&mut self) -> Result<(), StoreError> {
        let found: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if found == SCHEMA_VERSION {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        // Another process may have migrated while we waited for the lock.
        let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        for (version, sql) in MIGRATIONS.iter().enumerate().skip(now as usize) {
            if version + 1 == STANDING_COLUMNS {
                add_missing_columns(&tx, STANDING_COLUMN_DEFINITIONS)?;
            }
            tx.execute_batch(sql)?;
            if version + 1 == SKELETON_JOIN_NAMES {
                catalog::rewrite_skeletons(&tx)?;
            }
            tx.pragma_update(None, "user_version", version as i64 + 1)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The schema version of the open file.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
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

    /// Read access.
    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Starts the one write transaction of a command, taking the write lock at once; the
    /// first write of a writer on an absent file creates the file.
    pub fn write(&mut self) -> Result<Transaction<'_>, StoreError> {
        if self.unborn {
            *self = Store::open_writer(&self.path)?;
        }
        Ok(self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// For a writer on an absent file, a transaction on its empty stand-in, always rolled
    /// back: a command tries its write there first, so one that would be refused (an unknown
    /// entity) creates no file. `None` once the file exists.
    pub fn rehearsal(&mut self) -> Result<Option<Transaction<'_>>, StoreError> {
        if !self.unborn {
            return Ok(None);
        }
        Ok(Some(self.conn.transaction()?))
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

/// A store path that is a server's URL, refused (with its secrets masked): stores are files.
pub fn server_url(path: &Path) -> Option<StoreError> {
    let text = path.to_string_lossy();
    text.contains("://").then(|| StoreError::ServerUrl {
        shown: crate::secrets::masked_url(&text),
    })
}

/// SQLite's failure on the store at `store` as a sentence that names the file and the fix, for
/// the failures a user can do something about; `None` for the rest (told as SQLite says them).
pub fn explain_sqlite(e: &rusqlite::Error, store: &Path) -> Option<String> {
    use rusqlite::ErrorCode as Code;
    let rusqlite::Error::SqliteFailure(failure, _) = e else {
        return None;
    };
    let (path, code) = (store.display(), failure.extended_code);
    // The shared-memory calls (xShmMap and its kin): SQLITE_IOERR_SHMOPEN, _SHMSIZE, _SHMLOCK,
    // _SHMMAP.
    let shared_memory = matches!(code, 4618 | 4874 | 5130 | 5386);
    Some(match failure.code {
        Code::SystemIoFailure if shared_memory => format!(
            "cannot use the store's shared-memory file {path}-shm (SQLite: {e}, code {code}): the folder holding the store must be writable by this process, or the -shm file there readable; a store on a network file system cannot be shared this way"
        ),
        Code::SystemIoFailure => format!(
            "cannot read or write the store at {path} (SQLite: {e}, code {code}): check that the disk is healthy and has room, and that the file was not cut short, moved or replaced while in use"
        ),
        Code::ReadOnly => format!(
            "the store at {path} cannot be written by this process (SQLite: {e}): run the command as a user who can write the file and its folder, or make them writable; commands that only read (search, list, show, export, stats) work as they are"
        ),
        Code::DatabaseBusy | Code::DatabaseLocked => format!(
            "the store at {path} stayed locked by another process for {} s (SQLite: {e}): let the other slayer command (a load, an import) finish, then run this one again; nothing was written",
            BUSY_TIMEOUT.as_secs()
        ),
        Code::DatabaseCorrupt => format!(
            "the store at {path} is damaged (SQLite: {e}): restore it from a backup, or save what is readable with `sqlite3 {path} .recover | sqlite3 recovered.db` and point --store at that"
        ),
        Code::DiskFull => format!(
            "the disk holding the store at {path} is full (SQLite: {e}): free some space and run the command again; nothing was written"
        ),
        Code::CannotOpen => format!(
            "cannot open the store at {path} (SQLite: {e}): check that its folder exists and this process may read it (and write it, for a command that writes)"
        ),
        _ => return None,
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

/// UTC now as stored timestamps are written (the original's `created_at` form).
pub fn now_utc() -> String {
    let now = time::OffsetDateTime::now_utc();
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    now.format(&format)
        .unwrap_or_else(|_| now.unix_timestamp().to_string())
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A memory with these tags and nothing else of note.
    fn memory(id: &str, tags: &[&str]) -> crate::records::Memory {
        crate::records::Memory {
            version: 4,
            id: id.into(),
            learning: "x".into(),
            description: None,
            entities: tags.iter().map(|t| t.to_string()).collect(),
            query: None,
            created_at: "t".into(),
            standing: Default::default(),
        }
    }

    #[test]
    fn the_embedding_change_count_moves_exactly_when_live_rows_may_have_changed() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let conn = store.conn();
        let count = || embeddings::change_count(conn).unwrap().unwrap();
        let doc = |id: &str, kind: &str| docs::StoredDoc {
            doc: crate::records::Doc {
                canonical_id: id.into(),
                doc_kind: kind.into(),
                datasource: Some("db".into()),
                text: "t".into(),
                content_hash: "h".into(),
                embedding_text: None,
            },
            model: Some("m".into()),
            position: 0,
        };
        let start = count();
        docs::upsert(conn, &doc("db.m.a", "column")).unwrap();
        assert_eq!(count(), start, "a doc without a row");
        embeddings::put(conn, "db.m.a", "local/x", "r", "h", &[1.0], "t").unwrap();
        assert_eq!(count(), start + 1, "a row written");
        embeddings::put(conn, "db.m.a", "local/x", "r", "h2", &[2.0], "t").unwrap();
        assert_eq!(count(), start + 2, "a row rewritten");
        docs::upsert(conn, &doc("db.m.a", "column")).unwrap();
        assert_eq!(count(), start + 2, "its doc re-rendered, same kind");
        docs::upsert(conn, &doc("db.m.a", "measure")).unwrap();
        assert_eq!(count(), start + 3, "its doc's kind changed");
        docs::delete(conn, "db.m.a").unwrap();
        assert_eq!(
            count(),
            start + 4,
            "its doc deleted: the row is no longer live"
        );
        docs::upsert(conn, &doc("db.m.a", "column")).unwrap();
        assert_eq!(count(), start + 5, "its doc back: the row is live again");
        embeddings::delete_exact(conn, "db.m.a").unwrap();
        assert_eq!(count(), start + 6, "a row deleted");
    }

    #[test]
    fn a_newer_store_is_refused_with_a_clear_message() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        Store::open(&path, OpenMode::CreateIfMissing).unwrap();
        {
            let conn = Connection::open(&path).unwrap();
            conn.pragma_update(None, "user_version", 99).unwrap();
        }
        let err = Store::open(&path, OpenMode::MustExist).unwrap_err();
        assert!(err.to_string().contains("schema version 99"), "{err}");
    }

    #[test]
    fn missing_store_is_reported_for_readers() {
        let dir = tempfile::tempdir().unwrap();
        let err = Store::open(&dir.path().join("nope.db"), OpenMode::MustExist).unwrap_err();
        assert!(matches!(err, StoreError::Missing(_)));
    }

    #[test]
    fn tag_counts_follow_every_tag_write() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let tx = store.write().unwrap();
        memories::put(&tx, &memory("1", &["a.m", "a.m.c", "memory:1"])).unwrap();
        memories::put(&tx, &memory("2", &["a.m", "memory:1"])).unwrap();
        memories::put(&tx, &memory("3", &["b.n"])).unwrap();
        // A re-save replaces the tags; a deletion cascades.
        memories::put(&tx, &memory("3", &["a.m"])).unwrap();
        memories::delete(&tx, "2").unwrap();
        tx.commit().unwrap();
        let counts = |sql: &str| -> Vec<(String, i64)> {
            let mut stmt = store.conn().prepare(sql).unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let kept = counts("SELECT entity, memories FROM tag_counts ORDER BY entity");
        let memory_count: String = store
            .conn()
            .query_row(
                "SELECT value FROM settings WHERE key = 'memory_count'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(memory_count, "2");
        assert_eq!(kept, [("a.m".into(), 2), ("a.m.c".into(), 1)]);
        let recomputed = counts(
            "SELECT entity, COUNT(*) FROM memory_entities
             WHERE entity <> 'memory:' || memory_id GROUP BY entity ORDER BY entity",
        );
        assert_eq!(kept, recomputed);
    }

    #[test]
    fn suspended_counts_come_back_exact_with_the_migration_s_triggers() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let triggers = |store: &Store| -> Vec<(String, String)> {
            let mut stmt = store
                .conn()
                .prepare(
                    "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'
                     AND (name LIKE 'tag_counts%' OR name LIKE 'memory_count%') ORDER BY name",
                )
                .unwrap();
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        let from_migration = triggers(&store);
        assert_eq!(from_migration.len(), 4);
        let tx = store.write().unwrap();
        memories::put(&tx, &memory("0", &["a.m"])).unwrap();
        memories::suspend_counts(&tx).unwrap();
        memories::put(&tx, &memory("1", &["a.m", "memory:1"])).unwrap();
        memories::put(&tx, &memory("2", &["a.m.c"])).unwrap();
        memories::delete(&tx, "0").unwrap();
        memories::resume_counts(&tx).unwrap();
        tx.commit().unwrap();
        let normalize = |t: Vec<(String, String)>| -> Vec<(String, String)> {
            t.into_iter()
                .map(|(n, sql)| (n, sql.split_whitespace().collect::<Vec<_>>().join(" ")))
                .collect()
        };
        assert_eq!(normalize(triggers(&store)), normalize(from_migration));
        let counts: (String, String) = store
            .conn()
            .query_row(
                "SELECT (SELECT group_concat(entity || '=' || memories, ',') FROM
                            (SELECT * FROM tag_counts ORDER BY entity)),
                        (SELECT value FROM settings WHERE key = 'memory_count')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!(
            (counts.0.as_str(), counts.1.as_str()),
            ("a.m=1,a.m.c=1", "2")
        );
    }

    #[test]
    fn there_is_one_migration_per_schema_version() {
        assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
    }

    #[test]
    fn a_version_1_store_migrates_forward_keeping_its_memories() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
        conn.execute(
            "INSERT INTO memories (id, data, created_at) VALUES ('1', '{\"id\":\"1\",\"query\":{}}', 'x'), ('2', '{\"id\":\"2\"}', 'x')",
            [],
        )
        .unwrap();
        conn.execute_batch(
            "INSERT INTO memory_entities VALUES ('1', 'db.t'), ('2', 'db.t'), ('2', 'memory:2')",
        )
        .unwrap();
        drop(conn);
        let store = Store::open(&path, OpenMode::MustExist).unwrap();
        let flags: Vec<(String, bool)> = store
            .conn()
            .prepare("SELECT id, has_query FROM memories ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(flags, [("1".to_owned(), true), ("2".to_owned(), false)]);
        assert_eq!(docs::version(store.conn()).unwrap(), "0");
        // Version 4 backfills the counts search reads (a memory's self-tag is not counted).
        let (tags, count): (String, String) = store
            .conn()
            .query_row(
                "SELECT (SELECT group_concat(entity || '=' || memories) FROM tag_counts),
                        (SELECT value FROM settings WHERE key = 'memory_count')",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((tags.as_str(), count.as_str()), ("db.t=2", "2"));
        // Version 8: older memories are plain lessons, so none is marked.
        let tiers: Vec<String> = store
            .conn()
            .prepare("SELECT tier FROM memories ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(tiers, ["lesson", "lesson"]);
        assert!(memories::marked(store.conn()).unwrap().is_empty());
    }

    #[test]
    fn a_store_whose_version_was_lowered_migrates_again_without_adding_columns_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut store = Store::open(&path, OpenMode::CreateIfMissing).unwrap();
        store.write().unwrap().commit().unwrap();
        drop(store);
        Connection::open(&path)
            .unwrap()
            .pragma_update(None, "user_version", 7)
            .unwrap();
        let store = Store::open(&path, OpenMode::MustExist).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn a_writer_on_an_absent_file_creates_it_only_when_it_writes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let mut store = Store::open(&path, OpenMode::CreateIfMissing).unwrap();
        // Reads see an empty store; a rehearsed write is rolled back; no file yet.
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        let rehearsal = store.rehearsal().unwrap().expect("absent file");
        rehearsal
            .execute("INSERT INTO settings (key, value) VALUES ('k', 'v')", [])
            .unwrap();
        drop(rehearsal);
        let count: i64 = store
            .conn()
            .query_row("SELECT count(*) FROM settings WHERE key = 'k'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(count, 0);
        assert!(!path.exists());

        let tx = store.write().unwrap();
        tx.execute("INSERT INTO settings (key, value) VALUES ('k', 'v')", [])
            .unwrap();
        tx.commit().unwrap();
        assert!(path.exists());
        assert!(store.rehearsal().unwrap().is_none());
        drop(store);
        let store = Store::open(&path, OpenMode::ReadOnly).unwrap();
        let value: String = store
            .conn()
            .query_row("SELECT value FROM settings WHERE key = 'k'", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(value, "v");
    }

    fn file_bytes(path: &Path) -> Vec<u8> {
        std::fs::read(path).unwrap()
    }

    #[test]
    fn readers_leave_a_foreign_database_untouched_and_say_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.sqlite");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('a');")
                .unwrap();
        }
        let before = file_bytes(&path);
        for mode in [
            OpenMode::ReadOnly,
            OpenMode::MustExist,
            OpenMode::CreateIfMissing,
        ] {
            let err = Store::open(&path, mode).unwrap_err();
            assert!(
                err.to_string()
                    .contains("is not a slayer store (it has other tables: people)"),
                "{mode:?}: {err}"
            );
        }
        assert_eq!(file_bytes(&path), before);
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["other.sqlite"]);
        let text = dir.path().join("notes.txt");
        std::fs::write(
            &text,
            "just some text, long enough to be a header of a file....\n".repeat(4),
        )
        .unwrap();
        let err = Store::open(&text, OpenMode::ReadOnly).unwrap_err();
        assert!(err.to_string().contains("not an SQLite database"), "{err}");
    }

    #[test]
    fn readers_refuse_an_older_store_and_writers_migrate_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
        }
        let before = file_bytes(&path);
        let err = Store::open(&path, OpenMode::ReadOnly).unwrap_err();
        assert!(
            err.to_string().contains(&format!(
                "has schema version 1, older than this slayer's ({SCHEMA_VERSION}); upgrade it with `slayer-index migrate"
            )),
            "{err}"
        );
        assert_eq!(file_bytes(&path), before);
        Store::open(&path, OpenMode::MustExist).unwrap();
        let store = Store::open(&path, OpenMode::ReadOnly).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    }

    #[test]
    fn under_takes_the_root_and_its_dotted_descendants_only() {
        let conn = Connection::open_in_memory().unwrap();
        let ids = [
            "prod",
            "prod.orders",
            "prod.orders.amount",
            "prod_v2",
            "prod_v2.orders",
            "pro",
            "prod/x",
            "prodx",
            "memory:4",
            "memory:4.x",
            "memory:45",
        ];
        let under = |root: &str| -> Vec<String> {
            let values: Vec<String> = ids.iter().map(|i| format!("('{i}')")).collect();
            let sql = format!(
                "SELECT column1 FROM (VALUES {}) WHERE {} ORDER BY column1",
                values.join(", "),
                under_sql("column1", 1)
            );
            let mut stmt = conn.prepare(&sql).unwrap();
            stmt.query_map([root], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(under("prod"), ["prod", "prod.orders", "prod.orders.amount"]);
        assert_eq!(under("prod.orders"), ["prod.orders", "prod.orders.amount"]);
        // A memory id may hold a dot: `memory:4` takes only itself.
        assert_eq!(under("memory:4"), ["memory:4"]);
        assert!(under("nothing").is_empty());
    }

    #[test]
    fn index_dir_sits_beside_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        assert_eq!(store.index_dir(), dir.path().join("s.db.index"));
    }
}
