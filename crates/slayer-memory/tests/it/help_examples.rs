//! The examples in `--help` run in order, from the workspace root, on a store holding the shop.

use crate::kit::Shell;

#[test]
fn help_examples_run() {
    let sh = Shell::new();
    let top = sh.examples("slayer-memory");
    assert!(top.len() >= 6, "{top:?}");
    sh.run_all(&top);
    for sub in [
        "save", "forget", "list", "show", "export", "import", "review", "approve", "reject",
    ] {
        let sh = Shell::after(&[
            "slayer-index import-slayer examples/shop/slayer | slayer-memory import > /dev/null",
        ]);
        let lines = sh.examples(&format!("slayer-memory {sub}"));
        assert!(!lines.is_empty(), "`{sub} --help` has no examples");
        sh.run_all(&lines);
    }
}
