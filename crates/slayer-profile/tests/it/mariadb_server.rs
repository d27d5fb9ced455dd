//! The throwaway MariaDB servers of slayer-profile's MariaDB tests, started by
//! `scripts/mariadb_server.sh` in a temp dir under /tmp: [`MariaServer::shared`] holds the
//! database [`FIXTURE_DB`] (the shop's tables, `examples/shop/mariadb.sql`, and the odd cases
//! of `tests/fixtures/mariadb_fixture.sql`), reached over its unix socket or TCP on 127.0.0.1;
//! [`MariaServer::tls`] takes TLS connections only (a certificate signed by a throwaway CA).
//!
//! Statics are never dropped, so each server gets a detached watchdog shell, in its own process
//! group, that waits for the test process to exit (however it exits), then stops the server
//! and deletes the temp dir. The programs are Debian's `mariadb-server` (.ci/run installs it);
//! without them the tests fail saying how to install it.
// Not every test uses every helper.
#![allow(dead_code)]

use std::io::Write as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;

use crate::pg_server::{percent_encode, tls_certificates};

/// The database the fixture is loaded into.
pub const FIXTURE_DB: &str = "fixture";
/// The reader tests connect as, with [`READER_PASSWORD`] (SELECT on the fixture).
pub const READER: &str = "slayer_reader";
/// Distinctive, so tests can grep every output stream for it; `:`, `/` and `@` need escaping in
/// a URL.
pub const READER_PASSWORD: &str = "my:ss/w@rd-5ecret-9c1e";
/// A reader granted SELECT on every fixture table but `secret` (INSERT there only).
pub const PARTIAL_READER: &str = "partial_reader";
const FIXTURE_SQL: &str = include_str!("../fixtures/mariadb_fixture.sql");

/// One server.
pub struct MariaServer {
    /// The temp dir: data, socket, log.
    pub dir: PathBuf,
    /// The unix socket.
    pub socket: PathBuf,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// For the TLS server: the CA that signed its certificate.
    pub ca_path: Option<PathBuf>,
    _watchdog: Child,
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

const WATCHDOG: &str = r#"while kill -0 "$1" 2>/dev/null; do sleep 1; done
"$2" stop "$3"
rm -rf "$3""#;

impl MariaServer {
    /// The fixture server of this test process; panics (saying why) when it cannot start.
    pub fn shared() -> &'static MariaServer {
        static SHARED: OnceLock<Result<MariaServer, String>> = OnceLock::new();
        match SHARED.get_or_init(|| {
            let server = MariaServer::start("")?;
            server.load_fixture()?;
            Ok(server)
        }) {
            Ok(server) => server,
            Err(e) => panic!("could not start the test MariaDB server: {e}"),
        }
    }

    /// A server that takes TLS connections only, with one database `tls` holding a table `t`.
    pub fn tls() -> &'static MariaServer {
        static TLS: OnceLock<Result<MariaServer, String>> = OnceLock::new();
        match TLS.get_or_init(MariaServer::start_tls) {
            Ok(server) => server,
            Err(e) => panic!("could not start the TLS test MariaDB server: {e}"),
        }
    }

    fn start_tls() -> Result<MariaServer, String> {
        let dir = tempfile::Builder::new()
            .prefix("slmy")
            .tempdir_in("/tmp")
            .map_err(|e| e.to_string())?
            .keep();
        let (ca, cert, key) = tls_certificates(&dir)?;
        let options = format!(
            "--ssl-ca={} --ssl-cert={} --ssl-key={} --require-secure-transport=ON",
            ca.display(),
            cert.display(),
            key.display()
        );
        let mut server = MariaServer::start_in(dir, &options)?;
        server.ca_path = Some(ca);
        server.sql(
            None,
            &format!(
                "CREATE DATABASE tls; CREATE TABLE tls.t (id INT PRIMARY KEY, colour VARCHAR(10));
                 INSERT INTO tls.t VALUES (1, 'red'), (2, 'blue'), (3, 'red');
                 CREATE USER '{READER}'@'%' IDENTIFIED BY '{READER_PASSWORD}';
                 GRANT SELECT ON tls.* TO '{READER}'@'%';"
            ),
        )?;
        Ok(server)
    }

    /// A server of its own (a test that stops it), empty.
    pub fn start(options: &str) -> Result<MariaServer, String> {
        let dir = tempfile::Builder::new()
            .prefix("slmy")
            .tempdir_in("/tmp")
            .map_err(|e| format!("creating a temp dir in /tmp: {e}"))?
            .keep();
        MariaServer::start_in(dir, options)
    }

    fn start_in(dir: PathBuf, options: &str) -> Result<MariaServer, String> {
        let script = workspace_root().join("scripts/mariadb_server.sh");
        let watchdog = Command::new("sh")
            .args(["-c", WATCHDOG, "slmy-watchdog"])
            .arg(std::process::id().to_string())
            .arg(&script)
            .arg(&dir)
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting the cleanup watchdog (sh): {e}"))?;
        let port = free_port();
        let out = Command::new(&script)
            .arg("start")
            .arg(&dir)
            .arg(port.to_string())
            .env("SLAYER_MARIADB_OPTS", options)
            .output()
            .map_err(|e| format!("running {}: {e}", script.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} start failed: {}",
                script.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(MariaServer {
            socket: dir.join("mysqld.sock"),
            dir,
            port,
            ca_path: None,
            _watchdog: watchdog,
        })
    }

    fn load_fixture(&self) -> Result<(), String> {
        self.sql(None, &format!("CREATE DATABASE {FIXTURE_DB}"))?;
        let shop = std::fs::read_to_string(workspace_root().join("examples/shop/mariadb.sql"))
            .map_err(|e| format!("reading examples/shop/mariadb.sql: {e}"))?;
        self.sql(Some(FIXTURE_DB), &shop)?;
        self.sql(Some(FIXTURE_DB), FIXTURE_SQL)?;
        let tables = self.sql(
            None,
            &format!(
                "SELECT TABLE_NAME FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = '{FIXTURE_DB}' AND TABLE_NAME <> 'secret'"
            ),
        )?;
        let mut grants = format!(
            "CREATE USER '{READER}'@'%' IDENTIFIED BY '{READER_PASSWORD}';
             CREATE USER '{READER}'@'localhost' IDENTIFIED BY '{READER_PASSWORD}';
             GRANT SELECT ON {FIXTURE_DB}.* TO '{READER}'@'%';
             GRANT SELECT ON {FIXTURE_DB}.* TO '{READER}'@'localhost';
             CREATE USER '{PARTIAL_READER}'@'localhost';
             GRANT INSERT ON {FIXTURE_DB}.secret TO '{PARTIAL_READER}'@'localhost';"
        );
        for table in tables.lines() {
            grants.push_str(&format!(
                "GRANT SELECT ON {FIXTURE_DB}.`{table}` TO '{PARTIAL_READER}'@'localhost';"
            ));
        }
        self.sql(None, &grants)?;
        Ok(())
    }

    /// Runs `sql` as root over the socket (from the workspace root, local files allowed):
    /// its output, tab-separated without headers.
    pub fn sql(&self, db: Option<&str>, sql: &str) -> Result<String, String> {
        let mut cmd = Command::new(client());
        cmd.args([
            "--no-defaults",
            "--default-character-set=utf8mb4",
            "--local-infile=1",
            "-N",
            "-B",
            "-uroot",
            "-S",
        ])
        .arg(&self.socket)
        .args(db)
        .current_dir(workspace_root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("running the client: {e}"))?;
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(sql.as_bytes())
            .map_err(|e| format!("writing to the client: {e}"))?;
        let out = child.wait_with_output().map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "SQL failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `sql` that must succeed.
    #[track_caller]
    pub fn run(&self, db: Option<&str>, sql: &str) -> String {
        self.sql(db, sql).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A URL for `user` (with `password`) on `db` over the unix socket.
    pub fn socket_url(&self, db: &str, user: &str, password: Option<&str>) -> String {
        let auth = match password {
            Some(p) => format!("{}:{}", percent_encode(user), percent_encode(p)),
            None => percent_encode(user),
        };
        format!(
            "mysql://{auth}@{}/{db}",
            percent_encode(&self.socket.to_string_lossy())
        )
    }

    /// A URL for `user` with `password` on `db` over TCP on 127.0.0.1.
    pub fn tcp_url(&self, db: &str, user: &str, password: &str) -> String {
        format!(
            "mysql://{}:{}@127.0.0.1:{}/{db}",
            percent_encode(user),
            percent_encode(password),
            self.port
        )
    }

    /// Stops the server (the watchdog deletes its folder later).
    pub fn stop(&self) {
        let _ = Command::new(workspace_root().join("scripts/mariadb_server.sh"))
            .arg("stop")
            .arg(&self.dir)
            .status();
    }
}

fn client() -> &'static str {
    if Path::new("/usr/bin/mariadb").exists() {
        "/usr/bin/mariadb"
    } else {
        "mysql"
    }
}
