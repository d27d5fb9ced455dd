//! Channel 3 with the real local model: meaning-only matches, and every missing precondition
//! is a one-line warning while the search goes on.

use serde_json::Value;

use crate::support::{ids, strings, Fixture};

fn add_meaning_fixture(f: &Fixture) {
    let lines = "{\"kind\":\"memory\",\"id\":\"m1\",\"learning\":\"Profit figures are reported quarterly.\",\"entities\":[]}\n\
                 {\"kind\":\"memory\",\"id\":\"m2\",\"learning\":\"The loading dock closes at noon.\",\"entities\":[]}\n";
    f.raw_memory_import(lines);
}

fn channels(hit: &Value) -> Vec<String> {
    hit["explain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["channel"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn meaning_alone_finds_a_memory() {
    let f = Fixture::new();
    add_meaning_fixture(&f);
    let question = [
        "--question",
        "how much money did the company earn",
        "--explain",
    ];
    // Without embeddings no word of the question matches the note.
    let before = f.search(&question);
    assert!(!ids(&before, "memories").contains(&"m1".to_owned()));
    let out = f.with_model("slayer-embed", &["refresh", "--all"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let after = f.dense_search(&question);
    let m1 = after["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "m1")
        .unwrap_or_else(|| panic!("{after:#}"));
    // Only the dense channel knows it, and ranks it above every other note it alone found.
    assert_eq!(channels(m1), ["dense"]);
    let first_dense_only = after["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| channels(h) == ["dense"])
        .unwrap();
    assert_eq!(first_dense_only["id"], "m1", "{after:#}");
    assert!(strings(&after["warnings"])
        .iter()
        .all(|w| !w.starts_with("embedding channel skipped")));
    // Entities get a dense ranking too, fused with the text one.
    assert!(after["entities"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| channels(h).contains(&"dense".to_owned())));
}

#[test]
fn missing_rows_a_switched_model_and_a_dimension_mismatch_are_warnings() {
    let f = Fixture::new();
    let no_rows = f.dense_search(&["--question", "revenue"]);
    assert!(strings(&no_rows["warnings"]).contains(&"embedding channel skipped: no embedding rows for model 'local/all-MiniLM-L6-v2'. Run `slayer-embed refresh --all` to populate.".to_owned()));
    assert!(!ids(&no_rows, "memories").is_empty(), "the search went on");

    let conn = rusqlite::Connection::open(&f.store).unwrap();
    // A row of the active revision (only those are read), of another size.
    let revision = slayer_embed::revision::local(
        &crate::support::models_dir().join(slayer_embed::local::DEFAULT_MODEL),
    )
    .unwrap();
    conn.execute(
        "INSERT INTO embeddings VALUES ('memory:42', 'local/all-MiniLM-L6-v2', 'h', 3, x'000000000000000000000000', 't', ?1)",
        [&revision],
    )
    .unwrap();
    let mismatch = f.dense_search(&["--question", "revenue"]);
    assert!(strings(&mismatch["warnings"]).contains(&"embedding channel skipped: dim mismatch (query=384, corpus=3). Re-run `slayer-embed refresh --all` to refresh embeddings against the current model.".to_owned()), "{mismatch:#}");

    let unusable = f.search(&["--question", "revenue"]);
    assert!(strings(&unusable["warnings"])[0]
        .starts_with("embedding channel skipped: the embedding model 'local/all-MiniLM-L6-v2' is unavailable: no local embedding model at /nonexistent/slayer-models/all-MiniLM-L6-v2"));
}
