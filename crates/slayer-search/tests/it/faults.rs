//! Fault injection through the real binaries: `kill -9` at seeded random points of a load, an
//! import and a refresh (the store is then untouched or complete, the next command passes
//! `stats --check`, a re-run succeeds, and consumers got every changed doc), and mutated input
//! (never a panic, always `line N:`, nothing written).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{models_dir, workspace_root};

/// A small deterministic generator (the seed fixes every kill point and mutation).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn command(name: &str, store: &Path, models: Option<&Path>) -> Command {
    let mut cmd = crate::kit::command(name);
    cmd.env(
        "SLAYER_MODEL_DIR",
        models.unwrap_or(Path::new("/nonexistent/slayer-models")),
    )
    .env("SLAYER_STORE", store)
    .stderr(Stdio::null());
    cmd
}

/// Runs to the end; stdout, and whether it succeeded.
fn finish(cmd: Command, input: &[u8]) -> (Vec<u8>, bool) {
    let (stdout, ok, _) = finish_with_stderr(cmd, input);
    (stdout, ok)
}

/// [`finish`], with what the command wrote to stderr (empty unless the caller pipes it).
fn finish_with_stderr(mut cmd: Command, input: &[u8]) -> (Vec<u8>, bool, String) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.stdout, out.status.success(), stderr)
}

/// Starts the command, feeds it `input` and SIGKILLs it after `delay`; what it had printed.
fn kill_after(mut cmd: Command, input: &[u8], delay: Duration) -> Vec<u8> {
    let out_path = tempfile::NamedTempFile::new().unwrap();
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(out_path.path()).unwrap())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let _ = stdin.write_all(input);
    drop(stdin);
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
    std::fs::read(out_path.path()).unwrap()
}

fn integrity_ok(store: &Path) {
    let conn = rusqlite::Connection::open(store).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    // The count triggers a bulk import suspends are back whatever the import went through.
    let triggers: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'trigger'
             AND (name LIKE 'tag_counts%' OR name LIKE 'memory_count%')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(triggers, 4);
}

fn query_map(store: &Path, sql: &str) -> BTreeMap<String, String> {
    let conn = rusqlite::Connection::open(store).unwrap();
    let mut stmt = conn.prepare(sql).unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn doc_hashes(store: &Path) -> BTreeMap<String, String> {
    query_map(store, "SELECT canonical_id, content_hash FROM docs")
}

/// Canonical ids of the complete doc records in a captured stdout.
fn printed_ids(stdout: &[u8]) -> BTreeSet<String> {
    let text = String::from_utf8_lossy(stdout);
    text.split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| v["canonical_id"].as_str().unwrap().to_owned())
        .collect()
}

fn stats_check_passes(store: &Path) {
    stats_check_passes_after(store, "");
}

/// `stats --check` passes; a failure shows its report and `before`, what the last writer said.
fn stats_check_passes_after(store: &Path, before: &str) {
    let mut cmd = command("slayer-index", store, None);
    cmd.args(["stats", "--check"]);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "stats --check failed:\n{}\nafter:\n{before}",
        String::from_utf8_lossy(&out.stdout)
    );
}

fn catalog(models: usize, columns: usize, variant: &str) -> String {
    let mut out = String::from("{\"kind\":\"datasource\",\"name\":\"k\"}\n");
    for m in 0..models {
        let cols: Vec<String> = (0..columns)
            .map(|c| {
                format!(
                    "{{\"name\":\"c{c}\",\"type\":\"INT\",\"description\":\"Column {c} of model {m}, {variant}.\"}}"
                )
            })
            .collect();
        out.push_str(&format!(
            "{{\"kind\":\"model\",\"name\":\"m{m}\",\"data_source\":\"k\",\"description\":\"Model {m} ({variant}).\",\"columns\":[{}]}}\n",
            cols.join(",")
        ));
    }
    out
}

fn timed(cmd: Command, input: &[u8]) -> (Duration, Vec<u8>) {
    let start = Instant::now();
    let (stdout, ok) = finish(cmd, input);
    assert!(ok);
    (start.elapsed(), stdout)
}

#[test]
fn killed_loads_leave_the_store_whole_and_lose_no_changed_doc() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let (first, second) = (catalog(120, 20, "first"), catalog(120, 20, "second"));
    let load = || {
        let mut cmd = command("slayer-index", &store, None);
        cmd.args(["load", "-"]);
        cmd
    };
    let (took, _) = timed(load(), first.as_bytes());
    let before = doc_hashes(&store);
    let mut rng = Lcg(12);
    let mut printed = BTreeSet::new();
    for _ in 0..6 {
        let delay = Duration::from_micros(rng.below(took.as_micros() as u64 * 3 / 2));
        printed.extend(printed_ids(&kill_after(load(), second.as_bytes(), delay)));
        integrity_ok(&store);
        let now = doc_hashes(&store);
        if now != before {
            // Complete, or it would not differ only where the second catalog says.
            assert_eq!(now.len(), before.len());
        }
    }
    let mut rerun = load();
    rerun.stderr(Stdio::piped());
    let (rerun_out, ok, rerun_err) = finish_with_stderr(rerun, second.as_bytes());
    assert!(ok, "a re-run after the kills succeeds: {rerun_err}");
    printed.extend(printed_ids(&rerun_out));
    let after = doc_hashes(&store);
    let changed: BTreeSet<String> = after
        .iter()
        .filter(|(id, hash)| before.get(*id) != Some(*hash))
        .map(|(id, _)| id.clone())
        .collect();
    assert_eq!(
        changed.len(),
        120 * 21,
        "every doc changed between the catalogs"
    );
    let missing: Vec<&String> = changed.difference(&printed).collect();
    assert!(
        missing.is_empty(),
        "changed docs never printed: {}",
        missing.len()
    );
    stats_check_passes_after(&store, &rerun_err);
}

#[test]
fn killed_imports_leave_no_half_import_and_counts_exact() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let mut load = command("slayer-index", &store, None);
    load.args(["load", "-"]);
    assert!(finish(load, catalog(5, 3, "x").as_bytes()).1);
    let mut input = String::new();
    for i in 0..15_000 {
        input.push_str(&format!(
            "{{\"kind\":\"memory\",\"learning\":\"note {i}\",\"entities\":[\"k.m{}\",\"k.m{}.c1\"]}}\n",
            i % 5,
            (i + 1) % 5
        ));
    }
    let import = || {
        let mut cmd = command("slayer-memory", &store, None);
        cmd.args(["-q", "import", "-"]);
        cmd
    };
    let (took, _) = {
        // Timed on a scratch store so the real one starts empty.
        let scratch = dir.path().join("scratch.db");
        let mut load = command("slayer-index", &scratch, None);
        load.args(["load", "-"]);
        assert!(finish(load, catalog(5, 3, "x").as_bytes()).1);
        let mut cmd = command("slayer-memory", &scratch, None);
        cmd.args(["-q", "import", "-"]);
        timed(cmd, input.as_bytes())
    };
    let mut rng = Lcg(34);
    let count = |store: &Path| -> i64 {
        let conn = rusqlite::Connection::open(store).unwrap();
        conn.query_row("SELECT COUNT(*) FROM memories", [], |r| r.get(0))
            .unwrap()
    };
    for _ in 0..5 {
        let delay = Duration::from_micros(rng.below(took.as_micros() as u64 * 3 / 2));
        kill_after(import(), input.as_bytes(), delay);
        integrity_ok(&store);
        let n = count(&store);
        assert!(n == 0 || n == 15_000, "half an import: {n}");
        if n == 15_000 {
            break;
        }
    }
    if count(&store) == 0 {
        assert!(finish(import(), input.as_bytes()).1, "a re-run succeeds");
    }
    assert_eq!(count(&store), 15_000);
    let kept = query_map(
        &store,
        "SELECT entity, CAST(memories AS TEXT) FROM tag_counts",
    );
    let recounted = query_map(
        &store,
        "SELECT entity, CAST(COUNT(*) AS TEXT) FROM memory_entities
         WHERE entity <> 'memory:' || memory_id GROUP BY entity",
    );
    assert_eq!(kept, recounted);
    let mut search = command("slayer-search", &store, None);
    search.args(["--question", "note"]);
    assert!(search.status().unwrap().success());
    stats_check_passes(&store);
}

#[test]
fn killed_refreshes_keep_what_finished_and_a_rerun_completes() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let models = models_dir();
    let mut load = command("slayer-index", &store, None);
    load.args(["load", "-"]);
    let (loaded, ok) = finish(load, catalog(6, 8, "refresh").as_bytes());
    assert!(ok);
    let refresh = || {
        let mut cmd = command("slayer-embed", &store, Some(&models));
        cmd.args(["refresh", "-", "--batch-size", "8", "--threads", "1"]);
        cmd
    };
    let mut rng = Lcg(56);
    let started = Instant::now();
    for _ in 0..3 {
        // The model load alone takes a few hundred milliseconds; kill anywhere in 0..4 s.
        let delay = Duration::from_millis(rng.below(4000));
        kill_after(refresh(), &loaded, delay);
        integrity_ok(&store);
        // Every row present is whole: the full vector of the doc's current text.
        let rows = query_map(
            &store,
            "SELECT canonical_id, CAST(dim = 384 AND length(vector) = 1536
                     AND length(content_hash) = 64 AS TEXT)
             FROM embeddings",
        );
        assert!(rows.values().all(|ok| ok == "1"), "{rows:?}");
    }
    let (_, ok) = finish(refresh(), &loaded);
    assert!(ok, "a re-run after the kills succeeds");
    let mut status = command("slayer-embed", &store, Some(&models));
    status.args(["status", "--format", "json"]);
    let out = status.output().unwrap();
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["docs_lacking_active"], 0, "{status}");
    assert!(started.elapsed() < Duration::from_secs(300));
}

/// Random damage to valid lines: bytes flipped, cut, duplicated, or random bytes.
fn mutate(rng: &mut Lcg, line: &[u8]) -> Vec<u8> {
    let mut out = line.to_vec();
    match rng.below(5) {
        0 => {
            let cut = rng.below(out.len() as u64) as usize;
            out.truncate(cut);
        }
        1 => {
            for _ in 0..1 + rng.below(4) {
                let at = rng.below(out.len() as u64) as usize;
                let bytes = b"{}[]\":,\\.\n\x00\xff9-e";
                out[at] = bytes[rng.below(bytes.len() as u64) as usize];
            }
        }
        2 => {
            let at = rng.below(out.len() as u64) as usize;
            let piece = out[at..].to_vec();
            out.splice(at..at, piece);
        }
        3 => out = (0..rng.below(60)).map(|_| rng.below(256) as u8).collect(),
        _ => {
            let at = rng.below(out.len() as u64) as usize;
            let bytes = b"\"-1e999\x80";
            out.insert(at, bytes[rng.below(bytes.len() as u64) as usize]);
        }
    }
    out.retain(|b| *b != b'\n');
    out
}

fn dir_bytes(path: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(path)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            p.is_file().then(|| (p.clone(), std::fs::read(&p).unwrap()))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn mutated_input_never_panics_and_a_refused_load_writes_nothing() {
    let valid =
        std::fs::read(workspace_root().join("crates/slayer-search/tests/fixtures/catalog.jsonl"))
            .unwrap();
    let memories =
        std::fs::read(workspace_root().join("crates/slayer-search/tests/fixtures/memories.jsonl"))
            .unwrap();
    let mut rng = Lcg(78);
    for (name, args, base) in [
        ("slayer-index", &["load", "-"][..], &valid),
        ("slayer-memory", &["import", "-"][..], &memories),
    ] {
        let lines: Vec<&[u8]> = base
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        for round in 0..25 {
            let dir = tempfile::tempdir().unwrap();
            let store = dir.path().join("s.db");
            // A store that already holds the catalog, so "nothing written" is a real check.
            let mut setup = command("slayer-index", &store, None);
            setup.args(["load", "-"]);
            assert!(finish(setup, &valid).1);
            let before = dir_bytes(dir.path());
            let bad = rng.below(lines.len() as u64) as usize;
            let mut input = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                if i == bad {
                    input.extend(mutate(&mut rng, line));
                } else {
                    input.extend_from_slice(line);
                }
                input.push(b'\n');
            }
            let mut cmd = command(name, &store, None);
            cmd.args(args).stderr(Stdio::piped());
            let mut child = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            child.stdin.take().unwrap().write_all(&input).unwrap();
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            let code = out.status.code();
            assert!(
                matches!(code, Some(0) | Some(2)),
                "{name} round {round}: exit {code:?}: {stderr}"
            );
            assert!(
                !stderr.contains("panicked"),
                "{name} round {round}: {stderr}"
            );
            if code == Some(2) {
                let named = stderr.lines().any(|l| {
                    l.split("line ").skip(1).any(|rest| {
                        let digits: String =
                            rest.chars().take_while(char::is_ascii_digit).collect();
                        !digits.is_empty() && rest[digits.len()..].starts_with(':')
                    })
                });
                assert!(named, "{name} round {round}: no `line N:` in {stderr}");
                assert_eq!(
                    dir_bytes(dir.path()),
                    before,
                    "{name} round {round}: a refused input changed the store"
                );
            }
        }
    }
}

#[test]
fn an_index_whose_segment_files_are_cut_short_is_rebuilt_not_a_panic() {
    // tantivy asserts when a segment file is shorter than its footer: the search must read it
    // as a damaged cache and rebuild it, as it does a deleted one.
    let f = crate::support::Fixture::new();
    let before = f.search(&["--question", "refunds"]);
    let index = {
        let mut name = f.store.as_os_str().to_owned();
        name.push(".index");
        PathBuf::from(name)
    };
    let mut cut = 0;
    for entry in std::fs::read_dir(&index).unwrap().flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "idx" || e == "term") {
            std::fs::write(&path, b"cut").unwrap();
            cut += 1;
        }
    }
    assert!(cut > 0, "the index has segment files");
    let out = f.raw(&["--question", "refunds"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&out.stdout).unwrap(),
        before
    );
    stats_check_passes(&f.store);
}
