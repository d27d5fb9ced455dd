//! Whole-binary tests of slayer-embed, and of its OpenAI-compatible client against a scripted
//! in-process server.

mod first_use;
mod help_examples;
#[path = "../../../../tests/kit/mod.rs"]
mod kit;
mod local_model;
#[path = "../../../../tests/kit/model.rs"]
mod model;
mod openai;
mod refresh;
mod revision;
mod support;
