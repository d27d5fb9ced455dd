//! Whole-binary tests of slayer-memory on temp stores.

mod commands;
mod concurrency;
mod embedding;
mod help_examples;
#[path = "../../../../tests/kit/mod.rs"]
mod kit;
#[path = "../../../../tests/kit/model.rs"]
mod model;
mod real_use;
mod resolution;
mod review;
mod support;
