//! Whole-binary tests of slayer-search on a temp store.

mod behaviour;
mod dense;
mod depth;
mod filters;
mod help_examples;
mod support;
