//! The pipeline (seed `000_…txt`; reference §2 for rules and strings).

use std::rc::Rc;

use rusqlite::Connection;
use serde_json::Value;
use slayer_common::canonical::{memory_id_of, memory_ref, rooted_at};
use slayer_common::store::{docs, memories};
use slayer_index::fulltext::FullText;
use slayer_memory::extract::query_entities;
use slayer_memory::resolve::{Lookup, ResolveError};

use crate::corpus::{Corpus, MemoryMeta, ValidEntities};
use crate::deepening::{Deepening, DEEPER, FIRST_DEPTH};
use crate::fuse::{Fused, Ranking};
use crate::lexical::{self, Side};
pub use crate::response::{
    render_text, Channel, EntityHit, ExampleQueryHit, MemoryHit, Request, Response, ALL_CHANNELS,
};
use crate::SearchError;

/// The full-text index, opened (and synced, on a connection of its own) on the first
/// question: a search without one never touches it.
pub struct TextIndex {
    store: std::path::PathBuf,
    opened: std::cell::OnceCell<(FullText, tantivy::Searcher)>,
}

impl TextIndex {
    /// The index of the store at this path.
    pub fn new(store: std::path::PathBuf) -> TextIndex {
        TextIndex {
            store,
            opened: std::cell::OnceCell::new(),
        }
    }

    fn get(&self) -> Result<&(FullText, tantivy::Searcher), SearchError> {
        if let Some(opened) = self.opened.get() {
            return Ok(opened);
        }
        let store = slayer_common::store::Store::open(
            &self.store,
            slayer_common::store::OpenMode::ReadOnly,
        )?;
        let fulltext = FullText::open_for_reading(&store)?;
        let searcher = fulltext.searcher();
        Ok(self.opened.get_or_init(|| (fulltext, searcher)))
    }
}

/// Everything a search reads, opened once.
pub struct Context<'a> {
    /// The store connection.
    pub conn: &'a Connection,
    /// The full-text index, opened on the first question.
    pub text: TextIndex,
    /// Catalog and memories, read as needed.
    pub corpus: Corpus<'a>,
    /// Channel 3, opened on the first question.
    pub dense: crate::dense::Dense,
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

/// Up to this many query-bearing memories, their bucket is computed from all of them.
const EXACT_BUCKET: usize = 20_000;

/// The memory entries picked for each bucket, in fused order.
#[derive(Default)]
struct Buckets {
    learnings: Vec<Fused>,
    examples: Vec<Fused>,
}

impl Context<'_> {
    /// Runs one search, on one snapshot of the store.
    pub fn search(&self, req: &Request) -> Result<Response, SearchError> {
        let snapshot = self
            .conn
            .unchecked_transaction()
            .map_err(slayer_common::store::StoreError::from)?;
        let response = self.search_in_snapshot(req);
        snapshot
            .finish()
            .map_err(slayer_common::store::StoreError::from)?;
        response
    }

    fn search_in_snapshot(&self, req: &Request) -> Result<Response, SearchError> {
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
        let lookup: &dyn Lookup = corpus;

        // Lenient resolution: a bad input is a warning, the search goes on.
        let has_inputs = !req.entities.is_empty() || req.query.is_some();
        let empty = slayer_memory::resolve::Catalog::default();
        let catalog = if has_inputs {
            corpus.catalog()?
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
                Err(ResolveError::Invalid(e)) => push_unique(
                    &mut warnings,
                    format!("entity {} dropped: {e}", py_repr(raw)),
                ),
                Err(e) => return Err(SearchError::Memory(e.into())),
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
                Err(ResolveError::Invalid(e)) => {
                    push_unique(&mut warnings, format!("query input dropped: {e}"))
                }
                Err(e) => return Err(SearchError::Memory(e.into())),
            }
        }
        let question = req.question.as_deref().filter(|q| !q.trim().is_empty());

        if let Some(d) = ds {
            for input in &inputs {
                if let Some(id) = memory_id_of(input) {
                    if corpus.memory(id)?.is_some() && corpus.eligible(id, ds)?.is_none() {
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
        if !has_inputs && question.is_none() {
            push_unique(
                &mut warnings,
                "no entities, query, or question supplied; returning newest memories by recency."
                    .into(),
            );
            self.recency(req, &mut response, &mut warnings)?;
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
        let valid = ValidEntities::new(catalog, ds);

        // Channel 1, memory side: BM25Plus over live tags plus the implicit self-reference,
        // scored on the memories that share a tag with the inputs and the corpus's totals.
        let mut bm25_hits = Vec::new();
        if !inputs.is_empty() && req.channels.contains(&Channel::Entities) {
            let mut matching = Vec::new();
            for m in corpus.tagged_with(&inputs)? {
                if m.in_datasource(ds) {
                    matching.push(m);
                }
            }
            let mut docs: Vec<Vec<&str>> = Vec::with_capacity(matching.len());
            for m in &matching {
                let mut tags = vec![m.self_ref.as_str()];
                for t in m.tags.iter().filter(|t| **t != m.self_ref) {
                    if self.live(t, &valid, ds)? {
                        tags.push(t);
                    }
                }
                docs.push(tags);
            }
            let totals = corpus.tag_corpus(ds, &valid)?;
            for (i, score) in crate::bm25::rank_matching(&docs, &inputs, totals.docs, totals.tags) {
                bm25_hits.push((matching[i].self_ref.clone(), Some(score)));
            }
        }

        // Channel 2: the full-text index, one ranking per side, read as deep as fusion needs.
        let (mut text_memories, mut text_entities) = (None, None);
        let (mut dense_memories, mut dense_entities) = (Vec::new(), Vec::new());
        let on = |c: Channel| req.channels.contains(&c);
        if let Some(q) = question.filter(|_| on(Channel::Text)) {
            let (fulltext, searcher) = self.text.get()?;
            let terms = lexical::question_terms(fulltext, q);
            text_memories = Some(lexical::rank(
                fulltext,
                searcher,
                &terms,
                Side::Memories,
                ds,
            )?);
            text_entities = Some(lexical::rank(
                fulltext,
                searcher,
                &terms,
                Side::Entities,
                ds,
            )?);
        }
        if let Some(q) = question.filter(|_| on(Channel::Dense)) {
            match self.dense.rank(self.conn, corpus, q, ds)? {
                Ok((memories, entities)) => {
                    dense_memories = memories;
                    dense_entities = entities;
                }
                Err(warning) => push_unique(&mut warnings, warning),
            }
        }

        if !on(Channel::Entities) {
            bm25_hits.clear();
            named.clear();
        }
        let bm25 = Ranking {
            channel: "bm25",
            hits: bm25_hits,
        };
        let depth = FIRST_DEPTH.max(DEEPER * (req.max_memories + req.max_example_queries));
        let dense_memories = Ranking {
            channel: "dense",
            hits: dense_memories,
        };
        let mut deepening = Deepening::new(&bm25, text_memories.as_ref(), &dense_memories, depth)?;
        // Query-bearing memories are usually few: their bucket is computed exactly from where
        // each of them sits, so a bucket that cannot fill never makes us read every hit.
        let with_query = corpus.with_query()?;
        let exact_examples = with_query.len() <= EXACT_BUCKET;
        let mut examples = Vec::new();
        if exact_examples {
            let keys: Vec<String> = with_query.iter().map(|id| memory_ref(id)).collect();
            let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
            examples = deepening.exact(&keys)?;
            examples.truncate(req.max_example_queries);
        }
        let mut picked = loop {
            let (settled, read_whole) = deepening.settled()?;
            let mut picked = Buckets::default();
            for f in settled {
                let Some(id) = memory_id_of(&f.key) else {
                    continue;
                };
                if with_query.contains(id) {
                    if !exact_examples && picked.examples.len() < req.max_example_queries {
                        picked.examples.push(f);
                    }
                } else if picked.learnings.len() < req.max_memories {
                    picked.learnings.push(f);
                }
                if picked.learnings.len() >= req.max_memories
                    && (exact_examples || picked.examples.len() >= req.max_example_queries)
                {
                    break;
                }
            }
            let full = picked.learnings.len() >= req.max_memories
                && (exact_examples || picked.examples.len() >= req.max_example_queries);
            if full || read_whole || !deepening.deepen()? {
                break picked;
            }
        };
        if exact_examples {
            picked.examples = examples;
        }
        self.fill_memories(req, picked, &inputs, &valid, ds, &mut response)?;

        let named = Ranking {
            channel: "named",
            hits: named,
        };
        let depth = FIRST_DEPTH.max(DEEPER * req.max_entities);
        let dense_entities = Ranking {
            channel: "dense",
            hits: dense_entities,
        };
        let mut entities = Deepening::new(&named, text_entities.as_ref(), &dense_entities, depth)?;
        loop {
            let (settled, read_whole) = entities.settled()?;
            response.entities.clear();
            for f in &settled {
                if response.entities.len() >= req.max_entities {
                    break;
                }
                self.push_entity(f, req.explain, &mut response)?;
            }
            if response.entities.len() >= req.max_entities || read_whole || !entities.deepen()? {
                break;
            }
        }

        // Stale attached queries: returned example queries, then other named memories.
        let mut stale_check: Vec<String> = response
            .example_queries
            .iter()
            .map(|h| h.id.clone())
            .collect();
        for input in &inputs {
            if let Some(id) = memory_id_of(input) {
                if corpus.eligible(id, ds)?.is_some() && !stale_check.iter().any(|s| s == id) {
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

    /// Turns the picked entries into hits: text, query and matched entities.
    fn fill_memories(
        &self,
        req: &Request,
        picked: Buckets,
        inputs: &[String],
        valid: &ValidEntities<'_>,
        ds: Option<&str>,
        response: &mut Response,
    ) -> Result<(), SearchError> {
        for f in picked.learnings.into_iter().chain(picked.examples) {
            let Some(m) = memory_id_of(&f.key)
                .map(|id| self.corpus.eligible(id, ds))
                .transpose()?
                .flatten()
            else {
                continue;
            };
            let matched = self.matched(&m, inputs, valid, ds)?;
            let text = docs::get(self.conn, &f.key)?
                .map(|d| d.doc.text)
                .unwrap_or_default();
            let explain = req.explain.then(|| f.contributions.clone());
            if m.has_query {
                let query = memories::get(self.conn, &m.id)?
                    .and_then(|mm| mm.query)
                    .unwrap_or(Value::Null);
                response.example_queries.push(ExampleQueryHit {
                    id: m.id.clone(),
                    score: f.score,
                    text,
                    matched_entities: matched,
                    query,
                    explain,
                });
            } else {
                response.memories.push(MemoryHit {
                    id: m.id.clone(),
                    score: f.score,
                    text,
                    matched_entities: matched,
                    explain,
                });
            }
        }
        Ok(())
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
    fn live(
        &self,
        tag: &str,
        valid: &ValidEntities<'_>,
        ds: Option<&str>,
    ) -> Result<bool, SearchError> {
        Ok(match memory_id_of(tag) {
            Some(id) => self.corpus.eligible(id, ds)?.is_some(),
            None => valid.contains(tag),
        })
    }

    /// The inputs that overlap a memory's live tags or are its own reference, sorted.
    fn matched(
        &self,
        m: &MemoryMeta,
        inputs: &[String],
        valid: &ValidEntities<'_>,
        ds: Option<&str>,
    ) -> Result<Vec<String>, SearchError> {
        let mut out = Vec::new();
        for i in inputs {
            if *i == m.self_ref || (m.tags.contains(i) && self.live(i, valid, ds)?) {
                out.push(i.clone());
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
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
        match query_entities(q, self.corpus.catalog()?, lookup) {
            Ok(_) => {}
            Err(ResolveError::Invalid(e)) => push_unique(warnings, format!("example_query memory:{id}: attached query has stale references ({e}); re-save to clean.")),
            Err(e) => return Err(SearchError::Memory(e.into())),
        }
        Ok(())
    }

    fn recency(
        &self,
        req: &Request,
        response: &mut Response,
        warnings: &mut Vec<String>,
    ) -> Result<(), SearchError> {
        let ds = req.datasource.as_deref();
        let mut newest: Vec<Rc<MemoryMeta>> = Vec::new();
        let (mut learnings, mut examples) = (0, 0);
        let mut failure = None;
        self.corpus.newest_first(|id| {
            match self.corpus.eligible(id, ds) {
                Ok(Some(m)) => {
                    if m.has_query && examples < req.max_example_queries {
                        examples += 1;
                        newest.push(m);
                    } else if !m.has_query && learnings < req.max_memories {
                        learnings += 1;
                        newest.push(m);
                    }
                }
                Ok(None) => {}
                Err(e) => failure = Some(e),
            }
            failure.is_none()
                && (learnings < req.max_memories || examples < req.max_example_queries)
        })?;
        if let Some(e) = failure {
            return Err(e.into());
        }
        for m in newest {
            let text = docs::get(self.conn, &m.self_ref)?
                .map(|d| d.doc.text)
                .unwrap_or_default();
            if m.has_query {
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
            } else {
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
