//! The examples in `--help` run, from the workspace root, with slayer-index beside them.

use crate::kit::{bin_dir, Shell};

#[test]
fn help_examples_run() {
    let sh = Shell::new();
    let lines = sh.examples("slayer-profile");
    assert!(lines.len() >= 4, "{lines:?}");
    for line in &lines {
        if line.contains("slayer-index") && !bin_dir().join("slayer-index").exists() {
            continue; // built by `cargo test --workspace`; absent when this crate is tested alone
        }
        sh.run(line);
    }
}
