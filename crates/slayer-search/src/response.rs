//! What a search takes and gives: the request (flags or a `--batch` line), the response (the
//! `SearchResponse`, docs/spec.md §9.8) and its text form for people (§9.9).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::fuse::Contribution;
use crate::plan::config::RerankProvider;
use crate::plan::terms::Injected;
use crate::plan::PlanMode;
use crate::tuning::Tuning;

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
        }
    }
}

/// A learning-only memory hit.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryHit {
    /// Memory id (`slayer-memory forget <id>` works).
    pub id: String,
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
            "  M {} (score={:.4})\n    {}\n",
            h.id,
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
            "  Q {} (score={:.4})\n    {}\n",
            h.id,
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
    out
}
