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
use postgres::{Client, NoTls, Row};

use super::dsn::{PgTarget, SslMode};
use super::tls;

/// Why a PostgreSQL connection or query failed. Whatever the server or a library says is
/// passed through [`PgTarget::scrub`] first, so no message holds the password.
#[derive(Debug, thiserror::Error)]
pub enum PgError {
    /// TLS could not be set up (no usable root certificate, a bad one).
    #[error("{0}")]
    Tls(String),
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
        let mut config = postgres::Config::new();
        for endpoint in &target.endpoints {
            if endpoint.is_socket() {
                config.host_path(&endpoint.host);
            } else {
                config.host(&endpoint.host);
            }
            config.port(endpoint.port);
        }
        config
            .user(&target.user)
            .dbname(&target.dbname)
            .application_name(&target.application_name);
        if let Some(password) = target.password() {
            config.password(password);
        }
        if let Some(timeout) = target.connect_timeout {
            config.connect_timeout(timeout);
        }
        // libpq ignores sslmode on unix-domain sockets, where the server offers no TLS.
        let all_sockets = target.endpoints.iter().all(|e| e.is_socket());
        let client = if all_sockets || target.sslmode == SslMode::Disable {
            config.ssl_mode(postgres::config::SslMode::Disable);
            config.connect(NoTls)
        } else {
            config.ssl_mode(match target.sslmode {
                SslMode::Disable | SslMode::Allow | SslMode::Prefer => {
                    postgres::config::SslMode::Prefer
                }
                SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => {
                    postgres::config::SslMode::Require
                }
            });
            let connector =
                tls::connector(target).map_err(|e| PgError::Tls(target.scrub(&e.to_string())))?;
            config.connect(connector)
        }
        .map_err(|e| PgError::Server(target.scrub(&describe(&e))))?;
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

/// A driver error as one line: the server's own message when there is one, else the driver's
/// text followed by each cause it does not already name (a TLS failure says why only there).
fn describe(e: &postgres::Error) -> String {
    let text = match e.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => {
            let mut text = e.to_string();
            for cause in std::iter::successors(std::error::Error::source(e), |c| c.source()) {
                let cause = cause.to_string();
                if !text.contains(&cause) {
                    text.push_str(": ");
                    text.push_str(&cause);
                }
            }
            text
        }
    };
    text.lines().next().unwrap_or("").to_owned()
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
