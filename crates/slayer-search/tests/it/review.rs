//! Review of agent memories (`slayer-memory review`, `approve`, `reject`): a proposed memory
//! is returned by no channel (entities, text, dense), in one search or a `--batch` run, until
//! it is approved; and the MCP server's saves wait for review.

use crate::kit::bin_dir;
use crate::mcp::{assert_sdk_ok, sdk_script};
use crate::support::{ids, Fixture};

#[test]
fn a_proposal_is_found_by_no_channel_until_approved() {
    let f = Fixture::new();
    let lines = "{\"kind\":\"memory\",\"id\":\"m1\",\"learning\":\"Profit figures are reported quarterly.\",\"entities\":[\"mydb.orders\"],\"proposed\":true}\n";
    f.raw_memory_import(lines);
    let out = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let asks: [&[&str]; 4] = [
        &[
            "--question",
            "how much money did the company earn",
            "--channels",
            "dense",
        ],
        &[
            "--question",
            "profit figures quarterly",
            "--channels",
            "text",
        ],
        &[
            "--entity",
            "mydb.orders",
            "--channels",
            "entities",
            "--max-memories",
            "50",
        ],
        &["--entity", "memory:m1", "--max-memories", "50"],
    ];
    let memories = |r: &serde_json::Value| ids(r, "memories");
    for ask in asks {
        let r = f.dense_search(ask);
        assert!(!memories(&r).contains(&"m1".to_owned()), "{ask:?}: {r}");
    }
    let batch = "{\"question\": \"profit figures quarterly\"}\n";
    let out = f.with_model("slayer-search", &["--batch", "-"], Some(batch));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stdout.contains("\"m1\""), "{}", out.stdout);

    let out = f.memory(&["approve", "m1"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for ask in asks {
        let r = f.dense_search(ask);
        assert!(memories(&r).contains(&"m1".to_owned()), "{ask:?}: {r}");
    }
    let out = f.with_model("slayer-search", &["--batch", "-"], Some(batch));
    assert!(out.stdout.contains("\"m1\""), "{}", out.stdout);
}

#[test]
fn mcp_saves_wait_for_review() {
    let f = Fixture::new();
    let mut client = sdk_script("mcp_review_client.py");
    client.arg(bin_dir()).arg(&f.store);
    assert_sdk_ok(client, "the MCP client");
}
