//! Ingest as a cron or CI job (issue 50): `load --sync`, `import --sync`, `ingest` of a
//! Markdown knowledge base, `--dry-run` and the shrink guard, on a file store; re-runs with
//! nothing changed write nothing; a sync killed midway leaves the store before or after.

use std::path::Path;

use crate::kit::{self, Out};

/// A fresh store with the demo shop's semantic layer, and a copy of `examples/kb` to edit.
struct Job {
    dir: tempfile::TempDir,
}

impl Job {
    fn new() -> Job {
        let job = Job {
            dir: tempfile::tempdir().unwrap(),
        };
        job.ok("slayer-index", &["import-slayer", "examples/shop/slayer"]);
        copy_dir(&kit::workspace_root().join("examples/kb"), &job.kb());
        job
    }

    fn store(&self) -> std::path::PathBuf {
        self.dir.path().join("s.db")
    }

    fn kb(&self) -> std::path::PathBuf {
        self.dir.path().join("kb")
    }

    fn run(&self, bin: &str, args: &[&str]) -> Out {
        kit::run(bin, Some(&self.store()), args, &[], None)
    }

    fn ok(&self, bin: &str, args: &[&str]) -> Out {
        let out = self.run(bin, args);
        assert_eq!(out.code, 0, "{bin} {args:?}: {}", out.stderr);
        out
    }

    /// SQLite's `data_version` seen from a connection held open across `f`: it moves only
    /// when another connection commits a write.
    fn writes_during(&self, f: impl FnOnce()) -> bool {
        let conn = rusqlite::Connection::open(self.store()).unwrap();
        let version = |c: &rusqlite::Connection| -> i64 {
            c.query_row("PRAGMA data_version", [], |r| r.get(0))
                .unwrap()
        };
        let before = version(&conn);
        f();
        version(&conn) != before
    }

    fn count(&self, sql: &str) -> i64 {
        let conn = rusqlite::Connection::open(self.store()).unwrap();
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn plan(out: &Out) -> Vec<(String, String)> {
    out.lines()
        .iter()
        .map(|p| {
            assert_eq!(p["kind"], "plan");
            (
                p["change"].as_str().unwrap().to_owned(),
                p["id"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn ingest_converges_the_store_on_the_knowledge_base_and_a_rerun_writes_nothing() {
    let job = Job::new();
    let kb = job.kb();
    let kb = kb.to_str().unwrap();
    let out = job.ok("slayer-memory", &["ingest", kb]);
    assert!(
        out.stderr
            .contains("imported 5 memories (5 added, 0 changed, 0 removed, 0 unchanged)"),
        "{}",
        out.stderr
    );
    let shown = job.ok(
        "slayer-memory",
        &["show", "kb.caveats.payments", "--format", "json"],
    );
    // Front matter, [[links]] and backticked names that resolve are its tags.
    assert_eq!(
        shown.json()["entities"],
        serde_json::json!([
            "shop.payments.amount",
            "shop.orders",
            "shop.orders.order_total"
        ])
    );
    let shown = job.ok(
        "slayer-memory",
        &["show", "kb.runbooks.nightly-load", "--format", "json"],
    );
    assert_eq!(shown.json()["tier"], "procedural");
    // Nothing changed: nothing written.
    assert!(!job.writes_during(|| {
        let out = job.ok("slayer-memory", &["ingest", kb]);
        assert!(out
            .stderr
            .contains("(0 added, 0 changed, 0 removed, 5 unchanged)"));
    }));
    // One page edited, one gone, one new with an entity that names nothing.
    let dir = job.kb();
    std::fs::remove_file(dir.join("runbooks/nightly-load.md")).unwrap();
    let revenue = dir.join("metrics/revenue.md");
    let text = std::fs::read_to_string(&revenue).unwrap();
    std::fs::write(&revenue, format!("{text}\nStore 7 reports a day late.\n")).unwrap();
    std::fs::write(
        dir.join("new.md"),
        "---\nentities:\n  - shop.nowhere\n---\nNew page about [[shop.orders]].\n",
    )
    .unwrap();
    let dry = job.run("slayer-memory", &["ingest", kb, "--dry-run"]);
    assert_eq!(dry.code, 1, "{}", dry.stderr);
    assert_eq!(
        plan(&dry),
        [
            ("changed".to_owned(), "kb.metrics.revenue".to_owned()),
            ("added".to_owned(), "kb.new".to_owned()),
            ("removed".to_owned(), "kb.runbooks.nightly-load".to_owned()),
        ]
    );
    assert!(
        dry.stderr
            .contains("new.md:3: entity 'shop.nowhere' is not tagged"),
        "{}",
        dry.stderr
    );
    assert!(dry
        .stderr
        .contains("dry run, nothing written: 1 added, 1 changed, 1 removed, 3 unchanged"));
    let out = job.run("slayer-memory", &["ingest", kb]);
    assert_eq!(out.code, 1, "a warning is exit 1: {}", out.stderr);
    assert!(
        out.stderr
            .contains("(1 added, 1 changed, 1 removed, 3 unchanged)"),
        "{}",
        out.stderr
    );
    assert_eq!(
        job.count("SELECT count(*) FROM memories WHERE id = 'kb.runbooks.nightly-load'"),
        0
    );
    assert_eq!(
        job.count(
            "SELECT count(*) FROM docs WHERE canonical_id = 'memory:kb.runbooks.nightly-load'"
        ),
        0
    );
    // An emptied knowledge base would wipe every page: refused, nothing written.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            std::fs::remove_dir_all(path).unwrap();
        } else {
            std::fs::remove_file(path).unwrap();
        }
    }
    let refused = job.run("slayer-memory", &["ingest", kb]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("more than half"),
        "{}",
        refused.stderr
    );
    assert_eq!(
        job.count("SELECT count(*) FROM memories WHERE id LIKE 'kb.%'"),
        5
    );
    job.ok("slayer-memory", &["ingest", kb, "--allow-shrink"]);
    assert_eq!(
        job.count("SELECT count(*) FROM memories WHERE id LIKE 'kb.%'"),
        0
    );
}

#[test]
fn import_sync_forgets_the_prefix_s_memories_the_input_lacks() {
    let job = Job::new();
    let line = |id: &str, learning: &str| {
        format!("{{\"kind\": \"memory\", \"id\": \"{id}\", \"learning\": \"{learning}\", \"entities\": [\"shop.orders\"]}}\n")
    };
    let first = [
        line("ext.a", "A."),
        line("ext.b", "B."),
        line("ext.c", "C."),
        line("mine", "Mine."),
    ]
    .concat();
    kit::run(
        "slayer-memory",
        Some(&job.store()),
        &["import", "-"],
        &[],
        Some(&first),
    );
    let second = [line("ext.a", "A, revised."), line("ext.b", "B.")].concat();
    let dry = kit::run(
        "slayer-memory",
        Some(&job.store()),
        &["import", "-", "--sync", "ext.", "--dry-run"],
        &[],
        Some(&second),
    );
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    assert_eq!(
        plan(&dry),
        [
            ("changed".to_owned(), "ext.a".to_owned()),
            ("removed".to_owned(), "ext.c".to_owned()),
        ]
    );
    assert_eq!(
        job.count("SELECT count(*) FROM memories"),
        4,
        "a dry run writes nothing"
    );
    let out = kit::run(
        "slayer-memory",
        Some(&job.store()),
        &["import", "-", "--sync", "ext."],
        &[],
        Some(&second),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("(0 added, 1 changed, 1 removed, 1 unchanged)"),
        "{}",
        out.stderr
    );
    let ids: Vec<String> = rusqlite::Connection::open(job.store())
        .unwrap()
        .prepare("SELECT id FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        ids,
        ["ext.a", "ext.b", "mine"],
        "outside the prefix is not touched"
    );
    // A bad line kept going past may be a memory that is not gone: nothing is forgotten.
    let bad = format!(
        "{}{{\"kind\": \"memory\", \"id\": \"ext.b\"}}\n",
        line("ext.a", "A, revised.")
    );
    let out = kit::run(
        "slayer-memory",
        Some(&job.store()),
        &["import", "-", "--sync", "ext.", "--keep-going"],
        &[],
        Some(&bad),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("1 lines could not be read, so --sync forgot nothing"),
        "{}",
        out.stderr
    );
    assert_eq!(
        job.count("SELECT count(*) FROM memories WHERE id = 'ext.b'"),
        1
    );
}

#[test]
fn load_sync_removes_the_models_upstream_dropped_and_guards_against_a_wipe() {
    let job = Job::new();
    job.ok(
        "slayer-memory",
        &[
            "save",
            "--learning",
            "Stores open at 9.",
            "--entities",
            "shop.stores",
            "--id",
            "hours",
        ],
    );
    let export = job
        .ok("slayer-index", &["export", "--datasource", "shop"])
        .stdout;
    let without_stores: String = export
        .lines()
        .filter(|l| !l.contains("\"name\":\"stores\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let file = job.dir.path().join("catalog.jsonl");
    std::fs::write(&file, &export).unwrap();
    let file = file.to_str().unwrap();
    // The same catalog again: nothing written.
    assert!(!job.writes_during(|| {
        let out = job.ok("slayer-index", &["load", "--sync", file]);
        assert!(
            out.stderr
                .contains("(0 added, 0 changed, 0 removed, 7 unchanged)"),
            "{}",
            out.stderr
        );
    }));
    std::fs::write(job.dir.path().join("catalog.jsonl"), &without_stores).unwrap();
    let dry = job.ok("slayer-index", &["load", "--sync", "--dry-run", file]);
    assert_eq!(
        plan(&dry),
        [("removed".to_owned(), "shop.stores".to_owned())]
    );
    assert_eq!(
        job.count("SELECT count(*) FROM models WHERE name = 'stores'"),
        1
    );
    let out = job.ok("slayer-index", &["load", "--sync", file]);
    assert!(
        out.stderr
            .contains("(0 added, 0 changed, 1 removed, 6 unchanged)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("memory 'hours' was tagged only with models the sync removed; it is kept"),
        "{}",
        out.stderr
    );
    assert_eq!(
        job.count("SELECT count(*) FROM models WHERE name = 'stores'"),
        0
    );
    assert_eq!(
        job.count("SELECT count(*) FROM docs WHERE canonical_id LIKE 'shop.stores%'"),
        0
    );
    assert_eq!(
        job.count("SELECT count(*) FROM memories WHERE id = 'hours'"),
        1
    );
    // A datasource record with no models (a broken export) would remove them all: refused.
    std::fs::write(
        job.dir.path().join("catalog.jsonl"),
        format!("{}\n", export.lines().next().unwrap()),
    )
    .unwrap();
    let refused = job.run("slayer-index", &["load", "--sync", file]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(
            "load --sync would remove 6 of the 6 models of datasource 'shop' (more than half)"
        ),
        "{}",
        refused.stderr
    );
    assert_eq!(
        job.count("SELECT count(*) FROM models"),
        6,
        "nothing was written"
    );
}

/// A sync killed at any moment leaves the store as it was before or after: never half.
#[test]
fn a_sync_killed_midway_leaves_the_store_before_or_after() {
    let job = Job::new();
    let lines = |n: usize, tag: &str| -> String {
        (0..n)
            .map(|i| format!("{{\"kind\": \"memory\", \"id\": \"bulk.{i}\", \"learning\": \"note {i} {tag}\", \"entities\": [\"shop.orders\"]}}\n"))
            .collect()
    };
    kit::run(
        "slayer-memory",
        Some(&job.store()),
        &["import", "-"],
        &[],
        Some(&lines(6000, "old")),
    );
    // The new input changes every note and drops a third of them.
    let new = lines(4000, "new");
    for delay_ms in [50u64, 150, 400] {
        let mut child = kit::command("slayer-memory")
            .env("SLAYER_STORE", job.store())
            .args(["import", "-", "--sync", "bulk."])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = new.clone();
        let feeder = std::thread::spawn(move || {
            use std::io::Write as _;
            let _ = stdin.write_all(input.as_bytes());
        });
        std::thread::sleep(std::time::Duration::from_millis(delay_ms));
        child.kill().unwrap(); // SIGKILL
        let _ = child.wait();
        let _ = feeder.join();
        let total = job.count("SELECT count(*) FROM memories WHERE id LIKE 'bulk.%'");
        let renewed = job.count("SELECT count(*) FROM memories WHERE data LIKE '%new%'");
        assert!(
            (total == 6000 && renewed == 0) || (total == 4000 && renewed == 4000),
            "killed after {delay_ms} ms: {total} memories, {renewed} renewed"
        );
        if total == 4000 {
            break;
        }
    }
}

/// The worked example a cron or CI job runs (`examples/ci/nightly.sh`): the first run fills
/// the store, a second with nothing changed writes nothing and exits 0.
#[test]
fn the_nightly_example_converges_and_its_rerun_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("nightly.db");
    let path = format!(
        "{}:{}",
        kit::bin_dir().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let nightly = || {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg("examples/ci/nightly.sh")
            .current_dir(kit::workspace_root())
            .env("PATH", &path)
            .env("SLAYER_STORE", &store)
            .env("SLAYER_MODEL_DIR", crate::support::models_dir())
            .env("SLAYER_NO_EMBED", "0")
            .env_remove("SLAYER_FORMAT")
            .env_remove("SLAYER_EMBEDDING_MODEL");
        kit::output(cmd, None)
    };
    let first = nightly();
    assert_eq!(first.code, 0, "{}", first.stderr);
    let conn = rusqlite::Connection::open(&store).unwrap();
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(
        count("SELECT count(*) FROM memories WHERE id LIKE 'kb.%'"),
        5
    );
    let embedded = count("SELECT count(*) FROM embeddings");
    assert!(embedded > 50, "{embedded}");
    let version = |c: &rusqlite::Connection| -> i64 {
        c.query_row("PRAGMA data_version", [], |r| r.get(0))
            .unwrap()
    };
    let before = version(&conn);
    let second = nightly();
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(
        version(&conn),
        before,
        "the re-run wrote: {}",
        second.stderr
    );
    assert_eq!(count("SELECT count(*) FROM embeddings"), embedded);
}

/// Two syncs started together queue on the store's write lock: one converges the store, the
/// other then plans against what the first committed and finds nothing to do.
#[test]
fn two_overlapping_ingests_serialize() {
    let job = Job::new();
    let kb = job.kb();
    let spawn = || {
        kit::command("slayer-memory")
            .env("SLAYER_STORE", job.store())
            .args(["ingest", kb.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (spawn(), spawn());
    let mut summaries: Vec<String> = [a, b]
        .into_iter()
        .map(|child| {
            let out = child.wait_with_output().unwrap();
            assert_eq!(out.status.code(), Some(0));
            let stderr = String::from_utf8(out.stderr).unwrap();
            stderr
                .lines()
                .find(|l| l.starts_with("imported"))
                .unwrap()
                .to_owned()
        })
        .collect();
    summaries.sort();
    assert_eq!(
        summaries,
        [
            "imported 5 memories (0 added, 0 changed, 0 removed, 5 unchanged)",
            "imported 5 memories (5 added, 0 changed, 0 removed, 0 unchanged)"
        ]
    );
}

/// A re-run of a large import (past the bulk path, which turns tag counting off while it
/// writes) with nothing changed writes nothing either.
#[test]
fn a_large_reimport_with_nothing_changed_writes_nothing() {
    let job = Job::new();
    let lines: String = (0..1200)
        .map(|i| format!("{{\"kind\": \"memory\", \"id\": \"bulk.{i}\", \"learning\": \"note {i}\", \"entities\": [\"shop.orders\"]}}\n"))
        .collect();
    let import = || {
        let out = kit::run(
            "slayer-memory",
            Some(&job.store()),
            &["import", "-", "--sync", "bulk."],
            &[],
            Some(&lines),
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        out
    };
    import();
    assert!(!job.writes_during(|| {
        let out = import();
        assert!(
            out.stderr
                .contains("(0 added, 0 changed, 0 removed, 1200 unchanged)"),
            "{}",
            out.stderr
        );
    }));
}
