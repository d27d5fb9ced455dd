//! Shared helpers: a temp store, the binary, fixtures and golden files.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use slayer_common::records::Memory;
use slayer_common::store::{memories, OpenMode, Store};

/// The workspace root (examples and fixtures are addressed from there).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub fn fixture(name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures").join(name)
}

/// A temp directory holding one store.
pub struct TempStore {
    pub dir: tempfile::TempDir,
    pub store: PathBuf,
}

impl TempStore {
    pub fn new() -> TempStore {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("slayer.db");
        TempStore { dir, store }
    }

    /// `slayer-index --store <temp> …`, run from the workspace root.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::cargo_bin("slayer-index").unwrap();
        cmd.current_dir(workspace_root())
            .env_remove("SLAYER_FORMAT")
            .env("SLAYER_NO_EMBED", "1")
            .env("SLAYER_STORE", &self.store)
            .args(args);
        cmd
    }

    pub fn open(&self) -> Store {
        Store::open(&self.store, OpenMode::MustExist).unwrap()
    }

    /// Writes memories straight into the store (slayer-memory's job; here a test fixture).
    pub fn put_memories(&self, list: &[Memory]) {
        let mut store = self.open();
        let tx = store.write().unwrap();
        for m in list {
            memories::put(&tx, m).unwrap();
            slayer_index::catalog::refresh_memory_doc(&tx, m).unwrap();
        }
        tx.commit().unwrap();
    }

    pub fn stats_json(&self) -> serde_json::Value {
        let out = self.cmd(&["stats", "--format", "json"]).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

pub fn memory(id: &str, learning: &str, entities: &[&str]) -> Memory {
    Memory {
        version: 4,
        id: id.into(),
        learning: learning.into(),
        description: None,
        entities: entities.iter().map(|s| s.to_string()).collect(),
        query: None,
        created_at: "2026-01-01T00:00:00Z".into(),
    }
}

/// Parses JSON lines.
pub fn json_lines(bytes: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Compares with `tests/golden/<name>`; `UPDATE_GOLDENS=1` rewrites it.
pub fn assert_golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDENS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "missing golden {}; run with UPDATE_GOLDENS=1",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "golden {name} differs (UPDATE_GOLDENS=1 rewrites it)"
    );
}
