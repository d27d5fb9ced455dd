//! The examples in `--help` run, from the workspace root, on a store holding the demo shop.

use crate::kit::Shell;

#[test]
fn help_examples_run() {
    let sh = Shell::after(&[
        "slayer-index import-slayer examples/shop/slayer | slayer-memory import > /dev/null",
    ]);
    let lines = sh.examples("slayer-search");
    assert!(lines.len() >= 5, "{lines:?}");
    sh.run_all(&lines);
}
