//! Whole-binary tests of slayer-search on a temp store.

mod behaviour;
mod channels;
mod dense;
mod depth;
mod eval;
mod faults;
mod filters;
mod help_examples;
mod real_use;
mod support;
