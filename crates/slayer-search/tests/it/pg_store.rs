//! One PostgreSQL store shared by several hosts (issue 33), against a real server: each "host"
//! is its own cache folder (`SLAYER_CACHE_DIR`), each writer its own process.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::kit::{self, Out};
use crate::pg_server::{percent_encode, SocketServer};

/// The writers' role and the agents' read-only role; the passwords are distinctive so every
/// stream can be searched for them.
const WRITER: &str = "slayer_team";
const WRITER_PASSWORD: &str = "t3am:pa/ss@w0rd-9c1e";
const READER: &str = "slayer_agents_ro";
const READER_PASSWORD: &str = "r3ad:only/pa@ss-77b0";

/// The two roles, made once per server.
fn roles(server: &SocketServer) {
    for (role, password) in [(WRITER, WRITER_PASSWORD), (READER, READER_PASSWORD)] {
        // Another test may have made it first on the shared server.
        let _ = server.create_role_result(role, password);
    }
}

/// A database of its own for one test, owned by [`WRITER`], the reader allowed to connect.
struct TeamDb<'s> {
    server: &'s SocketServer,
    name: String,
}

impl<'s> TeamDb<'s> {
    fn on(server: &'s SocketServer, name: &str) -> TeamDb<'s> {
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

    fn new(name: &str) -> TeamDb<'static> {
        TeamDb::on(SocketServer::shared(), name)
    }

    /// The store's URL for `user` (schema `slayer` unless `schema` names another).
    fn url_as(&self, user: &str, password: &str, schema: Option<&str>) -> String {
        let mut url = self.server.url(&self.name, user, password);
        if let Some(schema) = schema {
            url.push_str(&format!("?schema={schema}"));
        }
        url
    }

    fn url(&self) -> String {
        self.url_as(WRITER, WRITER_PASSWORD, None)
    }

    /// Lets the reader role read the store's schema (as a team's admin would).
    fn grant_reader(&self, schema: &str) {
        self.server.grant_read_only(&self.name, schema, READER);
    }
}

/// One host: its own cache folder.
struct Host {
    cache: tempfile::TempDir,
}

impl Host {
    fn new() -> Host {
        Host {
            cache: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, url: &str, bin: &str, args: &[&str], stdin: Option<&str>) -> Out {
        let out = kit::run(
            bin,
            Some(Path::new(url)),
            args,
            &[("SLAYER_CACHE_DIR", self.cache.path().to_str().unwrap())],
            stdin,
        );
        assert_no_secret(&out);
        out
    }

    fn ok(&self, url: &str, bin: &str, args: &[&str], stdin: Option<&str>) -> Out {
        let out = self.run(url, bin, args, stdin);
        assert_eq!(out.code, 0, "{bin} {args:?}: {}{}", out.stderr, out.stdout);
        out
    }

    fn search(&self, url: &str, question: &str) -> Value {
        let out = self.ok(url, "slayer-search", &["--question", question], None);
        out.json()
    }

    fn process(&self, url: &str, bin: &str, args: &[&str]) -> std::process::Command {
        let mut cmd = kit::command(bin);
        cmd.env("SLAYER_STORE", url)
            .env("SLAYER_CACHE_DIR", self.cache.path())
            .args(args);
        cmd
    }
}

#[track_caller]
fn assert_no_secret(out: &Out) {
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

fn memory_ids(v: &Value) -> Vec<String> {
    v["memories"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|m| m["id"].as_str().unwrap_or_default().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn memory_count(db: &TeamDb<'_>) -> i64 {
    db.server
        .query(&db.name, "SELECT count(*) FROM slayer.memories")
        .parse()
        .unwrap()
}

#[test]
fn three_hosts_share_one_store_and_two_writers_each_lose_nothing() {
    let db = TeamDb::new("team_hosts");
    let url = db.url();
    let hosts = [Host::new(), Host::new(), Host::new()];
    hosts[0].ok(
        &url,
        "slayer-index",
        &["import-slayer", "examples/shop/slayer"],
        None,
    );
    // Every host sees the catalog on its first search, through its own cache.
    for host in &hosts {
        let v = host.search(&url, "order amount");
        assert!(
            v["entities"].as_array().is_some_and(|e| !e.is_empty()),
            "{v}"
        );
    }
    // Three hosts, two writers each, all at once.
    let per_writer = 8;
    let mut writers: Vec<Child> = Vec::new();
    for (h, host) in hosts.iter().enumerate() {
        for w in 0..2 {
            let script = (0..per_writer)
                .map(|i| {
                    format!(
                        "{{\"kind\": \"memory\", \"learning\": \"host {h} writer {w} note {i}: refunds on shop.orders post a day late\", \"entities\": [\"shop.orders\"]}}\n"
                    )
                })
                .collect::<String>();
            let mut child = host
                .process(&url, "slayer-memory", &["import", "-"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(script.as_bytes())
                .unwrap();
            writers.push(child);
        }
    }
    for child in writers {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(memory_count(&db), 6 * per_writer, "no save is lost");
    let distinct: i64 = db
        .server
        .query(&db.name, "SELECT count(DISTINCT id) FROM slayer.memories")
        .parse()
        .unwrap();
    assert_eq!(distinct, 6 * per_writer, "ids never collide");
    // One host saves; the others find it on their next search.
    let saved = hosts[2].ok(
        &url,
        "slayer-memory",
        &[
            "save",
            "--format",
            "json",
            "--learning",
            "the zebra discount applies to jaffles only",
            "--entities",
            "shop.products",
        ],
        None,
    );
    let id = saved.json()["memory_id"].as_str().unwrap().to_owned();
    for host in &hosts[..2] {
        let v = host.search(&url, "zebra discount");
        assert!(memory_ids(&v).contains(&id), "{v}");
    }
    // Each host's caches, caught up by a search, agree with the store.
    for host in &hosts {
        host.search(&url, "refunds");
        let out = host.ok(
            &url,
            "slayer-index",
            &["stats", "--check", "--format", "text"],
            None,
        );
        assert!(out.stdout.contains("in sync"), "{}", out.stdout);
    }
}

#[test]
fn a_writer_killed_mid_transaction_writes_nothing_and_the_next_one_works() {
    let db = TeamDb::new("team_kill");
    let url = db.url();
    let host = Host::new();
    host.ok(
        &url,
        "slayer-index",
        &["import-slayer", "examples/shop/slayer"],
        None,
    );
    let lines: String = (0..20_000)
        .map(|i| format!("{{\"kind\": \"memory\", \"learning\": \"bulk note {i}\", \"entities\": [\"shop.orders\"]}}\n"))
        .collect();
    let mut child = host
        .process(&url, "slayer-memory", &["import", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(lines.as_bytes());
    });
    // Kill it while its one transaction holds the store's write lock (taken first thing).
    let started = Instant::now();
    let holding = "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database \
                   WHERE l.locktype = 'advisory' AND l.granted AND d.datname = 'team_kill'";
    let mut seen = false;
    while started.elapsed() < Duration::from_secs(30) {
        if db.server.query("postgres", holding) != "0" {
            seen = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(seen, "the import never took the write lock");
    std::thread::sleep(Duration::from_millis(200));
    child.kill().unwrap(); // SIGKILL
    let _ = child.wait();
    let _ = feeder.join();
    let count = memory_count(&db);
    assert_eq!(count, 0, "a killed import writes nothing");
    // The lock died with the connection: the next writer goes through at once.
    let started = Instant::now();
    host.ok(
        &url,
        "slayer-memory",
        &[
            "save",
            "--learning",
            "after the crash",
            "--entities",
            "shop.orders",
        ],
        None,
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(memory_count(&db), count + 1);
}

#[test]
fn a_deleted_cache_is_rebuilt_and_a_read_only_role_reads_everything() {
    let db = TeamDb::new("team_cache");
    let url = db.url();
    let host = Host::new();
    host.ok(
        &url,
        "slayer-index",
        &["import-slayer", "examples/shop/slayer"],
        None,
    );
    host.ok(
        &url,
        "slayer-memory",
        &[
            "save",
            "--learning",
            "gift cards settle late",
            "--entities",
            "shop.payments",
        ],
        None,
    );
    let before = host.search(&url, "gift cards");
    std::fs::remove_dir_all(host.cache.path()).unwrap();
    let after = host.search(&url, "gift cards");
    assert_eq!(before, after, "a rebuilt cache answers the same");
    host.ok(&url, "slayer-index", &["stats", "--check"], None);
    // A cache damaged on disk rebuilds itself too.
    for entry in walk(host.cache.path()) {
        if entry.extension().is_some_and(|e| e == "bin" || e == "idx") {
            std::fs::write(&entry, b"garbage").unwrap();
        }
    }
    assert_eq!(host.search(&url, "gift cards"), before);

    db.grant_reader("slayer");
    let reader = db.url_as(READER, READER_PASSWORD, None);
    let reader_host = Host::new();
    assert_eq!(reader_host.search(&reader, "gift cards"), before);
    for args in [
        &["stats", "--check"][..],
        &["export"][..],
        &["show", "shop.orders"][..],
    ] {
        reader_host.ok(&reader, "slayer-index", args, None);
    }
    reader_host.ok(&reader, "slayer-memory", &["list"], None);
    let refused = reader_host.run(
        &reader,
        "slayer-memory",
        &[
            "save",
            "--learning",
            "not allowed",
            "--entities",
            "shop.orders",
        ],
        None,
    );
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("PostgreSQL store"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stderr.contains("permission denied"),
        "{}",
        refused.stderr
    );
    assert_eq!(memory_count(&db), 1, "a refused write writes nothing");
}

#[test]
fn export_and_import_round_trip_between_sqlite_and_postgresql() {
    let db = TeamDb::new("team_trip");
    let url = db.url();
    let host = Host::new();
    let file = kit::TempStore::new();
    let sqlite = file.store.to_str().unwrap().to_owned();
    host.ok(
        &sqlite,
        "slayer-index",
        &["import-slayer", "examples/shop/slayer"],
        None,
    );
    for (learning, entities, extra) in [
        ("orders ship from two stores", "shop.orders", vec![]),
        (
            "never join payments on order_id twice",
            "shop.payments,shop.orders",
            vec!["--tier", "procedural"],
        ),
        (
            "customers churn after 90 days",
            "shop.customers",
            vec!["--confidence", "0.4"],
        ),
    ] {
        let mut args = vec!["save", "--learning", learning, "--entities", entities];
        args.extend(extra);
        host.ok(&sqlite, "slayer-memory", &args, None);
    }
    let catalog_out = host.ok(&sqlite, "slayer-index", &["export"], None).stdout;
    let memories_out = host.ok(&sqlite, "slayer-memory", &["export"], None).stdout;
    host.ok(&url, "slayer-index", &["load", "-"], Some(&catalog_out));
    host.ok(&url, "slayer-memory", &["import", "-"], Some(&memories_out));
    assert_eq!(
        host.ok(&url, "slayer-index", &["export"], None).stdout,
        catalog_out
    );
    assert_eq!(
        host.ok(&url, "slayer-memory", &["export"], None).stdout,
        memories_out
    );
    // And back into a new file.
    let back = kit::TempStore::new();
    let back_path = back.store.to_str().unwrap().to_owned();
    host.ok(
        &back_path,
        "slayer-index",
        &["load", "-"],
        Some(&catalog_out),
    );
    host.ok(
        &back_path,
        "slayer-memory",
        &["import", "-"],
        Some(&memories_out),
    );
    assert_eq!(
        host.ok(&back_path, "slayer-memory", &["export"], None)
            .stdout,
        memories_out
    );
    // The same question, the same answer, file or server.
    assert_eq!(
        host.search(&sqlite, "order churn"),
        host.search(&url, "order churn")
    );
}

#[test]
fn every_command_answers_on_a_server_as_on_a_file() {
    let db = TeamDb::new("team_commands");
    let url = db.url();
    let host = Host::new();
    let file = kit::TempStore::new();
    let sqlite = file.store.to_str().unwrap().to_owned();
    let script: &[(&str, &[&str], Option<&str>)] = &[
        (
            "slayer-index",
            &["import-slayer", "examples/shop/slayer"],
            None,
        ),
        (
            "slayer-memory",
            &[
                "import",
                "crates/slayer-search/tests/fixtures/memories.jsonl",
            ],
            None,
        ),
        (
            "slayer-index",
            &["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"],
            None,
        ),
        (
            "slayer-memory",
            &[
                "save",
                "--format",
                "json",
                "--learning",
                "refunds post late",
                "--entities",
                "shop.orders,mydb.orders",
                "--tier",
                "procedural",
                "--confidence",
                "0.7",
                "--project",
                "billing",
                "--agent",
                "ci",
            ],
            None,
        ),
        (
            "slayer-memory",
            &[
                "save",
                "--format",
                "json",
                "--id",
                "tmp",
                "--learning",
                "scratch note",
                "--entities",
                "shop.stores",
            ],
            None,
        ),
        ("slayer-memory", &["forget", "--soft", "tmp"], None),
        ("slayer-memory", &["forget", "42"], None),
        ("slayer-memory", &["list", "--format", "json"], None),
        (
            "slayer-memory",
            &[
                "list",
                "--entity",
                "shop.orders",
                "--tiers",
                "procedural",
                "--deleted",
            ],
            None,
        ),
        ("slayer-memory", &["show", "tmp", "1"], None),
        (
            "slayer-index",
            &["show", "shop.orders", "mydb.orders.amount"],
            None,
        ),
        ("slayer-index", &["remove", "shop.supplies"], None),
        ("slayer-index", &["export"], None),
        ("slayer-memory", &["export"], None),
        ("slayer-embed", &["status", "--format", "json"], None),
        ("slayer-search", &["--question", "refunds on orders"], None),
        (
            "slayer-search",
            &[
                "--entity",
                "shop.orders",
                "--tiers",
                "procedural,lesson",
                "--project",
                "billing",
            ],
            None,
        ),
        (
            "slayer-search",
            &["--batch", "-"],
            Some("{\"question\": \"order amount\"}\n{\"entities\": [\"mydb.orders\"]}\n"),
        ),
        (
            "slayer-search",
            &["--plan", "auto", "--question", "customer emails, not test"],
            None,
        ),
    ];
    for (bin, args, stdin) in script {
        let on_file = host.run(&sqlite, bin, args, *stdin);
        let on_server = host.run(&url, bin, args, *stdin);
        assert_eq!(
            (on_file.code, without_write_times(&on_file.stdout)),
            (on_server.code, without_write_times(&on_server.stdout)),
            "{bin} {args:?}: file: {}\nserver: {}",
            on_file.stderr,
            on_server.stderr
        );
    }
    // stats differs only in the store it names and where its caches are.
    let mut on_file = host
        .ok(
            &sqlite,
            "slayer-index",
            &["stats", "--format", "json"],
            None,
        )
        .json();
    let mut on_server = host
        .ok(&url, "slayer-index", &["stats", "--format", "json"], None)
        .json();
    for v in [&mut on_file, &mut on_server] {
        v["store"] = Value::Null;
        v["schema_version"] = Value::Null;
        v["index"]["path"] = Value::Null;
    }
    assert_eq!(on_file, on_server);
}

#[test]
fn a_schema_holding_something_else_is_refused_and_left_alone() {
    let db = TeamDb::new("team_foreign");
    db.server.psql(
        &db.name,
        &format!("CREATE SCHEMA app AUTHORIZATION {WRITER}; CREATE TABLE app.users (id int); ALTER TABLE app.users OWNER TO {WRITER};"),
    );
    let url = db.url_as(WRITER, WRITER_PASSWORD, Some("app"));
    let host = Host::new();
    let out = host.run(
        &url,
        "slayer-memory",
        &["save", "--learning", "x", "--entities", "shop.orders"],
        None,
    );
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not a slayer store"), "{}", out.stderr);
    let tables = db.server.query(
        &db.name,
        "SELECT string_agg(table_name, ',') FROM information_schema.tables WHERE table_schema = 'app'",
    );
    assert_eq!(tables, "users");
    // A reader of a store that is not there is told so, and nothing is made.
    let missing = db.url_as(WRITER, WRITER_PASSWORD, Some("nothing_here"));
    let out = host.run(&missing, "slayer-search", &["--question", "x"], None);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("no store"), "{}", out.stderr);
}

#[test]
fn a_long_lived_search_survives_a_server_restart_and_sees_other_hosts_writes() {
    let server = SocketServer::start();
    let db = TeamDb::on(&server, "team_batch");
    let url = db.url();
    let host = Host::new();
    let other = Host::new();
    host.ok(
        &url,
        "slayer-index",
        &["import-slayer", "examples/shop/slayer"],
        None,
    );
    let mut batch = host
        .process(&url, "slayer-search", &["--batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = batch.stdin.take().unwrap();
    let mut output = BufReader::new(batch.stdout.take().unwrap());
    let mut ask = |question: &str| -> Value {
        writeln!(input, "{{\"question\": \"{question}\"}}").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    };
    assert!(memory_ids(&ask("walrus refunds")).is_empty());
    let saved = other.ok(
        &url,
        "slayer-memory",
        &[
            "save",
            "--format",
            "json",
            "--learning",
            "walrus refunds are manual",
            "--entities",
            "shop.orders",
        ],
        None,
    );
    let id = saved.json()["memory_id"].as_str().unwrap().to_owned();
    assert!(
        memory_ids(&ask("walrus refunds")).contains(&id),
        "another host's save is seen"
    );

    // A command while the server is down fails at once, naming the server.
    db.server.stop();
    let started = Instant::now();
    let down = other.run(&url, "slayer-search", &["--question", "walrus"], None);
    assert_ne!(down.code, 0);
    assert!(
        down.stderr.contains("PostgreSQL store postgres://"),
        "{}",
        down.stderr
    );
    assert!(started.elapsed() < Duration::from_secs(15), "no hang");
    db.server.start_again();
    // The long-lived process saw none of that; now the server restarts under it.
    db.server.restart();
    // The request after the restart is answered (reconnected) or refused naming the server;
    // the one after that is answered.
    let first = ask("walrus refunds");
    if first.get("error").is_some() {
        assert!(first.to_string().contains("PostgreSQL"), "{first}");
    }
    let second = ask("walrus refunds");
    assert!(memory_ids(&second).contains(&id), "{second}");
    drop(input);
    let out = batch.wait_with_output().unwrap();
    // 1 when a request failed (the one the restart cut off), never a crash.
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    for secret in [WRITER_PASSWORD, READER_PASSWORD] {
        assert!(!stderr.contains(secret), "{stderr}");
    }
}

#[test]
fn the_python_sdk_drives_the_mcp_server_on_a_postgresql_store() {
    let db = TeamDb::new("team_mcp");
    let url = db.url();
    let host = Host::new();
    host.ok(
        &url,
        "slayer-index",
        &["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"],
        None,
    );
    host.ok(
        &url,
        "slayer-memory",
        &[
            "import",
            "crates/slayer-search/tests/fixtures/memories.jsonl",
        ],
        None,
    );
    let update = host.cache.path().join("shipments.jsonl");
    std::fs::write(
        &update,
        r#"{"kind":"model","name":"shipments","data_source":"mydb","sql_table":"shipments","description":"Warehouse shipments by carrier.","columns":[{"name":"carrier","type":"TEXT","description":"The shipping carrier."}]}"#,
    )
    .unwrap();
    let out = std::process::Command::new(crate::mcp::sdk_python())
        .arg(kit::workspace_root().join("crates/slayer-search/tests/mcp_client.py"))
        .arg(kit::bin_dir())
        .arg(&url)
        .arg(&update)
        .env("SLAYER_CACHE_DIR", host.cache.path())
        .env("SLAYER_NO_EMBED", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "the MCP client failed:\n{stderr}\n{stdout}"
    );
}

/// `text` with every write time (`2026-11-26T19:36:21.265534Z`, as saves stamp them) replaced:
/// the same command on two stores runs at two moments.
fn without_write_times(text: &str) -> String {
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

fn walk(dir: &Path) -> Vec<PathBuf> {
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
