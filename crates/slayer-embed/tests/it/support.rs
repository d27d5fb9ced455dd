//! slayer-embed's helpers on top of the test kit: a temp store with the catalog fixture loaded,
//! and the binaries on it.

pub use crate::kit::{workspace_root, Out, TempStore};
pub use crate::model::models_dir;

impl TempStore {
    /// A store holding `tests/fixtures/catalog.jsonl`.
    pub fn with_catalog() -> TempStore {
        let s = TempStore::new();
        let out = s.run(
            "slayer-index",
            &["load", "tests/fixtures/catalog.jsonl"],
            &[],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        s
    }

    /// `slayer-embed` with the real local model.
    pub fn embed_local(&self, args: &[&str]) -> Out {
        let models = models_dir();
        self.run(
            "slayer-embed",
            args,
            &[("SLAYER_MODEL_DIR", models.to_str().unwrap())],
            None,
        )
    }

    pub fn count(&self, sql: &str) -> i64 {
        let conn = rusqlite::Connection::open(&self.store).unwrap();
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }
}
