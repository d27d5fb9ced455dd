//! Whole-binary tests of slayer-profile on real DuckDB, SQLite, CSV and Parquet files, and a
//! real PostgreSQL server and a real MariaDB server.

mod faults;
mod files;
mod help_examples;
mod introspect;
#[path = "../../../../tests/kit/mod.rs"]
mod kit;
mod mariadb;
mod mariadb_server;
mod memory;
mod names;
mod pg_server;
mod postgres;
mod refresh;
mod samples;
mod storage;
mod support;
