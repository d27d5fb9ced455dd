//! A temp store with the search fixture, and the binary.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub store: PathBuf,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Where tests look for embedding models: none by default, so channel 3 is skipped with its
/// warning whatever the machine holds; [`Fixture::dense`] points at the real one.
fn run(bin: &str, store: &Path, args: &[&str], stdin: Option<&str>) -> Out {
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
    let mut cmd = assert_cmd::Command::cargo_bin(bin).unwrap();
    cmd.current_dir(workspace_root())
        .env_remove("SLAYER_EMBEDDING_MODEL")
        .env("SLAYER_MODEL_DIR", models)
        .env_remove("SLAYER_FORMAT")
        .env("SLAYER_NO_EMBED", "1")
        .env("SLAYER_STORE", store)
        .args(args);
    if let Some(input) = stdin {
        cmd.write_stdin(input.to_owned());
    }
    let out = cmd.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

impl Fixture {
    pub fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("slayer.db");
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
        Fixture { _dir: dir, store }
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

/// The folder holding `all-MiniLM-L6-v2` (what `scripts/fetch-model.sh` fills).
pub fn models_dir() -> PathBuf {
    let dir = slayer_embed::local::models_dir();
    let model = dir.join(slayer_embed::local::DEFAULT_MODEL);
    slayer_embed::local::check_folder(&model).unwrap_or_else(|why| panic!("{why}"));
    dir
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
