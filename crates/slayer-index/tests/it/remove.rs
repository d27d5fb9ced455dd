//! `remove`: cascades to docs, embeddings and memory tags by the dotted-namespace rule.

use slayer_common::store::{catalog, docs, memories};

use crate::kit::assert_success;
use crate::support::{json_lines, memory, TempStore};

const ARCHIVE: &str = r#"{"kind":"model","name":"orders_archive","data_source":"warehouse","columns":[{"name":"amount","type":"DOUBLE"}]}"#;

fn seeded() -> TempStore {
    let s = TempStore::new();
    s.cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .assert()
        .success();
    s.cmd(&["load"]).write_stdin(ARCHIVE).assert().success();
    s.put_memories(&[
        memory(
            "1",
            "Refunds keep the amount.",
            &["warehouse.orders.status", "warehouse.orders_archive.amount"],
        ),
        memory("2", "Only about orders.", &["warehouse.orders"]),
        memory(
            "3",
            "Links.",
            &["memory:1", "memory:12", "warehouse_v2.orders"],
        ),
        memory("12", "Untagged.", &[]),
    ]);
    let store = s.open();
    for id in [
        "warehouse.orders.amount",
        "warehouse.orders_archive.amount",
        "warehouse_v2.orders.amount",
        "memory:1",
        "memory:12",
    ] {
        store
            .conn()
            .execute(
                "INSERT INTO embeddings VALUES (?1, 'local/m', 'h', 1, x'00000000', 't', '')",
                [id],
            )
            .unwrap();
    }
    s
}

fn embedded(s: &TempStore) -> Vec<String> {
    let store = s.open();
    let mut stmt = store
        .conn()
        .prepare("SELECT canonical_id FROM embeddings ORDER BY canonical_id")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn tags(s: &TempStore, id: &str) -> Vec<String> {
    memories::get(s.open().conn(), id)
        .unwrap()
        .unwrap()
        .entities
}

#[test]
fn removing_a_model_takes_its_subtree_but_not_a_sibling_with_the_same_prefix() {
    let s = seeded();
    let out = s.cmd(&["remove", "warehouse.orders"]).output().unwrap();
    assert_success(&out);
    let store = s.open();
    assert!(catalog::model(store.conn(), "warehouse", "orders")
        .unwrap()
        .is_none());
    assert!(docs::get(store.conn(), "warehouse.orders.amount")
        .unwrap()
        .is_none());
    assert!(docs::get(store.conn(), "warehouse.orders_archive.amount")
        .unwrap()
        .is_some());
    assert!(docs::get(store.conn(), "warehouse_v2.orders")
        .unwrap()
        .is_some());
    assert_eq!(tags(&s, "1"), ["warehouse.orders_archive.amount"]);
    // Left with no tags, the memory is kept.
    assert!(tags(&s, "2").is_empty());
    assert_eq!(
        embedded(&s),
        [
            "memory:1",
            "memory:12",
            "warehouse.orders_archive.amount",
            "warehouse_v2.orders.amount"
        ]
    );
    // The datasource doc (its Models line) and the two memories' docs changed.
    let changed: Vec<String> = json_lines(&out.stdout)
        .iter()
        .map(|d| d["canonical_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(changed, ["warehouse", "memory:1", "memory:2"]);
    let text = &docs::get(store.conn(), "memory:2")
        .unwrap()
        .unwrap()
        .doc
        .text;
    assert_eq!(text, "Only about orders.");
    assert_eq!(s.stats_json()["index"]["agrees_with_store"], true);
}

#[test]
fn removing_a_memory_strips_only_the_exact_reference() {
    let s = seeded();
    s.cmd(&["remove", "memory:1"]).assert().success();
    assert!(memories::get(s.open().conn(), "1").unwrap().is_none());
    assert_eq!(tags(&s, "3"), ["memory:12", "warehouse_v2.orders"]);
    assert_eq!(
        embedded(&s)
            .iter()
            .filter(|e| e.starts_with("memory:"))
            .collect::<Vec<_>>(),
        ["memory:12"]
    );
    assert!(docs::get(s.open().conn(), "memory:1").unwrap().is_none());
}

#[test]
fn removing_a_leaf_edits_the_model_and_rerenders_it() {
    let s = seeded();
    s.cmd(&["remove", "warehouse.orders.status"])
        .assert()
        .success();
    let store = s.open();
    let model = catalog::model(store.conn(), "warehouse", "orders")
        .unwrap()
        .unwrap();
    assert!(model.columns.iter().all(|c| c.name != "status"));
    let model_doc = docs::get(store.conn(), "warehouse.orders")
        .unwrap()
        .unwrap();
    assert!(!model_doc.doc.text.contains("status (column)"));
    assert_eq!(tags(&s, "1"), ["warehouse.orders_archive.amount"]);
    // A measure is a leaf too.
    s.cmd(&["remove", "warehouse.orders.aov"])
        .assert()
        .success();
    assert!(docs::get(s.open().conn(), "warehouse.orders.aov")
        .unwrap()
        .is_none());
}

#[test]
fn removing_a_datasource_takes_everything_under_it_only() {
    let s = seeded();
    s.cmd(&["remove", "warehouse"]).assert().success();
    let store = s.open();
    assert!(catalog::datasource(store.conn(), "warehouse")
        .unwrap()
        .is_none());
    assert!(catalog::models(store.conn(), Some("warehouse"))
        .unwrap()
        .is_empty());
    let left: Vec<String> = docs::all(store.conn())
        .unwrap()
        .into_iter()
        .map(|d| d.doc.canonical_id)
        .filter(|id| !id.starts_with("memory:"))
        .collect();
    assert_eq!(
        left,
        [
            "warehouse_v2",
            "warehouse_v2.orders",
            "warehouse_v2.orders.amount"
        ]
    );
    assert!(tags(&s, "1").is_empty());
    assert_eq!(
        tags(&s, "3"),
        ["memory:1", "memory:12", "warehouse_v2.orders"]
    );
    assert_eq!(
        embedded(&s),
        ["memory:1", "memory:12", "warehouse_v2.orders.amount"]
    );
}

#[test]
fn unknown_targets_fail_and_bad_ones_are_usage_errors() {
    let s = seeded();
    s.cmd(&["remove", "warehouse.nope"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "nothing named 'warehouse.nope' is in the store",
        ));
    s.cmd(&["remove", "memory:99"]).assert().code(1);
    s.cmd(&["remove", "a.b.c.d"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("is not a canonical id"));
    s.cmd(&["remove", "warehouse..x"]).assert().code(2);
    // Nothing changed.
    assert_eq!(s.stats_json()["docs"]["column"], 12);
}
