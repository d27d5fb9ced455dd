//! One PostgreSQL connection, and every query run through it.
//!
//! Each query runs in its own `READ ONLY` transaction whose settings are set `LOCAL`: the
//! statement timeout, `search_path` (`pg_catalog` first, so no object in `public` can stand in
//! for a built-in function or type the queries name; then `public`, where a default-schema table
//! is found by its bare name), ISO dates and UTC. Setting them per transaction rather than per
//! session keeps them right behind a transaction-pooling proxy, and keeps a model's own SQL
//! expression from changing them for the next query. The previous transaction is ended in the
//! same round trip that begins the next one, and [`PgConn::finish`] ends the last one when a
//! piece of work is done, so no idle transaction holds a lock on a table.

use std::sync::Mutex;
use std::time::Duration;

use postgres::types::ToSql;
use postgres::{Client, Row};
use slayer_common::pg::describe;

use super::dsn::PgTarget;

/// Why a PostgreSQL connection or query failed. Whatever the server or a library says is
/// passed through [`PgTarget::scrub`] first, so no message holds the password.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// The server or the driver refused: its one line.
    #[error("{0}")]
    Server(String),
    /// An earlier worker panicked while holding the connection.
    #[error("the connection was poisoned by a failed worker")]
    Poisoned,
    /// A query meant to return one row returned another number.
    #[error("expected one row, got {0}")]
    RowCount(usize),
    /// A column of a row could not be read as the type asked for.
    #[error("reading {column}: {cause}")]
    Column {
        /// The column's name (`?` when the row has no such column).
        column: String,
        /// The driver's message.
        cause: postgres::Error,
    },
}

/// A PostgreSQL source: where it is, and the limits every query runs under.
#[derive(Debug, Clone)]
pub struct PgSource {
    /// The server, user and database.
    pub target: PgTarget,
    /// Each statement's limit (`None`: no limit).
    pub statement_timeout: Option<Duration>,
}

struct Session {
    client: Client,
    in_transaction: bool,
}

/// A live connection (one per worker).
pub struct PgConn {
    session: Mutex<Session>,
    begin: String,
    target: PgTarget,
}

impl PgSource {
    /// Connects, trying each host in turn; errors never hold the password.
    pub fn connect(&self) -> Result<PgConn, PgError> {
        let target = &self.target;
        let client = slayer_common::pg::connect(target).map_err(PgError::Server)?;
        let timeout_ms = self.statement_timeout.map_or(0, |t| t.as_millis().max(1));
        Ok(PgConn {
            session: Mutex::new(Session {
                client,
                in_transaction: false,
            }),
            begin: format!(
                "BEGIN TRANSACTION READ ONLY; SET LOCAL statement_timeout = {timeout_ms}; \
                 SET LOCAL search_path = pg_catalog, public; SET LOCAL DateStyle = 'ISO, YMD'; \
                 SET LOCAL TimeZone = 'UTC'; SET LOCAL IntervalStyle = 'postgres'"
            ),
            target: target.clone(),
        })
    }
}

impl PgConn {
    /// Runs `sql` in a fresh read-only transaction.
    pub fn query(&self, sql: &str, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>, PgError> {
        let mut session = self.session.lock().map_err(|_| PgError::Poisoned)?;
        let begin = if session.in_transaction {
            // COMMIT also ends a failed transaction (as a rollback).
            format!("COMMIT; {}", self.begin)
        } else {
            self.begin.clone()
        };
        session.in_transaction = true;
        let result = session
            .client
            .batch_execute(&begin)
            .and_then(|()| session.client.query(sql, params));
        result.map_err(|e| PgError::Server(self.target.scrub(&describe(&e))))
    }

    /// Runs `sql`, which returns one row.
    pub fn query_one(&self, sql: &str) -> Result<Row, PgError> {
        let mut rows = self.query(sql, &[])?;
        match rows.len() {
            1 => Ok(rows.remove(0)),
            n => Err(PgError::RowCount(n)),
        }
    }

    /// Ends the open transaction, if any: called when a table's work is done, so an idle
    /// connection holds no lock (and no server-side idle-in-transaction timeout ends it).
    pub fn finish(&self) {
        if let Ok(mut session) = self.session.lock() {
            if session.in_transaction {
                // A failure here only means the connection is gone; the next query says so.
                let _ = session.client.batch_execute("COMMIT");
                session.in_transaction = false;
            }
        }
    }

    /// Text the driver hands back, without the password.
    pub fn scrub(&self, text: &str) -> String {
        self.target.scrub(text)
    }
}

/// Reads column `i` of `row` as `T`, as a one-line error naming the column.
pub fn get<'a, T: postgres::types::FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, PgError> {
    row.try_get(i).map_err(|cause| PgError::Column {
        column: row.columns().get(i).map_or("?", |c| c.name()).to_owned(),
        cause,
    })
}
