//! Whole-binary tests of slayer-embed, and of its OpenAI-compatible client against a scripted
//! in-process server.

mod help_examples;
mod local_model;
mod openai;
mod refresh;
mod support;
