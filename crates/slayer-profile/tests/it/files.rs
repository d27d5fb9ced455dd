//! CSV and Parquet files, globs and folders, read through DuckDB.

use serde_json::json;

use crate::support::{duckdb_file, path, run};

#[test]
fn the_demo_folder_profiles_one_model_per_file() {
    let r = run(&["examples/shop/data", "--threads", "2"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.records[0],
        json!({"kind": "datasource", "name": "data", "type": "duckdb"})
    );
    let names = r.model_names();
    assert_eq!(
        names,
        [
            "customers",
            "order_items",
            "orders",
            "payments",
            "products",
            "stores",
            "supplies"
        ]
    );
    assert_eq!(
        r.model("orders")["sql_table"],
        "'examples/shop/data/orders.csv'"
    );
    let status = r.column("orders", "status");
    assert_eq!(
        status["sampled_values"],
        json!(["completed", "returned", "placed", "return_pending"])
    );
    assert_eq!(
        r.column("orders", "ordered_at")["sampled"],
        "2021-09-01 07:03:00 .. 2021-10-31 14:57:00"
    );
    assert_eq!(
        r.column("orders", "order_total")["sampled"],
        "4.16 .. 99.97"
    );
    assert_eq!(r.column("payments", "payment_method")["distinct_count"], 4);
    assert_eq!(
        r.column("supplies", "perishable")["sampled_values"],
        json!(["False", "True"])
    );
}

#[test]
fn parquet_files_and_globs() {
    let dir = tempfile::tempdir().unwrap();
    let pq1 = dir.path().join("sales_2024.parquet");
    let pq2 = dir.path().join("sales_2025.parquet");
    let setup = format!(
        "COPY (SELECT 'north' AS region, 10 AS units) TO '{}' (FORMAT parquet);
         COPY (SELECT 'south' AS region, 30 AS units UNION ALL SELECT 'south', 5) TO '{}' (FORMAT parquet);",
        path(&pq1),
        path(&pq2)
    );
    duckdb_file(dir.path(), "scratch.duckdb", &setup);
    let r = run(&[path(&pq1)], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.records[0]["name"], "sales_2024");
    assert_eq!(r.column("sales_2024", "units")["sampled"], "10 .. 10");
    let glob = format!("{}/sales_*.parquet", path(dir.path()));
    let r = run(&[&glob, "--datasource", "sales"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.model("sales")["sql_table"], format!("'{glob}'"));
    assert_eq!(r.column("sales", "region")["sampled"], "south, north");
    assert_eq!(r.column("sales", "units")["sampled"], "5 .. 30");
}

#[test]
fn several_files_need_a_datasource_name() {
    let r = run(
        &[
            "examples/shop/data/orders.csv",
            "examples/shop/data/payments.csv",
        ],
        None,
    );
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--datasource"), "{}", r.stderr);
}
