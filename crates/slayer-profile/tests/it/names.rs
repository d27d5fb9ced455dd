//! Names: whatever a source allows, the records carry names `slayer-index load` accepts, unique
//! per model and per datasource; a renamed object gets one warning, and its real name stays in
//! the SQL so samples and refreshes still read it.

use serde_json::json;
use slayer_common::jsonl::{parse_record, Record};

use crate::support::{duckdb_file, path, run, sqlite_file, Run};

const COLLIDING: &str = "
    CREATE TABLE \"a.b\" (v VARCHAR, \"_count\" INTEGER, count_col INTEGER, \"x.y\" VARCHAR, \"x:y\" VARCHAR);
    INSERT INTO \"a.b\" VALUES ('from a.b', 1, 2, 'p', 'q');
    CREATE TABLE \"a/b\" (v VARCHAR);
    INSERT INTO \"a/b\" VALUES ('from a/b');
    CREATE TABLE a_b (v VARCHAR);
    INSERT INTO a_b VALUES ('from a_b');
    CREATE TABLE \" padded \" (v VARCHAR);
    INSERT INTO \" padded \" VALUES ('from padded');
    CREATE TABLE ctl (\"line\nbreak\" VARCHAR);
    INSERT INTO ctl VALUES ('from ctl');
";

fn warnings(r: &Run) -> Vec<&str> {
    r.stderr
        .lines()
        .filter(|l| l.starts_with("warning: "))
        .collect()
}

/// Every line is a record `slayer-index load` accepts, and no two models share a name.
fn assert_loadable(r: &Run) {
    let mut names = std::collections::HashSet::new();
    for (i, line) in r.stdout.lines().enumerate() {
        match parse_record(i + 1, line) {
            Ok(Record::Model(m)) => assert!(names.insert(m.name.clone()), "{} twice", m.name),
            Ok(_) => {}
            Err(e) => panic!("load would refuse {line}: {e}"),
        }
    }
}

#[test]
fn slashes_and_backslashes_are_names_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let sql = r#"CREATE TABLE "schools/2024" ("charter school (y/n)" VARCHAR, "a/b" INTEGER, "a\b" VARCHAR);
                 INSERT INTO "schools/2024" VALUES ('y', 1, 'x'), ('n', 2, 'x');"#;
    for file in [
        duckdb_file(dir.path(), "s.duckdb", sql),
        sqlite_file(dir.path(), "s.sqlite", sql),
    ] {
        let r = run(&[path(&file)], None);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(warnings(&r).is_empty(), "{}", r.stderr);
        assert_eq!(r.model("schools/2024")["sql_table"], "\"schools/2024\"");
        let charter = r.column("schools/2024", "charter school (y/n)");
        assert_eq!(charter["sql"], "charter school (y/n)");
        assert_eq!(charter["sampled"], "n, y");
        assert_eq!(r.column("schools/2024", "a/b")["sampled"], "1 .. 2");
        assert_eq!(r.column("schools/2024", "a\\b")["sampled"], "x");
        assert_loadable(&r);
    }
}

#[test]
fn colliding_and_unloadable_names_are_renamed_once_each_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let duck = duckdb_file(dir.path(), "h.duckdb", COLLIDING);
    let lite = sqlite_file(dir.path(), "h.sqlite", COLLIDING);
    let r = run(&[path(&duck), "--threads", "1"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_loadable(&r);
    assert_eq!(r.model_names(), ["padded", "a_b_2", "a/b", "a_b", "ctl"]);
    assert_eq!(
        warnings(&r),
        [
            r#"warning: h: table " padded " becomes model "padded" (the name has leading or trailing whitespace)"#,
            r#"warning: h: table "a.b" becomes model "a_b_2" (the name contains '.' or ':'; "a_b" is taken)"#,
            r#"warning: h.a_b_2: column "_count" becomes "count_col_2" ("count_col" is taken)"#,
            r#"warning: h.a_b_2: column "x.y" becomes "x_y" (the name contains '.' or ':')"#,
            r#"warning: h.a_b_2: column "x:y" becomes "x_y_2" (the name contains '.' or ':'; "x_y" is taken)"#,
            r#"warning: h.ctl: column "line\nbreak" becomes "line_break" (the name contains a control character)"#,
        ]
    );
    // The real names stay in the SQL, so every sample comes from its own table and column.
    assert_eq!(r.model("a_b_2")["sql_table"], "\"a.b\"");
    assert_eq!(r.model("padded")["sql_table"], "\" padded \"");
    for (model, value) in [
        ("a_b_2", "from a.b"),
        ("a/b", "from a/b"),
        ("a_b", "from a_b"),
        ("padded", "from padded"),
    ] {
        assert_eq!(r.column(model, "v")["sampled"], value);
    }
    let names: Vec<(&str, &str)> = r.model("a_b_2")["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["sql"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("v", "v"),
            ("count_col_2", "_count"),
            ("count_col", "count_col"),
            ("x_y", "x.y"),
            ("x_y_2", "x:y")
        ]
    );
    assert_eq!(r.column("a_b_2", "count_col_2")["sampled"], "1 .. 1");
    assert_eq!(r.column("a_b_2", "x_y_2")["sampled"], "q");
    assert_eq!(r.column("ctl", "line_break")["sampled"], "from ctl");

    // Names do not depend on the engine or on which worker finishes first.
    let again = run(&[path(&duck), "--threads", "2"], None);
    assert_eq!(again.stdout, r.stdout);
    let s = run(&[path(&lite), "--datasource", "h"], None);
    assert_eq!(s.code, 1, "{}", s.stderr);
    assert_eq!(s.records[1..], r.records[1..]);
    assert_eq!(warnings(&s), warnings(&r));

    // Refresh mode finds every renamed model's table by its sql_table.
    let refreshed = run(&[path(&duck), "--models", "-"], Some(&r.stdout));
    assert_eq!(refreshed.code, 0, "{}", refreshed.stderr);
    assert_eq!(refreshed.stdout, r.stdout);
}

#[test]
fn joins_name_the_models_and_columns_as_emitted() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(
        dir.path(),
        "j.duckdb",
        "CREATE TABLE orders (id INTEGER PRIMARY KEY);
         CREATE TABLE sales_orders (x INTEGER);
         CREATE SCHEMA sales;
         CREATE TABLE sales.orders (id INTEGER PRIMARY KEY);
         CREATE TABLE sales.items (id INTEGER PRIMARY KEY, \"order.id\" INTEGER REFERENCES sales.orders (id));",
    );
    let r = run(&[path(&db), "--no-samples"], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_loadable(&r);
    assert_eq!(
        r.model_names(),
        ["orders", "sales_orders", "items", "sales_orders_2"]
    );
    assert_eq!(r.model("sales_orders_2")["sql_table"], "sales.orders");
    assert_eq!(
        r.model("items")["joins"],
        json!([{"target_model": "sales_orders_2", "join_pairs": [["order_id", "id"]]}])
    );
    assert_eq!(
        warnings(&r),
        [
            r#"warning: j.items: column "order.id" becomes "order_id" (the name contains '.' or ':')"#,
            r#"warning: j: table "orders" of schema "sales" becomes model "sales_orders_2" ("sales_orders" is taken)"#,
        ]
    );
    // A selection does not change names: they are decided over the whole source.
    let r = run(&[path(&db), "--no-samples", "--tables", "orders"], None);
    assert_eq!(r.model_names(), ["orders", "sales_orders_2"]);
}

#[test]
fn a_blank_table_name_and_file_stems_are_renamed_too() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(
        dir.path(),
        "b.sqlite",
        "CREATE TABLE \" \" (v TEXT); INSERT INTO \" \" VALUES ('blank');",
    );
    let r = run(&[path(&db)], None);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_loadable(&r);
    assert_eq!(r.model_names(), ["_"]);
    assert_eq!(r.column("_", "v")["sampled"], "blank");
    let a = dir.path().join("one");
    let b = dir.path().join("two");
    for d in [&a, &b] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("orders.csv"), "id\n1\n").unwrap();
    }
    let r = run(
        &[
            path(&a.join("orders.csv")),
            path(&b.join("orders.csv")),
            "--datasource",
            "f",
        ],
        None,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_loadable(&r);
    assert_eq!(r.model_names(), ["orders", "orders_2"]);
    assert_eq!(
        r.model("orders_2")["sql_table"],
        format!("'{}'", path(&b.join("orders.csv")))
    );
    assert_eq!(
        warnings(&r),
        [format!(
            "warning: f: file {:?} becomes model \"orders_2\" (\"orders\" is taken)",
            path(&b.join("orders.csv"))
        )]
    );
}
