//! The pipeline (seed `000_…txt`; reference §2 for rules and strings).

use std::collections::HashSet;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use slayer_common::canonical::{memory_id_of, rooted_at};
use slayer_common::store::{docs, memories};
use slayer_index::fulltext::FullText;
use slayer_memory::extract::query_entities;
use slayer_memory::resolve::Lookup;

use crate::corpus::{Corpus, MemoryMeta};
use crate::fuse::{fuse, Contribution, Fused, Ranking};
use crate::lexical::{self, Side};
use crate::SearchError;

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
}

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
        }
    }
}

/// A learning-only memory hit.
#[derive(Debug, Clone, Serialize)]
pub struct MemoryHit {
    /// Memory id (`slayer-memory forget <id>` works).
    pub id: String,
    /// RRF-fused, or the channel's raw score when one channel ranked memories.
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
    /// RRF-fused, or the channel's raw score when one channel with scores ranked entities.
    pub score: f64,
    /// The full rendered text.
    pub text: String,
    /// Per-channel detail (`--explain`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explain: Option<Vec<Contribution>>,
}

/// The response (the seed's `SearchResponse`).
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
}

/// The warning of the embedding channel until slayer-embed lands.
pub const EMBEDDING_UNAVAILABLE: &str =
    "embedding channel skipped: no embedding provider is available yet (slayer-embed); search uses the BM25 and full-text channels.";

/// Everything a search reads, opened once.
pub struct Context<'a> {
    /// The store connection.
    pub conn: &'a Connection,
    /// The full-text index, synced.
    pub fulltext: &'a FullText,
    /// A searcher over its last commit.
    pub searcher: tantivy::Searcher,
    /// Catalog and memories.
    pub corpus: Corpus,
}

impl Lookup for Corpus {
    fn memory_exists(&self, id: &str) -> bool {
        self.index.contains_key(id)
    }
}

/// Which memories survive the datasource filter, by position in the corpus.
struct Eligible<'a> {
    corpus: &'a Corpus,
    mask: Vec<bool>,
}

impl Eligible<'_> {
    fn get(&self, id: &str) -> Option<&MemoryMeta> {
        let &i = self.corpus.index.get(id)?;
        self.mask[i].then(|| &self.corpus.memories[i])
    }

    fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }
}

fn py_repr(s: &str) -> String {
    if s.contains('\'') && !s.contains('"') {
        format!("\"{s}\"")
    } else {
        format!("'{}'", s.replace('\'', "\\'"))
    }
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !list.contains(&item) {
        list.push(item);
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

impl Context<'_> {
    /// Runs one search.
    pub fn search(&self, req: &Request) -> Result<Response, SearchError> {
        let corpus = &self.corpus;
        if let Some(ds) = &req.datasource {
            if !corpus.datasources.contains(ds) {
                let known: Vec<String> = corpus
                    .datasources
                    .iter()
                    .map(|d| format!("'{d}'"))
                    .collect();
                return Err(SearchError::Request(format!(
                    "datasource {} not found; known: [{}].",
                    py_repr(ds),
                    known.join(", ")
                )));
            }
        }
        let ds = req.datasource.as_deref();
        let mut warnings: Vec<String> = Vec::new();
        let lookup = corpus;

        // Lenient resolution: a bad input is a warning, the search goes on.
        let has_inputs = !req.entities.is_empty() || req.query.is_some();
        let empty = slayer_memory::resolve::Catalog::default();
        let catalog = if has_inputs {
            corpus.catalog(self.conn)?
        } else {
            &empty
        };
        let mut inputs: Vec<String> = Vec::new();
        for raw in &req.entities {
            match catalog.resolve(raw, None, lookup) {
                Ok(r) => {
                    r.canonical_forms
                        .into_iter()
                        .for_each(|c| push_unique(&mut inputs, c));
                    r.warnings
                        .into_iter()
                        .for_each(|w| push_unique(&mut warnings, w));
                }
                Err(e) => push_unique(
                    &mut warnings,
                    format!("entity {} dropped: {e}", py_repr(raw)),
                ),
            }
        }
        if let Some(q) = &req.query {
            match query_entities(q, catalog, lookup) {
                Ok(r) => {
                    r.canonical_forms
                        .into_iter()
                        .for_each(|c| push_unique(&mut inputs, c));
                    r.warnings
                        .into_iter()
                        .for_each(|w| push_unique(&mut warnings, w));
                }
                Err(e) => push_unique(&mut warnings, format!("query input dropped: {e}")),
            }
        }
        let channel_1 = !req.entities.is_empty() || req.query.is_some();
        let question = req.question.as_deref().filter(|q| !q.trim().is_empty());

        // The memory corpus under the datasource filter.
        let mask: Vec<bool> = corpus
            .memories
            .iter()
            .map(|m| ds.is_none_or(|d| m.tags.iter().any(|t| rooted_at(t, d))))
            .collect();
        let eligible: Vec<&MemoryMeta> = corpus
            .memories
            .iter()
            .zip(&mask)
            .filter_map(|(m, keep)| keep.then_some(m))
            .collect();
        let eligible_ids = Eligible { corpus, mask };
        if let Some(d) = ds {
            for input in &inputs {
                if let Some(id) = memory_id_of(input) {
                    if corpus.index.contains_key(id) && !eligible_ids.contains(id) {
                        push_unique(
                            &mut warnings,
                            format!("memory:{id} is not rooted at datasource '{d}'; dropped."),
                        );
                    }
                }
            }
        }

        let mut response = Response {
            resolved_input_entities: inputs.clone(),
            ..Response::default()
        };
        if !channel_1 && question.is_none() {
            push_unique(
                &mut warnings,
                "no entities, query, or question supplied; returning newest memories by recency."
                    .into(),
            );
            self.recency(req, &eligible, &mut response, &mut warnings)?;
            response.warnings = warnings;
            return Ok(response);
        }

        // Channel 1, entity side: the named refs themselves.
        let mut named: Vec<(String, Option<f64>)> = Vec::new();
        for input in inputs.iter().filter(|i| memory_id_of(i).is_none()) {
            if let Some(d) = ds {
                if !rooted_at(input, d) {
                    push_unique(&mut warnings, format!("entity {} is not rooted at datasource '{d}'; dropped from entities bucket.", py_repr(input)));
                    continue;
                }
            }
            if let Some(what) = hidden(catalog, input) {
                push_unique(
                    &mut warnings,
                    format!(
                        "entity {} is on a hidden {what}; dropped from entities bucket.",
                        py_repr(input)
                    ),
                );
                continue;
            }
            if docs::get(self.conn, input)?.is_none() {
                push_unique(&mut warnings, format!("entity {} resolved but is no longer present in storage; dropped from entities bucket.", py_repr(input)));
                continue;
            }
            named.push((input.clone(), None));
        }

        // Tags naming nothing in the catalog (or outside the datasource) are stale for this call.
        let valid = if has_inputs {
            crate::corpus::valid_entities(catalog, ds)
        } else {
            HashSet::new()
        };

        // Channel 1, memory side: BM25Plus over live tags plus the implicit self-reference.
        let mut bm25_hits = Vec::new();
        if !inputs.is_empty() {
            let docs: Vec<Vec<&str>> = eligible
                .iter()
                .map(|m| {
                    let mut tags = vec![m.self_ref.as_str()];
                    tags.extend(
                        m.tags
                            .iter()
                            .filter(|t| **t != m.self_ref && live(t, &valid, &eligible_ids))
                            .map(String::as_str),
                    );
                    tags
                })
                .collect();
            for (i, score) in crate::bm25::rank(&docs, &inputs) {
                bm25_hits.push((eligible[i].self_ref.clone(), Some(score)));
            }
        }

        // Channel 2: the full-text index, one ranking per side.
        let (mut text_memories, mut text_entities) = (Vec::new(), Vec::new());
        if let Some(q) = question {
            let terms = lexical::question_terms(self.fulltext, q);
            for (id, score) in
                lexical::rank(self.fulltext, &self.searcher, &terms, Side::Memories, ds)?
            {
                if memory_id_of(&id).is_some_and(|m| eligible_ids.contains(m)) {
                    text_memories.push((id, Some(score)));
                }
            }
            for (id, score) in
                lexical::rank(self.fulltext, &self.searcher, &terms, Side::Entities, ds)?
            {
                text_entities.push((id, Some(score)));
            }
            push_unique(&mut warnings, EMBEDDING_UNAVAILABLE.to_owned());
        }

        let memory_fused = fuse(&[
            Ranking {
                channel: "bm25",
                hits: bm25_hits,
            },
            Ranking {
                channel: "fulltext",
                hits: text_memories,
            },
        ]);
        let entity_fused = fuse(&[
            Ranking {
                channel: "named",
                hits: named,
            },
            Ranking {
                channel: "fulltext",
                hits: text_entities,
            },
        ]);
        for f in &memory_fused {
            let Some(id) = memory_id_of(&f.key) else {
                continue;
            };
            let Some(m) = eligible_ids.get(id) else {
                continue;
            };
            let fits_example =
                m.has_query && response.example_queries.len() < req.max_example_queries;
            let fits_learning = !m.has_query && response.memories.len() < req.max_memories;
            if !fits_example && !fits_learning {
                if response.example_queries.len() >= req.max_example_queries
                    && response.memories.len() >= req.max_memories
                {
                    break;
                }
                continue;
            }
            let matched = self.matched(m, &inputs, &valid, &eligible_ids);
            let text = docs::get(self.conn, &f.key)?
                .map(|d| d.doc.text)
                .unwrap_or_default();
            let explain = req.explain.then(|| f.contributions.clone());
            if m.has_query {
                let query = memories::get(self.conn, id)?
                    .and_then(|mm| mm.query)
                    .unwrap_or(Value::Null);
                response.example_queries.push(ExampleQueryHit {
                    id: id.to_owned(),
                    score: f.score,
                    text,
                    matched_entities: matched,
                    query,
                    explain,
                });
            } else {
                response.memories.push(MemoryHit {
                    id: id.to_owned(),
                    score: f.score,
                    text,
                    matched_entities: matched,
                    explain,
                });
            }
        }
        for f in entity_fused.iter() {
            if response.entities.len() >= req.max_entities {
                break;
            }
            self.push_entity(f, req.explain, &mut response)?;
        }

        // Stale attached queries: returned example queries, then other named memories.
        let mut stale_check: Vec<String> = response
            .example_queries
            .iter()
            .map(|h| h.id.clone())
            .collect();
        for input in &inputs {
            if let Some(id) = memory_id_of(input) {
                if eligible_ids.contains(id) && !stale_check.iter().any(|s| s == id) {
                    stale_check.push(id.to_owned());
                }
            }
        }
        for id in stale_check {
            self.stale_query_warning(&id, lookup, &mut warnings)?;
        }
        response.warnings = warnings;
        Ok(response)
    }

    fn push_entity(
        &self,
        f: &Fused,
        explain: bool,
        response: &mut Response,
    ) -> Result<(), SearchError> {
        let Some(stored) = docs::get(self.conn, &f.key)? else {
            return Ok(());
        };
        response.entities.push(EntityHit {
            id: f.key.clone(),
            kind: stored.doc.doc_kind,
            score: f.score,
            text: stored.doc.text,
            explain: explain.then(|| f.contributions.clone()),
        });
        Ok(())
    }

    /// A tag counts when it names something that exists (and, under a datasource, is in it).
    fn matched(
        &self,
        m: &MemoryMeta,
        inputs: &[String],
        valid: &HashSet<String>,
        eligible: &Eligible<'_>,
    ) -> Vec<String> {
        let mut out: Vec<String> = inputs
            .iter()
            .filter(|i| **i == m.self_ref || (m.tags.contains(i) && live(i, valid, eligible)))
            .cloned()
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn stale_query_warning(
        &self,
        id: &str,
        lookup: &dyn Lookup,
        warnings: &mut Vec<String>,
    ) -> Result<(), SearchError> {
        let Some(m) = memories::get(self.conn, id)? else {
            return Ok(());
        };
        let Some(q) = &m.query else { return Ok(()) };
        if let Err(e) = query_entities(q, self.corpus.catalog(self.conn)?, lookup) {
            push_unique(warnings, format!("example_query memory:{id}: attached query has stale references ({e}); re-save to clean."));
        }
        Ok(())
    }

    fn recency(
        &self,
        req: &Request,
        eligible: &[&MemoryMeta],
        response: &mut Response,
        warnings: &mut Vec<String>,
    ) -> Result<(), SearchError> {
        let mut newest: Vec<&MemoryMeta> = eligible.to_vec();
        newest.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        for m in newest {
            let key = format!("memory:{}", m.id);
            let text = docs::get(self.conn, &key)?
                .map(|d| d.doc.text)
                .unwrap_or_default();
            if m.has_query && response.example_queries.len() < req.max_example_queries {
                let query = memories::get(self.conn, &m.id)?
                    .and_then(|mm| mm.query)
                    .unwrap_or(Value::Null);
                response.example_queries.push(ExampleQueryHit {
                    id: m.id.clone(),
                    score: 0.0,
                    text,
                    matched_entities: vec![],
                    query,
                    explain: None,
                });
            } else if !m.has_query && response.memories.len() < req.max_memories {
                response.memories.push(MemoryHit {
                    id: m.id.clone(),
                    score: 0.0,
                    text,
                    matched_entities: vec![],
                    explain: None,
                });
            }
        }
        for hit in response.example_queries.clone() {
            self.stale_query_warning(&hit.id, &self.corpus, warnings)?;
        }
        Ok(())
    }
}

/// A tag counts when it names something that exists (and, under a datasource, is in it).
fn live(tag: &str, valid: &HashSet<String>, eligible: &Eligible<'_>) -> bool {
    match memory_id_of(tag) {
        Some(id) => eligible.contains(id),
        None => valid.contains(tag),
    }
}

/// `Some("model")` / `Some("column")` when the entity sits on a hidden model or column.
fn hidden(catalog: &slayer_memory::resolve::Catalog, canonical: &str) -> Option<&'static str> {
    let parts: Vec<&str> = canonical.split('.').collect();
    if parts.len() < 2 {
        return None;
    }
    let model = catalog
        .models
        .iter()
        .find(|m| m.data_source == parts[0] && m.name == parts[1])?;
    if model.hidden {
        return Some("model");
    }
    if parts.len() == 3 && model.columns.iter().any(|c| c.name == parts[2] && c.hidden) {
        return Some("column");
    }
    None
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
