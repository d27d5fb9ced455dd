//! slayer-search: fused search over memories and semantic-layer entities (docs/spec/channels.md
//! §5–§7, docs/spec/fusion.md §8, docs/spec/search.md §9).
//!
//! A request passes through the stages once, in order ([`pipeline`]):
//!
//! 1. validate (datasource, limits) — [`pipeline`];
//! 2. resolve inputs — `inputs`;
//! 3. plan the question (`--plan auto`) — [`plan`];
//! 4. run the channels — `channels` (`bm25`, `lexical`, `dense`, `ranked`);
//! 5. fuse — `fusion` (`fuse`, `deepening`, `model_evidence`, `tiers`);
//! 6. fill the buckets — `fusion::buckets`;
//! 7. respond — [`output`] (the response, hits, warnings).
//!
//! Below the stages lie what they read: [`request`] (the one request definition), [`tuning`]
//! and `scoping` (settings), `corpus` (the store's catalog and memories), `timings`; above
//! them [`context`], what a process keeps open between requests. Arrows run one way: a stage
//! imports only the stages before it and the layers below, never [`context`] or
//! [`pipeline`] (`scripts/structure.py --graph slayer-search` checks it).
//!
//! Rules: a search never writes the store (it may rewrite the derived vector sidecar);
//! unresolvable inputs are warnings, an unknown datasource is an error raised before any work;
//! every bucket depends only on the corpus, the inputs and its own cap. Nothing here prints or
//! exits.
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub(crate) mod channels;
pub mod context;
pub(crate) mod corpus;
pub(crate) mod fusion;
pub(crate) mod inputs;
pub mod intent;
pub mod joins;
pub(crate) mod measure_formulas;
pub(crate) mod memory_head;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod reembed;
pub mod request;
pub mod routing;
pub mod scoping;
pub(crate) mod time_cues;
pub(crate) mod timings;
pub mod tuning;

/// Why a search could not run.
#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    /// Bad request (unknown datasource, bad field): exit 2.
    #[error("{0}")]
    Request(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] slayer_common::store::StoreError),
    /// Loading the catalog failed.
    #[error(transparent)]
    Memory(#[from] slayer_memory::MemoryError),
    /// The index failed.
    #[error(transparent)]
    Index(#[from] slayer_index::IndexError),
    /// tantivy failed while searching.
    #[error("full-text search failed: {0}; `slayer-index rebuild` recreates the index")]
    FullText(#[from] tantivy::TantivyError),
}
