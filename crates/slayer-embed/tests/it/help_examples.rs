//! The examples in `--help` run, from the workspace root, with the real local model.

use crate::support::{models_dir, workspace_root};

#[test]
fn help_examples_run() {
    let bin = assert_cmd::cargo::cargo_bin("slayer-embed");
    let dir = tempfile::tempdir().unwrap();
    let models = models_dir();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = |line: &str| {
        let out = std::process::Command::new("bash")
            .args(["-c", &format!("set -o pipefail; {line}")])
            .current_dir(workspace_root())
            .env("PATH", &path)
            .env("SLAYER_STORE", dir.path().join("slayer.db"))
            .env("SLAYER_MODEL_DIR", &models)
            .env_remove("SLAYER_EMBEDDING_MODEL")
            .env_remove("SLAYER_FORMAT")
            .env("SLAYER_NO_EMBED", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`{line}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let mut lines = Vec::new();
    for command in ["", " refresh", " status", " text"] {
        let help = sh(&format!("slayer-embed{command} --help"));
        lines.extend(
            help.lines()
                .filter_map(|l| l.trim_start().strip_prefix("$ "))
                .map(str::to_owned),
        );
    }
    assert!(lines.len() >= 6, "{lines:?}");
    for line in lines {
        sh(&line);
    }
}
