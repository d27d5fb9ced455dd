//! The PostgreSQL store: the same tables as the SQLite file in one schema of a server's
//! database, shared by every host of a team.
//!
//! One connection per open store, behind a mutex ([`StoreRead`] takes `&self`), with its
//! prepared statements cached beside it. Outside a snapshot or a write transaction every read
//! runs on its own (autocommit), so a long-lived reader sees other hosts' commits on its next
//! read; a connection found closed then is opened again once. Writers serialize on an advisory
//! lock derived from the schema, taken first thing in [`PgStore::write`], as SQLite's
//! `BEGIN IMMEDIATE` does; so ids allocated as "largest + 1" never collide, and the change log
//! (`changes`, filled by triggers) is numbered in commit order: its largest `seq` per stream
//! is the version a per-host cache compares.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};

use postgres::types::ToSql;
use postgres::{Client, Row, Statement};
use sha2::{Digest, Sha256};

use super::{CommitError, OpenMode, StoreError};
#[cfg(doc)]
use super::{StoreRead, StoreWrite};

/// SQL: `column` is `$1` or a strict dotted descendant of it (a `memory:` root takes only
/// itself), as a byte range an index serves (SQLite's `under_sql`; `/` is the byte after `.`).
macro_rules! under {
    ($column:literal) => {
        concat!(
            "(",
            $column,
            " = $1 OR (substr($1, 1, 7) <> 'memory:' AND ",
            $column,
            " >= $1 || '.' AND ",
            $column,
            " < $1 || '/'))"
        )
    };
}

mod catalog;
mod changes;
mod docs;
mod embeddings;
mod interface;
mod memories;
mod open;

pub use open::PG_SCHEMA_VERSION;

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
    conn: Mutex<Conn>,
    endpoint: PgEndpoint,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.endpoint.shown)
    }
}

/// A command's one write transaction on a PostgreSQL store: it reads (seeing its own writes)
/// and writes through [`StoreRead`] and [`StoreWrite`], and writes nothing unless
/// [`PgWriteTx::commit`] is called (dropped, it rolls back).
#[derive(Debug)]
pub struct PgWriteTx<'a> {
    store: &'a PgStore,
    done: bool,
    /// A signal waits for the transaction (docs/spec/limits.md §16.9).
    _busy: crate::shutdown::Busy,
}

/// What the connection is in the middle of.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Mode {
    /// Nothing: each read runs on its own, and a closed connection is opened again.
    Idle,
    /// A read-only repeatable-read transaction ([`StoreRead::begin_snapshot`]).
    Snapshot,
    /// The write transaction; `failed` holds the first error, after which the server refuses
    /// every statement and a commit would roll back.
    Write { failed: Option<String> },
}

/// The connection and what it is doing.
struct Conn {
    session: Option<Session>,
    mode: Mode,
}

/// A connection with its prepared statements.
pub(crate) struct Session {
    client: Client,
    statements: HashMap<&'static str, Statement>,
    /// Statements without parameters run once unprepared, in one round trip: a one-shot
    /// process runs most of them once, and preparing first would cost it a second round trip
    /// each. A statement seen again is prepared and cached.
    run_once: HashSet<&'static str>,
}

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

impl Session {
    fn new(client: Client) -> Session {
        Session {
            client,
            statements: HashMap::new(),
            run_once: HashSet::new(),
        }
    }

    fn prepared(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(statement) = self.statements.get(sql) {
            return Ok(statement.clone());
        }
        let statement = self.client.prepare(sql)?;
        self.statements.insert(sql, statement.clone());
        Ok(statement)
    }

    /// Whether this run of `sql` goes unprepared: its first, when it takes no parameters.
    fn unprepared(&mut self, sql: &'static str, params: Params) -> bool {
        params.is_empty() && !self.statements.contains_key(sql) && self.run_once.insert(sql)
    }

    /// Every row of a cached statement.
    pub(crate) fn query(&mut self, sql: &'static str, params: Params) -> PgResult<Vec<Row>> {
        if self.unprepared(sql, params) {
            return Ok(self.client.query_typed(sql, &[])?);
        }
        let statement = self.prepared(sql)?;
        Ok(self.client.query(&statement, params)?)
    }

    /// The one row (or none) of a cached statement.
    pub(crate) fn query_opt(&mut self, sql: &'static str, params: Params) -> PgResult<Option<Row>> {
        if self.unprepared(sql, params) {
            return Ok(self.client.query_typed_opt(sql, &[])?);
        }
        let statement = self.prepared(sql)?;
        Ok(self.client.query_opt(&statement, params)?)
    }

    /// The one row of a cached statement.
    pub(crate) fn query_one(&mut self, sql: &'static str, params: Params) -> PgResult<Row> {
        if self.unprepared(sql, params) {
            return Ok(self.client.query_typed_one(sql, &[])?);
        }
        let statement = self.prepared(sql)?;
        Ok(self.client.query_one(&statement, params)?)
    }

    /// How many rows a cached statement changed.
    pub(crate) fn execute(&mut self, sql: &'static str, params: Params) -> PgResult<u64> {
        let statement = self.prepared(sql)?;
        Ok(self.client.execute(&statement, params)?)
    }

    /// Statements without parameters, in one round trip.
    pub(crate) fn batch(&mut self, sql: &str) -> PgResult<()> {
        Ok(self.client.batch_execute(sql)?)
    }
}

/// A failure inside the backend: the server's (to be named and scrubbed) or the store's own.
pub(crate) enum Fail {
    Pg(postgres::Error),
    Store(StoreError),
}

impl From<postgres::Error> for Fail {
    fn from(e: postgres::Error) -> Fail {
        Fail::Pg(e)
    }
}

impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Fail {
        Fail::Store(e)
    }
}

pub(crate) type PgResult<T> = Result<T, Fail>;

/// The server's one line for an error (its message), else the driver's text with its causes.
fn message_of(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return db.message().to_owned();
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let more = c.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = c.source();
    }
    text
}

/// Whether an error leaves the connection unusable: closed, or the server ended the session
/// (an administrator's shutdown, a crash: SQLSTATE classes 57P and 08).
fn connection_gone(e: &postgres::Error) -> bool {
    e.is_closed()
        || e.code().is_some_and(|c| {
            let code = c.code();
            code.starts_with("57P") || code.starts_with("08")
        })
}

/// Why a call on the connection failed: `Again` when the connection was found gone outside a
/// transaction (the call may run once more on a new one), `No` otherwise.
enum Retry {
    Again(StoreError),
    No(StoreError),
}

impl Retry {
    fn into_error(self) -> StoreError {
        match self {
            Retry::Again(e) | Retry::No(e) => e,
        }
    }
}

/// `name` as a double-quoted SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The advisory lock key of a store: the first 8 bytes of SHA-256("slayer:" + schema), the
/// same on every host and build.
pub(crate) fn lock_key(schema: &str) -> i64 {
    let digest = Sha256::digest(format!("slayer:{schema}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

/// How long a writer waits for another writer's lock before giving up (SQLite's busy timeout).
const WRITE_LOCK_TIMEOUT_MS: u64 = super::sqlite::BUSY_TIMEOUT.as_millis() as u64;

impl PgStore {
    /// Connects and checks (a writer creates or migrates) the store.
    pub fn open(endpoint: PgEndpoint, mode: OpenMode) -> Result<PgStore, StoreError> {
        let store = PgStore {
            conn: Mutex::new(Conn {
                session: None,
                mode: Mode::Idle,
            }),
            endpoint,
        };
        let session = store.connect()?;
        store.lock().session = Some(session);
        store.with(|s| open::check_and_migrate(s, &store.endpoint, mode))?;
        Ok(store)
    }

    /// The store's schema version.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        self.with(open::schema_version)
    }

    /// The store's identity (`settings.store_id`).
    pub fn store_id(&self) -> Result<String, StoreError> {
        self.with(|s| {
            let row = s.query_opt("SELECT value FROM settings WHERE key = 'store_id'", &[])?;
            Ok(row.map(|r| r.get(0)).unwrap_or_default())
        })
    }

    /// The store as messages show it (its URL, password masked).
    pub fn shown(&self) -> &str {
        &self.endpoint.shown
    }

    /// The schema that holds the store.
    pub fn schema(&self) -> &str {
        &self.endpoint.schema
    }

    /// Starts the one write transaction of a command (the store's write lock taken at once).
    pub fn write(&mut self) -> Result<PgWriteTx<'_>, StoreError> {
        let begin = format!(
            "BEGIN ISOLATION LEVEL READ COMMITTED;
             SET LOCAL lock_timeout = {WRITE_LOCK_TIMEOUT_MS};
             SELECT pg_advisory_xact_lock({});
             SET LOCAL lock_timeout TO DEFAULT;",
            lock_key(&self.endpoint.schema)
        );
        let began = self.with(|s| s.batch(&begin));
        if began.is_err() {
            // The batch's BEGIN may have run: a transaction left open (and aborted) would fail
            // every later read on this connection. A dead connection has none to end.
            let _ = self.with(|s| s.batch("ROLLBACK"));
        }
        began.map_err(|e| match e {
            StoreError::Postgres { server, message } if message.contains("lock timeout") => {
                StoreError::Postgres {
                    server,
                    message: format!(
                        "another writer held the store's write lock for {} s ({message})",
                        WRITE_LOCK_TIMEOUT_MS / 1000
                    ),
                }
            }
            other => other,
        })?;
        self.lock().mode = Mode::Write { failed: None };
        Ok(PgWriteTx {
            store: self,
            done: false,
            _busy: crate::shutdown::Busy::start(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Conn> {
        self.conn.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn connect(&self) -> Result<Session, StoreError> {
        let client = (self.endpoint.connect)()?;
        let mut session = Session::new(client);
        session
            .client
            .batch_execute(&format!(
                "SET search_path TO {}",
                quote_ident(&self.endpoint.schema)
            ))
            .map_err(|e| self.pg_error(&e))?;
        Ok(session)
    }

    fn pg_error(&self, e: &postgres::Error) -> StoreError {
        StoreError::Postgres {
            server: self.endpoint.shown.clone(),
            message: (self.endpoint.scrub)(&message_of(e)),
        }
    }

    /// Runs `f` on the connection: outside a transaction, one that was lost is opened again
    /// first, and a call the server refused because the connection was gone (a restart ends
    /// every session; the client learns it only on its next call) runs once more on a new
    /// one; a server error is named and scrubbed, and a lost connection forgotten.
    fn with<T>(&self, mut f: impl FnMut(&mut Session) -> PgResult<T>) -> Result<T, StoreError> {
        let idle = self.lock().mode == Mode::Idle;
        match self.with_once(&mut f) {
            Err(Retry::Again(_)) if idle => self.with_once(&mut f).map_err(Retry::into_error),
            other => other.map_err(Retry::into_error),
        }
    }

    fn with_once<T>(&self, f: &mut impl FnMut(&mut Session) -> PgResult<T>) -> Result<T, Retry> {
        let mut conn = self.lock();
        let lost = conn.session.as_ref().is_none_or(|s| s.client.is_closed());
        if lost {
            if conn.mode != Mode::Idle {
                conn.session = None;
                return Err(Retry::No(StoreError::Postgres {
                    server: self.endpoint.shown.clone(),
                    message: "the connection was lost in the middle of a transaction".into(),
                }));
            }
            conn.session = Some(self.connect().map_err(Retry::No)?);
        }
        let Some(session) = conn.session.as_mut() else {
            unreachable!("a session was just opened")
        };
        match f(session) {
            Ok(value) => Ok(value),
            Err(Fail::Store(e)) => Err(Retry::No(e)),
            Err(Fail::Pg(e)) => {
                let closed = session.client.is_closed() || connection_gone(&e);
                let error = self.pg_error(&e);
                if let Mode::Write { failed } = &mut conn.mode {
                    failed.get_or_insert_with(|| error.to_string());
                }
                if closed && conn.mode == Mode::Idle {
                    conn.session = None;
                    return Err(Retry::Again(error));
                }
                Err(Retry::No(error))
            }
        }
    }

    /// A read-only repeatable-read transaction, unless one (or the write transaction) is open.
    fn begin_snapshot(&self) -> Result<(), StoreError> {
        if self.lock().mode != Mode::Idle {
            return Ok(());
        }
        self.with(|s| s.batch("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))?;
        self.lock().mode = Mode::Snapshot;
        Ok(())
    }

    fn end_snapshot(&self) -> Result<(), StoreError> {
        if self.lock().mode != Mode::Snapshot {
            return Ok(());
        }
        self.finish("COMMIT")
    }

    /// Ends the transaction the connection is in with `sql` (COMMIT or ROLLBACK).
    fn finish(&self, sql: &str) -> Result<(), StoreError> {
        let mut conn = self.lock();
        let result = match conn.session.as_mut() {
            Some(s) if !s.client.is_closed() => {
                s.client.batch_execute(sql).map_err(|e| self.pg_error(&e))
            }
            _ => Err(StoreError::Postgres {
                server: self.endpoint.shown.clone(),
                message: "the connection was lost in the middle of a transaction".into(),
            }),
        };
        conn.mode = Mode::Idle;
        if conn.session.as_ref().is_some_and(|s| s.client.is_closed()) {
            conn.session = None;
        }
        result
    }
}

impl PgWriteTx<'_> {
    /// Commits every write of the transaction, or none.
    pub fn commit(mut self) -> Result<(), CommitError> {
        self.done = true;
        let failed = match &self.store.lock().mode {
            Mode::Write { failed } => failed.clone(),
            _ => None,
        };
        if let Some(first) = failed {
            // The server would answer COMMIT with a rollback, and no error: say why.
            let _ = self.store.finish("ROLLBACK");
            return Err(CommitError(StoreError::Postgres {
                server: self.store.endpoint.shown.clone(),
                message: format!("the transaction was rolled back after an earlier error: {first}"),
            }));
        }
        self.store.finish("COMMIT").map_err(CommitError)
    }
}

impl Drop for PgWriteTx<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.store.finish("ROLLBACK");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_keys_are_stable_and_per_schema() {
        assert_eq!(lock_key("slayer"), lock_key("slayer"));
        assert_ne!(lock_key("slayer"), lock_key("slayer2"));
        // Pinned: every host and build must derive the same key.
        let digest = Sha256::digest(b"slayer:slayer");
        assert_eq!(
            lock_key("slayer").to_be_bytes(),
            <[u8; 8]>::try_from(&digest[..8]).unwrap()
        );
    }

    #[test]
    fn identifiers_are_quoted() {
        assert_eq!(quote_ident("slayer"), "\"slayer\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
