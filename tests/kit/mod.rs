//! The test kit shared by every binary's whole-binary tests (`crates/*/tests/it`): the
//! workspace's binaries run from the workspace root with a clean environment, a temp store,
//! and a runner for the `$ ` examples in `--help`.
//!
//! Not a crate (the crate list is fixed): each `crates/<name>/tests/it/main.rs` includes it with
//! `#[path = "../../../../tests/kit/mod.rs"] mod kit;`, and its `support.rs` keeps only what is
//! specific to that binary. Tests that need the local embedding model also include `model.rs`
//! beside this file (it needs the `slayer-embed` library).
// Not every binary's tests use every helper.
#![allow(dead_code)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The workspace root: examples and fixtures are addressed from there.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The folder holding the workspace's built binaries.
pub fn bin_dir() -> PathBuf {
    assert_cmd::cargo::cargo_bin("slayer-index")
        .parent()
        .unwrap()
        .to_owned()
}

/// The clean environment every run starts from: the workspace root as working directory, no
/// output format, embedding model or server from the caller's environment, and no inline
/// embedding.
fn clean(cmd: &mut Command) -> &mut Command {
    cmd.current_dir(workspace_root())
        .env_remove("SLAYER_FORMAT")
        .env_remove("SLAYER_EMBEDDING_MODEL")
        .env_remove("SLAYER_EMBEDDING_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env("SLAYER_NO_EMBED", "1")
}

/// The workspace binary `bin`, in the clean environment.
pub fn command(bin: &str) -> Command {
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin(bin));
    clean(&mut cmd);
    cmd
}

/// What a run left: its exit code (-1 when killed by a signal), stdout and stderr.
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    /// Stdout as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| panic!("{e}: {}", self.stdout))
    }

    /// Stdout as JSON lines.
    pub fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }
}

/// Runs `cmd` to the end with `stdin` (none: empty) and captures what it left.
pub fn output(cmd: Command, stdin: Option<&[u8]>) -> Out {
    let mut cmd = assert_cmd::Command::from_std(cmd);
    if let Some(input) = stdin {
        cmd.write_stdin(input);
    }
    let out = cmd.output().unwrap();
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Runs the workspace binary `bin` in the clean environment, on `store` when given, with extra
/// environment `env` (set last, so it wins) and `stdin`.
pub fn run(
    bin: &str,
    store: Option<&Path>,
    args: &[&str],
    env: &[(&str, &str)],
    stdin: Option<&str>,
) -> Out {
    let mut cmd = command(bin);
    if let Some(store) = store {
        cmd.env("SLAYER_STORE", store);
    }
    cmd.envs(env.iter().copied()).args(args);
    output(cmd, stdin.map(str::as_bytes))
}

/// The most memory a running process has held (`VmHWM` of `/proc/<pid>/status`), in MiB.
pub fn peak_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM in /proc/<pid>/status");
    kib / 1024.0
}

/// Asserts that a finished process succeeded, showing its stderr when it did not.
#[track_caller]
pub fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A temp directory holding one store (`slayer.db`, not created until a binary writes it).
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

    /// Runs a workspace binary on this store with extra environment.
    pub fn run(&self, bin: &str, args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Out {
        run(bin, Some(&self.store), args, env, stdin)
    }
}

/// Runs the `$ ` example lines of `--help` as a user would: each line by bash (with `pipefail`)
/// from the workspace root, the workspace's binaries first on `PATH`, in the clean environment
/// on one store.
pub struct Shell {
    temp: TempStore,
    env: Vec<(&'static str, OsString)>,
}

impl Shell {
    /// A shell on a fresh temp store.
    pub fn new() -> Shell {
        Shell {
            temp: TempStore::new(),
            env: Vec::new(),
        }
    }

    /// A shell on a fresh temp store after running the `setup` lines.
    pub fn after(setup: &[&str]) -> Shell {
        let sh = Shell::new();
        for line in setup {
            sh.run(line);
        }
        sh
    }

    /// Extra environment for every line.
    pub fn env(mut self, key: &'static str, value: impl Into<OsString>) -> Shell {
        self.env.push((key, value.into()));
        self
    }

    pub fn store(&self) -> &Path {
        &self.temp.store
    }

    /// Runs one line; it must succeed. Its stdout.
    #[track_caller]
    pub fn run(&self, line: &str) -> String {
        let path = format!(
            "{}:{}",
            bin_dir().display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let mut cmd = Command::new("bash");
        clean(&mut cmd)
            .args(["-c", &format!("set -o pipefail; {line}")])
            .env("PATH", path)
            .env("SLAYER_STORE", &self.temp.store)
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "example `{line}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// The example lines (after `$ `) of `<command> --help`, e.g. `slayer-index load`.
    #[track_caller]
    pub fn examples(&self, command: &str) -> Vec<String> {
        examples_in(&self.run(&format!("{command} --help")))
    }

    /// Runs each line in order.
    #[track_caller]
    pub fn run_all(&self, lines: &[String]) {
        for line in lines {
            self.run(line);
        }
    }
}

/// The example lines (after `$ `) of a help text.
pub fn examples_in(help: &str) -> Vec<String> {
    help.lines()
        .filter_map(|l| l.trim_start().strip_prefix("$ "))
        .map(str::to_owned)
        .collect()
}
