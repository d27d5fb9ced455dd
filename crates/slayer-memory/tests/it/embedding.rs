//! Saved and imported memories are embedded under the active model when it can be used; when
//! it cannot, the save still succeeds with one warning.

use std::path::Path;

use crate::kit::assert_success;
use crate::model::models_dir;
use crate::support::TempStore;

/// `slayer-memory` on `s` with inline embedding on, models looked for in `models`.
fn memory(s: &TempStore, models: &Path) -> assert_cmd::Command {
    let mut cmd = crate::kit::command("slayer-memory");
    cmd.env_remove("SLAYER_NO_EMBED")
        .env("SLAYER_MODEL_DIR", models)
        .env("SLAYER_STORE", &s.store);
    assert_cmd::Command::from_std(cmd)
}

fn save(s: &TempStore, models: &Path, args: &[&str]) -> std::process::Output {
    memory(s, models).args(args).output().unwrap()
}

fn rows(s: &TempStore) -> Vec<(String, i64)> {
    let conn = rusqlite::Connection::open(&s.store).unwrap();
    let mut stmt = conn
        .prepare("SELECT canonical_id, dim FROM embeddings ORDER BY canonical_id")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn a_save_and_an_import_embed_their_memories() {
    let s = TempStore::with_catalog();
    let models = models_dir();
    let out = save(
        &s,
        &models,
        &[
            "save",
            "--id",
            "n1",
            "--learning",
            "Amounts are dollars",
            "--entities",
            "orders.amount",
        ],
    );
    assert_success(&out);
    let import = memory(&s, &models)
        .args(["import", "-"])
        .write_stdin("{\"kind\":\"memory\",\"id\":\"n2\",\"learning\":\"Refunds lag a week\",\"entities\":[]}\n")
        .output()
        .unwrap();
    assert!(import.status.success());
    assert_eq!(
        rows(&s),
        [("memory:n1".into(), 384), ("memory:n2".into(), 384)]
    );
}

#[test]
fn an_unusable_model_is_a_warning_not_a_failure() {
    let s = TempStore::with_catalog();
    let out = save(
        &s,
        Path::new("/nonexistent/models"),
        &[
            "save",
            "--learning",
            "Amounts are dollars",
            "--entities",
            "orders.amount",
        ],
    );
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not embedded") && stderr.contains("scripts/fetch-model.sh"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("Saved memory"));
    assert!(rows(&s).is_empty());
}
