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
    // `evidence` is the derived ranking of model-level evidence, `question` a leaf the
    // question names (`revenue`) (docs/spec/fusion.md §8.6), `answer` the lift of the answer-first
    // head (the measure `revenue` leads after the named column, docs/spec/fusion.md §8.9).
    assert_eq!(
        channels_used(&all),
        ["answer", "bm25", "evidence", "fulltext", "named", "question"]
    );
    assert!(strings(&all["warnings"])
        .iter()
        .any(|w| w.starts_with("embedding channel skipped")));

    let text = f.search(&[&base[..], &["--channels", "text"]].concat());
    assert_eq!(
        channels_used(&text),
        ["answer", "evidence", "fulltext", "question"]
    );
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
    assert_eq!(
        channels_used(&v),
        ["answer", "evidence", "fulltext", "question"]
    );
    let bad = f.raw(&["--channels", "graph", "--question", "x"], None);
    assert_eq!(bad.code, 2);
}

#[test]
fn tuning_turns_levers_off_and_bad_tuning_is_refused() {
    let f = Fixture::new();
    let off = r#"{"model_evidence": {"models": 0}, "name_weight": 0, "answer_head": 0}"#;
    let v = f.search(&[
        "--question",
        "revenue dollars",
        "--explain",
        "--tuning",
        off,
    ]);
    assert_eq!(channels_used(&v), ["fulltext"]);

    // Memories fuse by RRF when asked: the top text hit adds 1/61 instead of its full weight.
    let rrf = r#"{"memory_fusion": "rrf"}"#;
    let v = f.search(&[
        "--question",
        "revenue dollars",
        "--explain",
        "--tuning",
        rrf,
    ]);
    let first = &v["memories"][0]["explain"][0];
    assert!(
        (first["contribution"].as_f64().unwrap() - 1.0 / 61.0).abs() < 1e-15,
        "{v}"
    );

    let bad = f.raw(&["--question", "x", "--tuning", r#"{"weights": 1}"#], None);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("--tuning: unknown field `weights`"),
        "{}",
        bad.stderr
    );
    let out = f.raw(
        &["--batch", "-"],
        Some("{\"question\": \"x\", \"tuning\": {\"entity_weights\": {\"dense\": -1}}}\n"),
    );
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("tuning.entity_weights.dense must be a number from 0 to 1000, not -1"),
        "{}",
        out.stdout
    );
}
