//! The examples in `--help` run, from the workspace root, with slayer-index beside them; the
//! PostgreSQL ones against the test server (pg_server/), on a small `shop` database; the MySQL
//! one against the MariaDB test server (mariadb_server.rs), on its fixture.

use crate::kit::{bin_dir, Shell};
use crate::mariadb_server::{MariaServer, READER, READER_PASSWORD};
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
    let mariadb = MariaServer::shared();
    mariadb.run(None, "CREATE DATABASE IF NOT EXISTS shop");
    mariadb.run(
        Some("shop"),
        "CREATE TABLE IF NOT EXISTS orders (id INT PRIMARY KEY, status VARCHAR(10));
         INSERT IGNORE INTO orders VALUES (1, 'paid'), (2, 'shipped');",
    );
    mariadb.run(
        None,
        &format!("GRANT SELECT ON shop.* TO '{READER}'@'localhost'"),
    );
    sh = sh
        .env("MYSQL_UNIX_PORT", mariadb.socket.to_str().unwrap())
        .env("MYSQL_PWD", READER_PASSWORD)
        .env("USER", READER);
    for line in &lines {
        if line.contains("slayer-index") && !bin_dir().join("slayer-index").exists() {
            continue; // built by `cargo test --workspace`; absent when this crate is tested alone
        }
        let out = sh.run(line);
        if line.contains("--tables sales.orders") || line.contains("mysql:///shop") {
            assert!(out.contains("status"), "{out}");
        }
    }
}
