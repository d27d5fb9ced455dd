//! Introspection: types, keys, joins from foreign keys, comments, views and selection flags.

use serde_json::json;

use crate::support::{duckdb_file, orders_sql, path, run, sqlite_file};

#[test]
fn duckdb_keys_joins_comments_and_types() {
    let dir = tempfile::tempdir().unwrap();
    let sql = format!(
        "{}
         COMMENT ON TABLE orders IS 'One row per order.';
         COMMENT ON COLUMN orders.amount IS 'Total in dollars.';
         CREATE TABLE kinds (k DECIMAL(10,0), d DECIMAL(12,2), j MAP(VARCHAR, INTEGER), l INTEGER[], b BLOB, t TIME, tz TIMESTAMPTZ, u UUID);
         CREATE VIEW big_orders AS SELECT id, amount FROM orders WHERE amount > 50;",
        orders_sql("TIMESTAMP")
    );
    let db = duckdb_file(dir.path(), "wh.duckdb", &sql);
    let r = run(&[path(&db), "--datasource", "shop", "--no-samples"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let orders = r.model("orders");
    assert_eq!(orders["data_source"], "shop");
    assert_eq!(orders["sql_table"], "orders");
    assert_eq!(orders["description"], "One row per order.");
    assert_eq!(orders["source_kind"], "table");
    assert_eq!(
        orders["joins"],
        json!([{"target_model": "customers", "join_pairs": [["customer_id", "id"]]}])
    );
    assert_eq!(
        r.column("orders", "id"),
        &json!({"name": "id", "sql": "id", "type": "INT", "primary_key": true, "format": {"type": "integer"}})
    );
    assert_eq!(
        r.column("orders", "amount"),
        &json!({"name": "amount", "sql": "amount", "type": "DOUBLE", "description": "Total in dollars.", "format": {"type": "float"}})
    );
    let types = r.column_types("kinds");
    let want = [
        ("k", "INT"),
        ("d", "DOUBLE"),
        ("j", "UNKNOWN"),
        ("l", "UNKNOWN"),
        ("b", "UNKNOWN"),
        ("t", "TIMESTAMP"),
        ("tz", "TIMESTAMP"),
        ("u", "TEXT"),
    ];
    assert_eq!(types, want.map(|(a, b)| (a.to_owned(), b.to_owned())));
    assert_eq!(r.model("big_orders")["source_kind"], "view");
    let names = r.model_names();
    assert_eq!(names, ["big_orders", "customers", "kinds", "orders"]);

    let r = run(
        &[
            path(&db),
            "--no-views",
            "--exclude",
            "kinds",
            "--no-samples",
        ],
        None,
    );
    let names = r.model_names();
    assert_eq!(names, ["customers", "orders"]);
    let r = run(&[path(&db), "--tables", "nope"], None);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no table or view named 'nope'"),
        "{}",
        r.stderr
    );
}

#[test]
fn sqlite_composite_keys_and_implicit_references() {
    let dir = tempfile::tempdir().unwrap();
    let db = sqlite_file(
        dir.path(),
        "s.db",
        "CREATE TABLE parent (a INTEGER, b TEXT, label TEXT, PRIMARY KEY (a, b));
         CREATE TABLE child (id INTEGER PRIMARY KEY, pa INTEGER, pb TEXT, price NUMERIC(10,2), n NUMERIC(8,0),
                             seen DATE, FOREIGN KEY (pa, pb) REFERENCES parent);
         INSERT INTO parent VALUES (1, 'x', 'one'), (2, 'y', 'two');
         INSERT INTO child VALUES (1, 1, 'x', 9.5, 3, '2024-01-02'), (2, 2, 'y', 12, 4, '2024-03-04');",
    );
    let r = run(&[path(&db)], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.records[0]["name"], "s");
    assert_eq!(
        r.model("child")["joins"],
        json!([{"target_model": "parent", "join_pairs": [["pa", "a"], ["pb", "b"]]}])
    );
    // Members of a composite key are profiled; a sole key is not.
    assert_eq!(r.column("parent", "a")["sampled"], "1 .. 2");
    assert_eq!(r.column("parent", "b")["sampled"], "x, y");
    assert!(r.column("child", "id").get("sampled").is_none());
    assert_eq!(r.column("child", "price")["type"], "DOUBLE");
    assert_eq!(r.column("child", "price")["sampled"], "9.5 .. 12.0");
    assert_eq!(r.column("child", "n")["type"], "INT");
    assert_eq!(
        r.column("child", "seen")["sampled"],
        "2024-01-02 .. 2024-03-04"
    );
}
