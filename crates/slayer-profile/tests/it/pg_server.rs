//! Throwaway PostgreSQL servers for slayer-profile's PostgreSQL tests.
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

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, OnceLock, PoisonError};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// The superuser; trusted over the unix socket, so it needs no password.
pub const ADMIN: &str = "admin";
/// The login role tests connect as; it must authenticate with [`READER_PASSWORD`].
pub const READER: &str = "slayer_reader";
/// Distinctive, so tests can grep every output stream for it; `:`, `/` and `@` need escaping in
/// a URL.
pub const READER_PASSWORD: &str = "pa:ss/w@rd-5ecret-7f3a";
/// The database [`PgServer::fixture`] loads.
pub const FIXTURE_DB: &str = "fixture";
/// The fixture script (`tests/fixtures/pg_fixture.sql`), run as [`ADMIN`].
pub const FIXTURE_SQL: &str = include_str!("../fixtures/pg_fixture.sql");
/// The database the TLS server holds: one table `t (id int primary key, colour text)`, 3 rows.
pub const TLS_DB: &str = "tls";

/// The socket-only server's port: it only names the socket file (`.s.PGSQL.5432`).
const SOCKET_PORT: u16 = 5432;
/// The OS user the server runs as when the tests run as root.
const OS_USER: &str = "postgres";

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

impl PgServer {
    /// The server of this test process, started on first use.
    pub fn shared() -> &'static PgServer {
        static SHARED: OnceLock<Result<PgServer, String>> = OnceLock::new();
        match SHARED.get_or_init(PgServer::start) {
            Ok(server) => server,
            Err(e) => panic!("could not start the test PostgreSQL server: {e}"),
        }
    }

    fn start() -> Result<PgServer, String> {
        let mut cluster = Cluster::create("local all admin trust\nlocal all all scram-sha-256\n")?;
        cluster.start("", SOCKET_PORT, "")?;
        cluster.create_reader()?;
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

/// The cluster's own helpers (psql, query, create_database, grant_reader, log) serve both
/// servers.
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

impl TlsServer {
    /// The TLS server of this test process, started on first use, with [`TLS_DB`] loaded and
    /// granted to [`READER`].
    pub fn shared() -> &'static TlsServer {
        static TLS: OnceLock<Result<TlsServer, String>> = OnceLock::new();
        match TLS.get_or_init(TlsServer::start) {
            Ok(server) => server,
            Err(e) => panic!("could not start the test PostgreSQL TLS server: {e}"),
        }
    }

    fn start() -> Result<TlsServer, String> {
        // No plain `host` line: a TCP connection without TLS is refused.
        let mut cluster =
            Cluster::create("local all admin trust\nhostssl all all 127.0.0.1/32 scram-sha-256\n")?;
        let (cert, key) = write_certs(&cluster.root, cluster.run_as.as_ref())?;
        let ssl = format!(
            " -c ssl=on -c ssl_cert_file='{}' -c ssl_key_file='{}'",
            path_str(&cert),
            path_str(&key)
        );
        // The port is free when picked but may be taken before the server binds it: retry.
        let mut tries = 0;
        loop {
            tries += 1;
            match cluster.start("127.0.0.1", free_port()?, &ssl) {
                Ok(()) => break,
                Err(e) if tries < 3 && e.contains("already in use") => {}
                Err(e) => return Err(e),
            }
        }
        cluster.create_reader()?;
        cluster.create_database_result(TLS_DB)?;
        cluster.psql_result(
            TLS_DB,
            "CREATE TABLE t (id integer PRIMARY KEY, colour text);
             COMMENT ON TABLE t IS 'Read over TLS';
             INSERT INTO t VALUES (1, 'red'), (2, 'green'), (3, 'blue');
             ANALYZE t;",
            false,
        )?;
        cluster.psql_result(TLS_DB, &grant_reader_sql(TLS_DB), false)?;
        Ok(TlsServer {
            dir: cluster.root.clone(),
            port: cluster.port,
            host: "127.0.0.1",
            ca_path: cluster.root.join("ca.pem"),
            cluster,
        })
    }

    /// The database holding table `t` ([`TLS_DB`]).
    pub fn db(&self) -> &'static str {
        TLS_DB
    }

    /// `postgres://slayer_reader:<password>@127.0.0.1:<port>/<db>` with no TLS parameters (add
    /// `?sslmode=…&sslrootcert=…`, or see [`TlsServer::verify_full_url`]).
    pub fn url(&self, db: &str) -> String {
        format!(
            "postgres://{READER}:{}@{}:{}/{}",
            percent_encode(READER_PASSWORD),
            self.host,
            self.port,
            percent_encode(db)
        )
    }

    /// [`TlsServer::url`] with `?sslmode=verify-full&sslrootcert=<ca_path, percent-encoded>`.
    pub fn verify_full_url(&self, db: &str) -> String {
        format!(
            "{}?sslmode=verify-full&sslrootcert={}",
            self.url(db),
            percent_encode(&path_str(&self.ca_path))
        )
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

fn path_str(path: &Path) -> String {
    path.to_str()
        .unwrap_or_else(|| panic!("non-UTF-8 path {}", path.display()))
        .to_owned()
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

/// A free TCP port on 127.0.0.1 (free when picked).
fn free_port() -> Result<u16, String> {
    let listener =
        TcpListener::bind("127.0.0.1:0").map_err(|e| format!("binding 127.0.0.1:0: {e}"))?;
    listener
        .local_addr()
        .map(|addr| addr.port())
        .map_err(|e| format!("reading the bound port: {e}"))
}

/// The PostgreSQL programs the clusters run.
struct Bins {
    initdb: PathBuf,
    pg_ctl: PathBuf,
    psql: PathBuf,
}

impl Bins {
    fn find() -> Result<Bins, String> {
        let dir = server_bin_dir().ok_or_else(|| {
            "no PostgreSQL server binaries found (initdb and pg_ctl: not in `pg_config --bindir`, \
             /usr/lib/postgresql/*/bin or PATH); install Debian's `postgresql` package \
             (`sudo apt-get install postgresql`; .ci/run installs it)"
                .to_owned()
        })?;
        let psql = dir.join("psql");
        Ok(Bins {
            initdb: dir.join("initdb"),
            pg_ctl: dir.join("pg_ctl"),
            psql: if psql.is_file() {
                psql
            } else {
                PathBuf::from("psql")
            },
        })
    }
}

fn has_server(dir: &Path) -> bool {
    dir.join("initdb").is_file() && dir.join("pg_ctl").is_file()
}

fn server_bin_dir() -> Option<PathBuf> {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_server(&dir) {
            return Some(dir);
        }
    }
    // Debian: /usr/lib/postgresql/<major>/bin, the newest first.
    let mut debian: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let dir = entry.path().join("bin");
            has_server(&dir).then_some((major, dir))
        })
        .collect();
    debian.sort();
    if let Some((_, dir)) = debian.pop() {
        return Some(dir);
    }
    std::env::split_paths(&std::env::var_os("PATH")?).find(|dir: &PathBuf| has_server(dir))
}

/// The OS user the server runs as when the test process is root.
struct RunAs {
    runuser: PathBuf,
    uid: u32,
    gid: u32,
}

/// `None` when the test process may run the server itself; `Some` (the `postgres` user) when it
/// is root, judged by the owner of the temp dir it just made.
fn run_as_for(dir: &Path) -> Result<Option<RunAs>, String> {
    let meta = fs::metadata(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if meta.uid() != 0 {
        return Ok(None);
    }
    let id = |flag: &str| -> Result<u32, String> {
        let out = Command::new("id")
            .args([flag, OS_USER])
            .output()
            .map_err(|e| format!("running id: {e}"))?;
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .map_err(|_| {
                format!(
                    "the tests run as root, so PostgreSQL must run as the OS user `{OS_USER}`, \
                     which was not found (Debian's `postgresql` package creates it): {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )
            })
    };
    let runuser = [
        "/usr/sbin/runuser",
        "/sbin/runuser",
        "/usr/bin/runuser",
        "/bin/runuser",
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|path| path.is_file())
    .unwrap_or_else(|| PathBuf::from("runuser"));
    Ok(Some(RunAs {
        runuser,
        uid: id("-u")?,
        gid: id("-g")?,
    }))
}

/// Waits for the test process ($1) to exit, then stops the server (pg_ctl $2, data dir $3, as
/// user $6 through runuser $5 when $5 is set) and deletes the temp dir ($4). Ignores SIGINT and
/// SIGHUP, and runs in its own process group, so a Ctrl-C that kills the tests does not kill it.
const WATCHDOG: &str = r#"trap '' HUP INT
while kill -0 "$1" 2>/dev/null; do sleep 0.5; done
if [ -n "$5" ]; then
    "$5" -u "$6" -- "$2" -D "$3" -m immediate -w -t 30 stop
else
    "$2" -D "$3" -m immediate -w -t 30 stop
fi
rm -rf "$4""#;

fn spawn_watchdog(
    bins: &Bins,
    root: &Path,
    data: &Path,
    run_as: Option<&RunAs>,
) -> std::io::Result<Child> {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(WATCHDOG)
        .arg("slpg-watchdog")
        .arg(std::process::id().to_string())
        .arg(&bins.pg_ctl)
        .arg(data)
        .arg(root);
    if let Some(user) = run_as {
        cmd.arg(&user.runuser).arg(OS_USER);
    } else {
        cmd.arg("").arg("");
    }
    clear_pg_env(&mut cmd);
    cmd.current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    cmd.spawn()
}

/// libpq and the server read PG* variables (PGDATA, PGPASSWORD, PGSSLMODE, PGOPTIONS, …): none
/// of the caller's reach the programs run here.
fn clear_pg_env(cmd: &mut Command) {
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PG") {
            cmd.env_remove(name);
        }
    }
}

fn output_text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// One cluster: its temp dir (socket dir, data dir `data`, log `server.log`, certificates).
pub struct Cluster {
    root: PathBuf,
    data: PathBuf,
    port: u16,
    bins: Bins,
    run_as: Option<RunAs>,
    databases: Mutex<HashSet<String>>,
    /// Never waited on: it outlives the test process on purpose.
    _watchdog: Child,
}

impl Cluster {
    /// A new temp dir under /tmp (short: a socket path has at most 107 bytes) with its watchdog,
    /// `initdb` run in it (superuser `admin`, UTF8) and `hba` as its pg_hba.conf.
    fn create(hba: &str) -> Result<Cluster, String> {
        let bins = Bins::find()?;
        let root = tempfile::Builder::new()
            .prefix("slpg")
            .tempdir_in("/tmp")
            .map_err(|e| format!("creating a temp dir in /tmp: {e}"))?
            .keep();
        let root_text = path_str(&root);
        if root_text.contains(['\'', '"', '\\', ' ', '\t', '\n']) {
            let _ = fs::remove_dir_all(&root);
            return Err(format!("unusable temp dir name {root_text:?}"));
        }
        let run_as = match run_as_for(&root) {
            Ok(run_as) => run_as,
            Err(e) => {
                let _ = fs::remove_dir_all(&root);
                return Err(e);
            }
        };
        if let Some(user) = &run_as {
            if let Err(e) = std::os::unix::fs::chown(&root, Some(user.uid), Some(user.gid)) {
                let _ = fs::remove_dir_all(&root);
                return Err(format!("chown {root_text} to {OS_USER}: {e}"));
            }
        }
        let data = root.join("data");
        let cluster = Cluster {
            _watchdog: spawn_watchdog(&bins, &root, &data, run_as.as_ref())
                .map_err(|e| format!("starting the cleanup watchdog (sh): {e}"))?,
            root,
            data,
            port: 0,
            bins,
            run_as,
            databases: Mutex::new(HashSet::new()),
        };
        cluster.initdb()?;
        // The file exists (initdb wrote it), so it keeps its owner.
        fs::write(cluster.data.join("pg_hba.conf"), hba)
            .map_err(|e| format!("writing pg_hba.conf: {e}"))?;
        Ok(cluster)
    }

    /// `program` run as the server's OS user, in the temp dir, without the caller's PG* vars.
    fn server_cmd(&self, program: &Path) -> Command {
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut cmd = Command::new(&user.runuser);
                cmd.args(["-u", OS_USER, "--"]).arg(program);
                cmd
            }
            None => Command::new(program),
        };
        cmd.current_dir(&self.root).stdin(Stdio::null());
        clear_pg_env(&mut cmd);
        cmd
    }

    fn initdb(&self) -> Result<(), String> {
        let mut failures = String::new();
        // C.UTF-8 where the C library has it (glibc 2.35+, Debian 12), else the C locale.
        for locale in ["--locale=C.UTF-8", "--no-locale"] {
            let out = self
                .server_cmd(&self.bins.initdb)
                .arg("-D")
                .arg(&self.data)
                .args([
                    "-U",
                    ADMIN,
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--no-sync",
                    locale,
                ])
                .output()
                .map_err(|e| format!("running {}: {e}", self.bins.initdb.display()))?;
            if out.status.success() {
                return Ok(());
            }
            write!(
                failures,
                "\n--- initdb {locale} ({}) ---\n{}",
                out.status,
                output_text(&out)
            )
            .expect("writing to a String");
            // initdb removes what it made when it fails; make sure.
            let _ = fs::remove_dir_all(&self.data);
        }
        Err(format!(
            "initdb -D {} failed:{failures}",
            self.data.display()
        ))
    }

    fn log_path(&self) -> PathBuf {
        self.root.join("server.log")
    }

    /// The server's log so far (for a failing test's message).
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// `pg_ctl start`: TCP on `listen` ('' for none), the unix socket in the temp dir, `port`,
    /// no durability, plus `extra` server options.
    fn start(&mut self, listen: &str, port: u16, extra: &str) -> Result<(), String> {
        // pg_ctl hands -o to the postgres command line through /bin/sh, hence the quotes.
        let options = format!(
            "-c listen_addresses='{listen}' -c unix_socket_directories='{}' -c port={port} \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
             -c password_encryption=scram-sha-256 -c timezone=UTC -c autovacuum=off{extra}",
            path_str(&self.root)
        );
        // -l: the server's output goes to the log file, not to the pipes of this command.
        let out = self
            .server_cmd(&self.bins.pg_ctl)
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", "60", "-o", &options, "start"])
            .output()
            .map_err(|e| format!("running {}: {e}", self.bins.pg_ctl.display()))?;
        if !out.status.success() {
            return Err(format!(
                "pg_ctl start ({}): {}\n--- {} ---\n{}",
                out.status,
                output_text(&out),
                self.log_path().display(),
                self.log()
            ));
        }
        self.port = port;
        Ok(())
    }

    fn create_reader(&self) -> Result<(), String> {
        self.psql_result(
            "postgres",
            &format!(
                "CREATE ROLE {READER} LOGIN PASSWORD {}",
                quote_literal(READER_PASSWORD)
            ),
            false,
        )
        .map(drop)
    }

    /// psql as [`ADMIN`] over the unix socket with `sql` on stdin; with `rows`, tuples only and
    /// unaligned. Its stdout, or its stderr as the error.
    fn psql_result(&self, db: &str, sql: &str, rows: bool) -> Result<String, String> {
        let mut cmd = Command::new(&self.bins.psql);
        cmd.args(["-v", "ON_ERROR_STOP=1", "-X", "-q"]);
        if rows {
            cmd.args(["-t", "-A"]);
        }
        cmd.arg("-h")
            .arg(&self.root)
            .arg("-p")
            .arg(self.port.to_string())
            .args(["-U", ADMIN, "-d", db])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        clear_pg_env(&mut cmd);
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("running {}: {e}", self.bins.psql.display()))?;
        // Written from a thread so a large script and a large result cannot block each other.
        let mut stdin = child.stdin.take().expect("psql's stdin is piped");
        let sql = sql.to_owned();
        let writer = std::thread::spawn(move || stdin.write_all(sql.as_bytes()));
        let out = child
            .wait_with_output()
            .map_err(|e| format!("waiting for psql: {e}"))?;
        let written = writer.join();
        if !out.status.success() {
            return Err(format!(
                "psql -d {db} ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        match written {
            Ok(Ok(())) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
            Ok(Err(e)) => Err(format!("writing SQL to psql: {e}")),
            Err(_) => Err("the thread writing SQL to psql panicked".to_owned()),
        }
    }

    /// Runs `sql` (any number of statements) as [`ADMIN`] in `db` through psql with
    /// ON_ERROR_STOP; panics with psql's stderr if it fails.
    pub fn psql(&self, db: &str, sql: &str) {
        if let Err(e) = self.psql_result(db, sql, false) {
            panic!("{e}");
        }
    }

    /// The rows `sql` returns as psql's unaligned, tuples-only text (`|` between columns, one
    /// line a row), run as [`ADMIN`] in `db`; panics if it fails.
    pub fn query(&self, db: &str, sql: &str) -> String {
        match self.psql_result(db, sql, true) {
            Ok(rows) => rows.trim_end_matches('\n').to_owned(),
            Err(e) => panic!("{e}"),
        }
    }

    fn create_database_result(&self, name: &str) -> Result<(), String> {
        let mut created = self
            .databases
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if !created.contains(name) {
            self.psql_result(
                "postgres",
                &format!("CREATE DATABASE {}", quote_ident(name)),
                false,
            )?;
            created.insert(name.to_owned());
        }
        Ok(())
    }

    /// Creates database `name` once per process (later calls with the same name do nothing).
    pub fn create_database(&self, name: &str) {
        if let Err(e) = self.create_database_result(name) {
            panic!("{e}");
        }
    }

    /// Lets [`READER`] connect to `db` and read every table, view and materialized view of
    /// every non-system schema there (as they exist now: call it after loading the data).
    pub fn grant_reader(&self, db: &str) {
        self.psql(db, &grant_reader_sql(db));
    }
}

/// A CA and a server certificate it signs for `localhost` and `127.0.0.1`, written to
/// `root/ca.pem`, `root/server.crt` and `root/server.key` (mode 0600, owned by the server's
/// user). Returns the certificate's and the key's paths.
fn write_certs(root: &Path, run_as: Option<&RunAs>) -> Result<(PathBuf, PathBuf), String> {
    let rcgen_err = |e: rcgen::Error| format!("making the test certificates: {e}");

    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(rcgen_err)?;
    ca_params.distinguished_name = DistinguishedName::new();
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "slayer test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    ca_params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    ca_params.not_after = rcgen::date_time_ymd(2100, 1, 1);
    let ca_key = KeyPair::generate().map_err(rcgen_err)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(rcgen_err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let mut params = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .map_err(rcgen_err)?;
    params.distinguished_name = DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    params.use_authority_key_identifier_extension = true;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.not_before = rcgen::date_time_ymd(2020, 1, 1);
    params.not_after = rcgen::date_time_ymd(2100, 1, 1);
    let key = KeyPair::generate().map_err(rcgen_err)?;
    let cert = params.signed_by(&key, &issuer).map_err(rcgen_err)?;

    let io_err = |path: &Path| {
        let path = path.display().to_string();
        move |e: std::io::Error| format!("writing {path}: {e}")
    };
    let ca_path = root.join("ca.pem");
    let cert_path = root.join("server.crt");
    let key_path = root.join("server.key");
    fs::write(&ca_path, ca_cert.pem()).map_err(io_err(&ca_path))?;
    fs::write(&cert_path, cert.pem()).map_err(io_err(&cert_path))?;
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&key_path)
        .and_then(|mut file| file.write_all(key.serialize_pem().as_bytes()))
        .map_err(io_err(&key_path))?;
    if let Some(user) = run_as {
        for path in [&cert_path, &key_path] {
            std::os::unix::fs::chown(path, Some(user.uid), Some(user.gid))
                .map_err(|e| format!("chown {} to {OS_USER}: {e}", path.display()))?;
        }
    }
    Ok((cert_path, key_path))
}
