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
}

#[test]
fn missing_or_unreadable_input_is_a_usage_error_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
    // DUCK at byte 8 and a SQLite header make them look like databases; the rest is garbage.
    let mut duck = vec![0u8; 8];
    duck.extend_from_slice(b"DUCK");
    duck.resize(8192, 0x5a);
    std::fs::write(d("broken.duckdb"), duck).unwrap();
    let mut lite = b"SQLite format 3\0".to_vec();
    lite.resize(8192, 0x5a);
    std::fs::write(d("broken.sqlite"), lite).unwrap();
    std::fs::write(d("text.parquet"), "not parquet").unwrap();
    let db = duckdb_file(dir.path(), "ok.duckdb", "CREATE TABLE a (x INTEGER);");
    let missing_models = d("missing.jsonl");
    let no_match = d("none_*.csv");
    let cases: [(&[&str], &str); 7] = [
        (
            &["/no/such/file.duckdb"],
            "cannot read /no/such/file.duckdb: ",
        ),
        (&["/no/such/file.csv"], "cannot read /no/such/file.csv: "),
        (&[&no_match], &format!("cannot read {no_match}: ")),
        (&[&d("text.parquet")], "text.parquet: "),
        (&[&d("broken.duckdb")], "broken.duckdb: "),
        (&[&d("broken.sqlite")], "broken.sqlite: "),
        (
            &[path(&db), "--models", &missing_models],
            &format!("cannot open {missing_models}: "),
        ),
    ];
    for (args, message) in cases {
        let r = run(args, None);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.starts_with("Error: "), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(message), "{args:?}: {}", r.stderr);
        assert_eq!(r.stdout, "", "{args:?}");
        // The cause is said once, not once more for each error wrapping it.
        assert!(r.stderr.matches("(os error").count() <= 1, "{}", r.stderr);
    }
}

#[test]
fn any_warning_is_exit_1_even_when_quiet() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(
        dir.path(),
        "w.sqlite",
        "CREATE TABLE gone (a INTEGER); CREATE VIEW broken AS SELECT a FROM gone; DROP TABLE gone;
         CREATE TABLE t (\"a.b\" TEXT);",
    );
    let r = run(&[path(&db), "-q", "--tables", "broken"], None);
    assert_eq!((r.code, r.stderr.as_str()), (1, ""));
    // Renaming a column is a warning like any other.
    let r = run(&[path(&db), "-q", "--tables", "t"], None);
    assert_eq!((r.code, r.stderr.as_str()), (1, ""));
    assert_eq!(r.column("t", "a_b")["sql"], "a.b");
    let r = run(&[path(&db), "--tables", "t"], None);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains(
            "warning: w.t: column \"a.b\" becomes \"a_b\" (the name contains '.' or ':')"
        ),
        "{}",
        r.stderr
    );
}
