//! The pipeline (docs/spec.md §9 for the rules, §10.1 for the strings), as stages:
//!
//! 1. validate ([`Context::validate`]),
//! 2. resolve inputs ([`crate::inputs`]),
//! 3. run channels ([`crate::channels`]),
//! 4. fuse and 5. fill buckets ([`crate::buckets`], hits from [`crate::hits`]),
//! 6. warnings ([`crate::warnings`]).
//!
//! Without entities, query or question the recency fallback ([`Context::recency`]) answers
//! after stage 2.

use rusqlite::Connection;
use slayer_common::canonical::{memory_id_of, memory_ref};
use slayer_common::limits::Limits;
use slayer_index::fulltext::FullText;
use slayer_index::pyfmt::repr_str as py_repr;

use crate::buckets::{
    fill_entity_bucket, fill_memory_buckets, walk_memory_buckets, Caps, MemoryBuckets, EXACT_BUCKET,
};
use crate::corpus::{Corpus, Scope};
use crate::inputs::{named_entities, warn_off_datasource_memories, Inputs};
use crate::model_evidence::ModelEvidence;
use crate::plan::PlanMode;
pub use crate::response::{
    render_text, Channel, EntityHit, ExampleQueryHit, MemoryHit, Request, Response, ALL_CHANNELS,
};
use crate::warnings::{stale_query_candidates, warn_stale_queries, Warnings};
use crate::{hits, SearchError};

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

    /// The store this index belongs to.
    pub fn store(&self) -> &std::path::Path {
        &self.store
    }

    pub(crate) fn get(&self) -> Result<&(FullText, tantivy::Searcher), SearchError> {
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

/// Everything a search reads, opened once and kept while the store does not change.
pub struct Context<'a> {
    /// The store connection.
    pub conn: &'a Connection,
    /// The full-text index, opened on the first question.
    pub text: TextIndex,
    /// Catalog and memories, read as needed.
    pub corpus: Corpus<'a>,
    /// Channel 3, opened on the first question.
    pub dense: crate::dense::Dense,
    /// The query planner (`--plan auto`): its configuration and LLM settings.
    pub(crate) planner: crate::plan::Planner,
    /// What one request may carry (`[limits]` in slayer.toml; the defaults until the binary
    /// sets them).
    pub limits: slayer_common::limits::Limits,
    /// SQLite's `data_version` when the caches above were filled.
    data_version: Option<i64>,
    /// The caches above must be read afresh, changed store or not.
    stale: bool,
}

impl<'a> Context<'a> {
    /// A context on the store at `path`, read through `conn`, planning with `planner`.
    pub fn new(
        conn: &'a Connection,
        path: &std::path::Path,
        planner: crate::plan::Planner,
    ) -> Result<Context<'a>, SearchError> {
        Ok(Context {
            conn,
            text: TextIndex::new(path.to_owned()),
            corpus: Corpus::load(conn)?,
            dense: crate::dense::Dense::at(path.to_owned()),
            planner,
            limits: Default::default(),
            data_version: None,
            stale: false,
        })
    }

    /// For a process that stays open (`--batch`): when another connection has committed since
    /// the caches were filled (SQLite's `PRAGMA data_version`, one cheap read), drops what may
    /// be stale (the catalog, the memory cache and query-bearing ids, the index searcher, the
    /// embedding rows) and keeps what cannot be (the loaded embedding model, question
    /// embeddings). Whether anything was dropped.
    pub fn refresh_if_changed(&mut self) -> Result<bool, SearchError> {
        let now: i64 = self
            .conn
            .query_row("PRAGMA data_version", [], |r| r.get(0))
            .map_err(slayer_common::store::StoreError::from)?;
        let before = self.data_version.replace(now);
        let forced = std::mem::take(&mut self.stale);
        if !forced && before.is_none_or(|b| b == now) {
            return Ok(false);
        }
        self.corpus = Corpus::load(self.conn)?;
        self.text = TextIndex::new(self.text.store.clone());
        self.dense.forget_rows();
        Ok(true)
    }

    /// Makes the next [`Context::refresh_if_changed`] read everything afresh (after a call
    /// that stopped half way through filling the caches).
    pub fn forget_caches(&mut self) {
        self.stale = true;
    }
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
        let datasource = self.validate(req)?;
        req.tuning.validate()?;
        self.check_limits(req)?;
        let mut warnings = Warnings::default();
        let filter = req.memory_filter()?;
        let inputs = self.resolve_inputs(req, &filter, &mut warnings)?;
        let scope = self.dense.timings.time("scope", || {
            self.corpus.scope(datasource, &filter, inputs.catalog)
        })?;
        warn_off_datasource_memories(&inputs, &scope, &mut warnings)?;
        let mut response = Response {
            resolved_input_entities: inputs.canonical.clone(),
            ..Response::default()
        };
        if !req.expand_ids.is_empty() {
            response.expanded = Some(self.expand_ids(&req.expand_ids, &filter, &mut warnings)?);
            if inputs.is_empty() {
                response.warnings = warnings.into_vec();
                return Ok(response);
            }
        }
        if inputs.is_empty() {
            warnings.push(
                "no entities, query, or question supplied; returning newest memories by recency."
                    .into(),
            );
            self.recency(req, &scope, &mut response, &mut warnings)?;
            response.warnings = warnings.into_vec();
            return Ok(response);
        }
        let mut named = named_entities(&inputs, &scope, &mut warnings)?;
        let planned = match inputs.question {
            Some(q) if req.plan == PlanMode::Auto => {
                Some(self.plan(req, q, &scope, &mut warnings)?)
            }
            _ => None,
        };
        let (plan_explain, plan_rankings) = match planned {
            Some(p) => (Some(p.explain), p.rankings),
            None => (None, None),
        };
        let mut fusion = (req.tuning.memories(), req.tuning.entities());
        let rankings = match plan_rankings {
            // The planned rankings take the place of channels 2 and 3, weighted as the text
            // channel; channel 1 runs as asked.
            Some((memories, entities)) => {
                let mut unplanned = req.clone();
                unplanned.channels.retain(|c| *c == Channel::Entities);
                let mut r = self.run_channels(&unplanned, &inputs, named, &scope, &mut warnings)?;
                r.dense_memories = crate::ranked::DenseRanking::Listed(memories);
                r.dense_entities = crate::ranked::DenseRanking::Listed(entities);
                fusion.0.weights.dense = fusion.0.weights.text;
                fusion.1.weights.dense = fusion.1.weights.text;
                r
            }
            None => {
                // A navigational question: its entity is looked up exactly and leads.
                if let Some(entity) = plan_explain.as_ref().and_then(|p| p.navigational.clone()) {
                    if !named.contains(&entity) {
                        named.insert(0, entity);
                    }
                }
                self.run_channels(req, &inputs, named, &scope, &mut warnings)?
            }
        };
        if req.explain {
            response.plan = plan_explain;
        }
        let caps = Caps::of(req);
        let buckets = if scope.weighed()? {
            let tiers = &self.planner.config.memory_tiers;
            let merged = self.dense.timings.time("tiers", || {
                crate::tiers::fuse_by_tier(&rankings, &scope, fusion.0, tiers)
            })?;
            let with_query = self.corpus.with_query()?;
            walk_memory_buckets(merged, with_query, caps.memories, caps.example_queries)
        } else {
            fill_memory_buckets(
                &mut rankings.memories(caps.memory_depth(), fusion.0)?,
                self.corpus.with_query()?,
                &caps,
                EXACT_BUCKET,
            )?
        };
        self.memory_hits(req, buckets, &inputs, &scope, &mut response)?;
        let evidence = if rankings.question_ranked_entities() {
            req.tuning.model_evidence
        } else {
            ModelEvidence::OFF
        };
        response.entities = fill_entity_bucket(
            &mut rankings.entities(caps.entity_depth(), fusion.1)?,
            caps.entities,
            &evidence,
            inputs.question,
            |f| hits::entity(self.conn, f, req.explain),
        )?;
        let returned = response.example_queries.iter().map(|h| h.id.clone());
        let stale = stale_query_candidates(returned, &inputs.canonical, &scope)?;
        warn_stale_queries(&self.corpus, &stale, &mut warnings)?;
        response.warnings = warnings.into_vec();
        Ok(response)
    }

    /// Stage 1: an unknown datasource is a request error, raised before any work.
    fn validate<'r>(&self, req: &'r Request) -> Result<Option<&'r str>, SearchError> {
        let Some(ds) = req.datasource.as_deref() else {
            return Ok(None);
        };
        if self.corpus.datasources.contains(ds) {
            return Ok(Some(ds));
        }
        let known: Vec<String> = self.corpus.datasources.iter().map(|d| py_repr(d)).collect();
        Err(SearchError::Request(format!(
            "datasource {} not found; known: [{}].",
            py_repr(ds),
            known.join(", ")
        )))
    }

    /// Stage 1 too: every field over its limit (docs/spec.md §16) is a request error, before
    /// any work; a long question is cut later, with a warning ([`crate::inputs`]).
    fn check_limits(&self, req: &Request) -> Result<(), SearchError> {
        let limits = &self.limits;
        let names = |field: &str, items: &[String]| {
            limits.check_names(field, items.iter().map(String::as_str))
        };
        let optional = [
            ("datasource", &req.datasource),
            ("project", &req.project),
            ("agent", &req.agent),
        ];
        names("entities", &req.entities)
            .and_then(|_| names("expand_ids", &req.expand_ids))
            .and_then(|_| {
                optional.iter().try_for_each(|(field, value)| match value {
                    Some(v) => Limits::check_len(field, v, limits.name_bytes, "name_bytes"),
                    None => Ok(()),
                })
            })
            .and_then(|_| match &req.query {
                Some(q) => limits.check_query("query", q),
                None => Ok(()),
            })
            .and_then(|_| match &req.injected {
                Some(injected) => injected.check_limits(limits),
                None => Ok(()),
            })
            .map_err(|e| SearchError::Request(format!("{e}.")))
    }

    /// The picked memory entries as hits, with the inputs each matched.
    fn memory_hits(
        &self,
        req: &Request,
        picked: MemoryBuckets<crate::fuse::Fused>,
        inputs: &Inputs<'_>,
        scope: &Scope<'_, '_>,
        response: &mut Response,
    ) -> Result<(), SearchError> {
        for f in picked.memories.into_iter().chain(picked.example_queries) {
            let Some(m) = memory_id_of(&f.key)
                .map(|id| scope.memory(id))
                .transpose()?
                .flatten()
            else {
                continue;
            };
            let matched = scope.matched(&m, &inputs.canonical)?;
            let explain = req.explain.then(|| f.contributions.clone());
            hits::push_memory(self.conn, response, &m, f.score, matched, explain)?;
        }
        Ok(())
    }

    /// `expand_ids`: each memory whole, in the order asked, whatever its tier; an id that is
    /// not there, or that the request's owner may not see (another project's or agent's, or
    /// soft-deleted), is one warning, worded the same either way.
    fn expand_ids(
        &self,
        ids: &[String],
        filter: &crate::scoping::MemoryFilter,
        warnings: &mut Warnings,
    ) -> Result<Vec<crate::response::ExpandedMemory>, SearchError> {
        let mut out = Vec::new();
        for id in ids {
            let found = slayer_common::store::memories::get(self.conn, id)?
                .filter(|m| filter.owns(&m.standing));
            let text = match &found {
                Some(m) => slayer_common::store::docs::get(self.conn, &memory_ref(&m.id))?,
                None => None,
            };
            let (Some(m), Some(doc)) = (found, text) else {
                warnings.push(format!("expand_ids: no memory with id {}.", py_repr(id)));
                continue;
            };
            let s = m.standing;
            out.push(crate::response::ExpandedMemory {
                tier: s.tier,
                id: m.id,
                text: doc.doc.text,
                query: m.query,
                confidence: (s.confidence != 1.0).then_some(s.confidence),
                strength: (s.strength != 1.0).then_some(s.strength),
                project: s.project,
                agent: s.agent,
            });
        }
        Ok(out)
    }

    /// The recency fallback: the newest memories the datasource filter keeps, each bucket to
    /// its cap, score 0; then the stale-query check of the returned example queries.
    fn recency(
        &self,
        req: &Request,
        scope: &Scope<'_, '_>,
        response: &mut Response,
        warnings: &mut Warnings,
    ) -> Result<(), SearchError> {
        let caps = Caps::of(req);
        let mut newest = MemoryBuckets::new(caps.memories, caps.example_queries);
        if !newest.full() {
            scope.newest_first(|m| {
                let has_query = m.has_query;
                newest.offer(m, has_query);
                !newest.full()
            })?;
        }
        for m in newest.memories.iter().chain(&newest.example_queries) {
            hits::push_memory(self.conn, response, m, 0.0, vec![], None)?;
        }
        let returned: Vec<String> = response
            .example_queries
            .iter()
            .map(|h| h.id.clone())
            .collect();
        warn_stale_queries(&self.corpus, &returned, warnings)
    }
}
