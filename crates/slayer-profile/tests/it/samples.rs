//! The profiling rules on real files: the orders case of docs/spec/profile.md §12.4, overflow with
//! an exact distinct count, all-NULL and empty tables, and DuckDB = SQLite.

use serde_json::json;

use crate::support::{duckdb_file, orders_sql, path, run, sqlite_file};

#[test]
fn the_orders_case_profiles_as_the_reference_says() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(dir.path(), "wh.duckdb", &orders_sql("TIMESTAMP"));
    let r = run(&[path(&db)], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.records[0],
        json!({"kind": "datasource", "name": "wh", "type": "duckdb", "database": path(&db)})
    );
    let status = r.column("orders", "status");
    assert_eq!(
        status["sampled"],
        "paid, shipped, cancelled, pending, refunded"
    );
    assert_eq!(
        status["sampled_values"],
        json!(["paid", "shipped", "cancelled", "pending", "refunded"])
    );
    assert_eq!(status["distinct_count"], 5);
    assert_eq!(r.column("orders", "amount")["sampled"], "0.25 .. 99.75");
    assert_eq!(r.column("orders", "qty")["sampled"], "0 .. 6");
    assert_eq!(
        r.column("orders", "created_at")["sampled"],
        "2024-02-01 10:00:00 .. 2024-02-25 17:00:00"
    );
    // The sole primary key is an identifier, not profiled; an all-NULL text column is empty.
    assert!(r.column("orders", "id").get("sampled").is_none());
    assert_eq!(r.column("orders", "note")["sampled"], "");
    assert_eq!(r.column("orders", "note")["sampled_values"], json!([]));
    assert_eq!(r.column("orders", "note")["distinct_count"], 0);
    assert_eq!(
        r.column("customers", "vip")["sampled_values"],
        json!(["True", "False"])
    );
    assert_eq!(r.column("customers", "email")["sampled"], "a@x.io, c@x.io");
    assert!(r.column("orders", "amount").get("sampled_values").is_none());
    assert!(r.column("orders", "amount").get("distinct_count").is_none());
}

#[test]
fn duckdb_and_sqlite_copies_give_equal_models() {
    let dir = tempfile::tempdir().unwrap();
    let duck = duckdb_file(dir.path(), "wh.duckdb", &orders_sql("TIMESTAMP"));
    let lite = sqlite_file(dir.path(), "wh.sqlite", &orders_sql("DATETIME"));
    let d = run(&[path(&duck), "--datasource", "wh"], None);
    let s = run(&[path(&lite), "--datasource", "wh"], None);
    assert_eq!(d.code, 0, "{}", d.stderr);
    assert_eq!(s.code, 0, "{}", s.stderr);
    assert_eq!(s.records[0]["type"], "sqlite");
    assert_eq!(d.records[1..], s.records[1..]);
}

#[test]
fn more_than_fifty_values_keep_fifty_and_count_all() {
    let dir = tempfile::tempdir().unwrap();
    let mut sql = String::from("CREATE TABLE t (code VARCHAR, n INTEGER);\n");
    for i in 0..130 {
        // code_000 appears 3 times, code_001..: twice for i < 60, once after.
        let times = if i == 0 {
            3
        } else if i < 60 {
            2
        } else {
            1
        };
        for _ in 0..times {
            sql.push_str(&format!("INSERT INTO t VALUES ('code_{i:03}', {i});\n"));
        }
    }
    for (name, file) in [
        ("duckdb", duckdb_file(dir.path(), "t.duckdb", &sql)),
        ("sqlite", sqlite_file(dir.path(), "t.sqlite", &sql)),
    ] {
        let r = run(&[path(&file)], None);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let code = r.column("t", "code");
        let values = code["sampled_values"].as_array().unwrap();
        assert_eq!(values.len(), 50, "{name}");
        assert_eq!(values[0], "code_000");
        assert_eq!(values[49], "code_049");
        assert_eq!(code["distinct_count"], 130, "{name}");
        // The value index holds the other 80, most frequent first.
        let index = code["value_index"].as_array().unwrap();
        assert_eq!(index.len(), 80, "{name}");
        assert_eq!(
            (&index[0], &index[79]),
            (&"code_050".into(), &"code_129".into())
        );
        let sampled = code["sampled"].as_str().unwrap();
        assert!(sampled.starts_with("code_000, code_001, "), "{sampled}");
        assert!(
            sampled.ends_with("code_019 ... (130 distinct)"),
            "{name}: {sampled}"
        );
    }
}

#[test]
fn empty_and_all_null_tables() {
    let dir = tempfile::tempdir().unwrap();
    let sql = "CREATE TABLE empty_t (a INTEGER, b VARCHAR, c DATE);
               CREATE TABLE nulls (x DOUBLE, d DATE, s VARCHAR);
               INSERT INTO nulls VALUES (NULL, NULL, NULL), (NULL, NULL, NULL);";
    let r = run(&[path(&duckdb_file(dir.path(), "e.duckdb", sql))], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.column("empty_t", "a")["sampled"], "all NULL");
    assert_eq!(r.column("empty_t", "c")["sampled"], "all NULL");
    assert_eq!(r.column("empty_t", "b")["sampled_values"], json!([]));
    assert_eq!(r.column("nulls", "x")["sampled"], "all NULL");
    assert_eq!(r.column("nulls", "d")["sampled"], "all NULL");
    assert_eq!(r.column("nulls", "s")["distinct_count"], 0);
}

#[test]
fn no_samples_introspects_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = duckdb_file(dir.path(), "wh.duckdb", &orders_sql("TIMESTAMP"));
    let r = run(&[path(&db), "--no-samples", "--tables", "orders"], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.records.len(), 2);
    assert!(r.column("orders", "status").get("sampled").is_none());
}

#[test]
fn exotic_duckdb_types_print_the_common_way() {
    let dir = tempfile::tempdir().unwrap();
    let sql = "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
               CREATE TABLE x (d DECIMAL(12,2), k DECIMAL(10,0), t TIME, tz TIMESTAMPTZ, h HUGEINT,
                               u UUID, m mood, f FLOAT, ts TIMESTAMP);
               INSERT INTO x VALUES
                 (4.10, 7, '10:00:00', '2024-02-01 10:00:00+00', 170141183460469231731687303715884105727,
                  '00000000-0000-0000-0000-000000000001', 'ok', 0.5, '2024-02-01 10:00:00.25'),
                 (-12.00, -3, '23:59:59.5', '2024-03-01 00:00:00+00', -1,
                  '00000000-0000-0000-0000-000000000001', 'happy', 1e-7, '2024-02-02 00:00:00');";
    let r = run(&[path(&duckdb_file(dir.path(), "x.duckdb", sql))], None);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.column("x", "d")["sampled"], "-12.0 .. 4.1");
    assert_eq!(r.column("x", "k")["sampled"], "-3 .. 7");
    assert_eq!(r.column("x", "t")["sampled"], "10:00:00 .. 23:59:59.5");
    assert_eq!(
        r.column("x", "tz")["sampled"],
        "2024-02-01 10:00:00 .. 2024-03-01 00:00:00"
    );
    assert_eq!(
        r.column("x", "h")["sampled"],
        "-1 .. 170141183460469231731687303715884105727"
    );
    assert_eq!(
        r.column("x", "u")["sampled_values"],
        json!(["00000000-0000-0000-0000-000000000001"])
    );
    assert_eq!(r.column("x", "m")["sampled_values"], json!(["happy", "ok"]));
    assert_eq!(
        r.column("x", "f")["sampled"],
        "1.0000000116860974e-07 .. 0.5"
    );
    assert_eq!(
        r.column("x", "ts")["sampled"],
        "2024-02-01 10:00:00.250000 .. 2024-02-02 00:00:00"
    );
}
