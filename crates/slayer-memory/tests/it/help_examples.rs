//! The examples in `--help` run in order, from the workspace root, on a store holding the shop.

use crate::support::{workspace_root, TempStore};

fn examples(args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("slayer-memory"))
        .args(args)
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("$ "))
        .map(str::to_owned)
        .collect()
}

fn run(s: &TempStore, line: &str) {
    let bin_dir = assert_cmd::cargo::cargo_bin("slayer-memory")
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = std::process::Command::new("bash")
        .args(["-c", &format!("set -o pipefail; {line}")])
        .current_dir(workspace_root())
        .env("PATH", path)
        .env("SLAYER_STORE", &s.store)
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

#[test]
fn help_examples_run() {
    let s = TempStore::empty();
    let top = examples(&["--help"]);
    assert!(top.len() >= 6, "{top:?}");
    for line in &top {
        run(&s, line);
    }
    for sub in ["save", "forget", "list", "show", "export", "import"] {
        let s = TempStore::empty();
        run(
            &s,
            "slayer-index import-slayer examples/shop/slayer | slayer-memory import > /dev/null",
        );
        let lines = examples(&[sub, "--help"]);
        assert!(!lines.is_empty(), "`{sub} --help` has no examples");
        for line in &lines {
            run(&s, line);
        }
    }
}
