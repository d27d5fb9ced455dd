//! The examples in `--help` are runnable: each is run from the workspace root on a temp store.

use crate::support::{workspace_root, TempStore};

fn examples(s: &TempStore, args: &[&str]) -> Vec<String> {
    let out = s.cmd(args).output().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix("$ "))
        .map(str::to_owned)
        .collect()
}

fn run_example(s: &TempStore, line: &str) {
    let bin_dir = assert_cmd::cargo::cargo_bin("slayer-index")
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
fn top_level_examples_run_in_order() {
    let s = TempStore::new();
    let lines = examples(&s, &["--help"]);
    assert!(lines.len() >= 5, "{lines:?}");
    for line in &lines {
        run_example(&s, line);
    }
}

#[test]
fn each_subcommand_example_runs_on_a_loaded_store() {
    for sub in [
        "load",
        "render",
        "import-slayer",
        "remove",
        "show",
        "export",
        "rebuild",
        "stats",
    ] {
        let s = TempStore::new();
        run_example(
            &s,
            "slayer-index import-slayer examples/shop/slayer > /dev/null",
        );
        run_example(
            &s,
            "slayer-index load tests/fixtures/catalog.jsonl > /dev/null",
        );
        let lines = examples(&s, &[sub, "--help"]);
        assert!(!lines.is_empty(), "`{sub} --help` has no examples");
        for line in &lines {
            run_example(&s, line);
        }
    }
}
