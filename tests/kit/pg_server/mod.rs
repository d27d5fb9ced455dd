//! Throwaway PostgreSQL servers for any crate's tests: one cluster's processes in [`cluster`],
//! and [`SocketServer`], a cluster listening only on a unix socket.
//!
//! Not part of `kit/mod.rs` (most binaries' tests need no server): a crate's tests include it
//! with `#[path = "<…>/tests/kit/pg_server/mod.rs"] mod pg_server;`. It needs `tempfile`.
//!
//! [`SocketServer::start`] runs `initdb` into a fresh temp dir under /tmp, then `pg_ctl start`
//! listening only on a unix socket inside that dir (no TCP). The superuser [`ADMIN`] connects
//! with trust over the socket; every other role must pass scram-sha-256 password
//! authentication ([`cluster::Cluster::create_role`]). [`SocketServer::shared`] is one such
//! server per test process; a test that stops or restarts its server starts its own.
//!
//! Statics are never dropped, so each cluster gets a detached watchdog shell, in its own process
//! group, that waits for the test process to exit (however it exits, killed included), then
//! stops the server (`pg_ctl stop -m immediate`) and deletes the temp dir.
//!
//! PostgreSQL refuses to run as root: when the tests run as root, `initdb`, `pg_ctl` (and so the
//! server) run as the OS user `postgres` (`runuser -u postgres`), which owns the temp dir. The
//! server binaries come from `pg_config --bindir`, else the highest `/usr/lib/postgresql/*/bin`
//! (Debian), else `PATH`.
//!
//! The server runs with timezone=UTC and autovacuum off, so statistics only change when a test
//! (or a fixture) runs ANALYZE.
// Not every test uses every helper.
#![allow(dead_code)]

pub mod cluster;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cluster::Cluster;

/// The superuser; trusted over the unix socket, so it needs no password.
pub const ADMIN: &str = "admin";
/// The OS user the server runs as when the tests run as root.
pub const OS_USER: &str = "postgres";
/// The socket-only server's port: it only names the socket file (`.s.PGSQL.5432`).
pub const SOCKET_PORT: u16 = 5432;
/// pg_hba.conf of a socket-only server: the superuser trusted, every other role by password.
pub const SOCKET_HBA: &str = "local all admin trust\nlocal all all scram-sha-256\n";

/// A cluster that listens only on a unix socket in its temp dir.
pub struct SocketServer {
    /// The socket directory (also the cluster's temp dir): the host of every connection.
    pub dir: PathBuf,
    /// The port; with `dir` it names the socket `<dir>/.s.PGSQL.<port>`.
    pub port: u16,
    cluster: Cluster,
}

impl SocketServer {
    /// The server of this test process, started on first use; panics if it cannot start.
    pub fn shared() -> &'static SocketServer {
        static SHARED: OnceLock<Result<SocketServer, String>> = OnceLock::new();
        match SHARED.get_or_init(SocketServer::start_result) {
            Ok(server) => server,
            Err(e) => panic!("could not start the test PostgreSQL server: {e}"),
        }
    }

    /// A server of its own (for a test that stops or restarts it); panics if it cannot start.
    pub fn start() -> SocketServer {
        SocketServer::start_result()
            .unwrap_or_else(|e| panic!("could not start a test PostgreSQL server: {e}"))
    }

    /// A server of its own, or why it could not start.
    pub fn start_result() -> Result<SocketServer, String> {
        let mut cluster = Cluster::create(SOCKET_HBA)?;
        cluster.start("", SOCKET_PORT, "")?;
        Ok(SocketServer {
            dir: cluster.root.clone(),
            port: cluster.port,
            cluster,
        })
    }

    /// A libpq key/value connection string for `user` (with `password`, none for [`ADMIN`]) on
    /// `db` over the socket.
    pub fn conninfo(&self, db: &str, user: &str, password: Option<&str>) -> String {
        let quote = |v: &str| format!("'{}'", v.replace('\\', "\\\\").replace('\'', "\\'"));
        let mut out = format!(
            "host={} port={} user={} dbname={}",
            quote(&path_str(&self.dir)),
            self.port,
            quote(user),
            quote(db)
        );
        if let Some(password) = password {
            write!(out, " password={}", quote(password)).expect("writing to a String");
        }
        out
    }

    /// `postgres://<user>:<password>@<socket dir>:<port>/<db>`, every part percent-encoded
    /// (the socket dir as `%2Ftmp%2Fslpg…`, as libpq reads it).
    pub fn url(&self, db: &str, user: &str, password: &str) -> String {
        format!(
            "postgres://{}:{}@{}:{}/{}",
            percent_encode(user),
            percent_encode(password),
            percent_encode(&path_str(&self.dir)),
            self.port,
            percent_encode(db)
        )
    }
}

/// The cluster's own helpers (psql, query, create_database, roles, stop and restart, log).
impl std::ops::Deref for SocketServer {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

/// `s` with every byte but A-Z a-z 0-9 `-._~` percent-encoded (RFC 3986 unreserved characters).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            write!(out, "%{b:02X}").expect("writing to a String");
        }
    }
    out
}

/// `name` as a double-quoted SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `value` as a single-quoted SQL string literal.
pub fn quote_literal(value: &str) -> String {
    format!("'{}'", value.replace('\'', "''"))
}

/// A path as UTF-8 (the temp dirs here always are).
pub fn path_str(path: &Path) -> String {
    path.to_str()
        .unwrap_or_else(|| panic!("non-UTF-8 path {}", path.display()))
        .to_owned()
}
