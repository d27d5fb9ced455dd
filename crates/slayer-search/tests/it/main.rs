//! Whole-binary tests of slayer-search on a temp store.

mod answer_first;
mod behaviour;
mod channels;
mod conversation;
mod dense;
mod depth;
mod eval;
mod faults;
mod filters;
mod followed;
mod help_examples;
mod hostile;
#[path = "../../../../tests/kit/mod.rs"]
mod kit;
mod long_lived;
mod mcp;
mod mcp_hardening;
#[path = "../../../../tests/kit/model.rs"]
mod model;
#[path = "../../../../tests/kit/pg_server/mod.rs"]
mod pg_server;
mod pg_store;
mod plan;
mod ranking;
mod real_use;
mod review;
mod revisions;
mod schema;
mod shutdown;
mod support;
mod sync;
mod tiers;
mod values;
