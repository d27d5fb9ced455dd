//! What a search is asked: the one request definition. The flags, a `--batch` line and the
//! MCP `search` tool each give some of its fields ([`RequestFields`]); whatever they leave out
//! comes from [`Request::default`], the one place the defaults live. Settings a process reads
//! from its environment once ([`MemoryDefaults`]) are the binary's to read and pass in.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use slayer_common::records::Tier;

use crate::plan::config::RerankProvider;
use crate::plan::terms::Injected;
use crate::plan::PlanMode;
use crate::scoping::{MemoryFilter, DEFAULT_CONFIDENCE_FLOOR};
use crate::tuning::Tuning;
use crate::SearchError;

/// How big a schema answer may be (`schema_models`, `schema_columns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SchemaSize {
    /// The most models.
    pub models: usize,
    /// The most columns in all, unless more must be there (named or join keys).
    pub columns: usize,
}

/// A search request: the flags, or one `--batch` line.
#[derive(Debug, Clone)]
pub struct Request {
    /// Entity references (resolved leniently).
    pub entities: Vec<String>,
    /// A SlayerQuery whose entities join the inputs.
    pub query: Option<Value>,
    /// A natural-language question.
    pub question: Option<String>,
    /// Only this datasource.
    pub datasource: Option<String>,
    /// Cap of the `memories` bucket.
    pub max_memories: usize,
    /// Cap of the `example_queries` bucket.
    pub max_example_queries: usize,
    /// Cap of the `entities` bucket.
    pub max_entities: usize,
    /// Add each channel's rank, raw score and RRF contribution to every hit.
    pub explain: bool,
    /// The channels that run (all by default); one turned off is not a warning.
    pub channels: Vec<Channel>,
    /// Fusion methods, weights, model-level evidence (docs/spec/fusion.md §8.6).
    pub tuning: Tuning,
    /// `auto` plans the question (docs/spec/planner.md §15); `off` (the default) does not.
    pub plan: PlanMode,
    /// Expansion terms the caller did itself (anchors, phrases, synonyms, negatives,
    /// exceptions), merged into the plan with provenance `caller`.
    pub injected: Option<Injected>,
    /// The planner's reranker for this request (default: the configuration's).
    pub rerank: Option<RerankProvider>,
    /// Only these memory tiers (default: every tier).
    pub tiers: Option<Vec<Tier>>,
    /// Memories with a lower confidence are skipped (default 0.3).
    pub confidence_floor: Option<f64>,
    /// Only this project's memories and those of every project.
    pub project: Option<String>,
    /// Only this agent's memories and those of every agent.
    pub agent: Option<String>,
    /// Memories to return whole, by id, of any tiers (the response's `expanded`).
    pub expand_ids: Vec<String>,
    /// Also answer with the schema: the top models, their columns and their joins (the
    /// response's `schema`, docs/spec/search.md §9.13).
    pub schema: bool,
    /// The schema answer's most models (default 5, at most 50).
    pub schema_models: usize,
    /// The schema answer's most columns in all (default 40, at most 500); columns the
    /// question or a memory names, and join keys, are there even past it.
    pub schema_columns: usize,
    /// The day a question's relative times ("last year", "yesterday") are read against, as
    /// `YYYY-MM-DD` (default: today, UTC).
    pub as_of: Option<String>,
}

/// The most models a schema answer may ask for.
pub const MAX_SCHEMA_MODELS: usize = 50;
/// The most columns a schema answer may ask for.
pub const MAX_SCHEMA_COLUMNS: usize = 500;

/// Some of a request's fields: those a caller gave (a flag, a key of a `--batch` line, an MCP
/// argument). Laid over a request with [`Request::with`]; a field left out keeps its value.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestFields {
    /// See [`Request::entities`].
    pub entities: Option<Vec<String>>,
    /// See [`Request::query`].
    pub query: Option<Value>,
    /// See [`Request::question`].
    pub question: Option<String>,
    /// See [`Request::datasource`].
    pub datasource: Option<String>,
    /// See [`Request::max_memories`].
    pub max_memories: Option<usize>,
    /// See [`Request::max_example_queries`].
    pub max_example_queries: Option<usize>,
    /// See [`Request::max_entities`].
    pub max_entities: Option<usize>,
    /// See [`Request::explain`].
    pub explain: Option<bool>,
    /// See [`Request::channels`].
    pub channels: Option<Vec<Channel>>,
    /// See [`Request::tuning`].
    pub tuning: Option<Tuning>,
    /// See [`Request::plan`].
    pub plan: Option<PlanMode>,
    /// See [`Request::injected`].
    pub injected: Option<Injected>,
    /// See [`Request::rerank`].
    pub rerank: Option<RerankProvider>,
    /// See [`Request::tiers`].
    pub tiers: Option<Vec<Tier>>,
    /// See [`Request::confidence_floor`].
    pub confidence_floor: Option<f64>,
    /// See [`Request::project`].
    pub project: Option<String>,
    /// See [`Request::agent`].
    pub agent: Option<String>,
    /// See [`Request::expand_ids`].
    pub expand_ids: Option<Vec<String>>,
    /// See [`Request::schema`].
    pub schema: Option<bool>,
    /// See [`Request::schema_models`].
    pub schema_models: Option<usize>,
    /// See [`Request::schema_columns`].
    pub schema_columns: Option<usize>,
    /// See [`Request::as_of`].
    pub as_of: Option<String>,
}

impl Request {
    /// This request with the given fields laid over it.
    pub fn with(self, fields: RequestFields) -> Request {
        Request {
            entities: fields.entities.unwrap_or(self.entities),
            query: fields.query.or(self.query),
            question: fields.question.or(self.question),
            datasource: fields.datasource.or(self.datasource),
            max_memories: fields.max_memories.unwrap_or(self.max_memories),
            max_example_queries: fields
                .max_example_queries
                .unwrap_or(self.max_example_queries),
            max_entities: fields.max_entities.unwrap_or(self.max_entities),
            explain: fields.explain.unwrap_or(self.explain),
            channels: fields.channels.unwrap_or(self.channels),
            tuning: fields.tuning.unwrap_or(self.tuning),
            plan: fields.plan.unwrap_or(self.plan),
            injected: fields.injected.or(self.injected),
            rerank: fields.rerank.or(self.rerank),
            tiers: fields.tiers.or(self.tiers),
            confidence_floor: fields.confidence_floor.or(self.confidence_floor),
            project: fields.project.or(self.project),
            agent: fields.agent.or(self.agent),
            expand_ids: fields.expand_ids.unwrap_or(self.expand_ids),
            schema: fields.schema.unwrap_or(self.schema),
            schema_models: fields.schema_models.unwrap_or(self.schema_models),
            schema_columns: fields.schema_columns.unwrap_or(self.schema_columns),
            as_of: fields.as_of.or(self.as_of),
        }
    }

    /// The day relative times are read against: `as_of`, else today (UTC); a request error
    /// when `as_of` is not a day.
    pub(crate) fn today(&self) -> Result<time::Date, SearchError> {
        match &self.as_of {
            None => Ok(time::OffsetDateTime::now_utc().date()),
            Some(text) => {
                let format = time::macros::format_description!("[year]-[month]-[day]");
                time::Date::parse(text, format).map_err(|_| {
                    SearchError::Request(format!(
                        "as_of must be a day written YYYY-MM-DD, not '{text}'"
                    ))
                })
            }
        }
    }

    /// The schema answer's size, if one is asked for: a request error when a bound is 0 or
    /// past its most.
    pub(crate) fn schema_size(&self) -> Result<Option<SchemaSize>, SearchError> {
        for (field, value, most) in [
            ("schema_models", self.schema_models, MAX_SCHEMA_MODELS),
            ("schema_columns", self.schema_columns, MAX_SCHEMA_COLUMNS),
        ] {
            if !(1..=most).contains(&value) {
                return Err(SearchError::Request(format!(
                    "{field} must be from 1 to {most}, not {value}"
                )));
            }
        }
        Ok(self.schema.then_some(SchemaSize {
            models: self.schema_models,
            columns: self.schema_columns,
        }))
    }

    /// What the request may see of the memories: its own tiers and floor, else the process's
    /// defaults.
    pub fn memory_filter(&self, defaults: &MemoryDefaults) -> Result<MemoryFilter, SearchError> {
        let floor = self.confidence_floor.unwrap_or(defaults.confidence_floor);
        if !(0.0..=1.0).contains(&floor) {
            return Err(SearchError::Request(format!(
                "confidence_floor must be a number from 0 to 1, not {floor}"
            )));
        }
        let default_tiers = if defaults.high_order {
            Tier::ALL.to_vec()
        } else {
            vec![Tier::Lesson]
        };
        for (field, value) in [("project", &self.project), ("agent", &self.agent)] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(SearchError::Request(format!(
                    "{field} must be a non-blank name"
                )));
            }
        }
        Ok(MemoryFilter {
            tiers: self.tiers.clone().unwrap_or(default_tiers),
            confidence_floor: floor,
            project: self.project.clone(),
            agent: self.agent.clone(),
        })
    }
}

/// What a process's environment sets for every request's memory filter
/// (`SLAYER_CONFIDENCE_FLOOR`, `SLAYER_HIGH_ORDER_SEARCH`; the registry is
/// `slayer_common::env`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryDefaults {
    /// The floor of a request that names none.
    pub confidence_floor: f64,
    /// Whether a request that names no tiers searches them all (else lessons only).
    pub high_order: bool,
}

impl Default for MemoryDefaults {
    fn default() -> Self {
        MemoryDefaults {
            confidence_floor: DEFAULT_CONFIDENCE_FLOOR,
            high_order: true,
        }
    }
}

impl MemoryDefaults {
    /// The defaults from the two variables' values, as the binary read them.
    pub fn from_values(
        confidence_floor: Option<&str>,
        high_order: Option<&str>,
    ) -> Result<MemoryDefaults, SearchError> {
        let mut defaults = MemoryDefaults::default();
        if let Some(text) = confidence_floor {
            defaults.confidence_floor = text.trim().parse::<f64>().map_err(|_| {
                SearchError::Request(format!(
                    "SLAYER_CONFIDENCE_FLOOR must be a number from 0 to 1, not {text:?}"
                ))
            })?;
        }
        if let Some(v) = high_order {
            defaults.high_order = match v.trim().to_ascii_lowercase().as_str() {
                "" | "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => {
                    return Err(SearchError::Request(format!(
                        "SLAYER_HIGH_ORDER_SEARCH must be true or false, not {v:?}"
                    )))
                }
            };
        }
        Ok(defaults)
    }
}

/// A ranking channel, for `--channels` (ablations and debugging).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, clap::ValueEnum, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    /// Channel 1: BM25Plus over memory tags, and the named entities.
    Entities,
    /// Channel 2: the full-text index.
    Text,
    /// Channel 3: dense similarity to the active embedding model's rows.
    Dense,
}

/// Every channel, the default.
pub const ALL_CHANNELS: [Channel; 3] = [Channel::Entities, Channel::Text, Channel::Dense];

impl Default for Request {
    fn default() -> Self {
        Request {
            entities: vec![],
            query: None,
            question: None,
            datasource: None,
            max_memories: 5,
            max_example_queries: 2,
            max_entities: 5,
            explain: false,
            channels: ALL_CHANNELS.to_vec(),
            tuning: Tuning::default(),
            plan: PlanMode::Off,
            injected: None,
            rerank: None,
            tiers: None,
            confidence_floor: None,
            project: None,
            agent: None,
            expand_ids: vec![],
            schema: false,
            // On BIRD dev (docs/quality/bird-answer-first.md, issue 64): every gold table in,
            // 0.955 of the gold columns, at 34.1 columns a question; 7 and 40 held 0.991 of the
            // tables at 35.2.
            schema_models: 12,
            schema_columns: 38,
            as_of: None,
        }
    }
}
