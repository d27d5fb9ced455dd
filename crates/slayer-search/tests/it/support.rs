//! slayer-search's helpers on top of the test kit: a temp store with the search fixture, and
//! the binaries on it.

use std::ops::Deref;
use std::path::Path;

use serde_json::Value;

pub use crate::kit::{workspace_root, Out, TempStore};
pub use crate::model::models_dir;

/// A temp store loaded with these catalog records (JSON lines).
pub fn store_with_catalog(catalog: &str) -> TempStore {
    let store = TempStore::new();
    let out = run("slayer-index", &store.store, &["load", "-"], Some(catalog));
    assert_eq!(out.code, 0, "{}", out.stderr);
    store
}

/// A temp store holding the search fixture.
pub struct Fixture(TempStore);

impl Deref for Fixture {
    type Target = TempStore;

    fn deref(&self) -> &TempStore {
        &self.0
    }
}

/// A slayer binary on `store`. Where tests look for embedding models: none by default, so
/// channel 3 is skipped with its warning whatever the machine holds; [`Fixture::dense_search`]
/// points at the real one.
pub fn run(bin: &str, store: &Path, args: &[&str], stdin: Option<&str>) -> Out {
    run_with_models(
        bin,
        store,
        args,
        stdin,
        Path::new("/nonexistent/slayer-models"),
    )
}

pub fn run_with_models(
    bin: &str,
    store: &Path,
    args: &[&str],
    stdin: Option<&str>,
    models: &Path,
) -> Out {
    let models = models.to_str().unwrap();
    crate::kit::run(
        bin,
        Some(store),
        args,
        &[("SLAYER_MODEL_DIR", models)],
        stdin,
    )
}

impl Fixture {
    pub fn new() -> Fixture {
        let temp = TempStore::new();
        let store = temp.store.clone();
        let out = run(
            "slayer-index",
            &store,
            &["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        let out = run(
            "slayer-memory",
            &store,
            &[
                "import",
                "crates/slayer-search/tests/fixtures/memories.jsonl",
            ],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        Fixture(temp)
    }

    pub fn raw(&self, args: &[&str], stdin: Option<&str>) -> Out {
        run("slayer-search", &self.store, args, stdin)
    }

    pub fn memory(&self, args: &[&str]) -> Out {
        run("slayer-memory", &self.store, args, None)
    }

    /// Imports memory records from a string; the exit code.
    pub fn raw_memory_import(&self, lines: &str) -> i32 {
        let out = run("slayer-memory", &self.store, &["import", "-"], Some(lines));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.code
    }

    /// A successful search's JSON response.
    pub fn search(&self, args: &[&str]) -> Value {
        let out = self.raw(args, None);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    }
}

pub fn ids(v: &Value, bucket: &str) -> Vec<String> {
    v[bucket]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect()
}

pub fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

impl Fixture {
    /// A binary run with the real local model available.
    pub fn with_model(&self, bin: &str, args: &[&str], stdin: Option<&str>) -> Out {
        run_with_models(bin, &self.store, args, stdin, &models_dir())
    }

    /// A successful search with channel 3 on.
    pub fn dense_search(&self, args: &[&str]) -> Value {
        let out = self.with_model("slayer-search", args, None);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    }
}
