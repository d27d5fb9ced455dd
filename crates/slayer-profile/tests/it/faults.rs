//! Faults: hostile identifiers, a broken view, a bad source; the rest is still profiled.

use serde_json::json;

use crate::support::{duckdb_file, path, run, sqlite_file};

const HOSTILE: &str = r#"
    CREATE TABLE "we""ird tåble" ("sel ect" VARCHAR, "order" INTEGER, "ünï" VARCHAR, "it's" DOUBLE);
    INSERT INTO "we""ird tåble" VALUES ('x''); DROP TABLE t; --', 1, 'ü', 1.5), ('b', 2, 'ü', 2.5);
    CREATE TABLE t (a INTEGER);
"#;

#[test]
fn hostile_identifiers_and_values_are_quoted() {
    let dir = tempfile::tempdir().unwrap();
    for file in [
        duckdb_file(dir.path(), "h.duckdb", HOSTILE),
        sqlite_file(dir.path(), "h.sqlite", HOSTILE),
    ] {
        let r = run(&[path(&file)], None);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let m = r.model("we\"ird tåble");
        assert_eq!(m["sql_table"], "\"we\"\"ird tåble\"");
        assert_eq!(
            r.column("we\"ird tåble", "sel ect")["sampled_values"],
            json!(["b", "x'); DROP TABLE t; --"])
        );
        assert_eq!(r.column("we\"ird tåble", "order")["sampled"], "1 .. 2");
        assert_eq!(
            r.column("we\"ird tåble", "ünï")["sampled_values"],
            json!(["ü"])
        );
        assert_eq!(r.column("we\"ird tåble", "it's")["sampled"], "1.5 .. 2.5");
        assert!(
            r.records.iter().any(|m| m["name"] == "t"),
            "the table named in a value still exists"
        );
    }
}

#[test]
fn a_broken_view_is_a_warning_and_the_rest_is_profiled() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(
        dir.path(),
        "b.sqlite",
        "CREATE TABLE gone (a INTEGER); CREATE VIEW broken AS SELECT a FROM gone; DROP TABLE gone;
         CREATE TABLE ok (s TEXT); INSERT INTO ok VALUES ('fine');",
    );
    let r = run(&[path(&db)], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("warning: b.broken: cannot read broken: "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("gone"), "{}", r.stderr);
    assert_eq!(r.column("ok", "s")["sampled"], "fine");
    assert!(!r.records.iter().any(|m| m["name"] == "broken"));
}

#[test]
fn a_bad_column_expression_fails_alone() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(
        dir.path(),
        "c.duckdb",
        "CREATE TABLE o (a INTEGER, s VARCHAR); INSERT INTO o VALUES (1, 'x');",
    );
    let models = r#"{"kind":"model","name":"o","data_source":"c","sql_table":"o","columns":[{"name":"a","type":"INT"},{"name":"bad","type":"INT","sql":"no_such_col + 1"},{"name":"s"},{"name":"bad2","sql":"nope"}]}"#;
    let r = run(&[path(&db), "--models", "-"], Some(models));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(r.stderr.contains("warning: c.o.bad: "), "{}", r.stderr);
    assert!(r.stderr.contains("warning: c.o.bad2: "), "{}", r.stderr);
    let m = &r.records[0];
    assert_eq!(m["columns"][0]["sampled"], "1 .. 1");
    assert!(m["columns"][1].get("sampled").is_none());
    assert_eq!(m["columns"][2]["sampled"], "x");
}

#[test]
fn not_a_database_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("notes.md");
    std::fs::write(&f, "hello").unwrap();
    let r = run(&[path(&f)], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("not a DuckDB or SQLite database"),
        "{}",
        r.stderr
    );
    let r = run(&["/no/such/file.duckdb"], None);
    assert_eq!(r.code, 2);
}
