//! The evaluation harnesses: their metrics against hand-computed values (SciFact's, the
//! schema-linking one's, the metric-lookup one's and LoCoMo's), and (ignored by default: the evaluation data lives outside the
//! repository) a SciFact smoke run through the real binaries on 200 abstracts.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

use crate::kit::assert_success;
use crate::support::{models_dir, run, workspace_root, TempStore};

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

/// Every project of a metric-lookup question set (a folder of `<format>_<name>` projects and a
/// `questions.jsonl`): each imports (exit 0, or 1 with a skipped object named), carries its
/// licence and source, has questions, and every gold id of its questions is one of its
/// measures. A question whose gold the catalog lacks could never be answered and would lower
/// every build's score alike, unseen.
fn check_question_set(folder: &str) {
    let set = workspace_root().join(folder);
    let questions: Vec<Value> = std::fs::read_to_string(set.join("questions.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let mut projects: Vec<String> = std::fs::read_dir(&set)
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    projects.sort();
    for project in &projects {
        let dir = set.join(project);
        for file in ["LICENSE", "SOURCE.md"] {
            assert!(dir.join(file).is_file(), "{folder}/{project} lacks {file}");
        }
        let format = project.split('_').next().unwrap();
        let store = TempStore::new();
        let out = run(
            "slayer-index",
            &store.store,
            &[
                "-q",
                "import",
                format,
                dir.to_str().unwrap(),
                "--datasource",
                project,
                "--load",
            ],
            None,
        );
        assert!(out.code <= 1, "{folder}/{project}: {}", out.stderr);
        let export = run("slayer-index", &store.store, &["export"], None);
        assert_eq!(export.code, 0, "{}", export.stderr);
        let mut measures = HashSet::new();
        for line in export.stdout.lines() {
            let record: Value = serde_json::from_str(line).unwrap();
            if record["kind"] != "model" {
                continue;
            }
            for m in record["measures"].as_array().into_iter().flatten() {
                measures.insert(format!(
                    "{project}.{}.{}",
                    record["name"].as_str().unwrap(),
                    m["name"].as_str().unwrap()
                ));
            }
        }
        let asked: Vec<&Value> = questions
            .iter()
            .filter(|q| q["project"] == project.as_str())
            .collect();
        assert!(!asked.is_empty(), "{folder}/{project} has no question");
        for q in asked {
            for gold in q["gold"].as_array().unwrap() {
                let gold = gold.as_str().unwrap();
                assert!(
                    measures.contains(gold),
                    "{folder}: gold {gold} of {:?} is no measure of {project}",
                    q["question"]
                );
            }
        }
    }
    for q in &questions {
        let project = q["project"].as_str().unwrap();
        assert!(
            projects.iter().any(|p| p == project),
            "{folder}: a question of {project}, which the set lacks"
        );
    }
}

#[test]
fn every_gold_measure_of_the_tuned_set_is_in_its_project() {
    check_question_set("tests/fixtures/metric-eval");
}

#[test]
fn every_gold_measure_of_the_dev_set_is_in_its_project() {
    check_question_set("tests/fixtures/metric-dev");
}

#[test]
fn the_held_out_set_is_whole_and_frozen() {
    check_question_set("tests/fixtures/metric-heldout");
    // Frozen: the digest docs/quality/metrics.md records is the folder's (a changed question,
    // gold or project file is a new set, and its scores start again).
    let docs = std::fs::read_to_string(workspace_root().join("docs/quality/metrics.md")).unwrap();
    let recorded = docs
        .split("held-out set digest: `")
        .nth(1)
        .and_then(|rest| rest.split('`').next())
        .expect("docs/quality/metrics.md records the held-out set's digest");
    let out = Command::new("python3")
        .args([
            "scripts/eval_metrics.py",
            "digest",
            "tests/fixtures/metric-heldout",
        ])
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), recorded);
}
