//! What a search gives: the response (the `SearchResponse`, docs/spec/search.md §9.8) and its text
//! form for people (§9.9). The request is [`crate::request`].

use serde::Serialize;
use serde_json::Value;

pub use crate::fusion::fuse::Contribution;
pub use crate::fusion::schema::{SchemaAnswer, SchemaColumn, SchemaModel, Why};
use crate::plan::explain::PlanExplain;
use slayer_common::records::Tier;

/// A learning-only memory hit.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryHit {
    /// Memory id (`slayer-memory forget <id>` works).
    pub id: String,
    /// The memory's tier.
    pub tier: Tier,
    /// Fused (docs/spec/fusion.md §8), or the channel's raw score when one channel ranked memories.
    pub score: f64,
    /// The full indexed text.
    pub text: String,
    /// Inputs that overlapped the memory's live tags (and its own `memory:<id>`), sorted.
    pub matched_entities: Vec<String>,
    /// When what it records happened, where its writer said (docs/spec/memory.md §4.6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_time: Option<String>,
    /// The session it was saved from, where its writer said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The id of a newer memory of the same subject returned with it, which holds instead
    /// (docs/spec/search.md §9.14).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
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
    /// Fused (docs/spec/fusion.md §8), or the channel's raw score when one channel with scores
    /// ranked entities.
    pub score: f64,
    /// The full rendered text.
    pub text: String,
    /// Per-channel detail (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Contribution>>,
}

/// The response (`SearchResponse`, docs/spec/search.md §9.8).
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
    pub plan: Option<PlanExplain>,
    /// The memories `expand_ids` asked for, in the order asked (left out when none were).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expanded: Option<Vec<ExpandedMemory>>,
    /// The schema answer (`schema: true`): the top models, their columns, their joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<SchemaAnswer>,
    /// How the question was routed across datasources (`--explain`, no datasource given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<crate::output::routing_explain::RoutingExplain>,
    /// What the question asks for, as the answer-first arrangement read it (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<crate::intent::Intent>,
    /// The first entity's card when it is a measure: its formula, filters, time dimension
    /// and what it can be grouped by.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<crate::output::measure_card::AnswerCard>,
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
        let when = match &h.event_time {
            Some(t) => format!(" [{t}]"),
            None => String::new(),
        };
        let superseded = match &h.superseded_by {
            Some(by) => format!(" (superseded by {by})"),
            None => String::new(),
        };
        out.push_str(&format!(
            "  M {}{}{}{} (score={:.4})\n    {}\n",
            h.id,
            tier_mark(h.tier),
            when,
            superseded,
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
    if let Some(answer) = &r.answer {
        out.push_str(&render_answer_text(answer));
    }
    if let Some(schema) = &r.schema {
        out.push_str(&render_schema_text(schema));
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

/// The answer card's text form: `Answer: <id>`, then the measure card's lines, indented.
pub fn render_answer_text(answer: &crate::output::measure_card::AnswerCard) -> String {
    let mut out = format!("\nAnswer: {}\n", answer.id);
    for line in answer.card.to_text().lines() {
        out.push_str(&format!("  {line}\n"));
    }
    if answer.group_by_more {
        out.push_str(&format!(
            "  (more group-by columns: MCP `show` or `slayer-index show {}`)\n",
            answer.card.model
        ));
    }
    out
}

/// The schema answer's text form: each model with its columns (type, why when not ranked,
/// description's first line, a few values), then the joins.
pub fn render_schema_text(schema: &SchemaAnswer) -> String {
    let columns: usize = schema.models.iter().map(|m| m.columns.len()).sum();
    let mut out = format!(
        "\nSchema ({} models, {columns} columns, {} joins):\n",
        schema.models.len(),
        schema.joins.len()
    );
    for m in &schema.models {
        out.push_str(&format!("  {} (score={:.4})\n", m.id, m.score));
        for c in &m.columns {
            let name = c.id.rsplit('.').next().unwrap_or(&c.id);
            let mut line = format!("    {name}");
            if let Some(t) = c.data_type {
                line.push_str(&format!(" {t}"));
            } else {
                line.push_str(&format!(" ({})", c.kind));
            }
            if c.why != Why::Ranked {
                let why = serde_json::to_value(c.why).ok();
                let why = why.as_ref().and_then(|v| v.as_str()).unwrap_or("");
                line.push_str(&format!(" [{why}]"));
            }
            if let Some(d) = &c.description {
                line.push_str(&format!(": {}", first_line(d)));
            }
            if !c.values.is_empty() {
                line.push_str(&format!(" (e.g. {})", c.values.join(", ")));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    if !schema.joins.is_empty() {
        out.push_str("  Joins:\n");
        for j in &schema.joins {
            let how = serde_json::to_value(j.how).ok();
            let how = how.as_ref().and_then(|v| v.as_str()).unwrap_or("");
            out.push_str(&format!("    {} = {} ({how})\n", j.from, j.to));
        }
    }
    out
}
