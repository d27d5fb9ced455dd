//! Issue 65: SIGTERM and SIGINT (docs/spec/limits.md §16.9). A server stops taking requests,
//! answers those under way and exits 0; a writer finishes or rolls back its one transaction
//! within `--drain`; a second signal stops at once. Nothing committed goes unanswered, nothing
//! answered is missing, nothing is half-written.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::mcp::initialize;
use crate::support::{Fixture, TempStore};

fn signal(child: &Child, name: &str) {
    let sent = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
}

/// The exit code, waiting at most `limit`.
fn exit_within(child: &mut Child, limit: Duration) -> Option<i32> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status.code();
        }
        assert!(
            started.elapsed() < limit,
            "still running {limit:?} after the signal"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The ids of the memories in the store.
fn stored_ids(store: &Path) -> BTreeSet<String> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut stmt = conn.prepare("SELECT id FROM memories").unwrap();
    let ids = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    ids
}

fn save(i: usize) -> String {
    json!({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {
        "name": "save_memory", "arguments": {
            "learning": format!("Shutdown probe {i}: refunds post weekly."),
            "entities": ["mydb.orders"], "id": format!("probe-{i}")}}})
    .to_string()
}

/// SIGTERM while a client streams saves into `mcp` on stdio: the server stops taking them,
/// answers every one it took, and exits 0; the saves in the store are exactly the ones
/// answered as saved.
#[test]
fn sigterm_in_the_middle_of_saves_answers_every_committed_save() {
    let f = Fixture::new();
    let before = stored_ids(&f.store);
    let total = 400;
    let mut child = crate::kit::command("slayer-search")
        .env("SLAYER_MODEL_DIR", "/nonexistent/slayer-models")
        .args(["mcp", "--store"])
        .arg(&f.store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let mut lines = vec![
            initialize("2025-06-18"),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        ];
        lines.extend((0..total).map(save));
        for line in lines {
            // The server stops reading once it stops: a broken pipe then is expected.
            if writeln!(stdin, "{line}")
                .and_then(|_| stdin.flush())
                .is_err()
            {
                return;
            }
        }
        // Stdin stays open: the signal, not the end of input, ends the session.
        std::thread::sleep(Duration::from_secs(30));
    });
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut answered = BTreeSet::new();
    let mut refused = 0;
    let mut signalled = false;
    for line in stdout.lines() {
        let reply: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let id = reply["id"].as_u64().unwrap_or(0);
        if id >= 100 {
            if reply["error"]["code"] == -32000 {
                refused += 1;
            } else {
                assert_eq!(reply["result"]["isError"], false, "{reply}");
                answered.insert(format!("probe-{}", id - 100));
            }
        }
        if answered.len() == 20 && !signalled {
            signal(&child, "TERM");
            signalled = true;
        }
    }
    assert!(signalled, "the saves were answered before the signal");
    assert_eq!(exit_within(&mut child, Duration::from_secs(15)), Some(0));
    drop(writer);
    let saved: BTreeSet<String> = stored_ids(&f.store).difference(&before).cloned().collect();
    assert_eq!(
        saved, answered,
        "every committed save answered, every answer saved"
    );
    assert!(
        answered.len() < total,
        "no new work after the signal: {} of {total} saved",
        answered.len()
    );
    assert!(answered.len() + refused <= total);
}

/// An import of `n` memories into a new store with `--drain drain`, signalled only once its
/// write transaction is open (the write-ahead log has grown).
fn import_under_way(n: usize, drain: &str) -> (TempStore, Child) {
    let lines: String = (0..n)
        .map(|i| {
            json!({"kind": "memory", "id": format!("m{i}"), "learning": format!("Note {i} about orders."),
                   "entities": [], "created_at": "2026-01-01T00:00:00Z"})
            .to_string()
                + "\n"
        })
        .collect();
    let store = TempStore::new();
    let input = store.dir.path().join("memories.jsonl");
    std::fs::write(&input, &lines).unwrap();
    let child = crate::kit::command("slayer-memory")
        .args(["--store"])
        .arg(&store.store)
        .args(["--drain", drain, "-q", "import"])
        .arg(&input)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let wal = store.store.with_extension("db-wal");
    let started = Instant::now();
    while std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) == 0 {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no write began"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    (store, child)
}

/// A writer signalled while its transaction is open finishes it within the drain (exit 0, every
/// record); with `--drain 0` it stops at once and writes nothing (exit 143); either way, never a
/// part.
#[test]
fn a_signalled_import_commits_whole_within_the_drain_or_writes_nothing() {
    let n = 40_000;
    for (drain, expect_code, expect_count) in [("10", 0, n), ("0", 143, 0)] {
        let (store, mut child) = import_under_way(n, drain);
        signal(&child, "TERM");
        let code = exit_within(&mut child, Duration::from_secs(30));
        let count = stored_ids(&store.store).len();
        assert_eq!(
            (code, count),
            (Some(expect_code), expect_count),
            "--drain {drain}"
        );
    }
}

/// An import of `n` memories under way (`--drain 600`) sent `name` twice, `gap` apart: its exit
/// code (within `limit`) and the memories it stored.
fn signalled_twice(n: usize, name: &str, gap: Duration, limit: Duration) -> (Option<i32>, usize) {
    let (store, mut child) = import_under_way(n, "600");
    signal(&child, name);
    std::thread::sleep(gap);
    signal(&child, name);
    let code = exit_within(&mut child, limit);
    (code, stored_ids(&store.store).len())
}

/// A second signal does not wait for the drain.
#[test]
fn a_second_signal_stops_at_once() {
    let n = 40_000;
    // Past the 100 ms within which a signal is the same request delivered twice.
    let (code, count) =
        signalled_twice(n, "INT", Duration::from_millis(300), Duration::from_secs(5));
    assert!(
        (code, count) == (Some(130), 0) || (code, count) == (Some(0), n),
        "stopped at once, nothing half-written: {code:?}, {count} memories"
    );
}

/// `--batch` answers every request it read, then a signal with none under way ends it at once,
/// with status 0.
#[test]
fn batch_answers_what_it_read_and_ends_at_a_signal() {
    let f = Fixture::new();
    let mut child = crate::kit::command("slayer-search")
        .env("SLAYER_MODEL_DIR", "/nonexistent/slayer-models")
        .args(["--store"])
        .arg(&f.store)
        .args(["--batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for q in ["refunds", "orders by region", "customers"] {
        writeln!(stdin, "{}", json!({"question": q})).unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let reply: Value = serde_json::from_str(&line).unwrap();
        assert!(reply["entities"].is_array(), "{reply}");
    }
    signal(&child, "TERM");
    assert_eq!(exit_within(&mut child, Duration::from_secs(5)), Some(0));
    drop(stdin);
}

/// `timeout` signals its child and then its process group, so the child gets SIGTERM twice at
/// once: that is one request to stop, not a second one. Found by CI, where the help example
/// `timeout --preserve-status 1 slayer-search mcp --http …` ended 143 instead of 0.
#[test]
fn a_signal_delivered_twice_at_once_is_one_request() {
    let n = 40_000;
    let (code, count) = signalled_twice(
        n,
        "TERM",
        Duration::from_millis(10),
        Duration::from_secs(30),
    );
    assert_eq!((code, count), (Some(0), n), "the import finished whole");
}
