//! Whole-binary tests of slayer-memory on temp stores.

mod commands;
mod concurrency;
mod resolution;
mod support;
