//! The query planner (docs/spec/planner.md §15, `--plan auto`): classify the question, expand it
//! (caller terms, an LLM, or pseudo-relevance feedback), gate the terms against the index, retrieve
//! in two budgeted passes per side, apply negatives, rerank and blend. Its result is one ranking
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
pub(crate) mod gate;
pub(crate) mod http;
pub(crate) mod http_rerank;
pub mod llm;
pub(crate) mod negatives;
pub(crate) mod passes;
pub(crate) mod prf;
pub(crate) mod rerank;
pub(crate) mod run;
pub mod terms;
pub(crate) mod words;

use serde::{Deserialize, Serialize};
use slayer_common::store::StoreRead;

use crate::channels::dense::Dense;
use crate::channels::lexical::TextIndex;
use crate::corpus::Corpus;

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

/// The planner as a process holds it: its configuration and the settings read from the
/// environment once.
pub struct Planner {
    /// The configuration in force.
    pub config: config::PlanConfig,
    /// `SLAYER_LLM_MODEL` and friends: `Ok(None)` when no LLM is configured, `Err` (the
    /// warning) when the variable is malformed.
    pub llm: Result<Option<llm::LlmSettings>, llm::BadModelVar>,
    /// The HTTP reranker's key, from the variable the configuration names
    /// (`reranker.api_key_env`).
    pub rerank_api_key: Option<String>,
}

impl Planner {
    /// With this configuration; `env` reads the environment (the binary's, or a test's).
    pub fn new(config: config::PlanConfig, env: impl Fn(&str) -> Option<String>) -> Planner {
        let rerank_api_key = env(&config.reranker.api_key_env).filter(|k| !k.is_empty());
        Planner {
            llm: llm::LlmSettings::from_env(&env),
            config,
            rerank_api_key,
        }
    }
}

impl Default for Planner {
    fn default() -> Self {
        Planner {
            config: config::PlanConfig::default(),
            llm: Ok(None),
            rerank_api_key: None,
        }
    }
}

/// What one planned question asks: the question, the caller's terms, the reranker choice and
/// the name field's weight.
pub(crate) struct PlanAsk<'a> {
    /// The question (cut to the limit, not blank).
    pub(crate) question: &'a str,
    /// Terms the caller expanded the question with.
    pub(crate) injected: Option<&'a terms::Injected>,
    /// The request's reranker (default: the configuration's).
    pub(crate) rerank: Option<config::RerankProvider>,
    /// A question word in an entity's name scores this much more.
    pub(crate) name_weight: f32,
}

/// What the planner reads: its configuration, the store (docs for pass D, the LLM cache), the
/// catalog (navigational questions), the full-text index and the dense channel (pass D, the
/// local reranker).
pub(crate) struct PlanSources<'a> {
    pub(crate) planner: &'a Planner,
    pub(crate) conn: &'a dyn StoreRead,
    pub(crate) corpus: &'a Corpus<'a>,
    pub(crate) text: &'a TextIndex,
    pub(crate) dense: &'a Dense,
}
