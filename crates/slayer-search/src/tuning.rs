//! The ranking's tunable parts (docs/spec/fusion.md §8.6): per side, the fusion method and each
//! channel's weight; the weight of a question word found in an entity's name; model-level
//! evidence. The defaults are the measured ones (docs/quality/bird.md,
//! docs/quality/scifact.md). A request may override any of them (`--tuning JSON`, or a batch
//! line's `tuning`), which is how the ablations run.

use serde::{Deserialize, Serialize};

use crate::SearchError;

/// How one side's rankings combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Reciprocal rank fusion: a ranking adds `weight / (K + rank)`.
    Rrf,
    /// Score fusion: a ranking adds `weight × raw / best`, its raw score over its best one (a
    /// ranking without raw scores adds `weight`, a full match; one whose best is not positive
    /// adds nothing).
    Score,
}

/// Each channel's weight in one side's fusion, named as `--channels` names the channels. A
/// channel left out of a weights object weighs 1.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Weights {
    /// Channel 1: BM25 over memory tags (memories), the named refs (entities).
    pub entities: f64,
    /// Channel 2: the full-text index.
    pub text: f64,
    /// Channel 3: dense similarity.
    pub dense: f64,
}

impl Weights {
    /// Every channel weighs 1.
    pub const ONE: Weights = Weights {
        entities: 1.0,
        text: 1.0,
        dense: 1.0,
    };
}

impl Default for Weights {
    fn default() -> Self {
        Weights::ONE
    }
}

/// How one side fuses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// Reciprocal rank or score.
    pub method: Method,
    /// Per-channel weights.
    pub weights: Weights,
}

impl Fusion {
    /// Plain reciprocal rank fusion, every weight 1: the original's.
    pub const RRF: Fusion = Fusion {
        method: Method::Rrf,
        weights: Weights::ONE,
    };
}

/// How model-level evidence is drawn and applied.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelEvidence {
    /// How many of the fused list's first entries the evidence is read from and reordered;
    /// fixed, so that a smaller entity cap still gives a prefix of a larger one.
    pub window: usize,
    /// How many of a model's best leaves add to its evidence.
    pub leaves: usize,
    /// How many models of the derived ranking take part in fusion.
    pub models: usize,
    /// The derived ranking's weight for a model.
    pub model_weight: f64,
    /// The derived ranking's weight for the leaves of a model that takes part.
    pub leaf_weight: f64,
    /// The weight for a key column that connects two models taking part (of one
    /// datasource): the columns a join between them would use; the first two models' keys
    /// add `key_weight / 61`, a later pair's less (docs/spec/fusion.md §8.6; 0: off).
    pub key_weight: f64,
    /// The weight for a leaf of a model taking part whose name the question holds as whole
    /// words (0: off).
    pub question_weight: f64,
}

impl Default for ModelEvidence {
    fn default() -> Self {
        ModelEvidence {
            window: 100,
            leaves: 2,
            models: 3,
            model_weight: 2.0,
            leaf_weight: 0.2,
            key_weight: 0.75,
            question_weight: 0.5,
        }
    }
}

impl ModelEvidence {
    /// No model-level evidence: the fused order as it is.
    pub const OFF: ModelEvidence = ModelEvidence {
        window: 0,
        leaves: 0,
        models: 0,
        model_weight: 0.0,
        leaf_weight: 0.0,
        key_weight: 0.0,
        question_weight: 0.0,
    };

    /// Whether it changes anything.
    pub fn is_on(&self) -> bool {
        self.models > 0 && self.window > 0 && (self.model_weight > 0.0 || self.leaf_weight > 0.0)
    }
}

/// Routing a question across datasources when none is given (docs/spec/fusion.md §8.7).
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Routing {
    /// How many of the unfiltered answer's first entities are evidence (0: no routing).
    pub entities: usize,
    /// How many times the second datasource's evidence the first needs to route.
    pub ratio: f64,
}

impl Default for Routing {
    fn default() -> Self {
        Routing {
            entities: 10,
            ratio: 2.0,
        }
    }
}

/// Every tunable part; a field left out keeps its default.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct Tuning {
    /// How memories fuse (default `score`).
    pub memory_fusion: Method,
    /// The memory side's channel weights (default: all 1).
    pub memory_weights: Weights,
    /// How entities fuse (default `rrf`).
    pub entity_fusion: Method,
    /// The entity side's channel weights (default: entities 1, text 1, dense 0.5).
    pub entity_weights: Weights,
    /// A question word in an entity's own name (or label) scores this many times what it
    /// scores in the doc text, on top of it (default 1; 0 turns the name field off).
    pub name_weight: f32,
    /// Model-level evidence (`{"models": 0}` turns it off).
    pub model_evidence: ModelEvidence,
    /// Routing across datasources when the request names none.
    pub routing: Routing,
    /// How many of the entity list's first places are arranged for what the question asks
    /// (docs/spec/fusion.md §8.9; 0 turns it off).
    pub answer_head: usize,
    /// How much a memory that fits the question's time gains: its score times 1 + this ×
    /// its fit (docs/spec/fusion.md §8.10; 0 turns the time rules off).
    pub time_weight: f64,
    /// What a memory saved just before or after one of the first hits in its session gains:
    /// this × the hit's score (docs/spec/fusion.md §8.11; 0 turns it off).
    pub neighbour_weight: f64,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            memory_fusion: Method::Score,
            memory_weights: Weights::default(),
            entity_fusion: Method::Rrf,
            entity_weights: Weights {
                dense: 0.5,
                ..Weights::default()
            },
            name_weight: 1.0,
            model_evidence: ModelEvidence::default(),
            routing: Routing::default(),
            answer_head: 5,
            time_weight: DEFAULT_TIME_WEIGHT,
            neighbour_weight: DEFAULT_NEIGHBOUR_WEIGHT,
        }
    }
}

impl Tuning {
    /// The memory side's fusion.
    pub fn memories(&self) -> Fusion {
        Fusion {
            method: self.memory_fusion,
            weights: self.memory_weights,
        }
    }

    /// The entity side's fusion.
    pub fn entities(&self) -> Fusion {
        Fusion {
            method: self.entity_fusion,
            weights: self.entity_weights,
        }
    }

    /// Every weight must be a number from 0 to [`MAX_WEIGHT`]: a larger one would overflow
    /// the scores into infinities (`null` in JSON).
    pub fn validate(&self) -> Result<(), SearchError> {
        let ev = &self.model_evidence;
        let numbers = [
            ("memory_weights.entities", self.memory_weights.entities),
            ("memory_weights.text", self.memory_weights.text),
            ("memory_weights.dense", self.memory_weights.dense),
            ("entity_weights.entities", self.entity_weights.entities),
            ("entity_weights.text", self.entity_weights.text),
            ("entity_weights.dense", self.entity_weights.dense),
            ("name_weight", f64::from(self.name_weight)),
            ("model_evidence.model_weight", ev.model_weight),
            ("model_evidence.leaf_weight", ev.leaf_weight),
            ("model_evidence.key_weight", ev.key_weight),
            ("model_evidence.question_weight", ev.question_weight),
            ("routing.ratio", self.routing.ratio),
            ("time_weight", self.time_weight),
            ("neighbour_weight", self.neighbour_weight),
        ];
        if self.answer_head > MAX_ANSWER_HEAD {
            return Err(SearchError::Request(format!(
                "tuning.answer_head must be a number from 0 to {MAX_ANSWER_HEAD}, not {}",
                self.answer_head
            )));
        }
        if self.routing.entities > MAX_ROUTING_ENTITIES {
            return Err(SearchError::Request(format!(
                "tuning.routing.entities must be a number from 0 to {MAX_ROUTING_ENTITIES}, not {}",
                self.routing.entities
            )));
        }
        for (name, value) in numbers {
            if !(0.0..=MAX_WEIGHT).contains(&value) {
                return Err(SearchError::Request(format!(
                    "tuning.{name} must be a number from 0 to {MAX_WEIGHT}, not {}",
                    as_typed(value)
                )));
            }
        }
        Ok(())
    }
}

/// The time rules' default weight (docs/spec/fusion.md §8.10).
pub const DEFAULT_TIME_WEIGHT: f64 = 0.5;

/// The session neighbours' default weight (docs/spec/fusion.md §8.11).
pub const DEFAULT_NEIGHBOUR_WEIGHT: f64 = 0.25;

/// The most entities routing may read as evidence.
pub const MAX_ROUTING_ENTITIES: usize = 100;

/// The most places the answer-first arrangement may arrange.
pub const MAX_ANSWER_HEAD: usize = 50;

/// The largest weight a tuning may give.
pub const MAX_WEIGHT: f64 = 1000.0;

/// A number as a person would have typed it: `1e308`, not its 309 digits.
fn as_typed(value: f64) -> String {
    if value.is_finite() && value != 0.0 && !(1e-4..1e6).contains(&value.abs()) {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_tuning_keeps_the_other_defaults() {
        let t: Tuning = serde_json::from_str(
            r#"{"entity_weights": {"text": 2}, "model_evidence": {"models": 0}}"#,
        )
        .unwrap();
        assert_eq!(t.entity_weights.text, 2.0);
        // A weights object given replaces the default whole: dense weighs 1 again.
        assert_eq!(t.entity_weights.dense, 1.0);
        assert!(!t.model_evidence.is_on());
        assert_eq!(t.memory_fusion, Method::Score);
        assert_eq!(t.model_evidence.window, ModelEvidence::default().window);
    }

    #[test]
    fn unknown_fields_and_bad_weights_are_refused() {
        assert!(serde_json::from_str::<Tuning>(r#"{"weights": {}}"#).is_err());
        let t: Tuning = serde_json::from_str(r#"{"name_weight": -1}"#).unwrap();
        let e = t.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "tuning.name_weight must be a number from 0 to 1000, not -1"
        );
        let t: Tuning = serde_json::from_str(r#"{"memory_weights": {"text": 1e308}}"#).unwrap();
        let e = t.validate().unwrap_err().to_string();
        assert_eq!(
            e,
            "tuning.memory_weights.text must be a number from 0 to 1000, not 1e308"
        );
    }
}
