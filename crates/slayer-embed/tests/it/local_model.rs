//! The default local model: sentence-transformers' numbers, and refresh by content hash.

use crate::kit::assert_success;
use crate::support::TempStore;

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn cosines_match_sentence_transformers() {
    let s = TempStore::with_catalog();
    let out = s.embed_local(&[
        "text",
        "The weather is lovely today.",
        "It's so sunny outside!",
        "He drove to the stadium.",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let records = out.lines();
    let vectors: Vec<Vec<f64>> = records
        .iter()
        .map(|r| {
            assert_eq!(r["model"], "local/all-MiniLM-L6-v2");
            assert_eq!(r["dim"], 384);
            r["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap())
                .collect()
        })
        .collect();
    let round = |x: f64| (x * 1000.0).round() / 1000.0;
    assert_eq!(round(cosine(&vectors[0], &vectors[1])), 0.666);
    assert_eq!(round(cosine(&vectors[0], &vectors[2])), 0.105);
    assert_eq!(round(cosine(&vectors[1], &vectors[2])), 0.141);
}

#[test]
fn refresh_embeds_changed_docs_only_and_status_tells() {
    let s = TempStore::with_catalog();
    let docs = s.count("SELECT count(*) FROM docs");
    let first = s.embed_local(&["refresh", "--all", "--batch-size", "4", "--threads", "2"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let statuses: Vec<String> = first
        .lines()
        .iter()
        .map(|r| r["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses.len() as i64, docs);
    assert!(statuses.iter().all(|s| s == "embedded"));
    let blob_ok = s.count(
        "SELECT count(*) FROM embeddings WHERE dim = 384 AND length(vector) = 384 * 4
         AND model_name = 'local/all-MiniLM-L6-v2'",
    );
    assert_eq!(blob_ok, docs);
    let again = s.embed_local(&["refresh", "--all"]);
    assert!(again.lines().iter().all(|r| r["status"] == "unchanged"));

    // A changed description re-embeds exactly the docs whose text changed.
    let changed = s.run(
        "slayer-index",
        &["load", "-"],
        &[],
        Some(
            &std::fs::read_to_string(
                crate::support::workspace_root().join("tests/fixtures/catalog.jsonl"),
            )
            .unwrap()
            .replace(
                "The analytics warehouse.",
                "The analytics warehouse, rebuilt nightly.",
            ),
        ),
    );
    assert_eq!(changed.code, 0, "{}", changed.stderr);
    let refreshed = s.embed_local(&["refresh", "-"]);
    // No stdin records: nothing to do.
    assert!(refreshed.lines().is_empty());
    let models = crate::support::models_dir();
    let piped = s.run(
        "slayer-embed",
        &["refresh"],
        &[("SLAYER_MODEL_DIR", models.to_str().unwrap())],
        Some(&changed.stdout),
    );
    let embedded: Vec<String> = piped
        .lines()
        .iter()
        .filter(|r| r["status"] == "embedded")
        .map(|r| r["canonical_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(embedded, ["warehouse"]);

    let status = s.embed_local(&["status", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(v["rows"]["local/all-MiniLM-L6-v2"], docs);
    assert_eq!(v["docs_lacking_active"], 0);
}

#[test]
fn a_missing_model_folder_is_one_line_telling_what_to_run() {
    let s = TempStore::with_catalog();
    let out = s.run(
        "slayer-embed",
        &["refresh", "--all"],
        &[("SLAYER_MODEL_DIR", "/nonexistent/models")],
        None,
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("scripts/fetch-model.sh"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{}", out.stderr);
    assert_eq!(s.count("SELECT count(*) FROM embeddings"), 0);
}

#[test]
fn a_refresh_piped_from_the_load_that_creates_the_store_waits_for_its_input() {
    // Regression: refresh opened the store before reading stdin, so it lost the race against
    // the `slayer-index load` that creates it.
    let dir = tempfile::tempdir().unwrap();
    let index = assert_cmd::cargo::cargo_bin("slayer-index");
    let embed = assert_cmd::cargo::cargo_bin("slayer-embed");
    let out = std::process::Command::new("bash")
        .args([
            "-c",
            "set -o pipefail; (sleep 0.3; \"$INDEX\" -q load tests/fixtures/catalog.jsonl) | \"$EMBED\" -q refresh | wc -l",
        ])
        .current_dir(crate::support::workspace_root())
        .env("INDEX", index)
        .env("EMBED", embed)
        .env("SLAYER_STORE", dir.path().join("new.db"))
        .env("SLAYER_MODEL_DIR", crate::support::models_dir())
        .env_remove("SLAYER_EMBEDDING_MODEL")
        .output()
        .unwrap();
    assert_success(&out);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "18");
}
