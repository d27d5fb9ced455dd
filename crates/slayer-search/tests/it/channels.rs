//! `--channels`: a channel turned off contributes nothing and warns nothing.

use serde_json::Value;

use crate::support::{strings, Fixture};

fn channels_used(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = ["memories", "example_queries", "entities"]
        .iter()
        .flat_map(|b| v[*b].as_array().unwrap().clone())
        .flat_map(|h| h["explain"].as_array().unwrap().clone())
        .map(|c| c["channel"].as_str().unwrap().to_owned())
        .collect();
    out.sort();
    out.dedup();
    out
}

#[test]
fn channels_off_contribute_nothing_and_warn_nothing() {
    let f = Fixture::new();
    let base = [
        "--entity",
        "orders.amount",
        "--question",
        "revenue dollars",
        "--explain",
    ];
    let all = f.search(&base);
    assert_eq!(channels_used(&all), ["bm25", "fulltext", "named"]);
    assert!(strings(&all["warnings"])
        .iter()
        .any(|w| w.starts_with("embedding channel skipped")));

    let text = f.search(&[&base[..], &["--channels", "text"]].concat());
    assert_eq!(channels_used(&text), ["fulltext"]);
    assert!(!strings(&text["warnings"])
        .iter()
        .any(|w| w.starts_with("embedding channel skipped")));

    let entities = f.search(&[&base[..], &["--channels", "entities,dense"]].concat());
    assert_eq!(channels_used(&entities), ["bm25", "named"]);

    // The same through --batch.
    let out = f.raw(
        &["--batch", "-"],
        Some("{\"question\": \"revenue dollars\", \"channels\": [\"text\"], \"explain\": true}\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(channels_used(&v), ["fulltext"]);
    let bad = f.raw(&["--channels", "graph", "--question", "x"], None);
    assert_eq!(bad.code, 2);
}
