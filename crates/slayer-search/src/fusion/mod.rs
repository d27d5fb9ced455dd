//! Stages 5 and 6: fusion of the channels' rankings and the buckets it fills.
//!
//! - `fuse`: reciprocal-rank or score fusion, weighted per channel, first-insertion ties.
//! - `deepening`: fusion that reads the text and dense rankings only as deep as needed.
//! - `model_evidence`: the derived ranking of models from their best leaves, fused in.
//! - `tiers`: the memory side fused per tier group when tier weights apply.
//! - `buckets`: the caps, and the memories, example queries and entities they keep.
//! - `schema`: the schema answer (models, their columns, their joins) read from the entity
//!   side's fused order.

pub(crate) mod answer_first;
pub(crate) mod bridges;
pub(crate) mod buckets;
pub(crate) mod deepening;
pub(crate) mod fuse;
pub(crate) mod memory_time;
pub(crate) mod model_evidence;
pub(crate) mod named;
pub(crate) mod neighbours;
pub(crate) mod schema;
pub(crate) mod tiers;
