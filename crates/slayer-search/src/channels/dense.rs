//! Channel 3: the question's embedding against the active model's stored rows
//! (docs/spec/channels.md §7.2 for the order of checks, §10.1 for the warnings).
//!
//! The rows are scanned in the store's vector sidecar (`slayer_embed::vectors`): mapped, with
//! the datasource filter read from each row's datasource set, and ranked only as deep as
//! fusion reads ([`crate::channels::ranked`]). A store whose rows under the model name have more than
//! one dimension (rows written by another model under the same name), or a context without a
//! store path, reads the rows into memory instead, as before the sidecar.
//!
//! Only rows the active model's revision wrote are read (`slayer_embed::revision`). When some
//! docs have a row another revision wrote (stale) or none, the channel ranks the rest and
//! [`Dense::take_warning`] holds one warning with both counts (docs/spec/channels.md §7.2).

use slayer_common::store::StoreRead;
use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use slayer_common::store::embeddings::Coverage;
use slayer_embed::local::Asking;
use slayer_embed::provider::{active_name, revision, Embedder, ProviderError};
use slayer_embed::similar::{dot, normalized, rank_unit};
use slayer_embed::vectors::{Keep, Scored, Sidecar};
use slayer_embed::NotEmbedded;

use crate::channels::beside::{embed_one, Loaded, ScanPlan, Source};
use crate::channels::ranked::ChannelOutcome;
use crate::channels::ranked::Ranking;
use crate::channels::ranked::{DenseRanking, Scanned};
use crate::corpus::{Admission, Scope};
use crate::timings::Timings;
use crate::SearchError;
use slayer_common::canonical::{memory_id_of, memory_ref};

/// A stored row, its vector scaled to unit length.
struct Row {
    id: String,
    kind: String,
    /// Changes whenever the row is written (`embeddings::live_row_versions`).
    version: String,
    unit: Vec<f32>,
}

/// Both sides' rankings: `(memories, entities)`.
pub(crate) type DenseSides<'d> = (DenseRanking<'d>, DenseRanking<'d>);

/// The live rows, and `embeddings::change_count` when they were read.
struct Rows {
    rows: Vec<Row>,
    changes: Option<i64>,
}

/// Past this share of changed rows, reading every row again is cheaper than one by one.
const REREAD_ALL_SHARE: usize = 8;

/// The active model, opened on the first question and kept for a `--batch` run.
pub struct Dense {
    model: String,
    /// The store's vectors folder, whose sidecar is scanned; `None` reads the rows into memory.
    vectors: Option<PathBuf>,
    /// The sidecar, opened on the first question (`None`: the rows are read instead).
    sidecar: OnceCell<Option<Sidecar>>,
    /// The sidecar opened before the store changed, followed to it on the next question.
    followed: RefCell<Option<Sidecar>>,
    embedder: OnceCell<Result<Embedder, Arc<ProviderError>>>,
    rows: OnceCell<Rows>,
    /// The rows read before the store changed, reused where they still hold.
    previous: RefCell<Option<Rows>>,
    questions: RefCell<Questions>,
    /// The active model's revision, read once (a process keeps the model it loaded).
    revision: OnceCell<Result<String, Arc<ProviderError>>>,
    /// How the store's docs stand under the active revision, while the store does not change.
    coverage: Cell<Option<Coverage>>,
    /// The stale-or-missing warning of the last ranking that ran, for the caller to take.
    warning: RefCell<Option<String>>,
    /// Time per stage: sidecar, model load, question embedding, scan (a handle to the
    /// context's laps).
    timings: Timings,
    /// The process answers many questions: the sidecar's codes are kept hot
    /// ([`Sidecar::keep_hot`]).
    serving: bool,
    /// A scan made beside the text channel, for this question ([`Dense::early_scan`]).
    scanned_early: RefCell<Option<(String, Scored, Scored)>>,
}

impl Dense {
    /// For a process that answers many questions (`--batch`, MCP): keeps what every question
    /// reads in memory of its own ([`Sidecar::keep_hot`]).
    pub fn serve(&mut self) {
        self.serving = true;
    }

    /// How often this process embeds a question.
    pub(crate) fn asking(&self) -> Asking {
        if self.serving {
            Asking::Often
        } else {
            Asking::Once
        }
    }

    /// The store changed: the rows read so far are checked against it on the next question
    /// (the store's count of embedding changes; if it moved, each row's version), and only
    /// new and rewritten rows are read again. The loaded model and the question embeddings
    /// stay.
    pub fn forget_rows(&mut self) {
        if let Some(sidecar) = self.sidecar.take().flatten() {
            *self.followed.get_mut() = Some(sidecar);
        }
        self.coverage.take();
        if let Some(rows) = self.rows.take() {
            *self.previous.get_mut() = Some(rows);
        }
    }
}

impl Dense {
    /// Channel 3 under the active model, scanning the sidecar in a store's vectors folder
    /// (`Store::vectors_dir`), its stages timed into `timings`.
    pub fn at(vectors: PathBuf, timings: Timings) -> Dense {
        Dense {
            vectors: Some(vectors),
            timings,
            ..Dense::default()
        }
    }
}

impl Default for Dense {
    fn default() -> Self {
        Dense::new(active_name())
    }
}

impl Dense {
    /// Channel 3 under this model name.
    pub fn new(model: String) -> Dense {
        Dense {
            model,
            vectors: None,
            sidecar: OnceCell::new(),
            followed: RefCell::default(),
            embedder: OnceCell::new(),
            rows: OnceCell::new(),
            previous: RefCell::default(),
            questions: RefCell::default(),
            revision: OnceCell::new(),
            coverage: Cell::new(None),
            warning: RefCell::default(),
            timings: Default::default(),
            serving: false,
            scanned_early: RefCell::default(),
        }
    }

    /// The live rows of the model, in canonical id order: all read, or (after a change) the
    /// previous ones kept where they still hold and the rest read one by one.
    fn load_rows(&self, conn: &dyn StoreRead, revision: &str) -> Result<Rows, SearchError> {
        let changes = conn.embedding_changes()?;
        let read_all = || -> Result<Rows, SearchError> {
            let rows = conn
                .live_rows(&self.model, revision)?
                .into_iter()
                .map(|r| Row {
                    id: r.canonical_id,
                    kind: r.doc_kind,
                    version: r.version,
                    unit: normalized(&r.vector),
                })
                .collect();
            Ok(Rows { rows, changes })
        };
        let Some(previous) = self.previous.borrow_mut().take() else {
            return read_all();
        };
        if changes.is_some() && previous.changes == changes {
            // Writes elsewhere in the store (a memory saved without embedding, a catalog
            // loaded) leave the vectors as they were.
            return Ok(previous);
        }
        let versions = conn.live_row_versions(&self.model, revision)?;
        let mut kept: rustc_hash::FxHashMap<String, Row> = previous
            .rows
            .into_iter()
            .map(|r| (r.id.clone(), r))
            .collect();
        let changed = versions
            .iter()
            .filter(|(id, _, version)| kept.get(id).is_none_or(|r| &r.version != version))
            .count();
        if changed * REREAD_ALL_SHARE > versions.len() {
            return read_all();
        }
        let mut rows = Vec::with_capacity(versions.len());
        for (id, kind, version) in versions {
            match kept.remove(&id) {
                Some(row) if row.version == version => rows.push(Row { kind, ..row }),
                // Read in the same snapshot as the versions, so the row is there.
                _ => {
                    if let Some((v, version)) =
                        conn.vector_and_version(&id, &self.model, revision)?
                    {
                        rows.push(Row {
                            id,
                            kind,
                            version,
                            unit: normalized(&v),
                        });
                    }
                }
            }
        }
        Ok(Rows { rows, changes })
    }

    /// Ranks memory docs and entity docs by cosine to the question, after the datasource
    /// filter: `(memories, entities)`. Skipped, with the warning, when a precondition fails:
    /// the search goes on without it.
    pub fn rank(
        &self,
        conn: &dyn StoreRead,
        scope: &Scope<'_, '_>,
        question: &str,
    ) -> Result<ChannelOutcome<DenseSides<'_>>, SearchError> {
        self.warning.take();
        let early = self.scanned_early.take();
        let revision = match Embedder::check(&self.model)
            .map_err(Arc::new)
            .and_then(|()| self.revision())
        {
            Ok(revision) => revision,
            Err(why) => {
                return Ok(ChannelOutcome::Skipped(format!(
                    "embedding channel skipped: the embedding model '{}' is unavailable: {why}.",
                    self.model
                )))
            }
        };
        let sidecar = self.sidecar(conn, revision)?;
        // Read before ranking: a ranking left with no row says why in the same words.
        self.coverage(conn, revision, sidecar)?;
        let outcome = match sidecar {
            Some(sidecar) if sidecar.other_dims() == 0 => {
                self.scan(sidecar, scope, question, early)?
            }
            _ => self.rank_rows(conn, revision, scope, question)?,
        };
        if let ChannelOutcome::Ran(_) = &outcome {
            *self.warning.borrow_mut() = self.coverage.get().and_then(|c| self.stale_warning(c));
        }
        Ok(outcome)
    }

    /// The sidecar of the store's vectors folder, opened on the first question (or followed
    /// to the store's changes); `None` where rows are read instead.
    fn sidecar(
        &self,
        conn: &dyn StoreRead,
        revision: &str,
    ) -> Result<Option<&Sidecar>, SearchError> {
        let Some(dir) = &self.vectors else {
            return Ok(None);
        };
        if self.sidecar.get().is_none() {
            let opened = self.timings.time("sidecar", || {
                if let Some(mut sidecar) = self.followed.take() {
                    // A failed follow opens it afresh, as a first question would.
                    if sidecar.follow(conn).unwrap_or(false) {
                        return Ok(Some(sidecar));
                    }
                }
                Sidecar::open(conn, dir, &self.model, revision)
            })?;
            let _ = self.sidecar.set(opened);
        }
        Ok(self.sidecar.get().and_then(Option::as_ref))
    }

    /// What a scan of this question needs besides its embedding, where [`Dense::rank`] would
    /// scan the sidecar: so a long-lived search scans as soon as the question is embedded,
    /// beside the text channel, and [`Dense::rank`] then takes that scan
    /// ([`Dense::scanned_early`]). `None` where it would not scan, or would skip the channel:
    /// `rank` then does as it always does. The store is read here, on this thread.
    pub(crate) fn early_scan(
        &self,
        conn: &dyn StoreRead,
        scope: &Scope<'_, '_>,
    ) -> Result<Option<ScanPlan<'_>>, SearchError> {
        if Embedder::check(&self.model).is_err() {
            return Ok(None);
        }
        let Ok(revision) = self.revision() else {
            return Ok(None);
        };
        let Some(sidecar) = self.sidecar(conn, revision)? else {
            return Ok(None);
        };
        self.coverage(conn, revision, Some(sidecar))?;
        if sidecar.other_dims() != 0 {
            return Ok(None);
        }
        // A datasource asked row by row is read by `rank`, once.
        let Some(plan) = self.scan_plan(sidecar, scope, false)? else {
            return Ok(None);
        };
        if !plan.keeps_any() {
            return Ok(None);
        }
        if self.serving {
            self.timings.time("hot codes", || sidecar.keep_hot());
        }
        Ok(Some(plan))
    }

    /// The rows a scan of `sidecar` keeps under the request's datasource and memory filter;
    /// `None` for a datasource that must be asked row by row unless `row_by_row`.
    fn scan_plan<'d>(
        &self,
        sidecar: &'d Sidecar,
        scope: &Scope<'_, '_>,
        row_by_row: bool,
    ) -> Result<Option<ScanPlan<'d>>, SearchError> {
        let (keep, admitted) = match sidecar.keep(scope.datasource()) {
            Keep::All => (None, None),
            Keep::Sets(sets) => (Some(sets), None),
            Keep::RowByRow if !row_by_row => return Ok(None),
            // Asked row by row, once per question.
            Keep::RowByRow => (
                None,
                Some(
                    (0..sidecar.len() as u32)
                        .map(|row| scope.keeps_doc(sidecar.id(row)))
                        .collect::<Result<Vec<bool>, _>>()?,
                ),
            ),
        };
        let admitted = admit_memories(sidecar, scope.admission(), admitted);
        Ok(Some(ScanPlan::new(sidecar, keep, admitted)))
    }

    /// Hands the next [`Dense::rank`] the scan [`ScanPlan::run`] made of `question` (that
    /// call takes it, whatever it asks).
    pub(crate) fn scanned_early(
        &self,
        question: &str,
        scanned: (Scored, Scored),
        took: std::time::Duration,
    ) {
        self.timings.add("scan", took);
        *self.scanned_early.borrow_mut() = Some((question.to_owned(), scanned.0, scanned.1));
    }

    /// The warning of the last [`Dense::rank`] that ran: how many docs it could not rank because
    /// their row is stale or missing (`None` when every doc has a current row). Taking it
    /// clears it.
    pub fn take_warning(&self) -> Option<String> {
        self.warning.take()
    }

    /// The active model's revision, read once ([`Embedder::check`] has passed).
    fn revision(&self) -> Result<&str, Arc<ProviderError>> {
        self.revision
            .get_or_init(|| {
                self.timings
                    .time("revision", || revision(&self.model).map_err(Arc::new))
            })
            .as_deref()
            .map_err(Arc::clone)
    }

    /// How the store's docs stand under the active revision, kept until the store changes:
    /// from the sidecar's counts and the number of docs (one read of the smallest index), or
    /// without a sidecar, one pass over the docs.
    fn coverage(
        &self,
        conn: &dyn StoreRead,
        revision: &str,
        sidecar: Option<&Sidecar>,
    ) -> Result<Coverage, SearchError> {
        if let Some(known) = self.coverage.get() {
            return Ok(known);
        }
        let coverage = match sidecar {
            Some(sidecar) => {
                let live = sidecar.live_rows() as i64;
                Coverage {
                    current: live - sidecar.stale() as i64,
                    stale: sidecar.stale() as i64,
                    missing: (conn.doc_count()? - live).max(0),
                }
            }
            None => conn.coverage(&self.model, revision)?,
        };
        self.coverage.set(Some(coverage));
        Ok(coverage)
    }

    /// The one warning for docs without a current row, if any.
    fn stale_warning(&self, c: Coverage) -> Option<String> {
        (c.stale > 0 || c.missing > 0).then(|| stale_warning(&self.model, c))
    }

    /// [`Dense::rank`] over the sidecar.
    fn scan<'d>(
        &self,
        sidecar: &'d Sidecar,
        scope: &Scope<'_, '_>,
        question: &str,
        early: Option<(String, Scored, Scored)>,
    ) -> Result<ChannelOutcome<DenseSides<'d>>, SearchError> {
        let plan = self.scan_plan(sidecar, scope, true)?;
        let Some(plan) = plan.filter(ScanPlan::keeps_any) else {
            return Ok(ChannelOutcome::Skipped(self.no_rows()));
        };
        let query = match self.embed_question(question) {
            Ok(q) => q,
            Err(_) => return Ok(ChannelOutcome::Skipped(EMBEDDING_FAILED.to_owned())),
        };
        if query.len() != sidecar.dim() {
            return Ok(ChannelOutcome::Skipped(dim_mismatch(
                query.len(),
                sidecar.dim(),
            )));
        }
        if self.serving {
            self.timings.time("hot codes", || sidecar.keep_hot());
        }
        let early = early.filter(|(q, _, _)| q == question);
        let (memories, entities) = match early {
            Some((_, memories, entities)) => (memories, entities),
            None => self.timings.time("scan", || plan.scan(&query)),
        };
        Ok(ChannelOutcome::Ran((
            DenseRanking::Scanned(Scanned::new(sidecar, memories)),
            DenseRanking::Scanned(Scanned::new(sidecar, entities)),
        )))
    }

    fn no_rows(&self) -> String {
        // Rows that another revision wrote are there but unreadable: say so, and how to fix it.
        if let Some(c) = self.coverage.get().filter(|c| c.stale > 0) {
            return stale_warning(&self.model, c);
        }
        format!(
            "embedding channel skipped: no embedding rows for model '{}'. Run `slayer-embed refresh --all` to populate.",
            self.model
        )
    }

    /// [`Dense::rank`] over rows read into memory (a store of mixed dimensions).
    fn rank_rows(
        &self,
        conn: &dyn StoreRead,
        revision: &str,
        scope: &Scope<'_, '_>,
        question: &str,
    ) -> Result<ChannelOutcome<DenseSides<'static>>, SearchError> {
        if self.rows.get().is_none() {
            // Scaled to unit length once, so each question costs one dot product per row.
            let rows = self.load_rows(conn, revision)?;
            let _ = self.rows.set(rows);
        }
        let rows = self
            .rows
            .get()
            .map(|r| r.rows.as_slice())
            .unwrap_or_default();
        let mut eligible: Vec<&Row> = Vec::with_capacity(rows.len());
        for row in rows {
            if scope.keeps_doc(&row.id)? {
                eligible.push(row);
            }
        }
        if eligible.is_empty() {
            return Ok(ChannelOutcome::Skipped(self.no_rows()));
        }
        let query = match self.embed_question(question) {
            Ok(q) => q,
            Err(_) => return Ok(ChannelOutcome::Skipped(EMBEDDING_FAILED.to_owned())),
        };
        // Rows of another size (written by another model under this name) cannot be compared:
        // they are left out, never truncated to fit.
        let corpus_dim = eligible[0].unit.len();
        eligible.retain(|r| r.unit.len() == query.len());
        if eligible.is_empty() {
            return Ok(ChannelOutcome::Skipped(dim_mismatch(
                query.len(),
                corpus_dim,
            )));
        }
        let (memory_rows, entity_rows): (Vec<&Row>, Vec<&Row>) =
            eligible.into_iter().partition(|r| r.kind == "memory");
        let query = normalized(&query);
        let side = |rows: &[&Row]| {
            DenseRanking::Listed(Ranking {
                channel: "dense",
                hits: rank_unit(&query, rows.iter().map(|r| r.unit.as_slice()))
                    .into_iter()
                    .map(|(i, score)| (rows[i].id.clone(), Some(score)))
                    .collect(),
            })
        };
        Ok(ChannelOutcome::Ran((
            side(&memory_rows),
            side(&entity_rows),
        )))
    }

    /// The cosine of the question to each doc's stored row (the planner's `local` reranker):
    /// read from the rows this process holds, or else one row at a time, so a one-shot search
    /// reads only the candidates' vectors. `None` for a doc without a row of the question's
    /// size. `Err` (the warning) when the model cannot embed the question: the message is the
    /// value (the planner adds it to the response's warnings).
    pub fn similarities(
        &self,
        conn: &dyn StoreRead,
        question: &str,
        ids: &[&str],
    ) -> Result<Result<Vec<Option<f64>>, String>, SearchError> {
        let revision = match Embedder::check(&self.model)
            .map_err(Arc::new)
            .and_then(|()| self.revision())
        {
            Ok(revision) => revision,
            Err(why) => {
                return Ok(Err(format!(
                "planner: local rerank skipped: the embedding model '{}' is unavailable: {why}.",
                self.model
            )))
            }
        };
        let query = match self.embed_question(question) {
            Ok(q) => normalized(&q),
            Err(_) => {
                return Ok(Err(
                    "planner: local rerank skipped: query embedding failed.".to_owned(),
                ))
            }
        };
        let held = self.rows.get().map(|r| r.rows.as_slice());
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let unit = match held {
                Some(rows) => rows
                    .binary_search_by(|r| r.id.as_str().cmp(id))
                    .ok()
                    .map(|at| std::borrow::Cow::Borrowed(rows[at].unit.as_slice())),
                None => conn
                    .vector_and_version(id, &self.model, revision)?
                    .map(|(v, _)| std::borrow::Cow::Owned(normalized(&v))),
            };
            out.push(
                unit.filter(|u| u.len() == query.len())
                    .map(|u| dot(&query, &u)),
            );
        }
        Ok(Ok(out))
    }

    fn embed_question(&self, question: &str) -> Result<Vec<f32>, NotEmbedded> {
        if let Some(cached) = self.questions.borrow().get(question) {
            return cached.clone();
        }
        let embedder = self
            .embedder
            .get_or_init(|| {
                self.timings.time("model load", || {
                    Embedder::open(&self.model).map_err(Arc::new)
                })
            })
            .as_ref()
            .map_err(|why| NotEmbedded::Unavailable(Arc::clone(why)))?;
        let result = self.timings.time("embed question", || {
            embed_one(embedder, question, self.asking())
        });
        self.questions.borrow_mut().insert(question, result.clone());
        result
    }

    /// Where the question's embedding can come from beside the text channel, when it is not
    /// embedded yet: the loaded model, or the active one to load there (a model that failed
    /// to load is not tried again). The embedding is handed back with
    /// [`Dense::remember_question`], the model with [`Dense::adopt_embedder`].
    pub(crate) fn pending_question(&self, question: &str) -> Option<Source<'_>> {
        if self.questions.borrow().get(question).is_some() {
            return None;
        }
        match self.embedder.get() {
            Some(Ok(embedder)) => Some(Source::Loaded(embedder)),
            Some(Err(_)) => None,
            None => Some(Source::Unloaded(&self.model)),
        }
    }

    /// The model loaded beside the text channel ([`Dense::pending_question`]): kept as if this
    /// channel had loaded it, failure included.
    pub(crate) fn adopt_embedder(&self, (loaded, took): Loaded) {
        self.timings.add("model load", took);
        let _ = self.embedder.set(loaded);
    }

    /// A question's embedding made elsewhere ([`Dense::pending_question`]).
    pub(crate) fn remember_question(
        &self,
        question: &str,
        embedding: Result<Vec<f32>, NotEmbedded>,
        took: std::time::Duration,
    ) {
        self.timings.add("embed question", took);
        self.questions.borrow_mut().insert(question, embedding);
    }
}

/// The question embeddings a long-lived search keeps: the latest [`QUESTIONS_KEPT`], so an
/// agent that asks again is answered without the model, and memory stays bounded.
#[derive(Default)]
struct Questions {
    embeddings: HashMap<String, Result<Vec<f32>, NotEmbedded>>,
    order: std::collections::VecDeque<String>,
}

/// How many question embeddings a long-lived search keeps (1.5 KB each at 384 dimensions).
const QUESTIONS_KEPT: usize = 1024;

impl Questions {
    fn get(&self, question: &str) -> Option<&Result<Vec<f32>, NotEmbedded>> {
        self.embeddings.get(question)
    }

    fn insert(&mut self, question: &str, embedding: Result<Vec<f32>, NotEmbedded>) {
        if self
            .embeddings
            .insert(question.to_owned(), embedding)
            .is_none()
        {
            self.order.push_back(question.to_owned());
        }
        while self.order.len() > QUESTIONS_KEPT {
            if let Some(oldest) = self.order.pop_front() {
                self.embeddings.remove(&oldest);
            }
        }
    }
}

const EMBEDDING_FAILED: &str = "embedding channel skipped: query embedding failed.";

/// Docs the channel cannot rank: rows another revision of the model wrote (or written before
/// slayer recorded revisions, schema 8) and docs with no row (docs/spec/messages.md §10.1).
pub(crate) fn stale_warning(model: &str, c: Coverage) -> String {
    format!(
        "embedding channel: {} docs have a stale row (written by another revision of '{model}', or before slayer recorded revisions) and {} docs have no row; they are ranked without the dense channel until `slayer-embed refresh --all` re-embeds them.",
        c.stale, c.missing
    )
}

fn dim_mismatch(query: usize, corpus: usize) -> String {
    format!(
        "embedding channel skipped: dim mismatch (query={query}, corpus={corpus}). Re-run `slayer-embed refresh --all` to refresh embeddings against the current model."
    )
}

/// Adds the memory filter to the rows a datasource admits: `None` (every row) stays `None`
/// when the filter admits every memory.
fn admit_memories(
    sidecar: &Sidecar,
    admission: &Admission<'_>,
    admitted: Option<Vec<bool>>,
) -> Option<Vec<bool>> {
    if admission.is_all() {
        return admitted;
    }
    let mut rows = admitted.unwrap_or_else(|| vec![true; sidecar.len()]);
    let row_of = |id: &&str| sidecar.row_of(&memory_ref(id));
    match admission {
        Admission::Except(out) => {
            for row in out.iter().filter_map(row_of) {
                rows[row as usize] = false;
            }
        }
        Admission::Only(only) => {
            let kept: rustc_hash::FxHashSet<u32> = only.iter().filter_map(row_of).collect();
            for (row, admitted) in rows.iter_mut().enumerate() {
                let row = row as u32;
                if *admitted && memory_id_of(sidecar.id(row)).is_some() && !kept.contains(&row) {
                    *admitted = false;
                }
            }
        }
    }
    Some(rows)
}
