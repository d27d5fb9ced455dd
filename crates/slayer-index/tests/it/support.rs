//! slayer-index's helpers on top of the test kit: the binary on a temp store, fixtures and
//! golden files.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use slayer_common::records::Memory;
use slayer_common::store::{memories, OpenMode, SqliteStore as Store};

use crate::kit::assert_success;
pub use crate::kit::{workspace_root, TempStore};

pub fn fixture(name: &str) -> PathBuf {
    workspace_root().join("tests/fixtures").join(name)
}

impl TempStore {
    /// `slayer-index …` on this store, run from the workspace root.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = crate::kit::command("slayer-index");
        cmd.env("SLAYER_STORE", &self.store).args(args);
        Command::from_std(cmd)
    }

    pub fn open(&self) -> Store {
        Store::open(&self.store, OpenMode::MustExist).unwrap()
    }

    /// The store as the commands open it (whichever backend), for the index's own calls.
    pub fn open_facade(&self) -> slayer_common::store::Store {
        slayer_common::store::Store::open(&self.store, OpenMode::MustExist).unwrap()
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
        assert_success(&out);
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
        standing: Default::default(),
        occasion: Default::default(),
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

/// `slayer-index <args>` on this store: the exit code, the records on stdout, the stderr.
pub fn import(s: &TempStore, args: &[&str]) -> (i32, Vec<serde_json::Value>, String) {
    let out = s.cmd(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        json_lines(&out.stdout),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// `model.measure = formula` for every measure of the model records, in record order: what
/// the import tests compare besides the golden files.
pub fn measure_formulas(records: &[serde_json::Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in records.iter().filter(|r| r["kind"] == "model") {
        for x in m["measures"].as_array().into_iter().flatten() {
            out.push(format!(
                "{}.{} = {}",
                m["name"].as_str().unwrap(),
                x["name"].as_str().unwrap(),
                x["formula"].as_str().unwrap()
            ));
        }
    }
    out
}

/// Writes each `(path, text)` of `files` under `dir`, making the folders on the way.
pub fn write_files(dir: &Path, files: &[(&str, &str)]) {
    for (name, text) in files {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}
