//! What `--explain` shows of a plan (docs/spec/planner.md §15.8), and the clock that times its
//! stages.

use std::time::Instant;

use serde::Serialize;

use crate::plan::config::{Budgets, RerankProvider};
use crate::plan::gate::{Gated, Source};
use crate::plan::passes::{Pass, PassReport};
use crate::plan::terms::Exception;

/// Dropped candidates and top candidates listed per side.
pub const EXPLAIN_LIST: usize = 20;

/// Times the stages: each lap adds the time since the last one to its stage.
/// Everything the planner did for one question (`--explain`'s `plan`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PlanExplain {
    /// The entity a navigational question named (looked up exactly, not planned).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub navigational: Option<String>,
    /// The expansion sources that gave terms, in merge order.
    pub sources: Vec<Source>,
    /// The gated plan: terms with provenance and document frequency, and every decision.
    pub plan: Gated,
    /// Exceptions in force besides the configured ones.
    pub exceptions: Vec<Exception>,
    /// The band synonyms were held to, relative to `plan.df_reference`.
    pub df_ratio_band: [f64; 2],
    /// The configured budgets (each pass's budget in force is in its side's report).
    pub budgets: Budgets,
    /// The reranker that scored the candidates.
    pub reranker: Option<RerankProvider>,
    /// The LLM's part, when one is configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmReport>,
    /// The entity side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entities: Option<SideReport>,
    /// The memory side.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memories: Option<SideReport>,
    /// Milliseconds per stage, in order.
    pub latency_ms: serde_json::Map<String, serde_json::Value>,
}

/// The LLM's part of a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmReport {
    /// The model asked.
    pub model: String,
    /// Whether the answer came from the store's cache.
    pub cached: bool,
    /// Whether the call failed (its warning is in the response's warnings).
    pub failed: bool,
}

/// One side's passes, counts and top candidates.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SideReport {
    /// Pass A (anchors + phrases).
    #[serde(rename = "passA")]
    pub pass_a: PassReport,
    /// Pass B (synonyms).
    #[serde(rename = "passB")]
    pub pass_b: PassReport,
    /// Pass D (the dense channel's best that A and B missed), when it ran.
    #[serde(rename = "passD", skip_serializing_if = "Option::is_none")]
    pub pass_d: Option<PassReport>,
    /// The seed's counts.
    pub counts: Counts,
    /// Candidates the hard negatives dropped (the first few).
    pub dropped: Vec<Dropped>,
    /// The best candidates after the blend (the first few), with its parts.
    pub top: Vec<Blended>,
}

/// The seed's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Counts {
    /// Taken from pass A.
    #[serde(rename = "passA")]
    pub pass_a: usize,
    /// Taken from pass B (new ones).
    #[serde(rename = "passB")]
    pub pass_b: usize,
    /// Taken from pass D (new ones).
    #[serde(rename = "passD")]
    pub pass_d: usize,
    /// After the merge and the `max_candidates` cap.
    pub merged: usize,
    /// After the hard negatives.
    pub after_negatives: usize,
    /// Scored by the reranker.
    pub reranked: usize,
}

/// A dropped candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Dropped {
    /// Its id.
    pub id: String,
    /// The pattern or term.
    pub by: String,
}

/// A candidate's blend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Blended {
    /// Its id.
    pub id: String,
    /// The pass that found it.
    pub pass: Pass,
    /// The reranker's raw score.
    pub rerank: f64,
    /// Anchors and phrases in its high-signal fields.
    pub anchor_hits: usize,
    /// Soft terms that buried it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub soft: Vec<String>,
    /// Its soft-negative penalty.
    pub penalty: f64,
    /// The blended score.
    pub score: f64,
}

pub(crate) struct Clock {
    at: Instant,
    pub(crate) laps: serde_json::Map<String, serde_json::Value>,
}

impl Clock {
    pub(crate) fn new() -> Clock {
        Clock {
            at: Instant::now(),
            laps: Default::default(),
        }
    }

    pub(crate) fn lap(&mut self, stage: &str) {
        let now = Instant::now();
        let ms = (now - self.at).as_secs_f64() * 1e3;
        let total = self.laps.get(stage).and_then(|v| v.as_f64()).unwrap_or(0.0) + ms;
        self.laps
            .insert(stage.to_owned(), ((total * 1000.0).round() / 1000.0).into());
        self.at = now;
    }
}
