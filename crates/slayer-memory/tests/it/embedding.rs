//! Saved and imported memories are embedded under the active model when it can be used; when
//! it cannot, the save still succeeds with one warning.

use std::path::PathBuf;

use crate::support::{workspace_root, TempStore};

fn models_dir() -> PathBuf {
    let dir = slayer_embed::local::models_dir();
    let model = dir.join(slayer_embed::local::DEFAULT_MODEL);
    slayer_embed::local::check_folder(&model).unwrap_or_else(|why| panic!("{why}"));
    dir
}

fn save(s: &TempStore, models: &std::path::Path, args: &[&str]) -> std::process::Output {
    assert_cmd::Command::cargo_bin("slayer-memory")
        .unwrap()
        .current_dir(workspace_root())
        .env_remove("SLAYER_FORMAT")
        .env_remove("SLAYER_NO_EMBED")
        .env_remove("SLAYER_EMBEDDING_MODEL")
        .env("SLAYER_MODEL_DIR", models)
        .env("SLAYER_STORE", &s.store)
        .args(args)
        .output()
        .unwrap()
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let import = assert_cmd::Command::cargo_bin("slayer-memory")
        .unwrap()
        .current_dir(workspace_root())
        .env_remove("SLAYER_NO_EMBED")
        .env_remove("SLAYER_EMBEDDING_MODEL")
        .env("SLAYER_MODEL_DIR", &models)
        .env("SLAYER_STORE", &s.store)
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
        std::path::Path::new("/nonexistent/models"),
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
