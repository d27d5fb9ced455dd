//! The Python original's flat response (`SearchResponse{results, resolved_input_entities,
//! warnings}`, reference §2.11 and §2.14), built from our bucketed one, for front ends that must
//! be a drop-in for SLayer 1.4.1 (the MCP server's `search` tool).
//!
//! The three buckets are interleaved by rank (memory 1, example query 1, entity 1, memory 2,
//! …) and cut at `max_results`. Each kind keeps its own order, and because every bucket is a
//! prefix of itself at a larger cap, the results for `n` are a prefix of the results for any
//! `m > n`: the "ranking stability" the original promises.

use serde::Serialize;
use serde_json::Value;
use slayer_common::canonical::memory_id_of;
use slayer_common::store::StoreRead;

use slayer_search::output::response::{Contribution, Response};
use slayer_search::SearchError;

/// The original's longest compact description.
const COMPACT_DESCRIPTION_CHARS: usize = 500;

/// One hit of the flat view (the original's `SearchHit`, fields in its JSON order).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatHit {
    /// `memory`, or the entity's kind (`datasource`, `model`, `column`, `measure`,
    /// `aggregation`).
    pub kind: String,
    /// The memory id (no prefix), or the entity's canonical id.
    pub id: String,
    /// A memory's tier (entities have none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<slayer_common::records::Tier>,
    /// The hit's score in its own bucket.
    pub score: f64,
    /// The indexed text; empty in compact mode.
    pub text: String,
    /// A memory's description (compact: else the first paragraph of its learning); an
    /// entity's own description.
    pub description: Option<String>,
    /// Inputs that overlapped a memory's tags; empty for entities.
    pub matched_entities: Vec<String>,
    /// A memory's attached query, else null.
    pub query: Option<Value>,
    /// When what a memory records happened, where its writer said (docs/spec/memory.md §4.6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event_time: Option<String>,
    /// The session a memory was saved from, where its writer said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// A newer memory of the same subject that holds instead (docs/spec/search.md §9.14).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
    /// Per-channel detail, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Contribution>>,
}

/// The flat response.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlatResponse {
    /// Hits, interleaved by rank across the buckets, at most `max_results`.
    pub results: Vec<FlatHit>,
    /// What the inputs resolved to.
    pub resolved_input_entities: Vec<String>,
    /// The search's warnings.
    pub warnings: Vec<String>,
    /// What the planner did (`explain` with `plan: "auto"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub plan: Option<slayer_search::plan::explain::PlanExplain>,
    /// The schema answer (`schema: true`): the top models, their columns, their joins.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<slayer_search::output::response::SchemaAnswer>,
    /// How the question was routed across datasources (`explain`, no datasource given).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub routing: Option<slayer_search::routing::RoutingExplain>,
    /// What the question asks for (`explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<slayer_search::intent::Intent>,
    /// The first entity's card when it is a measure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<slayer_search::output::measure_card::AnswerCard>,
}

/// The flat view of `response`: at most `max_results` hits; `compact` leaves `text` empty and
/// gives memories without a description the first paragraph of their learning.
pub fn flatten(
    conn: &dyn StoreRead,
    response: Response,
    max_results: usize,
    compact: bool,
) -> Result<FlatResponse, SearchError> {
    let Response {
        memories,
        example_queries,
        entities,
        resolved_input_entities,
        warnings,
        plan,
        expanded: _,
        schema,
        routing,
        intent,
        answer,
    } = response;
    let memory = |id, tier, score, text, matched_entities, query, explain| FlatHit {
        kind: "memory".into(),
        id,
        tier: Some(tier),
        score,
        text,
        description: None,
        matched_entities,
        query,
        event_time: None,
        session: None,
        superseded_by: None,
        explain,
    };
    let memories: Vec<FlatHit> = memories
        .into_iter()
        .map(|h| FlatHit {
            event_time: h.event_time,
            session: h.session,
            superseded_by: h.superseded_by,
            ..memory(
                h.id,
                h.tier,
                h.score,
                h.text,
                h.matched_entities,
                None,
                h.explain,
            )
        })
        .collect();
    let example_queries: Vec<FlatHit> = example_queries
        .into_iter()
        .map(|h| {
            let query = Some(h.query);
            memory(
                h.id,
                h.tier,
                h.score,
                h.text,
                h.matched_entities,
                query,
                h.explain,
            )
        })
        .collect();
    let entities: Vec<FlatHit> = entities
        .into_iter()
        .map(|h| FlatHit {
            kind: h.kind,
            id: h.id,
            tier: None,
            score: h.score,
            text: h.text,
            description: None,
            matched_entities: Vec::new(),
            query: None,
            event_time: None,
            session: None,
            superseded_by: None,
            explain: h.explain,
        })
        .collect();
    let mut buckets = [
        memories.into_iter(),
        example_queries.into_iter(),
        entities.into_iter(),
    ];
    let mut results = Vec::new();
    while results.len() < max_results {
        let before = results.len();
        for bucket in &mut buckets {
            if results.len() < max_results {
                results.extend(bucket.next());
            }
        }
        if results.len() == before {
            break;
        }
    }
    // Descriptions are read for the returned hits only.
    for hit in &mut results {
        describe(conn, hit, compact)?;
    }
    Ok(FlatResponse {
        results,
        resolved_input_entities,
        warnings,
        plan,
        schema,
        routing,
        intent,
        answer,
    })
}

/// Fills a hit's description and, in compact mode, empties its text.
fn describe(conn: &dyn StoreRead, hit: &mut FlatHit, compact: bool) -> Result<(), SearchError> {
    hit.description = if hit.kind == "memory" {
        let stored = conn.memory(&hit.id)?;
        match stored {
            Some(m) if compact && m.description.is_none() => {
                Some(compact_description_from_learning(&m.learning))
            }
            Some(m) => m.description,
            None => None,
        }
    } else {
        entity_description(conn, &hit.id, &hit.kind)?
    };
    if compact {
        hit.text.clear();
    }
    Ok(())
}

/// An entity's own description from the catalog: the datasource's, the model's, or the
/// column's, measure's or aggregation's within its model.
pub fn entity_description(
    conn: &dyn StoreRead,
    id: &str,
    kind: &str,
) -> Result<Option<String>, SearchError> {
    if memory_id_of(id).is_some() {
        return Ok(None);
    }
    if kind == "datasource" {
        return Ok(conn.datasource(id)?.and_then(|d| d.description));
    }
    let Some(stored) = conn.doc(id)? else {
        return Ok(None);
    };
    let Some(model_name) = stored.model.as_deref() else {
        return Ok(None);
    };
    let Some(datasource) = stored.doc.datasource.as_deref() else {
        return Ok(None);
    };
    let Some(model) = conn.model(datasource, model_name)? else {
        return Ok(None);
    };
    if kind == "model" {
        return Ok(model.description);
    }
    let leaf = id
        .strip_prefix(&format!("{datasource}.{model_name}."))
        .unwrap_or_default();
    Ok(match kind {
        "column" => model
            .columns
            .into_iter()
            .find(|c| c.name == leaf)
            .and_then(|c| c.description),
        "measure" => model
            .measures
            .into_iter()
            .find(|m| m.name.as_deref() == Some(leaf))
            .and_then(|m| m.description),
        "aggregation" => model
            .aggregations
            .into_iter()
            .find(|a| a.name == leaf)
            .and_then(|a| a.description),
        _ => None,
    })
}

/// The original's compact fallback (`compact_description_from_learning`): the first
/// paragraph of the learning (leading blank lines skipped, up to the next blank line), lines
/// joined with `\n`, cut at 500 characters with no ellipsis. Lines and blankness follow
/// Python's `str.splitlines` and `str.strip`.
pub fn compact_description_from_learning(learning: &str) -> String {
    let mut paragraph: Vec<&str> = Vec::new();
    for line in python_lines(learning) {
        if !line.chars().all(python_space) {
            paragraph.push(line);
        } else if !paragraph.is_empty() {
            break;
        }
    }
    paragraph
        .join("\n")
        .chars()
        .take(COMPACT_DESCRIPTION_CHARS)
        .collect()
}

/// `str.isspace` per character.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.splitlines()`: the line boundaries Python knows, `\r\n` as one, no trailing empty line.
fn python_lines(text: &str) -> Vec<&str> {
    let is_break = |c: char| {
        matches!(
            c,
            '\n' | '\r'
                | '\u{0b}'
                | '\u{0c}'
                | '\u{1c}'
                | '\u{1d}'
                | '\u{1e}'
                | '\u{85}'
                | '\u{2028}'
                | '\u{2029}'
        )
    };
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !is_break(c) {
            continue;
        }
        lines.push(&text[start..i]);
        start = i + c.len_utf8();
        if c == '\r' {
            if let Some(&(j, '\n')) = chars.peek() {
                chars.next();
                start = j + 1;
            }
        }
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// The original CLI's text form of a flat response: warnings, resolved inputs, then one
/// two-line entry per hit (`M`/`Q`/`[kind]`, id, score; the first line of its text, else of
/// its description).
pub fn render_flat_text(r: &FlatResponse) -> String {
    let mut out = String::new();
    for w in &r.warnings {
        out.push_str(&format!("[warning] {w}\n"));
    }
    if !r.resolved_input_entities.is_empty() {
        out.push_str(&format!(
            "\nResolved input entities: {}\n",
            r.resolved_input_entities.join(", ")
        ));
    }
    out.push_str(&format!("\nResults ({}):\n", r.results.len()));
    for hit in &r.results {
        let prefix = match (hit.kind.as_str(), &hit.query) {
            ("memory", Some(_)) => "Q".to_owned(),
            ("memory", None) => "M".to_owned(),
            (kind, _) => format!("[{kind}]"),
        };
        let preview = if hit.text.is_empty() {
            hit.description.as_deref().unwrap_or("")
        } else {
            &hit.text
        };
        let first = python_lines(preview).first().copied().unwrap_or("");
        out.push_str(&format!(
            "  {prefix} {} (score={:.4})\n    {first}\n",
            hit.id, hit.score
        ));
    }
    if let Some(answer) = &r.answer {
        out.push_str(&slayer_search::output::response::render_answer_text(answer));
    }
    if let Some(schema) = &r.schema {
        out.push_str(&slayer_search::output::response::render_schema_text(schema));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compact_description_is_the_first_paragraph_cut_at_500_characters() {
        assert_eq!(
            compact_description_from_learning("\n  \nFirst line\nsecond\n\nnext paragraph"),
            "First line\nsecond"
        );
        assert_eq!(
            compact_description_from_learning("a\r\nb\u{2028}c\r\rd"),
            "a\nb\nc"
        );
        assert_eq!(compact_description_from_learning(" \t\n"), "");
        let long = "é".repeat(600);
        assert_eq!(
            compact_description_from_learning(&long).chars().count(),
            500
        );
    }

    #[test]
    fn python_lines_match_str_splitlines() {
        assert_eq!(python_lines("a\nb\n"), vec!["a", "b"]);
        assert_eq!(python_lines("a\r\nb\rc"), vec!["a", "b", "c"]);
        assert_eq!(python_lines("\n"), vec![""]);
        assert_eq!(python_lines(""), Vec::<&str>::new());
        assert_eq!(python_lines("x\u{85}y"), vec!["x", "y"]);
    }
}
