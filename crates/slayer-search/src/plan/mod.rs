//! The query planner (seed 002, `--plan auto`): classify the question, expand it (caller
//! terms, an LLM, or pseudo-relevance feedback), gate the terms against the index, retrieve in
//! two budgeted passes per side, apply negatives, rerank and blend. Its result is one ranking
//! per side that takes the place of channels 2 and 3 in fusion; channel 1 (entity inputs)
//! fuses with it as usual, and the response keeps its shape: the planner adds only to
//! `--explain`.
//!
//! - [`terms`]: the caller's and the LLM's term contract.
//! - [`config`]: the `[semantic_search]` configuration.
//! - [`words`]: normalisation and the index's analyzer.
//! - [`gate`]: gating, with every decision and its reason.
//! - [`prf`]: pseudo-relevance feedback and the question's negations.
//! - [`passes`]: the two passes and their budgets.
//! - [`negatives`]: hard drops, soft penalties, exceptions.
//! - [`rerank`]: shaping and the blend; [`http_rerank`] and the local model score; [`http`]:
//!   the POST the LLM and rerank clients share.
//! - [`llm`]: the LLM expansion; [`run`]: the stages in order; [`explain`]: what
//!   `--explain` shows of them.

pub mod config;
pub mod explain;
pub mod gate;
pub mod http;
pub mod http_rerank;
pub mod llm;
pub mod negatives;
pub mod passes;
pub mod prf;
pub mod rerank;
pub mod run;
pub mod terms;
pub mod words;

use serde::{Deserialize, Serialize};

/// Whether a question is planned.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Deserialize,
    Serialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PlanMode {
    /// Channels 2 and 3 rank the question as they are (the default).
    #[default]
    Off,
    /// The planner ranks the question (a navigational one is looked up exactly).
    Auto,
}

/// The planner as a process holds it: its configuration and the LLM settings read from the
/// environment once.
pub struct Planner {
    /// The configuration in force.
    pub config: config::PlanConfig,
    /// `SLAYER_LLM_MODEL` and friends: `Ok(None)` when no LLM is configured, `Err` (the
    /// warning) when the variable is malformed.
    pub llm: Result<Option<llm::LlmSettings>, llm::BadModelVar>,
}

impl Planner {
    /// With this configuration and the LLM the environment names.
    pub fn new(config: config::PlanConfig) -> Planner {
        Planner {
            config,
            llm: llm::LlmSettings::from_env(),
        }
    }
}

impl Default for Planner {
    fn default() -> Self {
        Planner::new(config::PlanConfig::default())
    }
}
