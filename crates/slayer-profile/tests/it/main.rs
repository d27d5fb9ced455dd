//! Whole-binary tests of slayer-profile on real DuckDB, SQLite, CSV and Parquet files.

mod faults;
mod files;
mod help_examples;
mod introspect;
#[path = "../../../../tests/kit/mod.rs"]
mod kit;
mod names;
mod refresh;
mod samples;
mod storage;
mod support;
