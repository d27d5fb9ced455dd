//! `import-slayer`: a SLayer YAML project into the store, memories out as records.

use slayer_common::store::catalog;

use crate::kit::assert_success;
use crate::support::{json_lines, workspace_root, TempStore};

#[test]
fn imports_the_catalog_and_prints_memories_in_id_order() {
    let s = TempStore::new();
    let out = s
        .cmd(&["import-slayer", "tests/fixtures/slayer-project"])
        .output()
        .unwrap();
    assert_success(&out);
    let memories = json_lines(&out.stdout);
    assert_eq!(memories.len(), 2);
    assert_eq!(memories[0]["kind"], "memory");
    assert_eq!(memories[0]["id"], "1");
    assert_eq!(
        memories[0]["learning"],
        "Refunded orders keep their original amount; filter status = 'paid' for revenue.\n"
    );
    assert_eq!(memories[0]["entities"][0], "warehouse.orders.status");
    assert_eq!(memories[0]["created_at"], "2026-01-05T09:30:00Z");
    assert_eq!(memories[1]["id"], "kb.policy.42");
    assert_eq!(
        memories[1]["description"],
        "Guest checkouts have no e-mail."
    );
    assert_eq!(memories[1]["query"]["source_model"], "customers");

    let store = s.open();
    let ds = catalog::datasource(store.conn(), "warehouse")
        .unwrap()
        .unwrap();
    assert_eq!(ds.extra["port"], 5432, "connection fields are kept");
    let customers = catalog::model(store.conn(), "warehouse", "customers")
        .unwrap()
        .unwrap();
    assert_eq!(
        customers.data_source, "warehouse",
        "data_source comes from the folder"
    );
    let orders = catalog::model(store.conn(), "warehouse", "orders")
        .unwrap()
        .unwrap();
    assert_eq!(
        orders.extra["meta"]["owner"], "finance",
        "meta is kept, though never rendered"
    );
    assert_eq!(
        orders.joins[0].join_pairs,
        [("customer_id".to_owned(), "id".to_owned())]
    );
    let stats = s.stats_json();
    assert_eq!(stats["docs"]["column"], 8);
    assert_eq!(stats["docs"]["measure"], 1);

    let again = s
        .cmd(&["import-slayer", "tests/fixtures/slayer-project"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 docs changed, 0 removed"));
}

#[test]
fn a_bad_project_file_is_named_and_nothing_is_written() {
    let s = TempStore::new();
    let dir = s.dir.path().join("project");
    let src = workspace_root().join("tests/fixtures/slayer-project");
    for sub in ["datasources", "models/warehouse", "memories"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for entry in std::fs::read_dir(src.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            std::fs::copy(&path, dir.join(sub).join(path.file_name().unwrap())).unwrap();
        }
    }
    std::fs::write(
        dir.join("models/warehouse/bad.yaml"),
        "name: bad\ncolumns:\n  - name: x\n    type: varchar\n",
    )
    .unwrap();
    s.cmd(&["import-slayer", dir.to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "bad.yaml: model record: field 'columns[0].type': unknown column type 'varchar'",
        ));
    assert!(!s.store.exists(), "nothing may be written");
    s.cmd(&["import-slayer", s.dir.path().to_str().unwrap()])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("not a SLayer project folder"));
}
