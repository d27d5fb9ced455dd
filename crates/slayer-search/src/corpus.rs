//! What a search reads from the store, through `slayer_common::store` (no SQL here). Nothing is
//! read whole: memories are looked up as the rankings name them (and cached, so a `--batch`
//! run reads each once), BM25's corpus totals come from the trigger-kept `tag_counts`, and the
//! catalog is parsed only for entity inputs.
//!
//! [`Scope`] is the corpus as one request sees it, under its datasource: the one place that
//! says whether a memory, a tag or a doc counts.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use rusqlite::Connection;
use rustc_hash::{FxHashMap, FxHashSet};
use slayer_common::canonical::{memory_id_of, memory_ref, rooted_at};
use slayer_common::store::memories::{self, TaggedMemory};
use slayer_common::store::{catalog, StoreError};
use slayer_memory::resolve::{Catalog, Lookup};

/// A memory as search needs it: tags for BM25 and the filters, the query flag for the buckets.
/// Texts and queries are read only for returned hits.
#[derive(Debug, Clone)]
pub struct MemoryMeta {
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
    conn: &'c Connection,
    catalog: OnceCell<Catalog>,
    /// Datasource names (the stored ones and those models name).
    pub datasources: BTreeSet<String>,
    memories: RefCell<FxHashMap<String, Option<Rc<MemoryMeta>>>>,
    with_query: OnceCell<FxHashSet<String>>,
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
    pub fn load(conn: &'c Connection) -> Result<Corpus<'c>, slayer_memory::MemoryError> {
        Ok(Corpus {
            conn,
            catalog: OnceCell::new(),
            datasources: catalog::datasource_names(conn)?,
            memories: RefCell::default(),
            with_query: OnceCell::new(),
        })
    }

    /// The store connection.
    pub fn conn(&self) -> &'c Connection {
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

    /// One memory, or `None` when there is no such memory.
    pub fn memory(&self, id: &str) -> Result<Option<Rc<MemoryMeta>>, StoreError> {
        if let Some(m) = self.memories.borrow().get(id) {
            return Ok(m.clone());
        }
        let meta = memories::tagged(self.conn, id)?.map(|m| Rc::new(MemoryMeta::from(m)));
        self.memories
            .borrow_mut()
            .insert(id.to_owned(), meta.clone());
        Ok(meta)
    }

    /// The memories that carry any of `tags` (or are the memory a `memory:` tag names), in id
    /// order, read in one statement.
    fn tagged_with(&self, tags: &[String]) -> Result<Vec<Rc<MemoryMeta>>, StoreError> {
        let found = memories::sharing_a_tag(self.conn, tags)?;
        let mut cache = self.memories.borrow_mut();
        Ok(found
            .into_iter()
            .map(|m| {
                let m = Rc::new(MemoryMeta::from(m));
                cache.insert(m.id.clone(), Some(m.clone()));
                m
            })
            .collect())
    }

    /// The ids of the memories that carry a query, read once (a `--batch` run reuses them).
    pub fn with_query(&self) -> Result<&FxHashSet<String>, StoreError> {
        if let Some(ids) = self.with_query.get() {
            return Ok(ids);
        }
        let ids = memories::ids_with_query(self.conn)?.into_iter().collect();
        Ok(self.with_query.get_or_init(|| ids))
    }

    /// The corpus under a datasource filter, with the catalog that decides which tags are live.
    pub fn scope<'s>(&'s self, datasource: Option<&'s str>, catalog: &'s Catalog) -> Scope<'s, 'c> {
        Scope {
            corpus: self,
            datasource,
            catalog,
        }
    }
}

impl Lookup for Corpus<'_> {
    fn memory_exists(&self, id: &str) -> Result<bool, String> {
        self.memory(id)
            .map(|found| found.is_some())
            .map_err(|e| e.to_string())
    }
}

/// The corpus as one request sees it: under its datasource, if any. Every "does this count
/// here" question of the pipeline is one of its methods.
pub struct Scope<'s, 'c> {
    corpus: &'s Corpus<'c>,
    datasource: Option<&'s str>,
    catalog: &'s Catalog,
}

impl Scope<'_, '_> {
    /// The datasource filter.
    pub fn datasource(&self) -> Option<&str> {
        self.datasource
    }

    /// The store connection.
    pub fn conn(&self) -> &Connection {
        self.corpus.conn
    }

    /// A memory the datasource filter keeps (it has a tag rooted at the datasource).
    pub fn memory(&self, id: &str) -> Result<Option<Rc<MemoryMeta>>, StoreError> {
        Ok(self
            .corpus
            .memory(id)?
            .filter(|m| m.in_datasource(self.datasource)))
    }

    /// Whether a memory exists but the datasource filter drops it.
    pub fn memory_outside(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .corpus
            .memory(id)?
            .is_some_and(|m| !m.in_datasource(self.datasource)))
    }

    /// Whether a stored doc counts: a memory the filter keeps, an entity rooted at the
    /// datasource. Without a datasource every doc counts, and nothing is looked up.
    pub fn keeps_doc(&self, canonical: &str) -> Result<bool, StoreError> {
        let Some(d) = self.datasource else {
            return Ok(true);
        };
        Ok(match memory_id_of(canonical) {
            Some(id) => self.memory(id)?.is_some(),
            None => rooted_at(canonical, d),
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

    /// How many memories the filter keeps and how many live tags they carry, from the per-tag
    /// counts: no memory is read (bar those `memory:` tags name, under a filter).
    pub fn tag_corpus(&self) -> Result<TagCorpus, StoreError> {
        let conn = self.corpus.conn;
        let docs = memories::count_under(conn, self.datasource)?;
        let mut tags = docs;
        // Entity tags: under a datasource the store returns only its own.
        memories::entity_tag_counts(conn, self.datasource, |entity, memories| {
            if self.valid_entity(entity) {
                tags += memories;
            }
        })?;
        // `memory:` tags count when both ends pass the filter.
        match self.datasource {
            None => tags += memories::live_memory_tag_count(conn)?,
            Some(_) => {
                for (from, to) in memories::memory_tag_links(conn)? {
                    let target = memory_id_of(&to).unwrap_or_default();
                    if self.memory(&from)?.is_some() && self.memory(target)?.is_some() {
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
        memories::ids_newest_first(self.corpus.conn, |id| {
            Ok(match self.memory(id)? {
                Some(m) => visit(m),
                None => true,
            })
        })
    }
}
