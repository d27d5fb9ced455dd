//! One PostgreSQL store shared by several hosts (issue 33), against a real server: each "host"
//! is its own cache folder (`SLAYER_CACHE_DIR`), each writer its own process. The helpers are
//! here; `sharing.rs` has the many-hosts and failure tests, `parity.rs` the file-or-server ones.

mod parity;
mod sharing;
mod sync;

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::kit::{self, Out};
use crate::pg_server::{percent_encode, SocketServer};

/// The writers' role and the agents' read-only role; the passwords are distinctive so every
/// stream can be searched for them.
pub(super) const WRITER: &str = "slayer_team";
pub(super) const WRITER_PASSWORD: &str = "t3am:pa/ss@w0rd-9c1e";
pub(super) const READER: &str = "slayer_agents_ro";
pub(super) const READER_PASSWORD: &str = "r3ad:only/pa@ss-77b0";

/// The two roles, made once per server.
pub(super) fn roles(server: &SocketServer) {
    for (role, password) in [(WRITER, WRITER_PASSWORD), (READER, READER_PASSWORD)] {
        // Another test may have made it first on the shared server.
        let _ = server.create_role_result(role, password);
    }
}

/// A database of its own for one test, owned by [`WRITER`], the reader allowed to connect.
pub(super) struct TeamDb<'s> {
    pub(super) server: &'s SocketServer,
    pub(super) name: String,
}

impl<'s> TeamDb<'s> {
    pub(super) fn on(server: &'s SocketServer, name: &str) -> TeamDb<'s> {
        static SHARED_ROLES: std::sync::Once = std::sync::Once::new();
        if std::ptr::eq(server, SocketServer::shared()) {
            SHARED_ROLES.call_once(|| roles(server));
        } else {
            roles(server);
        }
        server.psql(
            "postgres",
            &format!(
                "CREATE DATABASE {name} OWNER {WRITER}; GRANT CONNECT ON DATABASE {name} TO {READER};"
            ),
        );
        TeamDb {
            server,
            name: name.to_owned(),
        }
    }

    pub(super) fn new(name: &str) -> TeamDb<'static> {
        TeamDb::on(SocketServer::shared(), name)
    }

    /// The store's URL for `user` (schema `slayer` unless `schema` names another).
    pub(super) fn url_as(&self, user: &str, password: &str, schema: Option<&str>) -> String {
        let mut url = self.server.url(&self.name, user, password);
        if let Some(schema) = schema {
            url.push_str(&format!("?schema={schema}"));
        }
        url
    }

    pub(super) fn url(&self) -> String {
        self.url_as(WRITER, WRITER_PASSWORD, None)
    }

    /// Lets the reader role read the store's schema (as a team's admin would).
    pub(super) fn grant_reader(&self, schema: &str) {
        self.server.grant_read_only(&self.name, schema, READER);
    }
}

/// One host: its own cache folder.
pub(super) struct Host {
    pub(super) cache: tempfile::TempDir,
}

impl Host {
    pub(super) fn new() -> Host {
        Host {
            cache: tempfile::tempdir().unwrap(),
        }
    }

    pub(super) fn run(&self, url: &str, bin: &str, args: &[&str], stdin: Option<&str>) -> Out {
        self.run_with(url, bin, args, &[], stdin)
    }

    /// [`Host::run`] with more environment.
    pub(super) fn run_with(
        &self,
        url: &str,
        bin: &str,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: Option<&str>,
    ) -> Out {
        let mut env = env.to_vec();
        env.push(("SLAYER_CACHE_DIR", self.cache.path().to_str().unwrap()));
        let out = kit::run(bin, Some(Path::new(url)), args, &env, stdin);
        assert_no_secret(&out);
        out
    }

    pub(super) fn ok(&self, url: &str, bin: &str, args: &[&str], stdin: Option<&str>) -> Out {
        let out = self.run(url, bin, args, stdin);
        assert_eq!(out.code, 0, "{bin} {args:?}: {}{}", out.stderr, out.stdout);
        out
    }

    /// Imports the demo shop's semantic layer into `store` (its memories are not imported).
    pub(super) fn load_shop(&self, store: &str) {
        self.ok(
            store,
            "slayer-index",
            &["import-slayer", "examples/shop/slayer"],
            None,
        );
    }

    pub(super) fn search(&self, url: &str, question: &str) -> Value {
        let out = self.ok(url, "slayer-search", &["--question", question], None);
        out.json()
    }

    pub(super) fn process(&self, url: &str, bin: &str, args: &[&str]) -> std::process::Command {
        let mut cmd = kit::command(bin);
        cmd.env("SLAYER_STORE", url)
            .env("SLAYER_CACHE_DIR", self.cache.path())
            .args(args);
        cmd
    }
}

#[track_caller]
pub(super) fn assert_no_secret(out: &Out) {
    for secret in [WRITER_PASSWORD, READER_PASSWORD] {
        let encoded = percent_encode(secret);
        for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !text.contains(secret) && !text.contains(&encoded),
                "the password shows on {name}: {text}"
            );
        }
    }
}

pub(super) fn memory_ids(v: &Value) -> Vec<String> {
    v["memories"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| m["id"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Feeds `input` to `child` (a writer started with a piped stdin), waits until it holds the
/// store's write lock (its advisory lock, taken first thing in its one transaction), lets it
/// write a while, and kills it (SIGKILL).
pub(super) fn kill_while_writing(db: &TeamDb<'_>, mut child: std::process::Child, input: String) {
    use std::io::Write as _;
    use std::time::{Duration, Instant};
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let holding = format!(
        "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database \
         WHERE l.locktype = 'advisory' AND l.granted AND d.datname = '{}'",
        db.name
    );
    let started = Instant::now();
    let mut seen = false;
    while started.elapsed() < Duration::from_secs(30) {
        if db.server.query("postgres", &holding) != "0" {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(seen, "the writer never took the write lock");
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap();
    let _ = child.wait();
    let _ = feeder.join();
}

pub(super) fn memory_count(db: &TeamDb<'_>) -> i64 {
    db.server
        .query(&db.name, "SELECT count(*) FROM slayer.memories")
        .parse()
        .unwrap()
}

/// `text` with every write time (`2026-11-26T19:36:21.265534Z`, as saves stamp them) replaced:
/// the same command on two stores runs at two moments.
pub(super) fn without_write_times(text: &str) -> String {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd.ddddddZ";
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let fits = bytes.len() - i >= SHAPE.len()
            && SHAPE.iter().zip(&bytes[i..]).all(|(shape, b)| match shape {
                b'd' => b.is_ascii_digit(),
                other => other == b,
            });
        if fits {
            out.push_str("<write time>");
            i += SHAPE.len();
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

pub(super) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
