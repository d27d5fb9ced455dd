//! The evaluation harnesses: their metrics against hand-computed values (SciFact's, the
//! schema-linking one's, the metric-lookup one's and LoCoMo's), and (ignored by default: the evaluation data lives outside the
//! repository) a SciFact smoke run through the real binaries on 200 abstracts.

use std::path::PathBuf;
use std::process::Command;

use crate::kit::assert_success;
use crate::support::{models_dir, workspace_root};

#[test]
fn the_metrics_match_hand_computed_values() {
    for script in [
        "scripts/eval_scifact.py",
        "scripts/eval_schema.py",
        "scripts/eval_metrics.py",
        "scripts/eval_locomo.py",
    ] {
        let out = Command::new("python3")
            .args([script, "selftest"])
            .current_dir(workspace_root())
            .output()
            .unwrap();
        assert_success(&out);
    }
}

#[test]
#[ignore = "needs the BEIR SciFact data, which lives outside the repository: run with \
            `cargo test --release --workspace --locked --test it -- --ignored a_smoke_run` \
            with SCIFACT_DIR (default ../shared/data/beir-scifact) holding corpus.jsonl"]
fn a_smoke_run_scores_every_configuration() {
    let data = std::env::var_os("SCIFACT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("../shared/data/beir-scifact"));
    assert!(
        data.join("corpus.jsonl").is_file(),
        "no SciFact data at {} (set SCIFACT_DIR)",
        data.display()
    );
    let work = tempfile::tempdir().unwrap();
    let bin = assert_cmd::cargo::cargo_bin("slayer-search");
    let out = Command::new("bash")
        .args(["scripts/eval-scifact.sh", "--smoke"])
        .current_dir(workspace_root())
        .env("SCIFACT_DIR", &data)
        .env("SLAYER_EVAL_DIR", work.path())
        .env("SLAYER_BIN", bin.parent().unwrap())
        .env("SLAYER_MODEL_DIR", models_dir())
        .env_remove("SLAYER_EMBEDDING_MODEL")
        .output()
        .unwrap();
    assert_success(&out);
    let scores = std::fs::read_to_string(work.path().join("scores.txt")).unwrap();
    let rows: Vec<Vec<&str>> = scores.lines().map(|l| l.split(' ').collect()).collect();
    assert_eq!(
        rows.iter().map(|r| r[0]).collect::<Vec<_>>(),
        ["text", "dense", "all", "all-rrf"]
    );
    for row in &rows {
        for value in &row[1..] {
            let v: f64 = value.parse().unwrap();
            assert!((0.0..=1.0).contains(&v), "{scores}");
        }
        // Every judged doc is in the smoke corpus: a working channel finds most of them.
        let recall: f64 = row[2].parse().unwrap();
        assert!(recall > 0.5, "{scores}");
    }
}
