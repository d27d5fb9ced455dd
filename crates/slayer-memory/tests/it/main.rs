//! Whole-binary tests of slayer-memory on temp stores.

mod commands;
mod concurrency;
mod embedding;
mod help_examples;
mod real_use;
mod resolution;
mod support;
