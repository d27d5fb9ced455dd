//! The examples in `--help` run, from the workspace root, with the real local model.

use crate::kit::Shell;
use crate::support::models_dir;

#[test]
fn help_examples_run() {
    let sh = Shell::new().env("SLAYER_MODEL_DIR", models_dir());
    let mut lines = Vec::new();
    for command in ["", " refresh", " status", " text"] {
        lines.extend(sh.examples(&format!("slayer-embed{command}")));
    }
    assert!(lines.len() >= 6, "{lines:?}");
    sh.run_all(&lines);
}
