//! slayer-profile's helpers on top of the test kit: building real source files and running the
//! binary on them.

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use crate::kit::workspace_root;

/// A DuckDB file built from SQL.
pub fn duckdb_file(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let path = dir.join(name);
    let conn = duckdb::Connection::open(&path).unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    path
}

/// A SQLite file built from SQL.
pub fn sqlite_file(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let path = dir.join(name);
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(sql).unwrap();
    drop(conn);
    path
}

pub struct Run {
    pub code: i32,
    pub records: Vec<Value>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn model(&self, name: &str) -> &Value {
        self.records
            .iter()
            .find(|r| r["kind"] == "model" && r["name"] == name)
            .unwrap_or_else(|| panic!("no model {name} in {:#?}", self.records))
    }

    /// The names of the records after the datasource record, each of them a model.
    pub fn model_names(&self) -> Vec<&str> {
        self.records[1..]
            .iter()
            .map(|m| {
                assert_eq!(m["kind"], "model", "not a model: {m}");
                m["name"].as_str().unwrap()
            })
            .collect()
    }

    /// `(name, type)` of each column of `model`, in order.
    pub fn column_types(&self, model: &str) -> Vec<(String, String)> {
        self.model(model)["columns"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_owned(),
                    c["type"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    }

    pub fn column<'a>(&'a self, model: &str, column: &str) -> &'a Value {
        self.model(model)["columns"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == column)
            .unwrap_or_else(|| panic!("no column {model}.{column}"))
    }
}

pub fn run(args: &[&str], stdin: Option<&str>) -> Run {
    Run::of(
        crate::kit::run("slayer-profile", None, args, &[], stdin),
        args,
    )
}

impl Run {
    /// A finished run of `args`; its records unless it wrote text or failed as bad usage.
    pub fn of(out: crate::kit::Out, args: &[&str]) -> Run {
        let records = if out.code == 2 || args.contains(&"--format") {
            vec![]
        } else {
            out.lines()
        };
        Run {
            code: out.code,
            records,
            stdout: out.stdout,
            stderr: out.stderr,
        }
    }
}

pub fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The categorical case of docs/spec/profile.md §12.4: 200 orders whose status cycles by `i % 6`,
/// so `paid` leads, `shipped` follows, and `cancelled`, `pending` and `refunded` tie (sorted by
/// string).
pub fn orders_sql(ts: &str) -> String {
    let statuses = [
        "paid",
        "shipped",
        "refunded",
        "pending",
        "paid",
        "cancelled",
    ];
    let mut sql = format!(
        "CREATE TABLE customers (id INTEGER PRIMARY KEY, email VARCHAR, vip BOOLEAN);
         CREATE TABLE orders (id INTEGER PRIMARY KEY, amount DOUBLE PRECISION, qty INTEGER, status VARCHAR,
                              created_at {ts}, customer_id INTEGER REFERENCES customers(id), note VARCHAR);
         INSERT INTO customers VALUES (1, 'a@x.io', true), (2, NULL, false), (3, 'c@x.io', true);\n"
    );
    for i in 0..200 {
        sql.push_str(&format!(
            "INSERT INTO orders VALUES ({i}, {}, {}, '{}', '2024-02-{:02} {:02}:00:00', {}, NULL);\n",
            0.25 + f64::from(i) * 0.5,
            i % 7,
            statuses[(i % 6) as usize],
            1 + i / 8,
            10 + i % 8,
            1 + i % 3
        ));
    }
    sql
}
