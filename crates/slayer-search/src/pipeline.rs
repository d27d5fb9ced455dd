//! The pipeline (docs/spec/search.md §9 for the rules, docs/spec/messages.md §10.1 for
//! the strings): one request through each stage once, in order.
//!
//! 1. validate: the datasource and the limits ([`Context::search`] refuses before any work);
//! 2. resolve the inputs (`inputs`), and the scope they search in (`corpus`);
//! 3. plan the question (`plan`, with `--plan auto`);
//! 4. run the channels (`channels`);
//! 5. fuse and 6. fill the buckets (`fusion`);
//! 7. respond: hits, the stale-query check, warnings (`output`).
//!
//! Without entities, query or question the recency fallback answers after stage 2.

use slayer_common::canonical::{memory_id_of, memory_ref};
use slayer_common::limits::Limits;
use slayer_common::store::StoreRead;
use slayer_index::pyfmt::repr_str as py_repr;

use crate::channels::ranked::{DenseRanking, Ranking};
use crate::channels::{self, ChannelSources, Rankings};
use crate::context::Context;
use crate::corpus::{entity_kind, Scope};
use crate::fusion::buckets::{
    fill_entity_bucket, fill_memory_buckets, walk_memory_buckets, Caps, EntityOrder, MemoryBuckets,
    EXACT_BUCKET,
};
use crate::fusion::deepening::Deepening;
use crate::fusion::fuse::Fused;
use crate::fusion::schema;
use crate::inputs::{named_entities, resolve_inputs, warn_off_datasource_memories, Inputs};
use crate::output::hits;
use crate::output::measure_card::answer_card;
use crate::output::response::{ExpandedMemory, Response};
use crate::output::warnings::{stale_query_candidates, warn_stale_queries, Warnings};
use crate::plan::explain::PlanExplain;
use crate::plan::run::Buried;
use crate::plan::{PlanAsk, PlanMode, PlanSources};
use crate::request::{Channel, Request};
use crate::scoping::MemoryFilter;
use crate::tuning::{Fusion, ModelEvidence};
use crate::SearchError;

/// How deep the fused entity order is read for a schema answer, at least.
const SCHEMA_DEPTH: usize = 200;

/// The planner's rankings, memory side and entity side.
type SideRankings = (Ranking, Ranking);

/// A read snapshot that also ends when dropped: a search that panics (the MCP worker catches
/// it and serves the next call on the same context) must not leave it open, or every later
/// search would fail to begin one and never see another writer's commit.
struct Snapshot<'s> {
    store: &'s dyn StoreRead,
    open: bool,
}

impl<'s> Snapshot<'s> {
    fn begin(store: &'s dyn StoreRead) -> Result<Snapshot<'s>, SearchError> {
        store.begin_snapshot()?;
        Ok(Snapshot { store, open: true })
    }

    /// Ends it, with the store's error if ending fails.
    fn end(mut self) -> Result<(), SearchError> {
        self.open = false;
        Ok(self.store.end_snapshot()?)
    }
}

impl Drop for Snapshot<'_> {
    fn drop(&mut self) {
        if self.open {
            let _ = self.store.end_snapshot();
        }
    }
}

impl Context<'_> {
    /// Runs one search, on one snapshot of the store.
    pub fn search(&self, req: &Request) -> Result<Response, SearchError> {
        let snapshot = Snapshot::begin(self.conn)?;
        let response = self.routed(req).and_then(|mut response| {
            // The answer card of a measure that leads, read in the same snapshot.
            if let Some(first) = response.entities.first().filter(|e| e.kind == "measure") {
                response.answer = answer_card(self.conn, &first.id)?;
            }
            crate::output::bound::bound(&mut response, self.limits.response_bytes);
            Ok(response)
        });
        snapshot.end()?;
        response
    }

    /// Routing (docs/spec/fusion.md §8.7): a question asked with no datasource of a store holding
    /// several gets the entities of the search under the datasource its unfiltered answer
    /// clearly points to; memories and warnings stay the unfiltered answer's. The evidence is
    /// read from a fixed number of entities whatever the cap, so a smaller cap still gives a
    /// prefix.
    fn routed(&self, req: &Request) -> Result<Response, SearchError> {
        let routing = req.tuning.routing;
        // Entities the caller named stay in reach: a routed search would drop those of other
        // datasources.
        if req.datasource.is_some()
            || req.question.is_none()
            || !req.entities.is_empty()
            || req.max_entities == 0
            || routing.entities == 0
            || self.corpus.datasources.len() < 2
        {
            return self.search_in_snapshot(req);
        }
        let mut probe = req.clone();
        probe.max_entities = req.max_entities.max(routing.entities);
        // Routing weighs the evidence's own scores: an answer-first lift (§8.9) would lend a
        // datasource the score of the entity it passed. A question routed nowhere ranked no
        // entity, and then nothing is arranged anyway.
        probe.tuning.answer_head = 0;
        let mut response = self.search_in_snapshot(&probe)?;
        let decided =
            crate::routing::decide(&response.entities, &self.corpus.datasources, &routing);
        // Each datasource it routes to answers on its own; the schema answer is the first's.
        let mut lists = Vec::new();
        for datasource in decided.routed.iter().chain(&decided.split) {
            let mut filtered = req.clone();
            filtered.datasource = Some(datasource.clone());
            let routed = self.search_in_snapshot(&filtered)?;
            if lists.is_empty() {
                response.schema = routed.schema;
            }
            lists.push(routed.entities);
        }
        if !lists.is_empty() {
            response.entities = crate::routing::merge_by_score(lists, &decided.split_weights());
        }
        response.entities.truncate(req.max_entities);
        if req.explain {
            response.routing = Some(decided);
        }
        Ok(response)
    }

    fn search_in_snapshot(&self, req: &Request) -> Result<Response, SearchError> {
        // 1. Validate.
        let datasource = self.validate(req)?;
        req.tuning.validate()?;
        let schema_size = req.schema_size()?;
        self.check_limits(req)?;
        let mut warnings = Warnings::default();
        let filter = req.memory_filter(&self.memory_defaults)?;
        // 2. Resolve.
        let inputs = resolve_inputs(&self.corpus, &self.limits, req, &filter, &mut warnings)?;
        let scope = self.timings.time("scope", || {
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
        // 3. Plan.
        let (plan_explain, planned, buried) = self.plan(req, &inputs, &scope, &mut warnings)?;
        // A navigational question: its entity is looked up exactly and leads.
        if let Some(entity) = plan_explain.as_ref().and_then(|p| p.navigational.clone()) {
            if !named.contains(&entity) {
                named.insert(0, entity);
            }
        }
        // 4. Channels.
        let (rankings, fusion) = self.timings.time("channels", || {
            self.run_channels(req, &inputs, named, planned, &scope, &mut warnings)
        })?;
        if req.explain {
            response.plan = plan_explain;
        }
        // 5 and 6.
        self.fuse_and_fill(
            req,
            &inputs,
            &scope,
            &rankings,
            fusion,
            &buried,
            schema_size,
            &mut response,
        )?;
        // 7. Respond.
        let returned = response.example_queries.iter().map(|h| h.id.clone());
        let stale = stale_query_candidates(returned, &inputs.canonical, &scope)?;
        warn_stale_queries(&self.corpus, &stale, &mut warnings)?;
        response.warnings = warnings.into_vec();
        Ok(response)
    }

    /// Stages 5 and 6: both sides fused and their buckets filled (the memories and example
    /// queries, the entities), and the schema answer where asked.
    #[allow(clippy::too_many_arguments)]
    fn fuse_and_fill(
        &self,
        req: &Request,
        inputs: &Inputs<'_>,
        scope: &Scope<'_, '_>,
        rankings: &Rankings<'_>,
        fusion: (Fusion, Fusion),
        buried: &Buried,
        schema_size: Option<crate::request::SchemaSize>,
        response: &mut Response,
    ) -> Result<(), SearchError> {
        // The two sides share nothing, so the memory side is fused on another core (its
        // dense scores ranked whole first, 1 ms at 100k memories) while this thread fuses
        // the entity side and reads its hits; the memory side's hits are read here after
        // (the store's connection is this thread's). A tiered scope's memory side is fused
        // here too, after the entity side.
        let caps = Caps::of(req);
        let head = self.memory_head(req, inputs)?;
        let memory_caps = head.caps(&caps);
        let evidence = if rankings.question_ranked_entities() {
            req.tuning.model_evidence
        } else {
            ModelEvidence::OFF
        };
        let keys = evidence.is_on() && evidence.key_weight > 0.0;
        // The answer-first head arranges what a question ranked (docs/spec/fusion.md §8.9).
        let answer_head = match rankings.question_ranked_entities() {
            true => req.tuning.answer_head,
            false => 0,
        };
        let catalog = if keys || answer_head > 0 || schema_size.is_some() {
            Some(self.corpus.catalog()?)
        } else {
            None
        };
        let joins = match catalog {
            Some(_) if keys || schema_size.is_some() => Some(self.corpus.joins()?),
            _ => None,
        };
        let connecting = |a: &str, b: &str| match &joins {
            Some(joins) if keys => joins.keys(a, b),
            _ => Vec::new(),
        };
        let depth = schema_size.map_or(0, |size| SCHEMA_DEPTH.max(5 * size.columns));
        let with_query = match scope.weighed()? {
            false => Some(self.corpus.with_query()?),
            true => None,
        };
        let mut memory_side = None;
        let filled = rayon::in_place_scope(|threads| {
            if let Some(with_query) = with_query {
                let caps = &memory_caps;
                let memory_side = &mut memory_side;
                threads.spawn(move |_| {
                    let started = std::time::Instant::now();
                    let fused = Deepening::memories(rankings, caps.memory_depth(), fusion.0)
                        .and_then(|d| {
                            fill_memory_buckets(
                                &mut d.burying(buried),
                                with_query,
                                caps,
                                EXACT_BUCKET,
                            )
                        });
                    *memory_side = Some((fused, started.elapsed()));
                });
            }
            self.timings.time("fuse entities", || {
                fill_entity_bucket(
                    &mut Deepening::entities(rankings, caps.entity_depth().max(depth), fusion.1)?
                        .burying(buried),
                    caps.entities,
                    depth,
                    &EntityOrder {
                        evidence,
                        question: inputs.question,
                        connecting,
                        answer_head,
                        kind_of: |key: &str| entity_kind(catalog, key),
                        formulas: |ids: &[&str]| self.corpus.measure_formulas(ids),
                    },
                    |fused| hits::entities(self.conn, fused, req.explain),
                )
            })
        })?;
        let mut buckets = match memory_side {
            Some((fused, took)) => {
                self.timings.add("fuse memories", took);
                fused?
            }
            None => self.timings.time("fuse memories", || {
                self.fuse_memories_by_tier(rankings, fusion.0, &memory_caps, scope, buried)
            })?,
        };
        let superseded = self.arrange_memory_head(&head, &mut buckets, &caps, req, scope)?;
        self.timings.time("memory hits", || {
            self.memory_hits(req, buckets, inputs, scope, response)
        })?;
        hits::mark_superseded(&mut response.memories, &superseded);
        response.entities = filled.bucket;
        if req.explain {
            response.intent = filled.intent;
        }
        if let (Some(size), Some(catalog), Some(joins)) = (schema_size, catalog, &joins) {
            response.schema = Some(self.timings.time("schema", || {
                let named = self.memory_tags(response, scope)?;
                let picked = schema::pick(
                    &filled.ordered,
                    catalog,
                    joins,
                    size,
                    inputs.question,
                    &named,
                );
                schema::fill(picked, |ds, name| Ok(self.conn.model(ds, name)?))
            })?);
        }
        Ok(())
    }

    /// Stage 3: a question planned (`--plan auto`): its explanation, and the rankings that
    /// take the place of channels 2 and 3 (none for a navigational question).
    fn plan(
        &self,
        req: &Request,
        inputs: &Inputs<'_>,
        scope: &Scope<'_, '_>,
        warnings: &mut Warnings,
    ) -> Result<(Option<PlanExplain>, Option<SideRankings>, Buried), SearchError> {
        let Some(question) = inputs.question.filter(|_| req.plan == PlanMode::Auto) else {
            return Ok((None, None, Buried::default()));
        };
        let sources = PlanSources {
            planner: &self.planner,
            conn: self.conn,
            corpus: &self.corpus,
            text: &self.text,
            dense: &self.dense,
        };
        let ask = PlanAsk {
            question,
            injected: req.injected.as_ref(),
            rerank: req.rerank,
            name_weight: req.tuning.name_weight,
        };
        let planned = crate::plan::run::plan(&sources, &ask, scope, warnings)?;
        Ok((Some(planned.explain), planned.rankings, planned.buried))
    }

    /// Stage 4: the channels the request turns on, and each side's fusion. Planned rankings
    /// take the place of channels 2 and 3, weighted as the text channel (channel 1 runs as
    /// asked).
    fn run_channels(
        &self,
        req: &Request,
        inputs: &Inputs<'_>,
        named: Vec<String>,
        planned: Option<SideRankings>,
        scope: &Scope<'_, '_>,
        warnings: &mut Warnings,
    ) -> Result<(Rankings<'_>, (Fusion, Fusion)), SearchError> {
        let mut fusion = (req.tuning.memories(), req.tuning.entities());
        let sources = ChannelSources {
            conn: self.conn,
            text: &self.text,
            dense: &self.dense,
            limits: &self.limits,
            timings: &self.timings,
        };
        match planned {
            Some((memories, entities)) => {
                let mut unplanned = req.clone();
                unplanned.channels.retain(|c| *c == Channel::Entities);
                let mut r = channels::run(&sources, &unplanned, inputs, named, scope, warnings)?;
                r.dense_memories = DenseRanking::Listed(memories);
                r.dense_entities = DenseRanking::Listed(entities);
                fusion.0.weights.dense = fusion.0.weights.text;
                fusion.1.weights.dense = fusion.1.weights.text;
                Ok((r, fusion))
            }
            None => Ok((
                channels::run(&sources, req, inputs, named, scope, warnings)?,
                fusion,
            )),
        }
    }

    /// A tiered scope's memory side: each tier fused apart, then merged in tier order.
    fn fuse_memories_by_tier(
        &self,
        rankings: &Rankings<'_>,
        fusion: Fusion,
        caps: &Caps,
        scope: &Scope<'_, '_>,
        buried: &Buried,
    ) -> Result<MemoryBuckets<Fused>, SearchError> {
        let tiers = &self.planner.config.memory_tiers;
        let merged = self.timings.time("tiers", || {
            crate::fusion::tiers::fuse_by_tier(rankings, scope, fusion, tiers, buried)
        })?;
        let with_query = self.corpus.with_query()?;
        Ok(walk_memory_buckets(
            merged,
            with_query,
            caps.memories,
            caps.example_queries,
        ))
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

    /// Stage 1 too: every field over its limit (docs/spec/limits.md §16) is a request error, before
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

    /// The entity tags of the memories and example queries a response returns, in order (the
    /// schema answer always shows the columns they name).
    fn memory_tags(
        &self,
        response: &Response,
        scope: &Scope<'_, '_>,
    ) -> Result<Vec<String>, SearchError> {
        let ids = response
            .memories
            .iter()
            .map(|h| &h.id)
            .chain(response.example_queries.iter().map(|h| &h.id));
        let mut tags: Vec<String> = Vec::new();
        for id in ids {
            for tag in scope.memory(id)?.iter().flat_map(|m| &m.tags) {
                if !tags.contains(tag) {
                    tags.push(tag.clone());
                }
            }
        }
        Ok(tags)
    }

    /// The picked memory entries as hits, with the inputs each matched.
    fn memory_hits(
        &self,
        req: &Request,
        picked: MemoryBuckets<Fused>,
        inputs: &Inputs<'_>,
        scope: &Scope<'_, '_>,
        response: &mut Response,
    ) -> Result<(), SearchError> {
        let picked: Vec<Fused> = picked
            .memories
            .into_iter()
            .chain(picked.example_queries)
            .collect();
        let mut texts = hits::texts(self.conn, picked.iter().map(|f| f.key.as_str()))?;
        self.corpus
            .prefetch(picked.iter().filter_map(|f| memory_id_of(&f.key)))?;
        for f in picked {
            let Some(m) = memory_id_of(&f.key)
                .map(|id| scope.memory(id))
                .transpose()?
                .flatten()
            else {
                continue;
            };
            let matched = scope.matched(&m, &inputs.canonical)?;
            let explain = req.explain.then(|| f.contributions.clone());
            hits::push_memory(
                self.conn, &mut texts, response, &m, f.score, matched, explain,
            )?;
        }
        hits::add_occasions(self.conn, &mut response.memories)
    }

    /// `expand_ids`: each memory whole, in the order asked, whatever its tier; an id that is
    /// not there, or that the request's owner may not see (another project's or agent's, or
    /// soft-deleted), is one warning, worded the same either way.
    fn expand_ids(
        &self,
        ids: &[String],
        filter: &MemoryFilter,
        warnings: &mut Warnings,
    ) -> Result<Vec<ExpandedMemory>, SearchError> {
        let mut out = Vec::new();
        for id in ids {
            let found = self.conn.memory(id)?.filter(|m| filter.owns(&m.standing));
            let text = match &found {
                Some(m) => self.conn.doc(&memory_ref(&m.id))?,
                None => None,
            };
            let (Some(m), Some(doc)) = (found, text) else {
                warnings.push(format!("expand_ids: no memory with id {}.", py_repr(id)));
                continue;
            };
            let s = m.standing;
            out.push(ExpandedMemory {
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
        let newest: Vec<_> = newest
            .memories
            .iter()
            .chain(&newest.example_queries)
            .collect();
        let mut texts = hits::texts(self.conn, newest.iter().map(|m| m.self_ref.as_str()))?;
        for m in newest {
            hits::push_memory(self.conn, &mut texts, response, m, 0.0, vec![], None)?;
        }
        hits::add_occasions(self.conn, &mut response.memories)?;
        let returned: Vec<String> = response
            .example_queries
            .iter()
            .map(|h| h.id.clone())
            .collect();
        warn_stale_queries(&self.corpus, &returned, warnings)
    }
}

#[cfg(test)]
mod tests {
    use super::Snapshot;
    use slayer_common::store::{OpenMode, SqliteStore as Store};

    #[test]
    fn a_snapshot_dropped_without_ending_is_ended_so_the_next_one_begins() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let conn = store.conn();
        // What unwinding out of a search does: the snapshot is dropped, never ended.
        drop(Snapshot::begin(conn).unwrap());
        let again = Snapshot::begin(conn).expect("a new snapshot after a dropped one");
        again.end().unwrap();
        assert!(conn.is_autocommit(), "no transaction left open");
    }
}
