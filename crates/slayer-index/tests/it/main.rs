//! Whole-binary tests of slayer-index: each runs the real executable on a temp store.

mod bad_input;
mod help_examples;
mod import;
mod import_cube;
mod import_dbt;
mod import_ossie;
#[path = "../../../../tests/kit/mod.rs"]
mod kit;
mod load;
mod remove;
mod render;
mod support;
