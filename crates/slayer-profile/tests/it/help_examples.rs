//! The examples in `--help` run, from the workspace root, with slayer-index beside them.

use crate::support::workspace_root;

#[test]
fn help_examples_run() {
    let bin = assert_cmd::cargo::cargo_bin("slayer-profile");
    let help = std::process::Command::new(&bin)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let lines: Vec<&str> = help
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("$ "))
        .collect();
    assert!(lines.len() >= 4, "{help}");
    let dir = tempfile::tempdir().unwrap();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for line in lines {
        if line.contains("slayer-index") && !bin.parent().unwrap().join("slayer-index").exists() {
            continue; // built by `cargo test --workspace`; absent when this crate is tested alone
        }
        let out = std::process::Command::new("bash")
            .args(["-c", &format!("set -o pipefail; {line}")])
            .current_dir(workspace_root())
            .env("PATH", &path)
            .env("SLAYER_STORE", dir.path().join("slayer.db"))
            .env_remove("SLAYER_FORMAT")
            .env("SLAYER_NO_EMBED", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "example `{line}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
