//! Issue 12's defects as a user or an agent wrapper meets them: a `--batch` coprocess, readers
//! on foreign, old and read-only stores, real-world names, the environment's format, and
//! embedding rows of another size.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;
use slayer_common::store::SCHEMA_VERSION;

use crate::kit::{output as run, Out};
use crate::support::{ids, store_with_catalog, strings, Fixture};

fn bin(name: &str) -> PathBuf {
    assert_cmd::cargo::cargo_bin(name)
}

/// A command on `store` with a clean environment (no format, no model, no inline embedding).
fn command(name: &str, store: &Path) -> Command {
    let mut cmd = crate::kit::command(name);
    cmd.env("SLAYER_MODEL_DIR", "/nonexistent/slayer-models")
        .env("SLAYER_STORE", store);
    cmd
}

#[test]
fn batch_answers_each_request_before_the_next_is_written() {
    let f = Fixture::new();
    let mut child = command("slayer-search", &f.store)
        .args(["--batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    let reply = |rx: &mpsc::Receiver<String>| -> Value {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("no reply while the request stream stays open");
        serde_json::from_str(&line).unwrap()
    };
    writeln!(input, r#"{{"question": "refunded orders revenue"}}"#).unwrap();
    input.flush().unwrap();
    let first = reply(&rx);
    assert_eq!(ids(&first, "memories")[0], "1", "{first}");
    writeln!(input, r#"{{"entities": ["memory:42"]}}"#).unwrap();
    input.flush().unwrap();
    let second = reply(&rx);
    assert_eq!(ids(&second, "memories"), ["42"]);
    drop(input);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_batch_line_that_is_not_utf8_is_an_error_record_and_later_lines_are_answered() {
    let f = Fixture::new();
    let mut input = b"{\"entities\": [\"memory:42\"]}\n".to_vec();
    input.extend_from_slice(b"{\"question\": \"caf\xe9\"}\n");
    input.extend_from_slice(b"{\"entities\": [\"memory:1\"]}\n");
    let mut cmd = command("slayer-search", &f.store);
    cmd.args(["--batch", "-"]);
    let out = run(cmd, Some(&input));
    assert_eq!(out.code, 1, "{}", out.stderr);
    let lines = out.lines();
    assert_eq!(lines.len(), 3, "{}", out.stdout);
    assert_eq!(ids(&lines[0], "memories"), ["42"]);
    assert_eq!(lines[1]["kind"], "error");
    assert_eq!(
        lines[1]["error"],
        "line 2: not valid UTF-8; a request is one UTF-8 JSON object"
    );
    assert_eq!(ids(&lines[2], "memories")[0], "1");
}

#[test]
fn batch_lines_take_their_defaults_from_the_flags() {
    let f = Fixture::new();
    let batch = "{\"question\": \"orders revenue amount\"}\n\
                 {\"question\": \"orders revenue amount\", \"max_memories\": 3, \"explain\": false}\n";
    let out = f.raw(
        &[
            "--batch",
            "-",
            "--max-memories",
            "1",
            "--max-entities",
            "0",
            "--explain",
            "--channels",
            "text",
        ],
        Some(batch),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines = out.lines();
    assert_eq!(lines[0]["memories"].as_array().unwrap().len(), 1);
    assert_eq!(lines[0]["entities"], serde_json::json!([]));
    assert_eq!(
        lines[0]["memories"][0]["explain"][0]["channel"], "fulltext",
        "--explain and --channels apply to the line"
    );
    assert!(lines[1]["memories"].as_array().unwrap().len() > 1);
    assert!(lines[1]["memories"][0].get("explain").is_none());
}

/// Every file in a folder, with its bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let bytes = if e.file_type().unwrap().is_file() {
                std::fs::read(e.path()).unwrap()
            } else {
                b"<dir>".to_vec()
            };
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn readers_leave_a_foreign_sqlite_file_as_it_was_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("some.sqlite");
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('hi');")
            .unwrap();
    }
    let before = snapshot(dir.path());
    let readers: [(&str, &[&str]); 8] = [
        ("slayer-search", &["--question", "hi"]),
        ("slayer-search", &[]),
        ("slayer-memory", &["list"]),
        ("slayer-memory", &["show", "1"]),
        ("slayer-memory", &["export"]),
        ("slayer-index", &["stats"]),
        ("slayer-index", &["export"]),
        ("slayer-embed", &["status"]),
    ];
    for (name, args) in readers {
        let mut cmd = command(name, &path);
        cmd.args(args);
        let out = run(cmd, None);
        assert_ne!(out.code, 0, "{name} {args:?}");
        assert!(
            out.stderr
                .contains("is not a slayer store (it has other tables: notes)"),
            "{name} {args:?}: {}",
            out.stderr
        );
        assert_eq!(
            snapshot(dir.path()),
            before,
            "{name} {args:?} changed the folder"
        );
    }
    // Writers refuse it too rather than add their tables to it.
    let mut cmd = command("slayer-index", &path);
    cmd.args(["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"]);
    let out = run(cmd, None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("is not a slayer store"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn readers_refuse_an_older_store_and_name_the_command_that_upgrades_it() {
    let f = Fixture::new();
    {
        let conn = rusqlite::Connection::open(&f.store).unwrap();
        conn.pragma_update(None, "user_version", 4).unwrap();
    }
    let out = f.raw(&["--question", "revenue"], None);
    assert_eq!(out.code, 1);
    let expected = format!(
        "has schema version 4, older than this slayer's ({SCHEMA_VERSION}); upgrade it with `slayer-index migrate --store"
    );
    assert!(out.stderr.contains(&expected), "{}", out.stderr);
    let mut cmd = command("slayer-index", &f.store);
    cmd.args(["migrate", "--format", "json"]);
    let out = run(cmd, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (report["from"].as_i64(), report["to"].as_i64()),
        (Some(4), Some(SCHEMA_VERSION))
    );
    let r = f.search(&["--question", "refunded orders revenue"]);
    assert_eq!(ids(&r, "memories")[0], "1");
    // The text form is a whole line (it once lacked its newline, leaving the prompt after it).
    let mut cmd = command("slayer-index", &f.store);
    cmd.args(["migrate", "--format", "text"]);
    let out = run(cmd, None);
    assert!(
        out.stdout.ends_with(&format!(
            "is at schema version {SCHEMA_VERSION}; nothing to do\n"
        )),
        "{:?}",
        out.stdout
    );
}

/// Runs `name` as an unprivileged user when the tests run as root (root ignores file modes),
/// from a copy of the binary that user can reach.
fn run_unprivileged(name: &str, dir: &Path, store: &Path, args: &[&str]) -> Out {
    let copy = dir.join(name);
    std::fs::copy(bin(name), &copy).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = std::fs::metadata(dir).unwrap().uid() == 0;
    let mut cmd = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&copy);
        c
    } else {
        Command::new(&copy)
    };
    cmd.current_dir(dir)
        .env_remove("SLAYER_FORMAT")
        .env_remove("SLAYER_EMBEDDING_MODEL")
        .env("SLAYER_MODEL_DIR", "/nonexistent/slayer-models")
        .env("SLAYER_STORE", store)
        .args(args);
    run(cmd, None)
}

fn make_read_only(path: &Path) {
    for entry in walk(path) {
        let mode = if entry.is_dir() { 0o555 } else { 0o444 };
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn make_writable(path: &Path) {
    for entry in walk(path) {
        let mode = if entry.is_dir() { 0o755 } else { 0o644 };
        std::fs::set_permissions(&entry, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

fn walk(path: &Path) -> Vec<PathBuf> {
    let mut out = vec![path.to_owned()];
    if path.is_dir() {
        for e in std::fs::read_dir(path).unwrap() {
            out.extend(walk(&e.unwrap().path()));
        }
    }
    out
}

#[test]
fn a_store_in_a_read_only_folder_is_searchable_with_or_without_a_current_index() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let store = data.join("slayer.db");
    for (name, args) in [
        (
            "slayer-index",
            ["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"],
        ),
        (
            "slayer-memory",
            [
                "import",
                "crates/slayer-search/tests/fixtures/memories.jsonl",
            ],
        ),
    ] {
        let mut cmd = command(name, &store);
        cmd.args(args);
        let out = run(cmd, None);
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let question = ["--question", "refunded orders excluded from revenue"];
    let mut cmd = command("slayer-search", &store);
    cmd.args(question);
    let writable = run(cmd, None);
    assert_eq!(writable.code, 0, "{}", writable.stderr);

    // The index is current: it is read in place, without its lock file.
    make_read_only(&data);
    let out = run_unprivileged("slayer-search", dir.path(), &store, &question);
    make_writable(&data);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, writable.stdout);

    // No index at all: the docs are searched from an index built in memory.
    std::fs::remove_dir_all(data.join("slayer.db.index")).unwrap();
    let before = snapshot(&data);
    make_read_only(&data);
    let out = run_unprivileged("slayer-search", dir.path(), &store, &question);
    let stats = run_unprivileged(
        "slayer-index",
        dir.path(),
        &store,
        &["stats", "--format", "json"],
    );
    make_writable(&data);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, writable.stdout);
    assert_eq!(stats.code, 0, "{}", stats.stderr);
    assert_eq!(snapshot(&data), before, "nothing was created");
}

#[test]
fn the_environment_s_format_does_not_change_what_a_pipe_carries() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut cmd = command("slayer-index", &store);
    cmd.env("SLAYER_FORMAT", "text")
        .args(["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"]);
    let out = run(cmd, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for line in out.stdout.lines() {
        let doc: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert_eq!(doc["kind"], "doc");
    }
    let mut cmd = command("slayer-search", &store);
    cmd.env("SLAYER_FORMAT", "text")
        .args(["--question", "orders"]);
    let out = run(cmd, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str::<Value>(&out.stdout).unwrap();
}

#[test]
fn search_hops_a_join_by_its_name_and_takes_real_world_names() {
    let loaded = store_with_catalog(
        r#"{"kind":"datasource","name":"w"}
{"kind":"model","name":"schools","data_source":"w","columns":[{"name":"id"},{"name":"charter school (y/n)","description":"Y when a charter school."},{"name":"o'brien"}],"joins":[{"target_model":"districts","name":"district","join_pairs":[["did","id"]]}]}
{"kind":"model","name":"districts","data_source":"w","columns":[{"name":"id"},{"name":"label"}]}
"#,
    );
    let store = loaded.store.clone();
    let mut cmd = command("slayer-search", &store);
    cmd.args([
        "--entity",
        "schools.district.label",
        "--entity",
        "charter school (y/n)",
        "--entity",
        "schools.o'brien",
    ]);
    let out = run(cmd, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(strings(&r["warnings"]), Vec::<String>::new(), "{r}");
    assert_eq!(
        strings(&r["resolved_input_entities"]),
        [
            "w.districts.label",
            "w.schools.charter school (y/n)",
            "w.schools.o'brien"
        ]
    );
}

#[test]
fn embedding_rows_of_another_size_are_left_out_not_truncated() {
    let f = Fixture::new();
    f.raw_memory_import(
        "{\"kind\":\"memory\",\"id\":\"m1\",\"learning\":\"Profit figures are reported quarterly.\",\"entities\":[]}\n",
    );
    let out = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    {
        // m1's row as another model of the same name would have written it: 3 floats.
        let conn = rusqlite::Connection::open(&f.store).unwrap();
        let vector: Vec<u8> = [1.0f32, 0.0, 0.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let changed = conn
            .execute(
                "UPDATE embeddings SET dim = 3, vector = ?1 WHERE canonical_id = 'memory:m1'",
                [vector],
            )
            .unwrap();
        assert_eq!(changed, 1);
    }
    let r = f.dense_search(&[
        "--question",
        "how much money did the company earn",
        "--explain",
        "--max-memories",
        "20",
    ]);
    assert!(
        !strings(&r["warnings"])
            .iter()
            .any(|w| w.contains("embedding channel")),
        "{r}"
    );
    for hit in r["memories"].as_array().unwrap() {
        let channels: Vec<&str> = hit["explain"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["channel"].as_str().unwrap())
            .collect();
        if hit["id"] == "m1" {
            assert!(!channels.contains(&"dense"), "{hit}");
        }
    }
    assert!(!r["memories"].as_array().unwrap().is_empty());
}

#[test]
fn datasource_names_in_messages_are_quoted_as_python_repr_quotes_them() {
    let loaded = store_with_catalog(
        r#"{"kind":"datasource","name":"o'brien"}
{"kind":"datasource","name":"a\\b"}
{"kind":"model","name":"m","data_source":"o'brien","columns":[{"name":"x"}]}
{"kind":"model","name":"n","data_source":"a\\b","columns":[{"name":"y"}]}
"#,
    );
    let store = loaded.store.clone();
    let mut cmd = command("slayer-search", &store);
    cmd.args(["--entity", "n.y", "--datasource", "o'brien"]);
    let out = run(cmd, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        strings(&r["warnings"]),
        [
            r#"entity 'a\\b.n.y' is not rooted at datasource "o'brien"; dropped from entities bucket."#
        ]
    );
    let mut cmd = command("slayer-search", &store);
    cmd.args(["--question", "x", "--datasource", "nope"]);
    let out = run(cmd, None);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "Error: datasource 'nope' not found; known: ['a\\\\b', \"o'brien\"].\n"
    );
}

#[test]
fn a_read_only_store_whose_log_holds_changes_is_refused_not_shown_in_part() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let store = data.join("slayer.db");
    let mut cmd = command("slayer-index", &store);
    cmd.args(["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"]);
    assert_eq!(run(cmd, None).code, 0);
    // A reader kept open here stops the save's process from merging its log when it exits,
    // as a crashed or still-running writer of another user would.
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder
        .query_row("SELECT count(*) FROM docs", [], |r| r.get::<_, i64>(0))
        .unwrap();
    let mut cmd = command("slayer-memory", &store);
    cmd.args([
        "save",
        "--learning",
        "Refunds post a day late.",
        "--entities",
        "mydb.orders",
        "--no-embed",
    ]);
    assert_eq!(run(cmd, None).code, 0);
    // The store and its log, as another user finds them: no -shm, a folder they cannot write.
    let copy = dir.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    for name in ["slayer.db", "slayer.db-wal"] {
        std::fs::copy(data.join(name), copy.join(name)).unwrap();
    }
    drop(holder);
    let copied = copy.join("slayer.db");
    make_read_only(&copy);
    let listed = run_unprivileged("slayer-memory", dir.path(), &copied, &["list"]);
    let searched = run_unprivileged(
        "slayer-search",
        dir.path(),
        &copied,
        &["--question", "refunds"],
    );
    make_writable(&copy);
    for out in [listed, searched] {
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(
            out.stderr.contains("has changes in its write-ahead log")
                && out.stderr.contains("PRAGMA wal_checkpoint(TRUNCATE)"),
            "{}",
            out.stderr
        );
    }
    // Once its owner has merged the log, the same folder reads whole.
    let mut cmd = command("slayer-index", &copied);
    cmd.args(["stats"]);
    assert_eq!(run(cmd, None).code, 0);
    make_read_only(&copy);
    let listed = run_unprivileged("slayer-memory", dir.path(), &copied, &["list"]);
    make_writable(&copy);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("Refunds post a day late."),
        "{}",
        listed.stdout
    );
}

#[test]
fn sqlite_s_bare_failures_are_told_with_the_store_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let store = dir.path().join("slayer.db");
    let mut cmd = command("slayer-index", &store);
    cmd.args(["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"]);
    assert_eq!(run(cmd, None).code, 0);

    // A file this process may not write (its folder it may).
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o444)).unwrap();
    let args = [
        "save",
        "--learning",
        "x",
        "--entities",
        "mydb.orders",
        "--no-embed",
    ];
    let out = run_unprivileged("slayer-memory", dir.path(), &store, &args);
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(out.code, 1);
    let read_only = format!(
        "Error: the store at {} cannot be written by this process (SQLite: attempt to write a readonly database): run the command as a user who can write the file and its folder, or make them writable; commands that only read (search, list, show, export, stats) work as they are",
        store.display()
    );
    assert_eq!(out.stderr.trim(), read_only);
    // `migrate` is a writer too: it says so rather than "nothing to do".
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o444)).unwrap();
    let out = run_unprivileged("slayer-index", dir.path(), &store, &["migrate"]);
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!((out.code, out.stdout.as_str()), (1, ""), "{}", out.stderr);
    assert_eq!(out.stderr.trim(), read_only);

    // A file cut short.
    let bytes = std::fs::read(&store).unwrap();
    std::fs::write(&store, &bytes[..bytes.len() / 3]).unwrap();
    for (name, args) in [
        ("slayer-memory", &["list"][..]),
        ("slayer-search", &["--question", "orders"][..]),
    ] {
        let mut cmd = command(name, &store);
        cmd.args(args);
        let out = run(cmd, None);
        assert_eq!(out.code, 1, "{name}: {}", out.stderr);
        assert!(
            out.stderr.starts_with(&format!(
                "Error: the store at {} is damaged (SQLite: database disk image is malformed): restore it from a backup",
                store.display()
            )),
            "{name}: {}",
            out.stderr
        );
    }
}
