//! The examples in `--help` run, from the workspace root, on a store holding the demo shop.

use crate::support::workspace_root;

#[test]
fn help_examples_run() {
    let bin = assert_cmd::cargo::cargo_bin("slayer-search");
    let dir = tempfile::tempdir().unwrap();
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
    sh("slayer-index import-slayer examples/shop/slayer | slayer-memory import > /dev/null");
    let help = sh("slayer-search --help");
    let lines: Vec<&str> = help
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("$ "))
        .collect();
    assert!(lines.len() >= 5, "{help}");
    for line in lines {
        sh(line);
    }
}
