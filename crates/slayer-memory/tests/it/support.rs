//! A temp store loaded with the resolution fixture, and the binaries.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

pub struct TempStore {
    _dir: tempfile::TempDir,
    pub store: PathBuf,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {}", self.stdout))
    }

    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

impl TempStore {
    pub fn empty() -> TempStore {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("slayer.db");
        TempStore { _dir: dir, store }
    }

    /// A store holding the resolution catalog.
    pub fn with_catalog() -> TempStore {
        let s = TempStore::empty();
        let out = s.index(
            &["load", "crates/slayer-memory/tests/fixtures/catalog.jsonl"],
            None,
        );
        assert_eq!(out.code, 0, "{}", out.stderr);
        s
    }

    fn run(&self, bin: &str, args: &[&str], stdin: Option<&str>) -> Out {
        let mut cmd = assert_cmd::Command::cargo_bin(bin).unwrap();
        cmd.current_dir(workspace_root())
            .env_remove("SLAYER_FORMAT")
            .env("SLAYER_NO_EMBED", "1")
            .env("SLAYER_STORE", &self.store)
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

    pub fn memory(&self, args: &[&str], stdin: Option<&str>) -> Out {
        self.run("slayer-memory", args, stdin)
    }

    pub fn index(&self, args: &[&str], stdin: Option<&str>) -> Out {
        self.run("slayer-index", args, stdin)
    }

    /// Saves a learning tagged with `entities`; the resolved entities and warnings, or the error.
    pub fn resolve(&self, entities: &str) -> Result<(Vec<String>, Vec<String>), String> {
        let out = self.memory(
            &[
                "save",
                "--learning",
                "t",
                "--entities",
                entities,
                "--format",
                "json",
            ],
            None,
        );
        if out.code != 0 {
            assert_eq!(out.code, 1, "{}", out.stderr);
            let message = out
                .stderr
                .trim_end()
                .strip_prefix("Error: ")
                .unwrap_or_else(|| panic!("{}", out.stderr));
            return Err(message.to_owned());
        }
        let v = out.json();
        let strings = |k: &str| {
            v[k].as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap().to_owned())
                .collect()
        };
        Ok((strings("resolved_entities"), strings("warnings")))
    }
}
