//! The planner's expansion terms as callers and the LLM write them (docs/spec/planner.md §15.2):
//! `anchors`, `phrases`, `synonyms`, `negatives.hard`, `negatives.soft`, `exceptions`. The
//! same shape is a request's `injected` field, the `--inject` file and the LLM's answer.

use serde::{Deserialize, Serialize};

/// Expansion terms, as given (not yet gated).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Injected {
    /// 1–3 key terms of the question; pass A.
    pub anchors: Vec<String>,
    /// Short multi-word phrases; pass A, matched with slop 2.
    pub phrases: Vec<String>,
    /// Related terms; pass B only (budgeted, never weighted).
    pub synonyms: Vec<String>,
    /// Hard and soft negatives.
    pub negatives: Negatives,
    /// Phrases that protect a negative's match (`ab test` protects `test`).
    pub exceptions: Vec<Exception>,
}

/// Hard negatives drop a candidate; soft ones bury it with a capped penalty.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Negatives {
    /// Safe to exclude: a candidate whose name or path holds one is dropped.
    pub hard: Vec<String>,
    /// Ambiguous: a candidate that holds one is penalised.
    pub soft: Vec<String>,
    /// Also accepted here (the seed's request example nests them in `negatives`).
    pub exceptions: Vec<Exception>,
}

/// A negative and the phrases in which its match does not count.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Exception {
    /// The negative term this protects against.
    pub negative: String,
    /// Phrases that contain the negative and mean something else (`ab test`, `sample size`).
    pub allow: Vec<String>,
}

impl Injected {
    /// Every exception, wherever it was written.
    pub fn all_exceptions(&self) -> impl Iterator<Item = &Exception> {
        self.exceptions.iter().chain(&self.negatives.exceptions)
    }

    /// Every term, the exceptions' included: at most `limits.entities` of them, each at most
    /// `limits.name_bytes` (docs/spec/limits.md §16).
    pub fn check_limits(
        &self,
        limits: &slayer_common::limits::Limits,
    ) -> Result<(), slayer_common::limits::LimitError> {
        let exceptions = self
            .all_exceptions()
            .flat_map(|e| std::iter::once(&e.negative).chain(&e.allow));
        let every = self
            .anchors
            .iter()
            .chain(&self.phrases)
            .chain(&self.synonyms)
            .chain(&self.negatives.hard)
            .chain(&self.negatives.soft)
            .chain(exceptions);
        limits.check_names("the injected terms", every.map(String::as_str))
    }

    /// Whether nothing at all was given.
    pub fn is_empty(&self) -> bool {
        self.anchors.is_empty()
            && self.phrases.is_empty()
            && self.synonyms.is_empty()
            && self.negatives.hard.is_empty()
            && self.negatives.soft.is_empty()
            && self.all_exceptions().next().is_none()
    }
}
