//! The examples in `--help` run, from the workspace root, with slayer-index beside them; the
//! PostgreSQL ones against the test server (pg_server/), on a small `shop` database.

use crate::kit::{bin_dir, Shell};
use crate::pg_server;

#[test]
fn help_examples_run() {
    let lines = Shell::new().examples("slayer-profile");
    assert!(lines.len() >= 6, "{lines:?}");
    let server = pg_server::shared();
    server.create_database("shop");
    server.psql(
        "shop",
        "CREATE SCHEMA IF NOT EXISTS sales;
         CREATE TABLE IF NOT EXISTS sales.orders (id int PRIMARY KEY, status text, amount numeric(8,2));
         TRUNCATE sales.orders;
         INSERT INTO sales.orders VALUES (1, 'paid', 9.5), (2, 'shipped', 20), (3, 'paid', 4.25);",
    );
    server.grant_reader("shop");
    let env = server.env("shop");
    let mut sh = Shell::new();
    for key in ["PGHOST", "PGPORT", "PGUSER", "PGPASSWORD"] {
        let (_, value) = env.iter().find(|(k, _)| k == key).unwrap();
        sh = sh.env(key, value);
    }
    for line in &lines {
        if line.contains("slayer-index") && !bin_dir().join("slayer-index").exists() {
            continue; // built by `cargo test --workspace`; absent when this crate is tested alone
        }
        let out = sh.run(line);
        if line.contains("--tables sales.orders") {
            assert!(out.contains("status"), "{out}");
        }
    }
}
