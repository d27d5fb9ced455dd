//! The examples and behaviour matrix of docs/spec/search.md §9.3, lenient validation, punctuation,
//! determinism, batch.

use serde_json::json;

use crate::support::{ids, strings, Fixture};

const EMBED: &str = "embedding channel skipped: the embedding model 'local/all-MiniLM-L6-v2' is unavailable: no local embedding model at /nonexistent/slayer-models/all-MiniLM-L6-v2 (missing config.json); run scripts/fetch-model.sh to install it.";

#[test]
fn the_seed_self_reference_examples() {
    let f = Fixture::new();
    let r = f.search(&["--entity", "mydb.orders.amount", "--max-memories", "0"]);
    assert_eq!(r["entities"][0]["id"], "mydb.orders.amount");
    assert_eq!(r["entities"][0]["kind"], "column");
    assert!(r["entities"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Column: mydb.orders.amount\nType: DOUBLE"));
    assert_eq!(r["memories"], json!([]));
    let r = f.search(&["--entity", "memory:42", "--max-entities", "0"]);
    assert_eq!(r["memories"][0]["id"], "42");
    assert_eq!(r["memories"][0]["matched_entities"], json!(["memory:42"]));
    assert_eq!(r["entities"], json!([]));
    assert_eq!(r["resolved_input_entities"], json!(["memory:42"]));
}

#[test]
fn entities_only_runs_channel_one() {
    let f = Fixture::new();
    let r = f.search(&["--entity", "orders.amount", "--entity", "orders.status"]);
    // BM25Plus: memory 1 holds both tags; 42, 3 one each (3 has two tags, so a longer doc).
    assert_eq!(ids(&r, "memories"), ["1", "42"]);
    assert_eq!(ids(&r, "example_queries"), ["3"]);
    assert_eq!(r["example_queries"][0]["query"]["source_model"], "orders");
    assert_eq!(
        ids(&r, "entities"),
        ["mydb.orders.amount", "mydb.orders.status"]
    );
    assert_eq!(
        r["memories"][0]["matched_entities"],
        json!(["mydb.orders.amount", "mydb.orders.status"])
    );
    assert_eq!(
        strings(&r["warnings"]),
        Vec::<String>::new(),
        "no question, no embedding warning"
    );
    let s = r["memories"][0]["score"].as_f64().unwrap();
    assert!(s > 1.0, "a single channel reports its raw BM25 score: {s}");
}

#[test]
fn question_only_runs_the_full_text_channel() {
    let f = Fixture::new();
    let r = f.search(&[
        "--question",
        "refunded orders excluded from revenue",
        "--max-entities",
        "10",
    ]);
    assert_eq!(ids(&r, "memories")[0], "1");
    let entities = ids(&r, "entities");
    // The question names the measure `revenue` as well as its model's doc matches: answer
    // first (docs/spec/fusion.md §8.9), the measure leads and its model comes next; model-level
    // evidence keeps the model above its columns (docs/spec/fusion.md §8.6).
    assert_eq!(entities[..2], ["mydb.orders.revenue", "mydb.orders"], "{r}");
    assert!(entities.contains(&"mydb.orders.status".to_owned()), "{r}");
    assert_eq!(strings(&r["warnings"])[0], EMBED);
    assert_eq!(r["resolved_input_entities"], json!([]));
}

#[test]
fn both_inputs_fuse_memories_by_score_and_entities_by_rrf() {
    let f = Fixture::new();
    let r = f.search(&[
        "--entity",
        "orders.status",
        "--question",
        "refunded orders excluded from revenue",
        "--explain",
    ]);
    let top = &r["memories"][0];
    assert_eq!(top["id"], "1");
    // Score fusion: the best hit of each ranking adds its full weight, 1.
    let expected = 2.0;
    assert!(
        (top["score"].as_f64().unwrap() - expected).abs() < 1e-12,
        "{top}"
    );
    let channels: Vec<&str> = top["explain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["channel"].as_str().unwrap())
        .collect();
    assert_eq!(channels, ["bm25", "fulltext"]);
    // The named column leads (it takes part in the evidence first, and answer first keeps
    // what the caller named in front), then the measure the question names, then its model.
    assert_eq!(
        ids(&r, "entities")[..3],
        ["mydb.orders.status", "mydb.orders.revenue", "mydb.orders"],
        "{r}"
    );
    let status = &r["entities"][0];
    let first = &status["explain"][0];
    assert_eq!(first["channel"], "named");
    assert!((first["contribution"].as_f64().unwrap() - 1.0 / 61.0).abs() < 1e-15);
}

#[test]
fn no_input_falls_back_to_recency() {
    let f = Fixture::new();
    let r = f.search(&["--max-memories", "3", "--max-example-queries", "1"]);
    assert_eq!(ids(&r, "memories"), ["7", "5", "4"]);
    assert_eq!(ids(&r, "example_queries"), ["6"]);
    assert_eq!(r["memories"][0]["score"], 0.0);
    assert_eq!(
        strings(&r["warnings"]),
        [
            "no entities, query, or question supplied; returning newest memories by recency.",
            "example_query memory:6: attached query has stale references (Entity 'gone_col' not found in any datasource (checked all known datasources).); re-save to clean."
        ]
    );
}

#[test]
fn unresolvable_inputs_are_warnings() {
    let f = Fixture::new();
    let r = f.search(&[
        "--entity",
        "mydb.orders.amount",
        "--entity",
        "memory:nonexistent",
        "--entity",
        "nope.x",
    ]);
    assert_eq!(r["resolved_input_entities"], json!(["mydb.orders.amount"]));
    assert_eq!(
        strings(&r["warnings"]),
        [
            "entity 'memory:nonexistent' dropped: No memory with id 'nonexistent'.",
            "entity 'nope.x' dropped: 'nope' is neither a known datasource nor a saved model. (segment of 'nope.x')."
        ]
    );
    let r = f.search(&[
        "--query",
        r#"{"source_model":"nope"}"#,
        "--question",
        "revenue",
    ]);
    assert!(strings(&r["warnings"])
        .contains(&"query input dropped: Source model not found: 'nope'.".to_owned()));
    // Every entity failing still counts as channel-1 input: no recency fallback.
    let r = f.search(&["--entity", "zzz"]);
    assert_eq!(r["memories"], json!([]));
    let out = f.raw(&["--query", "{bad"], None);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .starts_with("Error: invalid JSON for query argument: "),
        "{}",
        out.stderr
    );
    let out = f.raw(&["--max-memories", "-1"], None);
    assert_eq!(out.code, 2);
}

#[test]
fn questions_search_whatever_their_punctuation() {
    let f = Fixture::new();
    for q in [
        "what's revenue?",
        "\"revenue\"",
        "revenue:",
        "status='refunded'",
        "(revenue",
        "NOT revenue",
        "kind:memory revenue",
        "revenue AND email",
        "a:b:c revenue",
        "orders{x} revenue",
    ] {
        let r = f.search(&["--question", q]);
        let found = ids(&r, "memories").len() + ids(&r, "entities").len();
        assert!(found > 0, "{q:?} found nothing");
    }
    let r = f.search(&["--question", "kind:memory"]);
    assert!(
        ids(&r, "memories").is_empty(),
        "field syntax is not honoured: {r}"
    );
    let r = f.search(&["--question", "   "]);
    assert!(strings(&r["warnings"])[0].starts_with("no entities, query, or question supplied"));
}

#[test]
fn stale_query_on_a_named_memory_warns_even_when_capped_out() {
    let f = Fixture::new();
    let r = f.search(&["--entity", "memory:6", "--max-example-queries", "0"]);
    assert_eq!(r["example_queries"], json!([]));
    assert_eq!(
        strings(&r["warnings"]),
        ["example_query memory:6: attached query has stale references (Entity 'gone_col' not found in any datasource (checked all known datasources).); re-save to clean."]
    );
}

#[test]
fn same_output_twice_and_batch_equals_single_calls() {
    let f = Fixture::new();
    let calls: [&[&str]; 4] = [
        &["--entity", "orders.amount", "--question", "revenue dollars"],
        &[
            "--question",
            "email guests",
            "--datasource",
            "mydb",
            "--max-entities",
            "2",
        ],
        &["--entity", "memory:42"],
        &[],
    ];
    let batch = [
        r#"{"entities": ["orders.amount"], "question": "revenue dollars"}"#,
        r#"{"question": "email guests", "datasource": "mydb", "max_entities": 2}"#,
        r#"{"entities": ["memory:42"]}"#,
        r#"{}"#,
        r#"{"datasource": "nope"}"#,
        r#"{"bogus": 1}"#,
    ]
    .join("\n");
    let out = f.raw(&["--batch", "-"], Some(&batch));
    assert_eq!(out.code, 1, "bad lines make the exit status 1");
    let lines = out.lines();
    for (i, args) in calls.iter().enumerate() {
        let single = f.search(args);
        assert_eq!(single, f.search(args), "deterministic");
        assert_eq!(lines[i], single, "batch line {}", i + 1);
    }
    assert_eq!(
        lines[4]["error"],
        "line 5: datasource 'nope' not found; known: ['mydb', 'prod', 'prod_v2']."
    );
    assert!(
        lines[5]["error"]
            .as_str()
            .unwrap()
            .starts_with("line 6: bad request: unknown field `bogus`"),
        "{}",
        lines[5]
    );
}

#[test]
fn text_format_for_people() {
    let f = Fixture::new();
    let out = f.raw(
        &[
            "--entity",
            "orders.amount",
            "--entity",
            "zzz",
            "--format",
            "text",
        ],
        None,
    );
    assert!(
        out.stdout.starts_with("[warning] entity 'zzz' dropped: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("Resolved input entities: mydb.orders.amount\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("\nMemories (2):\n  M 42 (score="),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("\nEntities (1):\n  [column] mydb.orders.amount (score=0.0164)\n    Column: mydb.orders.amount\n"), "{}", out.stdout);
}

#[test]
fn a_search_on_a_current_index_never_waits_for_a_writer() {
    let f = Fixture::new();
    f.search(&["--question", "warm up"]);
    // Another process is writing (it holds tantivy's writer lock): a search must not queue.
    let index_dir = f.store.with_extension("db.index");
    let index = tantivy::Index::open_in_dir(&index_dir).unwrap();
    let writer: tantivy::IndexWriter<tantivy::TantivyDocument> =
        index.writer_with_num_threads(1, 15_000_000).unwrap();
    let start = std::time::Instant::now();
    let r = f.search(&["--question", "revenue"]);
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert!(!ids(&r, "memories").is_empty());
    drop(writer);
}
