//! `load`: upsert, doc diffing by content hash, and keeping the index in step.

use std::path::Path;

use slayer_common::store::{docs, settings};
use slayer_index::fulltext::FullText;
use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::Value;

use crate::kit::assert_success;
use crate::support::{fixture, json_lines, TempStore};

/// Deletes `warehouse.customers` in the store alone, as a crash between the store's commit and
/// the index's leaves it.
fn delete_customers_behind_the_index(s: &TempStore) {
    let mut store = s.open();
    let tx = store.write().unwrap();
    slayer_common::store::catalog::delete_model(&tx, "warehouse", "customers").unwrap();
    slayer_index::catalog::refresh_datasource_docs(&tx, "warehouse").unwrap();
    tx.commit().unwrap();
}

fn index_meta(store: &TempStore) -> String {
    std::fs::read_to_string(
        Path::new(&format!("{}.index", store.store.display())).join("meta.json"),
    )
    .unwrap()
}

#[test]
fn load_prints_every_new_doc_then_reload_writes_nothing() {
    let s = TempStore::new();
    let first = s
        .cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .output()
        .unwrap();
    assert_success(&first);
    let docs_out = json_lines(&first.stdout);
    // warehouse (1) + orders (1 + 7 columns + 1 measure + 1 aggregation) + customers (1 + 3)
    // + warehouse_v2 (1) + warehouse_v2.orders (1 + 1); the hidden model has none.
    assert_eq!(docs_out.len(), 18);
    assert!(docs_out
        .iter()
        .all(|d| d["kind"] == "doc" && d["content_hash"].as_str().unwrap().len() == 64));
    let stats = s.stats_json();
    assert_eq!(stats["datasources"], 2);
    assert_eq!(stats["models"], 4);
    assert_eq!(stats["index"]["docs"], 18);
    assert_eq!(stats["index"]["agrees_with_store"], true);

    let meta_before = index_meta(&s);
    let generation_before = settings::get(s.open().conn(), "fulltext_generation").unwrap();
    let again = s
        .cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .output()
        .unwrap();
    assert!(again.status.success());
    assert!(
        again.stdout.is_empty(),
        "re-load printed docs: {}",
        String::from_utf8_lossy(&again.stdout)
    );
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 docs changed, 0 removed"));
    assert_eq!(index_meta(&s), meta_before, "re-load wrote to the index");
    assert_eq!(
        settings::get(s.open().conn(), "fulltext_generation").unwrap(),
        generation_before
    );
}

#[test]
fn changing_one_description_rewrites_one_doc() {
    let s = TempStore::new();
    s.cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .assert()
        .success();
    let catalog = std::fs::read_to_string(fixture("catalog.jsonl")).unwrap();
    let edited = catalog.replace("Billing city.", "City of the billing address.");
    let out = s.cmd(&["load", "-"]).write_stdin(edited).output().unwrap();
    assert!(out.status.success());
    let changed = json_lines(&out.stdout);
    assert_eq!(changed.len(), 1, "{changed:?}");
    assert_eq!(changed[0]["canonical_id"], "warehouse.customers.city");
    assert!(String::from_utf8_lossy(&out.stderr).contains("index: 1 docs updated, 0 removed"));
    assert_eq!(s.stats_json()["index"]["agrees_with_store"], true);
}

#[test]
fn a_column_dropped_from_a_model_loses_its_doc_and_embeddings() {
    let s = TempStore::new();
    s.cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .assert()
        .success();
    s.open()
        .conn()
        .execute(
            "INSERT INTO embeddings VALUES ('warehouse.customers.segment', 'local/m', 'h', 1, x'00000000', 't', '')",
            [],
        )
        .unwrap();
    let replaced = r#"{"kind":"model","name":"customers","data_source":"warehouse","sql_table":"public.customers","columns":[{"name":"id","type":"INT","primary_key":true},{"name":"city","type":"TEXT","description":"Billing city.","sampled_values":["São Paulo","Zürich","Osaka"],"distinct_count":3}]}"#;
    let out = s.cmd(&["load"]).write_stdin(replaced).output().unwrap();
    assert!(out.status.success());
    let changed: Vec<String> = json_lines(&out.stdout)
        .iter()
        .map(|d| d["canonical_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(changed, ["warehouse.customers"]);
    let store = s.open();
    assert!(docs::get(store.conn(), "warehouse.customers.segment")
        .unwrap()
        .is_none());
    let rows: i64 = store
        .conn()
        .query_row("SELECT count(*) FROM embeddings", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 0);
    assert_eq!(s.stats_json()["index"]["agrees_with_store"], true);
}

#[test]
fn the_index_stems_splits_identifiers_and_filters_by_datasource() {
    let s = TempStore::new();
    s.cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .assert()
        .success();
    let mut store = s.open_facade();
    let (ft, report) = FullText::open_synced(&mut store).unwrap();
    assert_eq!(report.upserted, 0, "a synced index needs no work");
    let searcher = ft.searcher();
    let f = ft.fields();
    let parser = QueryParser::for_index(ft.index(), vec![f.text]);
    let ids = |q: &str| -> Vec<String> {
        let query = parser.parse_query(q).unwrap();
        searcher
            .search(&query, &TopDocs::with_limit(50).order_by_score())
            .unwrap()
            .into_iter()
            .map(|(_, addr)| {
                let doc: tantivy::TantivyDocument = searcher.doc(addr).unwrap();
                doc.get_first(f.id).unwrap().as_str().unwrap().to_owned()
            })
            .collect()
    };
    // "customers" stems to "customer", and customer_id is split on '_'.
    assert!(ids("customers").contains(&"warehouse.orders.customer_id".to_owned()));
    assert!(ids("refunded").contains(&"warehouse.orders.status".to_owned()));
    let in_v2 = parser.parse_query("datasource:warehouse_v2").unwrap();
    assert_eq!(
        searcher.search(&in_v2, &tantivy::collector::Count).unwrap(),
        3
    );
}

#[test]
fn a_lagging_or_missing_index_is_caught_up_by_the_next_command() {
    let s = TempStore::new();
    s.cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .assert()
        .success();
    // The store changes behind the index's back (as after a crash between the two commits).
    delete_customers_behind_the_index(&s);
    let stats = s.stats_json();
    assert_eq!(stats["index"]["agrees_with_store"], false);
    assert_eq!(stats["index"]["pending_deletes"], 4);
    s.cmd(&["stats", "--check"]).assert().code(1);
    s.cmd(&["load"]).write_stdin("").assert().success();
    s.cmd(&["stats", "--check"]).assert().success();

    std::fs::remove_dir_all(format!("{}.index", s.store.display())).unwrap();
    assert_eq!(s.stats_json()["index"]["present"], false);
    let out = s.cmd(&["load"]).write_stdin("").output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("index: rebuilt with 14 docs"));
    s.cmd(&["stats", "--check"]).assert().success();
    s.cmd(&["rebuild"]).assert().success();
    assert_eq!(s.stats_json()["index"]["docs"], 14);
}

#[test]
fn text_format_lists_changes_for_people() {
    let s = TempStore::new();
    let out = s
        .cmd(&["load", "tests/fixtures/catalog.jsonl", "--format", "text"])
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.lines()
            .any(|l| l == "changed  column      warehouse.orders.status"),
        "{text}"
    );
}

#[test]
fn a_failed_index_sync_still_hands_every_changed_doc_downstream() {
    let s = TempStore::new();
    // Something that is not a folder where the index goes: the sync after the commit fails.
    std::fs::write(format!("{}.index", s.store.display()), "not a folder").unwrap();
    let out = s
        .cmd(&["load", "tests/fixtures/catalog.jsonl"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("warning: the full-text index was not updated"),
        "{stderr}"
    );
    assert_eq!(
        json_lines(&out.stdout).len(),
        18,
        "every changed doc is printed"
    );
    assert_eq!(
        s.stats_json()["docs"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_i64().unwrap())
            .sum::<i64>(),
        18
    );
    // Once the index can be written, the next command catches it up.
    std::fs::remove_file(format!("{}.index", s.store.display())).unwrap();
    assert!(s.cmd(&["rebuild"]).output().unwrap().status.success());
    assert!(s
        .cmd(&["stats", "--check"])
        .output()
        .unwrap()
        .status
        .success());
}

#[test]
fn real_world_names_load_and_render() {
    let s = TempStore::new();
    let input = r#"{"kind":"datasource","name":"bird"}
{"kind":"model","name":"schools/2024","data_source":"bird","columns":[{"name":"charter school (y/n)","description":"Y or N."},{"name":"a\\b"},{"name":"o'brien"},{"name":"straße"}]}
"#;
    let out = s.cmd(&["load"]).write_stdin(input).output().unwrap();
    assert_success(&out);
    let ids: Vec<String> = json_lines(&out.stdout)
        .iter()
        .map(|d| d["canonical_id"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        ids.contains(&"bird.schools/2024.charter school (y/n)".to_owned()),
        "{ids:?}"
    );
    assert!(
        ids.contains(&"bird.schools/2024.a\\b".to_owned()),
        "{ids:?}"
    );
}

#[test]
fn an_index_built_with_the_previous_analyzer_is_rebuilt_on_open() {
    let s = TempStore::new();
    assert_success(
        &s.cmd(&["load", "tests/fixtures/catalog.jsonl"])
            .output()
            .unwrap(),
    );
    // What an earlier slayer left: the same fields but `en_stem` and no `name` field.
    let dir = std::path::PathBuf::from(format!("{}.index", s.store.display()));
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let mut builder = tantivy::schema::Schema::builder();
    builder.add_text_field("id", tantivy::schema::STRING | tantivy::schema::STORED);
    builder.add_text_field("text", tantivy::schema::TEXT | tantivy::schema::STORED);
    let old = tantivy::Index::create_in_dir(&dir, builder.build()).unwrap();
    drop(old);

    let mut store = s.open_facade();
    let (fulltext, report) = FullText::open_synced(&mut store).unwrap();
    assert!(report.rebuilt, "{report:?}");
    assert_eq!(
        fulltext.index().schema(),
        slayer_index::fulltext::schema().0
    );
    let stats = s.stats_json();
    assert_eq!(stats["index"]["agrees_with_store"], true, "{stats}");
    // The name field holds leaf names, split like the text: `customer_id` → custom, id.
    let searcher = fulltext.searcher();
    let parser = QueryParser::for_index(fulltext.index(), vec![fulltext.fields().name]);
    let hits = searcher
        .search(
            &parser.parse_query("custom").unwrap(),
            &TopDocs::with_limit(10).order_by_score(),
        )
        .unwrap();
    assert!(!hits.is_empty());
}

/// A writer killed after tantivy wrote a delete file but before its commit leaves the file
/// behind; the next sync of the same changes from the same commit names its delete file the
/// same. It must clear the leftover and catch up, not fail on it every time.
#[test]
fn a_killed_writers_leftover_file_does_not_stop_the_next_sync() {
    let s = TempStore::new();
    s.cmd(&["load", fixture("catalog.jsonl").to_str().unwrap()])
        .assert()
        .success();
    // Deletes behind the index's back: the sync that follows writes a delete file for the
    // segment that holds them.
    delete_customers_behind_the_index(&s);
    // What that sync writes, learned on a copy: the files it adds there are the ones a killed
    // run would have left here (the same segment, the same operations, the same names).
    let index = std::path::PathBuf::from(format!("{}.index", s.store.display()));
    let copy = TempStore::new();
    for suffix in ["", "-wal", "-shm"] {
        let from = format!("{}{suffix}", s.store.display());
        if Path::new(&from).exists() {
            std::fs::copy(&from, format!("{}{suffix}", copy.store.display())).unwrap();
        }
    }
    let copied = std::path::PathBuf::from(format!("{}.index", copy.store.display()));
    std::fs::create_dir(&copied).unwrap();
    let names = |dir: &Path| -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect()
    };
    for name in names(&index) {
        std::fs::copy(index.join(&name), copied.join(&name)).unwrap();
    }
    let before = names(&copied);
    copy.cmd(&["load"]).write_stdin("").assert().success();
    let leftovers: Vec<String> = names(&copied)
        .difference(&before)
        .filter(|n| n.ends_with(".del"))
        .cloned()
        .collect();
    assert!(!leftovers.is_empty(), "the sync wrote no delete file");
    for name in &leftovers {
        std::fs::copy(copied.join(name), index.join(name)).unwrap();
    }
    // tantivy registers a file as its own before writing it.
    std::fs::copy(copied.join(".managed.json"), index.join(".managed.json")).unwrap();
    let out = s.cmd(&["load"]).write_stdin("").output().unwrap();
    assert_success(&out);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("was not updated"), "{stderr}");
    s.cmd(&["stats", "--check"]).assert().success();
}

/// A load signalled once its transaction has committed (while it brings the index in step)
/// finishes that and ends 0 (docs/spec/limits.md §16.9): a committed load is answered, and its
/// index is not left behind the store.
#[test]
fn a_load_signalled_after_its_commit_finishes_and_ends_0() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let s = TempStore::new();
    let mut lines =
        String::from("{\"kind\":\"datasource\",\"name\":\"big\",\"type\":\"duckdb\"}\n");
    for m in 0..3000 {
        let columns: Vec<serde_json::Value> = (0..20)
            .map(|c| {
                serde_json::json!({"name": format!("col_{c}"), "type": "TEXT",
                "description": format!("Column {c} of table {m}, about orders and refunds.")})
            })
            .collect();
        let model = serde_json::json!({"kind": "model", "name": format!("table_{m}"),
            "data_source": "big", "sql_table": format!("t{m}"), "columns": columns});
        lines.push_str(&format!("{model}\n"));
    }
    let input = s.dir.path().join("big.jsonl");
    std::fs::write(&input, lines).unwrap();
    let mut child = crate::kit::command("slayer-index")
        .env("SLAYER_STORE", &s.store)
        .args(["load", input.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let committed = || {
        rusqlite::Connection::open_with_flags(&s.store, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| c.query_row("SELECT count(*) FROM models", [], |r| r.get::<_, i64>(0)))
            .unwrap_or(0)
            > 0
    };
    while !committed() {
        assert!(started.elapsed() < Duration::from_secs(60), "no commit");
        assert!(
            child.try_wait().unwrap().is_none(),
            "ended before its commit was seen"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    // Into the index's build, which runs outside any store transaction.
    std::thread::sleep(Duration::from_millis(200));
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("loaded 1 datasources, 3000 models"),
        "{stderr}"
    );
    let check = s.cmd(&["stats", "--check"]).output().unwrap();
    assert!(
        check.status.success(),
        "the index is in step with the store"
    );
}
