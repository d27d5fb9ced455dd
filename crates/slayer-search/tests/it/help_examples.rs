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
    // `mcp --help`: the session flags, and --http serving for a second (SIGTERM ends it, 0).
    let sh = sh.env("SLAYER_MCP_TOKEN", "an-example-token-of-the-help");
    let lines = sh.examples("slayer-search mcp");
    assert!(lines.iter().any(|l| l.contains("--http")), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("--read-only")), "{lines:?}");
    sh.run_all(&lines);
}
