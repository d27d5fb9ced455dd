//! One MySQL / MariaDB connection, and every query run through it.
//!
//! The session is set up once, when it connects: read-only transactions, `ANSI_QUOTES` (so
//! the double-quoted identifiers every engine's queries use name columns, as in the other
//! dialects), UTC, utf8mb4, and the statement timeout (`max_statement_time` on MariaDB,
//! `max_execution_time` on MySQL). Each query is its own autocommitted transaction, so no idle
//! connection holds a lock on a table.

use std::sync::Mutex;
use std::time::Duration;

use mysql::prelude::Queryable as _;
use mysql::{Conn, OptsBuilder, Row, SslOpts};

use super::dsn::{MyTarget, SslMode};

/// Why a connection or query failed. Whatever the server or the driver says is passed through
/// [`MyTarget::scrub`] first, so no message holds the password.
#[derive(Debug, thiserror::Error)]
pub enum MyError {
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
    #[error("reading column {column}: {cause}")]
    Column {
        /// The column's position.
        column: usize,
        /// The driver's message.
        cause: String,
    },
}

/// A MySQL / MariaDB source: where it is, and the limits every query runs under.
#[derive(Debug, Clone)]
pub struct MySource {
    /// The server, user and database.
    pub target: MyTarget,
    /// Each statement's limit (`None`: no limit).
    pub statement_timeout: Option<Duration>,
}

/// A live connection (one per worker), connected again when the server drops it (killed,
/// restarted, timed out).
pub struct MyConn {
    conn: Mutex<Option<Conn>>,
    source: MySource,
}

impl MySource {
    /// Connects (TLS as the target's `ssl-mode` says) and sets the session up; errors never
    /// hold the password.
    pub fn connect(&self) -> Result<MyConn, MyError> {
        let conn = self.session()?;
        Ok(MyConn {
            conn: Mutex::new(Some(conn)),
            source: self.clone(),
        })
    }

    /// A new session, set up.
    fn session(&self) -> Result<Conn, MyError> {
        let target = &self.target;
        let scrub = |e: mysql::Error| MyError::Server(target.scrub(&one_line(&e)));
        let tls = match (&target.socket, target.ssl_mode) {
            // A unix socket is local: the server's own clients send no TLS over it either.
            (Some(_), _) | (None, SslMode::Disabled) => None,
            (None, mode) => Some(ssl_opts(target, mode)),
        };
        let mut conn = match Conn::new(self.opts(tls)) {
            Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported))
                if target.ssl_mode == SslMode::Preferred =>
            {
                Conn::new(self.opts(None)).map_err(scrub)?
            }
            Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported)) => {
                return Err(MyError::Server(
                    "the server does not offer TLS, which this ssl-mode requires".into(),
                ))
            }
            other => other.map_err(scrub)?,
        };
        let version: Option<String> = conn.query_first("SELECT VERSION()").map_err(scrub)?;
        let mariadb = version.unwrap_or_default().contains("MariaDB");
        let mut setup = vec![
            "SET NAMES utf8mb4".to_owned(),
            "SET SESSION sql_mode = 'ANSI_QUOTES'".to_owned(),
            "SET SESSION time_zone = '+00:00'".to_owned(),
            "SET SESSION TRANSACTION READ ONLY".to_owned(),
        ];
        if let Some(limit) = self.statement_timeout {
            setup.push(if mariadb {
                format!(
                    "SET SESSION max_statement_time = {}",
                    limit.as_secs_f64().max(0.001)
                )
            } else {
                format!(
                    "SET SESSION max_execution_time = {}",
                    limit.as_millis().max(1)
                )
            });
        }
        for statement in setup {
            conn.query_drop(statement).map_err(scrub)?;
        }
        Ok(conn)
    }

    fn opts(&self, tls: Option<SslOpts>) -> OptsBuilder {
        let t = &self.target;
        // A read that waits longer than a statement may run (and then some) is a dead
        // connection, not a slow query.
        let io_limit = self
            .statement_timeout
            .map(|limit| limit + Duration::from_secs(30));
        let builder = OptsBuilder::new()
            .user(Some(t.user.clone()))
            .pass(t.password().map(str::to_owned))
            .db_name(t.database.clone())
            // The crate would otherwise move a localhost connection to the server's socket.
            .prefer_socket(false)
            .tcp_connect_timeout(Some(t.connect_timeout))
            .read_timeout(io_limit)
            .write_timeout(io_limit)
            .ssl_opts(tls);
        match &t.socket {
            Some(socket) => builder.socket(Some(socket.to_string_lossy().into_owned())),
            None => builder
                .ip_or_hostname(Some(t.host.clone()))
                .tcp_port(t.port),
        }
    }
}

fn ssl_opts(target: &MyTarget, mode: SslMode) -> SslOpts {
    let verify = matches!(mode, SslMode::VerifyCa | SslMode::VerifyIdentity);
    SslOpts::default()
        .with_root_cert_path(target.ssl_ca.clone())
        .with_danger_accept_invalid_certs(!verify)
        .with_danger_skip_domain_validation(mode != SslMode::VerifyIdentity)
}

impl MyConn {
    /// Runs `sql` (text protocol), every row.
    pub fn query(&self, sql: &str) -> Result<Vec<Row>, MyError> {
        self.with_conn(|conn| conn.query(sql))
    }

    /// Runs `sql` with `params` (a prepared statement), every row.
    pub fn exec(&self, sql: &str, params: Vec<mysql::Value>) -> Result<Vec<Row>, MyError> {
        self.with_conn(|conn| conn.exec(sql, params.clone()))
    }

    /// The database the URL named (`None`: every database the user can see).
    pub fn database(&self) -> Option<&str> {
        self.source.target.database.as_deref()
    }

    /// Runs `sql`, which returns one row.
    pub fn query_one(&self, sql: &str) -> Result<Row, MyError> {
        let mut rows = self.query(sql)?;
        match rows.len() {
            1 => Ok(rows.remove(0)),
            n => Err(MyError::RowCount(n)),
        }
    }

    /// Runs `run` on the connection, connecting first when the last one was lost. A query
    /// whose connection is lost under it runs once more on a new one (every query here only
    /// reads), so a killed connection or a restarted server costs a retry, not a table.
    fn with_conn<T>(
        &self,
        run: impl Fn(&mut Conn) -> Result<T, mysql::Error>,
    ) -> Result<T, MyError> {
        let mut slot = self.conn.lock().map_err(|_| MyError::Poisoned)?;
        let mut retried = false;
        loop {
            let conn = match slot.take() {
                Some(conn) => slot.insert(conn),
                None => slot.insert(self.source.session()?),
            };
            match run(conn) {
                Ok(value) => return Ok(value),
                Err(e) if is_connection_lost(&e) => {
                    *slot = None;
                    if retried {
                        return Err(self.error(&e));
                    }
                    retried = true;
                }
                Err(e) => return Err(self.error(&e)),
            }
        }
    }

    fn error(&self, e: &mysql::Error) -> MyError {
        MyError::Server(self.source.target.scrub(&one_line(e)))
    }
}

/// Whether the connection is gone (rather than the query refused): I/O failed, the driver saw
/// the stream go out of step, or the server said it was killed, went away or is shutting down.
fn is_connection_lost(e: &mysql::Error) -> bool {
    match e {
        mysql::Error::IoError(_) => true,
        mysql::Error::DriverError(
            mysql::DriverError::PacketOutOfSync | mysql::DriverError::Timeout,
        ) => true,
        // ER_CONNECTION_KILLED, CR_SERVER_GONE_ERROR, CR_SERVER_LOST, ER_SERVER_SHUTDOWN.
        mysql::Error::MySqlError(m) => matches!(m.code, 1927 | 2006 | 2013 | 1053),
        _ => false,
    }
}

/// The driver's message on one line: the server's own words and code for a server error.
fn one_line(e: &mysql::Error) -> String {
    let text = match e {
        mysql::Error::MySqlError(m) => format!("{} (error {})", m.message, m.code),
        mysql::Error::IoError(io) => format!("the connection was lost: {io}"),
        other => other.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads column `i` of `row` as `T`, as a one-line error naming the column.
pub fn get<T: mysql::prelude::FromValue>(row: &Row, i: usize) -> Result<T, MyError> {
    let value = row.as_ref(i).cloned().ok_or_else(|| MyError::Column {
        column: i,
        cause: "no such column".into(),
    })?;
    mysql::from_value_opt(value).map_err(|e| MyError::Column {
        column: i,
        cause: e.to_string(),
    })
}
