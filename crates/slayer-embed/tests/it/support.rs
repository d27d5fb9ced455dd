//! A temp store with the catalog fixture loaded, and the binaries.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The folder holding `all-MiniLM-L6-v2` (what `scripts/fetch-model.sh` fills).
pub fn models_dir() -> PathBuf {
    let dir = slayer_embed::local::models_dir();
    let model = dir.join(slayer_embed::local::DEFAULT_MODEL);
    slayer_embed::local::check_folder(&model).unwrap_or_else(|why| panic!("{why}"));
    dir
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn records(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

pub struct TempStore {
    _dir: tempfile::TempDir,
    pub store: PathBuf,
}

impl TempStore {
    /// A store holding `tests/fixtures/catalog.jsonl`.
    pub fn with_catalog() -> TempStore {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("slayer.db");
        let s = TempStore { _dir: dir, store };
        let out = s.run(
            "slayer-index",
            &["load", "tests/fixtures/catalog.jsonl"],
            &[],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        s
    }

    /// Runs a binary on this store with extra environment.
    pub fn run(&self, bin: &str, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Out {
        let mut cmd = assert_cmd::Command::cargo_bin(bin).unwrap();
        cmd.current_dir(workspace_root())
            .env_remove("SLAYER_FORMAT")
            .env_remove("SLAYER_EMBEDDING_MODEL")
            .env_remove("SLAYER_EMBEDDING_BASE_URL")
            .env_remove("OPENAI_API_KEY")
            .env("SLAYER_NO_EMBED", "1")
            .env("SLAYER_STORE", &self.store)
            .envs(env.iter().copied())
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
