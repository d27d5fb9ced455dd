//! What a search takes and gives: the request (flags or a `--batch` line), the response (the
//! `SearchResponse`, docs/spec.md §9.8) and its text form for people (§9.9).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fuse::Contribution;
use crate::plan::config::RerankProvider;
use crate::plan::terms::Injected;
use crate::plan::PlanMode;
use crate::scoping::{MemoryFilter, DEFAULT_CONFIDENCE_FLOOR};
use crate::tuning::Tuning;
use slayer_common::records::Tier;

/// A search request: the flags, or one `--batch` line.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
    /// Fusion methods, weights, model-level evidence (docs/spec.md §8.6).
    pub tuning: Tuning,
    /// `auto` plans the question (seed 002); `off` (the default) does not.
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
}

impl Request {
    /// What the request may see of the memories.
    pub fn memory_filter(&self) -> Result<MemoryFilter, crate::SearchError> {
        let floor = match (self.confidence_floor, env_value("SLAYER_CONFIDENCE_FLOOR")) {
            (Some(floor), _) => floor,
            (None, Some(text)) => text.trim().parse::<f64>().map_err(|_| {
                crate::SearchError::Request(format!(
                    "SLAYER_CONFIDENCE_FLOOR must be a number from 0 to 1, not {text:?}"
                ))
            })?,
            (None, None) => DEFAULT_CONFIDENCE_FLOOR,
        };
        if !(0.0..=1.0).contains(&floor) {
            return Err(crate::SearchError::Request(format!(
                "confidence_floor must be a number from 0 to 1, not {floor}"
            )));
        }
        let high_order = match env_value("SLAYER_HIGH_ORDER_SEARCH") {
            None => true,
            Some(v) => match v.trim().to_ascii_lowercase().as_str() {
                "" | "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => {
                    return Err(crate::SearchError::Request(format!(
                        "SLAYER_HIGH_ORDER_SEARCH must be true or false, not {v:?}"
                    )))
                }
            },
        };
        let default_tiers = if high_order {
            Tier::ALL.to_vec()
        } else {
            vec![Tier::Lesson]
        };
        for (field, value) in [("project", &self.project), ("agent", &self.agent)] {
            if value.as_deref().is_some_and(|v| v.trim().is_empty()) {
                return Err(crate::SearchError::Request(format!(
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
        }
    }
}

/// A set environment variable's value.
fn env_value(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A learning-only memory hit.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryHit {
    /// Memory id (`slayer-memory forget <id>` works).
    pub id: String,
    /// The memory's tier.
    pub tier: Tier,
    /// Fused (docs/spec.md §8), or the channel's raw score when one channel ranked memories.
    pub score: f64,
    /// The full indexed text.
    pub text: String,
    /// Inputs that overlapped the memory's live tags (and its own `memory:<id>`), sorted.
    pub matched_entities: Vec<String>,
    /// Per-channel detail (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Contribution>>,
}

/// A query-bearing memory hit.
#[derive(Debug, Clone, Serialize)]
pub struct ExampleQueryHit {
    /// Memory id.
    pub id: String,
    /// The memory's tier.
    pub tier: Tier,
    /// As [`MemoryHit::score`].
    pub score: f64,
    /// The full indexed text.
    pub text: String,
    /// As [`MemoryHit::matched_entities`].
    pub matched_entities: Vec<String>,
    /// The attached query, as stored.
    pub query: Value,
    /// Per-channel detail (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Contribution>>,
}

/// An entity hit.
#[derive(Debug, Clone, Serialize)]
pub struct EntityHit {
    /// Canonical id.
    pub id: String,
    /// datasource, model, column, measure or aggregation.
    pub kind: String,
    /// Fused (docs/spec.md §8), or the channel's raw score when one channel with scores ranked
    /// entities.
    pub score: f64,
    /// The full rendered text.
    pub text: String,
    /// Per-channel detail (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Contribution>>,
}

/// The response (`SearchResponse`, docs/spec.md §9.8).
#[derive(Debug, Clone, Serialize, Default)]
pub struct Response {
    /// Learning-only memories.
    pub memories: Vec<MemoryHit>,
    /// Query-bearing memories.
    pub example_queries: Vec<ExampleQueryHit>,
    /// Entities.
    pub entities: Vec<EntityHit>,
    /// What the inputs resolved to.
    pub resolved_input_entities: Vec<String>,
    /// One line each, de-duplicated, in emission order.
    pub warnings: Vec<String>,
    /// What the planner did (`--explain` with `--plan auto`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<crate::plan::explain::PlanExplain>,
    /// The memories `expand_ids` asked for, in the order asked (left out when none were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded: Option<Vec<ExpandedMemory>>,
}

/// A memory returned whole by id (the seed's `expandIds`): one shape for every tier.
#[derive(Debug, Clone, Serialize)]
pub struct ExpandedMemory {
    /// Its tier.
    pub tier: Tier,
    /// Memory id.
    pub id: String,
    /// The full indexed text.
    pub text: String,
    /// The attached query, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub query: Option<Value>,
    /// The memory's standing values that are not a plain lesson's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
    /// Strength, when not 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strength: Option<f64>,
    /// Its project, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Its agent, if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// ` [tier]` after a hit's id, for any tier but lesson.
fn tier_mark(tier: Tier) -> String {
    if tier == Tier::Lesson {
        String::new()
    } else {
        format!(" [{tier}]")
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

/// The text form for people: warnings, resolved inputs, then each bucket.
pub fn render_text(r: &Response) -> String {
    let mut out = String::new();
    for w in &r.warnings {
        out.push_str(&format!("[warning] {w}\n"));
    }
    if !r.resolved_input_entities.is_empty() {
        out.push_str(&format!(
            "Resolved input entities: {}\n",
            r.resolved_input_entities.join(", ")
        ));
    }
    out.push_str(&format!("\nMemories ({}):\n", r.memories.len()));
    for h in &r.memories {
        out.push_str(&format!(
            "  M {}{} (score={:.4})\n    {}\n",
            h.id,
            tier_mark(h.tier),
            h.score,
            first_line(&h.text)
        ));
    }
    out.push_str(&format!(
        "\nExample queries ({}):\n",
        r.example_queries.len()
    ));
    for h in &r.example_queries {
        out.push_str(&format!(
            "  Q {}{} (score={:.4})\n    {}\n",
            h.id,
            tier_mark(h.tier),
            h.score,
            first_line(&h.text)
        ));
    }
    out.push_str(&format!("\nEntities ({}):\n", r.entities.len()));
    for h in &r.entities {
        out.push_str(&format!(
            "  [{}] {} (score={:.4})\n    {}\n",
            h.kind,
            h.id,
            h.score,
            first_line(&h.text)
        ));
    }
    if let Some(expanded) = &r.expanded {
        out.push_str(&format!("\nExpanded ({}):\n", expanded.len()));
        for m in expanded {
            out.push_str(&format!("  {} [{}]\n", m.id, m.tier));
            for line in m.text.lines() {
                out.push_str(&format!("    {line}\n"));
            }
        }
    }
    out
}
