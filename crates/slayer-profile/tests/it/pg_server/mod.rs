//! Throwaway PostgreSQL servers for slayer-profile's PostgreSQL tests: the two servers here,
//! the TLS server and its certificates in [`tls`]; one cluster's processes (initdb, start, stop,
//! psql, databases, roles) are the workspace test kit's (`tests/kit/pg_server/`).
//!
//! [`PgServer::shared`] starts one cluster per test process on first use: `initdb` into a fresh
//! temp dir under /tmp, then `pg_ctl start` listening only on a unix socket inside that dir (no
//! TCP). The superuser `admin` connects with trust over the socket; every other role, such as
//! the reader role [`READER`], must pass scram-sha-256 password authentication.
//! [`TlsServer::shared`] starts a second cluster listening on 127.0.0.1 with TLS only (a
//! certificate signed by a throwaway CA that rcgen makes; a plain TCP connection is refused).
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
//! (or the fixture) runs ANALYZE.
// Not every test uses every helper.
#![allow(dead_code)]

#[path = "../../../../../tests/kit/pg_server/mod.rs"]
mod kit;
mod tls;

use std::path::PathBuf;
use std::sync::OnceLock;

use kit::cluster::{self, Cluster};
// The kit's helpers, under the names the tests used before it moved (not every test uses each).
#[allow(unused_imports)]
pub use kit::{path_str, percent_encode, quote_ident, quote_literal, ADMIN};
use kit::{OS_USER, SOCKET_HBA, SOCKET_PORT};
pub use tls::tls_certificates;

/// The login role tests connect as; it must authenticate with [`READER_PASSWORD`].
pub const READER: &str = "slayer_reader";
/// Distinctive, so tests can grep every output stream for it; `:`, `/` and `@` need escaping in
/// a URL.
pub const READER_PASSWORD: &str = "pa:ss/w@rd-5ecret-7f3a";
/// The database [`PgServer::fixture`] loads.
pub const FIXTURE_DB: &str = "fixture";
/// The fixture script (`tests/fixtures/pg_fixture.sql`), run as [`ADMIN`].
pub const FIXTURE_SQL: &str = include_str!("../../fixtures/pg_fixture.sql");
/// The database the TLS server holds: one table `t (id int primary key, colour text)`, 3 rows.
pub const TLS_DB: &str = "tls";

/// The unix-socket-only server of this test process.
pub struct PgServer {
    /// The socket directory (also the cluster's temp dir): the host of every connection.
    pub dir: PathBuf,
    /// The port; with `dir` it names the socket `<dir>/.s.PGSQL.<port>`.
    pub port: u16,
    cluster: Cluster,
    fixture: OnceLock<Result<(), String>>,
}

/// The server of this test process that listens on 127.0.0.1 with TLS only.
pub struct TlsServer {
    /// The cluster's temp dir, which also holds a unix socket that only [`ADMIN`] may use.
    pub dir: PathBuf,
    /// The TCP port on 127.0.0.1 (also the port of the admin socket in `dir`).
    pub port: u16,
    /// Always 127.0.0.1; the certificate names both `localhost` and `127.0.0.1`.
    pub host: &'static str,
    /// The CA certificate (PEM) that signed the server's certificate: pass it as `sslrootcert`.
    pub ca_path: PathBuf,
    cluster: Cluster,
}

/// The shared socket-only server (the same as [`PgServer::shared`]).
pub fn shared() -> &'static PgServer {
    PgServer::shared()
}

/// The shared TLS server (the same as [`TlsServer::shared`]).
pub fn tls() -> &'static TlsServer {
    TlsServer::shared()
}

/// The server `cell` holds, started by `start` on first use; panics if it cannot start.
fn started<T>(
    cell: &'static OnceLock<Result<T, String>>,
    start: fn() -> Result<T, String>,
    what: &str,
) -> &'static T {
    match cell.get_or_init(start) {
        Ok(server) => server,
        Err(e) => panic!("could not start the test PostgreSQL {what}: {e}"),
    }
}

impl PgServer {
    /// The server of this test process, started on first use.
    pub fn shared() -> &'static PgServer {
        static SHARED: OnceLock<Result<PgServer, String>> = OnceLock::new();
        started(&SHARED, PgServer::start, "server")
    }

    fn start() -> Result<PgServer, String> {
        let mut cluster = Cluster::create(SOCKET_HBA)?;
        cluster.start("", SOCKET_PORT, "")?;
        create_reader(&cluster)?;
        Ok(PgServer {
            dir: cluster.root.clone(),
            port: cluster.port,
            cluster,
            fixture: OnceLock::new(),
        })
    }

    /// `postgres://slayer_reader:<password>@<socket dir>:<port>/<db>`, every part
    /// percent-encoded (the socket dir as `%2Ftmp%2Fslpg…`, as libpq reads it).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{READER}:{}@{}:{}/{}",
            percent_encode(READER_PASSWORD),
            percent_encode(&path_str(&self.dir)),
            self.port,
            percent_encode(db)
        )
    }

    /// libpq's environment for [`READER`] on `db`: PGHOST (the socket dir), PGPORT, PGUSER,
    /// PGPASSWORD and PGDATABASE.
    pub fn env(&self, db: &str) -> Vec<(String, String)> {
        vec![
            ("PGHOST".to_owned(), path_str(&self.dir)),
            ("PGPORT".to_owned(), self.port.to_string()),
            ("PGUSER".to_owned(), READER.to_owned()),
            ("PGPASSWORD".to_owned(), READER_PASSWORD.to_owned()),
            ("PGDATABASE".to_owned(), db.to_owned()),
        ]
    }

    /// The database [`FIXTURE_DB`], loaded from [`FIXTURE_SQL`] once per process and granted to
    /// [`READER`].
    pub fn fixture(&self) -> &'static str {
        let loaded = self.fixture.get_or_init(|| {
            self.cluster.create_database_result(FIXTURE_DB)?;
            self.cluster.psql_result(FIXTURE_DB, FIXTURE_SQL, false)?;
            self.cluster
                .psql_result(FIXTURE_DB, &grant_reader_sql(FIXTURE_DB), false)?;
            Ok(())
        });
        if let Err(e) = loaded {
            panic!("could not load the PostgreSQL fixture: {e}");
        }
        FIXTURE_DB
    }
}

impl PgServer {
    /// Lets [`READER`] connect to `db` and read every table, view and materialized view of
    /// every non-system schema there (as they exist now: call it after loading the data).
    pub fn grant_reader(&self, db: &str) {
        self.psql(db, &grant_reader_sql(db));
    }
}

/// The cluster's own helpers (psql, query, create_database, log) serve both servers.
impl std::ops::Deref for PgServer {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

impl std::ops::Deref for TlsServer {
    type Target = Cluster;
    fn deref(&self) -> &Cluster {
        &self.cluster
    }
}

/// Creates [`READER`], who must authenticate with [`READER_PASSWORD`].
fn create_reader(cluster: &Cluster) -> Result<(), String> {
    cluster.create_role_result(READER, READER_PASSWORD)
}

fn grant_reader_sql(db: &str) -> String {
    format!(
        "GRANT CONNECT ON DATABASE {db} TO {READER};
         DO $grant$
         DECLARE s name;
         BEGIN
             FOR s IN SELECT nspname FROM pg_catalog.pg_namespace
                      WHERE nspname <> 'information_schema' AND nspname NOT LIKE 'pg\\_%'
             LOOP
                 EXECUTE format('GRANT USAGE ON SCHEMA %I TO {READER}', s);
                 EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO {READER}', s);
             END LOOP;
         END
         $grant$;",
        db = quote_ident(db)
    )
}
