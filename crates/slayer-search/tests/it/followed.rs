//! The vector sidecar follows writes (issue 34): a save or a forget is appended to its journal
//! by the writer, the next search reads it without a rebuild, and whatever a writer killed
//! with SIGKILL left behind ranks exactly as a sidecar built afresh from the store.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::support::{models_dir, Fixture};

const QUESTION: [&str; 3] = [
    "--question",
    "how much money did the company earn",
    "--explain",
];

/// The store's one sidecar journal (`<store>.vectors/<model>.bin.log`).
fn journal(store: &Path) -> PathBuf {
    let mut dir = store.as_os_str().to_owned();
    dir.push(".vectors");
    std::fs::read_dir(PathBuf::from(dir))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".bin.log"))
        .expect("a journal beside the sidecar")
}

fn journal_len(store: &Path) -> u64 {
    std::fs::metadata(journal(store)).unwrap().len()
}

fn embedded_fixture() -> Fixture {
    let f = Fixture::new();
    let out = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    f.dense_search(&QUESTION);
    f
}

/// `slayer-memory` with the real model, embedding what it saves.
fn memory_embedding(f: &Fixture, args: &[&str]) -> crate::kit::Out {
    let models = models_dir();
    crate::kit::run(
        "slayer-memory",
        Some(&f.store),
        args,
        &[
            ("SLAYER_MODEL_DIR", models.to_str().unwrap()),
            ("SLAYER_NO_EMBED", "0"),
        ],
        None,
    )
}

fn memory_ids(v: &Value) -> Vec<String> {
    crate::support::ids(v, "memories")
}

#[test]
fn saves_and_forgets_are_followed_and_rank_as_after_a_compaction() {
    let f = embedded_fixture();
    assert_eq!(journal_len(&f.store), 16, "refresh leaves an empty journal");
    let out = memory_embedding(
        &f,
        &[
            "save",
            "--learning",
            "Profit and earnings figures are reported every quarter.",
            "--entities",
            "mydb.orders.amount",
        ],
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let saved = out.stdout.trim().to_owned();
    assert!(journal_len(&f.store) > 16, "the save appended its row");
    // The journal makes the sidecar current: `stats --check` holds it to the store.
    let stats = crate::support::run("slayer-index", &f.store, &["stats", "--check"], None);
    assert_eq!(stats.code, 0, "{}{}", stats.stdout, stats.stderr);
    let followed = f.dense_search(&QUESTION);
    assert!(
        followed["memories"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["explain"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["channel"] == "dense")
                && h["text"]
                    .as_str()
                    .is_some_and(|l| l.starts_with("Profit and earnings"))),
        "{saved}: {followed:#}"
    );
    let out = memory_embedding(&f, &["forget", "42"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let followed = f.dense_search(&QUESTION);
    assert!(!memory_ids(&followed).contains(&"42".to_owned()));
    // refresh compacts: a new base and an empty journal rank the same.
    let out = f.with_model("slayer-embed", &["refresh"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(journal_len(&f.store), 16);
    assert_eq!(f.dense_search(&QUESTION), followed);
}

#[test]
fn writers_killed_at_any_point_leave_a_sidecar_that_ranks_as_a_rebuilt_one() {
    let f = embedded_fixture();
    let models = models_dir();
    for (i, delay) in [0u64, 15, 30, 45, 60, 90, 120, 180, 250, 400]
        .iter()
        .enumerate()
    {
        let mut save = crate::kit::command("slayer-memory");
        save.env("SLAYER_STORE", &f.store)
            .env("SLAYER_MODEL_DIR", &models)
            .env("SLAYER_NO_EMBED", "0")
            .args([
                "save",
                "--learning",
                &format!("Quarterly profit report number {i} lists the company earnings."),
                "--entities",
                "mydb.orders.amount",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let mut child = save.spawn().unwrap();
        std::thread::sleep(Duration::from_millis(*delay));
        let _ = child.kill();
        child.wait().unwrap();
        // Every state a kill can leave is read consistently.
        f.dense_search(&QUESTION);
    }
    let followed = f.dense_search(&QUESTION);
    let vectors = journal(&f.store).parent().unwrap().to_owned();
    std::fs::remove_dir_all(&vectors).unwrap();
    let rebuilt = f.dense_search(&QUESTION);
    assert_eq!(followed, rebuilt);
}
