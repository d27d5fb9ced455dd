//! One throwaway cluster: its temp dir and watchdog, `initdb`, `pg_ctl start`/`stop`/restart,
//! psql as the superuser, databases and roles; the programs found and, under root, run as the
//! OS user `postgres`.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::MetadataExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, PoisonError};

use super::{path_str, quote_ident, quote_literal, ADMIN, OS_USER};

/// A free TCP port on 127.0.0.1 (free when picked).
pub fn free_port() -> Result<u16, String> {
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
pub struct RunAs {
    runuser: PathBuf,
    /// The user's id.
    pub uid: u32,
    /// The user's group id.
    pub gid: u32,
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
    /// The temp dir: the socket dir, and the parent of the data dir.
    pub root: PathBuf,
    data: PathBuf,
    /// The port (with `root`, it names the unix socket).
    pub port: u16,
    bins: Bins,
    /// The OS user the server runs as when the tests run as root.
    pub run_as: Option<RunAs>,
    /// The server options of the last start, for a restart.
    options: String,
    databases: Mutex<HashSet<String>>,
    /// Never waited on: it outlives the test process on purpose.
    _watchdog: Child,
}

impl Cluster {
    /// A new temp dir under /tmp (short: a socket path has at most 107 bytes) with its watchdog,
    /// `initdb` run in it (superuser `admin`, UTF8) and `hba` as its pg_hba.conf.
    pub fn create(hba: &str) -> Result<Cluster, String> {
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
            options: String::new(),
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
    pub fn start(&mut self, listen: &str, port: u16, extra: &str) -> Result<(), String> {
        // pg_ctl hands -o to the postgres command line through /bin/sh, hence the quotes.
        let options = format!(
            "-c listen_addresses='{listen}' -c unix_socket_directories='{}' -c port={port} \
             -c fsync=off -c synchronous_commit=off -c full_page_writes=off \
             -c password_encryption=scram-sha-256 -c timezone=UTC -c autovacuum=off{extra}",
            path_str(&self.root)
        );
        self.pg_ctl_start(&options)?;
        self.port = port;
        self.options = options;
        Ok(())
    }

    fn pg_ctl_start(&self, options: &str) -> Result<(), String> {
        // -l: the server's output goes to the log file, not to the pipes of this command.
        let out = self
            .server_cmd(&self.bins.pg_ctl)
            .arg("-D")
            .arg(&self.data)
            .arg("-l")
            .arg(self.log_path())
            .args(["-w", "-t", "60", "-o", options, "start"])
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
        Ok(())
    }

    /// `pg_ctl stop -m fast`: every connection is cut at once (as when a server goes away),
    /// and what was committed is kept (the server runs without synchronous commit, so an
    /// immediate stop could lose the last commits).
    pub fn stop(&self) {
        let out = self
            .server_cmd(&self.bins.pg_ctl)
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "fast", "-w", "-t", "60", "stop"])
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", self.bins.pg_ctl.display()));
        assert!(out.status.success(), "pg_ctl stop: {}", output_text(&out));
    }

    /// Starts the server again after [`Cluster::stop`], with the options of its first start.
    pub fn start_again(&self) {
        if let Err(e) = self.pg_ctl_start(&self.options) {
            panic!("{e}");
        }
    }

    /// [`Cluster::stop`] then [`Cluster::start_again`]: every open connection is lost.
    pub fn restart(&self) {
        self.stop();
        self.start_again();
    }

    /// Creates a login role that authenticates with `password`.
    pub fn create_role_result(&self, name: &str, password: &str) -> Result<(), String> {
        self.psql_result(
            "postgres",
            &format!(
                "CREATE ROLE {} LOGIN PASSWORD {}",
                quote_ident(name),
                quote_literal(password)
            ),
            false,
        )
        .map(drop)
    }

    /// Creates a login role that authenticates with `password`; panics if it cannot.
    pub fn create_role(&self, name: &str, password: &str) {
        if let Err(e) = self.create_role_result(name, password) {
            panic!("{e}");
        }
    }

    /// Lets `role` connect to `db` and only read schema `schema`: `USAGE` on it and `SELECT`
    /// on its tables as they exist now (call it after they are made).
    pub fn grant_read_only(&self, db: &str, schema: &str, role: &str) {
        self.psql(
            db,
            &format!(
                "GRANT CONNECT ON DATABASE {db} TO {role};
                 GRANT USAGE ON SCHEMA {schema} TO {role};
                 GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role};",
                db = quote_ident(db),
                schema = quote_ident(schema),
                role = quote_ident(role),
            ),
        );
    }

    /// psql as [`ADMIN`] over the unix socket with `sql` on stdin; with `rows`, tuples only and
    /// unaligned. Its stdout, or its stderr as the error.
    pub fn psql_result(&self, db: &str, sql: &str, rows: bool) -> Result<String, String> {
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

    pub fn create_database_result(&self, name: &str) -> Result<(), String> {
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
}
