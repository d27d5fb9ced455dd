//! The examples in `--help` are runnable: each is run from the workspace root on a temp store.

use crate::kit::Shell;

#[test]
fn top_level_examples_run_in_order() {
    let sh = Shell::new();
    let lines = sh.examples("slayer-index");
    assert!(lines.len() >= 5, "{lines:?}");
    sh.run_all(&lines);
}

#[test]
fn each_subcommand_example_runs_on_a_loaded_store() {
    for sub in [
        "load",
        "render",
        "import-slayer",
        "import",
        "remove",
        "show",
        "export",
        "rebuild",
        "stats",
    ] {
        let sh = Shell::after(&[
            "slayer-index import-slayer examples/shop/slayer > /dev/null",
            "slayer-index load tests/fixtures/catalog.jsonl > /dev/null",
        ]);
        let lines = sh.examples(&format!("slayer-index {sub}"));
        assert!(!lines.is_empty(), "`{sub} --help` has no examples");
        sh.run_all(&lines);
    }
}
