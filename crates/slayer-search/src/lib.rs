//! slayer-search: fused search over memories and semantic-layer entities (docs/spec.md §5–§9).
//!
//! - [`search`]: the pipeline, stage by stage: validate, resolve inputs ([`inputs`]), run
//!   channels ([`channels`]), fuse and fill buckets ([`buckets`], [`hits`]), warnings
//!   ([`warnings`]); and the recency fallback.
//! - [`bm25`]: channel 1, BM25Plus over canonical tags with implicit self-references.
//! - [`lexical`]: channel 2, the persistent tantivy index, queried leniently, datasource-filtered
//!   with the subset's own statistics.
//! - [`measure_card`]: a measure with its filters and every column it can be grouped by.
//! - [`dense`]: channel 3, cosine over the active embedding model's rows, scanned in the
//!   store's vector sidecar; [`ranked`]: its ranking, sorted only as deep as fusion reads.
//! - [`fuse`]: fusion by reciprocal rank (k = 60) or by normalised score, weighted per
//!   channel, first-insertion tie order.
//! - [`deepening`]: fusion that reads the text ranking only as deep as the buckets need.
//! - [`model_evidence`]: the derived ranking of models from their best leaves, fused in.
//! - [`corpus`]: what a search reads from the store (through `slayer_common::store`), and
//!   [`corpus::Scope`], the one answer to "does this count under the datasource".
//! - [`response`]: the request and response types and the text form.
//! - [`results`]: the Python original's flat view of a response (the MCP `search` tool).
//! - [`tuning`]: fusion methods and weights per side, the name weight, model-level evidence.
//! - [`timings`]: time per stage (`SLAYER_TIMINGS=1`).
//! - [`plan`]: the query planner of `--plan auto` (seed 002): expansion, gating, two budgeted
//!   passes, negatives, rerank and blend, all in `--explain`.
//!
//! Rules: a search never writes the store (it may rewrite the derived vector sidecar); unresolvable inputs are warnings, an unknown datasource is an
//! error raised before any work; every bucket depends only on the corpus, the inputs and its
//! own cap. Nothing here prints or exits.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bm25;
pub mod buckets;
pub mod channels;
pub mod corpus;
pub mod deepening;
pub mod dense;
pub mod fuse;
pub mod hits;
pub mod inputs;
pub mod lexical;
pub mod measure_card;
pub mod model_evidence;
pub mod plan;
pub mod ranked;
pub mod reembed;
pub mod response;
pub mod results;
pub mod scoping;
pub mod search;
pub mod tiers;
pub mod timings;
pub mod tuning;
pub mod warnings;

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
