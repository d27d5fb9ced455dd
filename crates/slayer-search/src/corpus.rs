//! What a search reads from the store, through `slayer_common::store` (no SQL here). Nothing is
//! read whole: memories are looked up as the rankings name them (and cached, so a `--batch`
//! run reads each once), BM25's corpus totals come from the trigger-kept `tag_counts`, and the
//! catalog is parsed only for entity inputs.
//!
//! [`Scope`] is the corpus as one request sees it, under its datasource: the one place that
//! says whether a memory, a tag or a doc counts.

use slayer_common::store::StoreRead;
use std::cell::{OnceCell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};
use slayer_common::canonical::{memory_id_of, memory_ref, model_of, rooted_at};
use slayer_common::records::{Standing, Tier};
use slayer_common::store::memories::TaggedMemory;

use crate::intent::Kind;
use crate::scoping::MemoryFilter;
use crate::SearchError;
use slayer_common::store::StoreError;
use slayer_memory::resolve::{Catalog, Lookup};

/// A memory as search needs it: tags for BM25 and the filters, the query flag for the buckets,
/// its standing for the scope and the tiers. Texts and queries are read only for returned hits.
#[derive(Debug, Clone)]
pub struct MemoryMeta {
    /// Tier, trust and owners (a plain lesson's unless the store marks it).
    pub standing: Standing,
    /// Memory id.
    pub id: String,
    /// Stored tags (stale ones included), sorted.
    pub tags: Vec<String>,
    /// Whether a query is attached.
    pub has_query: bool,
    /// `memory:<id>`: its implicit self-reference and its doc id.
    pub self_ref: String,
}

impl From<TaggedMemory> for MemoryMeta {
    fn from(m: TaggedMemory) -> Self {
        MemoryMeta {
            standing: Standing::default(),
            self_ref: memory_ref(&m.id),
            id: m.id,
            tags: m.tags,
            has_query: m.has_query,
        }
    }
}

impl MemoryMeta {
    /// Whether the datasource filter keeps it: a tag (stale or not) rooted at the datasource.
    pub fn in_datasource(&self, datasource: Option<&str>) -> bool {
        datasource.is_none_or(|d| self.tags.iter().any(|t| rooted_at(t, d)))
    }
}

/// The store as search reads it.
pub struct Corpus<'c> {
    conn: &'c dyn StoreRead,
    catalog: OnceCell<Catalog>,
    /// Datasource names (the stored ones and those models name).
    pub datasources: BTreeSet<String>,
    memories: RefCell<FxHashMap<String, Option<Rc<MemoryMeta>>>>,
    with_query: OnceCell<FxHashSet<String>>,
    marked: OnceCell<FxHashMap<String, Standing>>,
    /// Whether any memory has a session (its neighbours may be brought beside a hit).
    sessions: OnceCell<bool>,
    /// The join pairs found in the catalog so far (a corpus is read again whenever the store
    /// changes, and this with it).
    joins: crate::joins::JoinMemo,
    /// Each model's columns that count rows, as read so far (the same lifetime).
    counting: RefCell<FxHashMap<String, Rc<FxHashSet<String>>>>,
}

/// BM25's view of the memory corpus under a datasource filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TagCorpus {
    /// Memories in the corpus.
    pub docs: usize,
    /// Their tags, each memory's own `memory:<id>` included, stale tags not.
    pub tags: usize,
}

impl<'c> Corpus<'c> {
    /// Opens the corpus: only the datasource names are read now.
    pub fn load(conn: &'c dyn StoreRead) -> Result<Corpus<'c>, slayer_memory::MemoryError> {
        Ok(Corpus {
            conn,
            catalog: OnceCell::new(),
            datasources: conn.datasource_names()?,
            memories: RefCell::default(),
            with_query: OnceCell::new(),
            marked: OnceCell::new(),
            sessions: OnceCell::new(),
            joins: Default::default(),
            counting: RefCell::default(),
        })
    }

    /// The catalog's join finder, remembering across this corpus's requests.
    pub(crate) fn joins(&self) -> Result<crate::joins::Joins<'_>, slayer_memory::MemoryError> {
        Ok(crate::joins::Joins::new(self.catalog()?, &self.joins))
    }

    /// The store connection.
    pub fn conn(&self) -> &'c dyn StoreRead {
        self.conn
    }

    /// Datasources and models, for resolution, hidden checks and the stale-tag filter; parsed
    /// on first use.
    pub fn catalog(&self) -> Result<&Catalog, slayer_memory::MemoryError> {
        if let Some(c) = self.catalog.get() {
            return Ok(c);
        }
        let loaded = slayer_memory::service::load_catalog(self.conn)?;
        Ok(self.catalog.get_or_init(|| loaded))
    }

    /// What these measures compute, as formulas (empty for an id without one), read from their
    /// docs' `Formula:` lines (the catalog holds skeletons, which keep names only) and through
    /// what they name ([`crate::measure_formulas`]): a formula that is another measure's name
    /// reads as that measure's (one more read, when one is), and a sum of a column that counts
    /// rows as a count (each model's counting columns read once per corpus).
    pub(crate) fn measure_formulas(&self, ids: &[&str]) -> Result<Vec<String>, SearchError> {
        use crate::measure_formulas::{as_counted, sibling, summed};
        let mut formulas = self.formula_lines(ids)?;
        let siblings: Vec<Option<String>> = ids
            .iter()
            .zip(&formulas)
            .map(|(id, f)| sibling(model_of(id)?, f))
            .collect();
        let named: Vec<&str> = siblings.iter().flatten().map(String::as_str).collect();
        if !named.is_empty() {
            let mut theirs = self.formula_lines(&named)?.into_iter();
            for (formula, sibling) in formulas.iter_mut().zip(&siblings) {
                let Some(f) = sibling.as_ref().and_then(|_| theirs.next()) else {
                    continue;
                };
                if !f.is_empty() {
                    *formula = f;
                }
            }
        }
        ids.iter()
            .zip(formulas)
            .map(|(id, formula)| match model_of(id) {
                Some(model) if !summed(&formula).is_empty() => {
                    let counting = self.counting_columns(model)?;
                    Ok(as_counted(&formula, |name| counting.contains(name)))
                }
                _ => Ok(formula),
            })
            .collect()
    }

    /// The columns of a model whose SQL counts rows (`1`, a 0/1 `CASE`): one model read, then
    /// remembered (none for a model the store lacks).
    fn counting_columns(&self, model_id: &str) -> Result<Rc<FxHashSet<String>>, SearchError> {
        if let Some(known) = self.counting.borrow().get(model_id) {
            return Ok(known.clone());
        }
        let model = match model_id.split_once('.') {
            Some((datasource, model)) => self.conn.model(datasource, model)?,
            None => None,
        };
        let counting: FxHashSet<String> = model
            .iter()
            .flat_map(|m| &m.columns)
            .filter(|c| {
                c.sql
                    .as_deref()
                    .is_some_and(crate::measure_formulas::counts_rows)
            })
            .map(|c| c.name.clone())
            .collect();
        let counting = Rc::new(counting);
        self.counting
            .borrow_mut()
            .insert(model_id.to_owned(), counting.clone());
        Ok(counting)
    }

    /// The `Formula:` lines of these ids' docs, as written; empty for an id without one. One
    /// read.
    fn formula_lines(&self, ids: &[&str]) -> Result<Vec<String>, SearchError> {
        let wanted: Vec<String> = ids.iter().map(|id| (*id).to_owned()).collect();
        let docs = self.conn.docs(&wanted)?;
        Ok(ids
            .iter()
            .map(|id| {
                docs.iter()
                    .find(|d| d.doc.canonical_id == *id)
                    .and_then(|d| d.doc.text.lines().find_map(|l| l.strip_prefix("Formula: ")))
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect())
    }

    /// One memory, or `None` when there is no such memory.
    pub fn memory(&self, id: &str) -> Result<Option<Rc<MemoryMeta>>, StoreError> {
        // Standings are read before the first memory is cached, so every cached one has its.
        self.marked()?;
        if let Some(m) = self.memories.borrow().get(id) {
            return Ok(m.clone());
        }
        let meta = self
            .conn
            .tagged_memory(id)?
            .map(|m| Rc::new(self.with_standing(m)));
        self.memories
            .borrow_mut()
            .insert(id.to_owned(), meta.clone());
        Ok(meta)
    }

    /// Reads the memories of these ids not cached yet, in one statement, so that the lookups
    /// that follow (a response's memories, one by one) are answered from the cache.
    pub fn prefetch<'i>(&self, ids: impl IntoIterator<Item = &'i str>) -> Result<(), StoreError> {
        self.marked()?;
        let missing: Vec<String> = {
            let cache = self.memories.borrow();
            ids.into_iter()
                .filter(|id| !cache.contains_key(*id))
                .map(str::to_owned)
                .collect()
        };
        if missing.is_empty() {
            return Ok(());
        }
        let found = self.conn.tagged_memories(&missing)?;
        let mut cache = self.memories.borrow_mut();
        for id in missing {
            cache.insert(id, None);
        }
        for m in found {
            let id = m.id.clone();
            cache.insert(id, Some(Rc::new(self.with_standing(m))));
        }
        Ok(())
    }

    /// The memories that carry any of `tags` (or are the memory a `memory:` tag names), in id
    /// order, read in one statement.
    fn tagged_with(&self, tags: &[String]) -> Result<Vec<Rc<MemoryMeta>>, StoreError> {
        self.marked()?;
        let found = self.conn.memories_sharing_a_tag(tags)?;
        let mut cache = self.memories.borrow_mut();
        Ok(found
            .into_iter()
            .map(|m| {
                let m = Rc::new(self.with_standing(m));
                cache.insert(m.id.clone(), Some(m.clone()));
                m
            })
            .collect())
    }

    /// The memories that are not plain lessons, by id, read once from the store's partial
    /// index (a `--batch` run reuses them).
    pub fn marked(&self) -> Result<&FxHashMap<String, Standing>, StoreError> {
        if let Some(m) = self.marked.get() {
            return Ok(m);
        }
        let found = self
            .conn
            .marked_memories()?
            .into_iter()
            .map(|m| (m.id, m.standing))
            .collect();
        Ok(self.marked.get_or_init(|| found))
    }

    fn with_standing(&self, m: TaggedMemory) -> MemoryMeta {
        let mut meta = MemoryMeta::from(m);
        if let Some(s) = self.marked.get().and_then(|marked| marked.get(&meta.id)) {
            meta.standing = s.clone();
        }
        meta
    }

    /// The ids of the memories that carry a query, read once (a `--batch` run reuses them).
    pub fn with_query(&self) -> Result<&FxHashSet<String>, StoreError> {
        if let Some(ids) = self.with_query.get() {
            return Ok(ids);
        }
        let ids = self.conn.memory_ids_with_query()?.into_iter().collect();
        Ok(self.with_query.get_or_init(|| ids))
    }

    /// Whether any memory has a session, read once per corpus.
    pub fn any_session(&self) -> Result<bool, StoreError> {
        if let Some(any) = self.sessions.get() {
            return Ok(*any);
        }
        let any = self.conn.any_memory_session()?;
        Ok(*self.sessions.get_or_init(|| any))
    }

    /// The corpus under a datasource filter and a memory filter, with the catalog that decides
    /// which tags are live.
    pub fn scope<'s>(
        &'s self,
        datasource: Option<&'s str>,
        filter: &'s MemoryFilter,
        catalog: &'s Catalog,
    ) -> Result<Scope<'s, 'c>, StoreError> {
        let marked = self.marked()?;
        // With plain lessons out, an exclusion list still serves when there are none.
        let no_plain = || -> Result<bool, StoreError> {
            Ok(self.conn.memory_count_under(None)? == marked.len())
        };
        let admission = if filter.passes_plain() || no_plain()? {
            let mut out: Vec<&'s str> = marked
                .iter()
                .filter(|(_, s)| !filter.passes(s))
                .map(|(id, _)| id.as_str())
                .collect();
            out.sort_unstable();
            Admission::Except(out)
        } else {
            let mut only: Vec<&'s str> = marked
                .iter()
                .filter(|(_, s)| filter.passes(s))
                .map(|(id, _)| id.as_str())
                .collect();
            only.sort_unstable();
            Admission::Only(only)
        };
        Ok(Scope {
            corpus: self,
            datasource,
            filter,
            admission,
            catalog,
        })
    }
}

impl Lookup for Corpus<'_> {
    fn memory_exists(&self, id: &str) -> Result<bool, StoreError> {
        self.memory(id).map(|found| found.is_some())
    }
}

/// What an entity of the catalog is, for the answer-first arrangement (docs/spec/fusion.md §8.9): a
/// measure, a model, or anything else (a column, an aggregation, a datasource, or an id the
/// catalog lacks).
pub(crate) fn entity_kind(catalog: Option<&Catalog>, key: &str) -> Kind {
    let mut parts = key.splitn(3, '.');
    let (Some(ds), Some(name), leaf) = (parts.next(), parts.next(), parts.next()) else {
        return Kind::Other;
    };
    let Some(model) = catalog.and_then(|c| c.model_in(ds, name)) else {
        return Kind::Other;
    };
    match leaf {
        None => Kind::Model,
        Some(leaf)
            if model
                .measures
                .iter()
                .any(|m| m.name.as_deref() == Some(leaf)) =>
        {
            Kind::Measure
        }
        Some(_) => Kind::Other,
    }
}

/// The corpus as one request sees it: under its datasource, if any. Every "does this count
/// here" question of the pipeline is one of its methods.
pub struct Scope<'s, 'c> {
    corpus: &'s Corpus<'c>,
    datasource: Option<&'s str>,
    filter: &'s MemoryFilter,
    admission: Admission<'s>,
    catalog: &'s Catalog,
}

/// Which memory ids the memory filter admits, as the channels apply it: every memory but a
/// few marked ones, or only some marked ones (when plain lessons are out). Ids are sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission<'s> {
    /// Every memory but these.
    Except(Vec<&'s str>),
    /// Only these memories.
    Only(Vec<&'s str>),
}

impl Admission<'_> {
    /// Whether the filter leaves every memory in.
    pub fn is_all(&self) -> bool {
        matches!(self, Admission::Except(none) if none.is_empty())
    }

    /// Whether a memory id is admitted.
    pub fn admits(&self, id: &str) -> bool {
        match self {
            Admission::Except(out) => out.binary_search(&id).is_err(),
            Admission::Only(only) => only.binary_search(&id).is_ok(),
        }
    }
}

impl Scope<'_, '_> {
    /// The datasource filter.
    pub fn datasource(&self) -> Option<&str> {
        self.datasource
    }

    /// The store connection.
    pub fn conn(&self) -> &dyn StoreRead {
        self.corpus.conn
    }

    /// The memory filter.
    pub fn filter(&self) -> &MemoryFilter {
        self.filter
    }

    /// The memories that are not plain lessons, by id.
    pub fn marked(&self) -> Result<&FxHashMap<String, Standing>, StoreError> {
        self.corpus.marked()
    }

    /// The memory ids the memory filter admits.
    pub fn admission(&self) -> &Admission<'_> {
        &self.admission
    }

    /// Whether any admitted memory is weighed (a tier other than lesson, a strength or
    /// confidence below 1): without one, ranking by tier changes nothing and is skipped.
    pub fn weighed(&self) -> Result<bool, StoreError> {
        let marked = self.corpus.marked()?;
        Ok(marked.iter().any(|(id, s)| {
            self.admission.admits(id)
                && (s.tier != Tier::Lesson || s.strength != 1.0 || s.confidence != 1.0)
        }))
    }

    /// A memory both filters keep (it has a tag rooted at the datasource, and the memory
    /// filter admits it).
    pub fn memory(&self, id: &str) -> Result<Option<Rc<MemoryMeta>>, StoreError> {
        Ok(self
            .corpus
            .memory(id)?
            .filter(|m| m.in_datasource(self.datasource) && self.admission.admits(&m.id)))
    }

    /// Whether a memory the memory filter admits exists but the datasource filter drops it
    /// (a memory outside the request's scope is never mentioned).
    pub fn memory_outside(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .corpus
            .memory(id)?
            .is_some_and(|m| self.admission.admits(&m.id) && !m.in_datasource(self.datasource)))
    }

    /// Whether a stored doc counts: a memory the filters keep, an entity rooted at the
    /// datasource. Without a datasource or a memory filter every doc counts, and nothing is
    /// looked up.
    pub fn keeps_doc(&self, canonical: &str) -> Result<bool, StoreError> {
        if self.datasource.is_none() && self.admission.is_all() {
            return Ok(true);
        }
        Ok(match memory_id_of(canonical) {
            Some(id) => self.memory(id)?.is_some(),
            None => self.datasource.is_none_or(|d| rooted_at(canonical, d)),
        })
    }

    /// Whether an entity (not `memory:`) id names something of the catalog under the filter:
    /// tags that do not are stale for this request.
    pub fn valid_entity(&self, canonical: &str) -> bool {
        self.datasource
            .is_none_or(|d| canonical.split('.').next() == Some(d))
            && self.catalog.contains(canonical)
    }

    /// A tag counts when it names something that exists (and, under a datasource, is in it).
    pub fn live_tag(&self, tag: &str) -> Result<bool, StoreError> {
        Ok(match memory_id_of(tag) {
            Some(id) => self.memory(id)?.is_some(),
            None => self.valid_entity(tag),
        })
    }

    /// A memory's own reference, then its live tags: what BM25 scores it on.
    pub fn live_tags<'m>(&self, m: &'m MemoryMeta) -> Result<Vec<&'m str>, StoreError> {
        let mut tags = vec![m.self_ref.as_str()];
        for t in m.tags.iter().filter(|t| **t != m.self_ref) {
            if self.live_tag(t)? {
                tags.push(t);
            }
        }
        Ok(tags)
    }

    /// The inputs that overlap a memory's live tags or are its own reference, sorted.
    pub fn matched(&self, m: &MemoryMeta, inputs: &[String]) -> Result<Vec<String>, StoreError> {
        let mut out = Vec::new();
        for i in inputs {
            if *i == m.self_ref || (m.tags.contains(i) && self.live_tag(i)?) {
                out.push(i.clone());
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// The memories the filter keeps that share a tag with `inputs` (or that a `memory:` input
    /// names), in id order: the only memories BM25 can score above zero.
    pub fn sharing_a_tag(&self, inputs: &[String]) -> Result<Vec<Rc<MemoryMeta>>, StoreError> {
        let mut found = self.corpus.tagged_with(inputs)?;
        found.retain(|m| m.in_datasource(self.datasource));
        Ok(found)
    }

    /// How many memories the filters keep and how many live tags they carry. Under the
    /// datasource filter alone, from the per-tag counts: no memory is read (bar those
    /// `memory:` tags name, under a datasource). The memory filter then takes out what its
    /// few excluded memories added (their docs and tags, and the `memory:` tags naming them);
    /// when it admits only some marked memories, those are counted one by one.
    pub fn tag_corpus(&self) -> Result<TagCorpus, StoreError> {
        match &self.admission {
            Admission::Except(out) if out.is_empty() => self.datasource_tag_corpus(),
            Admission::Except(out) => {
                let whole = self.datasource_tag_corpus()?;
                let (docs, tags) = self.excluded_share(out)?;
                Ok(TagCorpus {
                    docs: whole.docs - docs,
                    tags: whole.tags - tags,
                })
            }
            Admission::Only(only) => {
                let mut corpus = TagCorpus { docs: 0, tags: 0 };
                for id in only {
                    if let Some(m) = self.memory(id)? {
                        corpus.docs += 1;
                        corpus.tags += self.live_tags(&m)?.len();
                    }
                }
                Ok(corpus)
            }
        }
    }

    /// What the excluded memories add to the datasource's corpus: their docs, their tags live
    /// under the datasource alone, and the `memory:` tags on kept memories that name them.
    fn excluded_share(&self, out: &[&str]) -> Result<(usize, usize), StoreError> {
        let in_datasource = |id: &str| -> Result<bool, StoreError> {
            Ok(self
                .corpus
                .memory(id)?
                .is_some_and(|m| m.in_datasource(self.datasource)))
        };
        let (mut docs, mut tags) = (0, 0);
        for id in out {
            let Some(m) = self.corpus.memory(id)? else {
                continue;
            };
            if !m.in_datasource(self.datasource) {
                continue;
            }
            docs += 1;
            tags += 1;
            for t in m.tags.iter().filter(|t| **t != m.self_ref) {
                tags += usize::from(match memory_id_of(t) {
                    Some(target) => in_datasource(target)?,
                    None => self.valid_entity(t),
                });
            }
        }
        for (from, to) in self.corpus.conn.memory_tag_links()? {
            let target = memory_id_of(&to).unwrap_or_default();
            if out.binary_search(&target).is_ok()
                && out.binary_search(&from.as_str()).is_err()
                && in_datasource(&from)?
                && in_datasource(target)?
            {
                tags += 1;
            }
        }
        Ok((docs, tags))
    }

    /// [`Scope::tag_corpus`] under the datasource filter alone.
    fn datasource_tag_corpus(&self) -> Result<TagCorpus, StoreError> {
        let conn = self.corpus.conn;
        let docs = conn.memory_count_under(self.datasource)?;
        let mut tags = docs;
        // Entity tags: under a datasource the store returns only its own.
        conn.entity_tag_counts(self.datasource, &mut |entity, memories| {
            if self.valid_entity(entity) {
                tags += memories;
            }
        })?;
        // `memory:` tags count when both ends pass the filter.
        match self.datasource {
            None => tags += conn.live_memory_tag_count()?,
            Some(_) => {
                let in_datasource = |id: &str| -> Result<bool, StoreError> {
                    Ok(self
                        .corpus
                        .memory(id)?
                        .is_some_and(|m| m.in_datasource(self.datasource)))
                };
                for (from, to) in conn.memory_tag_links()? {
                    let target = memory_id_of(&to).unwrap_or_default();
                    if in_datasource(&from)? && in_datasource(target)? {
                        tags += 1;
                    }
                }
            }
        }
        Ok(TagCorpus { docs, tags })
    }

    /// The memories the filter keeps, newest first (ties by id), until `visit` says stop.
    pub fn newest_first(
        &self,
        mut visit: impl FnMut(Rc<MemoryMeta>) -> bool,
    ) -> Result<(), StoreError> {
        self.corpus.conn.memory_ids_newest_first(&mut |id| {
            Ok(match self.memory(id)? {
                Some(m) => visit(m),
                None => true,
            })
        })
    }
}
