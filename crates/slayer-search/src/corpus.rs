//! What a search reads from the store. Nothing is read whole: memories are looked up as the
//! rankings name them (and cached, so a `--batch` run reads each once), BM25's corpus totals
//! come from the trigger-kept `tag_counts`, and the catalog is parsed only for entity inputs.

use std::cell::{OnceCell, RefCell};
use std::collections::BTreeSet;
use std::rc::Rc;

use rusqlite::{Connection, OptionalExtension};
use rustc_hash::FxHashMap;
use slayer_common::canonical::{memory_id_of, memory_ref, rooted_at};
use slayer_common::store::StoreError;
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
    with_query: OnceCell<rustc_hash::FxHashSet<String>>,
}

/// BM25's view of the memory corpus under a datasource filter.
pub struct TagCorpus {
    /// Memories in the corpus.
    pub docs: usize,
    /// Their tags, each memory's own `memory:<id>` included, stale tags not.
    pub tags: usize,
}

/// `entity` is the datasource or under it (names hold no `.`, so a byte range says it).
const UNDER: &str = "(entity = ?1 OR (entity >= ?1 || '.' AND entity < ?1 || '/'))";
/// `entity` is a `memory:` reference (`;` follows `:`).
const MEMORY_REF: &str = "(entity >= 'memory:' AND entity < 'memory;')";

impl<'c> Corpus<'c> {
    /// Opens the corpus: only the datasource names are read now.
    pub fn load(conn: &'c Connection) -> Result<Corpus<'c>, slayer_memory::MemoryError> {
        let mut stmt = conn
            .prepare_cached("SELECT name FROM datasources UNION SELECT data_source FROM models")
            .map_err(StoreError::from)?;
        let datasources = stmt
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect::<Result<_, _>>())
            .map_err(StoreError::from)?;
        Ok(Corpus {
            conn,
            catalog: OnceCell::new(),
            datasources,
            memories: RefCell::default(),
            with_query: OnceCell::new(),
        })
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
        let mut stmt = self.conn.prepare_cached(
            "SELECT has_query FROM memories INDEXED BY idx_memories_meta WHERE id = ?1",
        )?;
        let row: Option<bool> = stmt.query_row([id], |r| r.get(0)).optional()?;
        let meta = match row {
            None => None,
            Some(has_query) => {
                let mut tags = self.conn.prepare_cached(
                    "SELECT entity FROM memory_entities WHERE memory_id = ?1 ORDER BY entity",
                )?;
                let tags = tags
                    .query_map([id], |r| r.get(0))?
                    .collect::<Result<Vec<String>, _>>()?;
                Some(Rc::new(MemoryMeta {
                    id: id.to_owned(),
                    tags,
                    has_query,
                    self_ref: memory_ref(id),
                }))
            }
        };
        self.memories
            .borrow_mut()
            .insert(id.to_owned(), meta.clone());
        Ok(meta)
    }

    /// A memory the datasource filter keeps.
    pub fn eligible(
        &self,
        id: &str,
        datasource: Option<&str>,
    ) -> Result<Option<Rc<MemoryMeta>>, StoreError> {
        Ok(self.memory(id)?.filter(|m| m.in_datasource(datasource)))
    }

    /// The memories that carry any of `tags` (or are the memory a `memory:` tag names), in id
    /// order, read in one statement.
    pub fn tagged_with(&self, tags: &[String]) -> Result<Vec<Rc<MemoryMeta>>, StoreError> {
        let json = serde_json::to_string(tags).unwrap_or_else(|_| "[]".into());
        let mut stmt = self.conn.prepare_cached(
            "SELECT m.id, m.has_query, e.entity
             FROM memories m INDEXED BY idx_memories_meta
             LEFT JOIN memory_entities e ON e.memory_id = m.id
             WHERE m.id IN (
                 SELECT memory_id FROM memory_entities
                 WHERE entity IN (SELECT value FROM json_each(?1))
                 UNION
                 SELECT substr(value, 8) FROM json_each(?1) WHERE substr(value, 1, 7) = 'memory:')
             ORDER BY m.id, e.entity",
        )?;
        let mut rows = stmt.query([json])?;
        let mut out: Vec<MemoryMeta> = Vec::new();
        while let Some(row) = rows.next()? {
            let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
            if out.last().is_none_or(|m| m.id != id) {
                out.push(MemoryMeta {
                    id: id.to_owned(),
                    tags: Vec::new(),
                    has_query: row.get(1)?,
                    self_ref: memory_ref(id),
                });
            }
            if let Some(tag) = row.get::<_, Option<String>>(2)? {
                if let Some(m) = out.last_mut() {
                    m.tags.push(tag);
                }
            }
        }
        let mut cache = self.memories.borrow_mut();
        Ok(out
            .into_iter()
            .map(|m| {
                let m = Rc::new(m);
                cache.insert(m.id.clone(), Some(m.clone()));
                m
            })
            .collect())
    }

    /// How many memories the datasource filter keeps and how many live tags they carry, from
    /// the per-tag counts: no memory is read (bar those `memory:` tags name, under a filter).
    pub fn tag_corpus(
        &self,
        datasource: Option<&str>,
        valid: &ValidEntities<'_>,
    ) -> Result<TagCorpus, StoreError> {
        let conn = self.conn;
        let docs: i64 = match datasource {
            None => conn.query_row(
                "SELECT CAST(value AS INTEGER) FROM settings WHERE key = 'memory_count'",
                [],
                |r| r.get(0),
            )?,
            // One probe of the (memory_id, entity) key per memory beats de-duplicating every
            // tag row under the datasource.
            Some(d) => conn.query_row(
                &format!(
                    "SELECT COUNT(*) FROM memories m WHERE EXISTS (SELECT 1 FROM memory_entities
                     WHERE memory_id = m.id AND {UNDER})"
                ),
                [d],
                |r| r.get(0),
            )?,
        };
        let mut tags = docs as usize;
        // Entity tags: the valid set already holds only the datasource's entities.
        let sql = match datasource {
            None => format!("SELECT entity, memories FROM tag_counts WHERE NOT {MEMORY_REF}"),
            Some(_) => format!("SELECT entity, memories FROM tag_counts WHERE {UNDER}"),
        };
        let mut stmt = conn.prepare_cached(&sql)?;
        let mut rows = match datasource {
            None => stmt.query([])?,
            Some(d) => stmt.query([d])?,
        };
        while let Some(row) = rows.next()? {
            let entity = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
            if valid.contains(entity) {
                tags += row.get::<_, i64>(1)? as usize;
            }
        }
        // `memory:` tags count when both ends pass the filter.
        match datasource {
            None => {
                let live: i64 = conn.query_row(
                    &format!(
                        "SELECT COALESCE(SUM(memories), 0) FROM tag_counts WHERE {MEMORY_REF}
                         AND EXISTS (SELECT 1 FROM memories WHERE id = substr(entity, 8))"
                    ),
                    [],
                    |r| r.get(0),
                )?;
                tags += live as usize;
            }
            Some(d) => {
                let mut stmt = conn.prepare_cached(&format!(
                    "SELECT memory_id, entity FROM memory_entities WHERE {MEMORY_REF}
                     AND entity <> 'memory:' || memory_id"
                ))?;
                let pairs = stmt
                    .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?
                    .collect::<Result<Vec<_>, _>>()?;
                for (from, to) in pairs {
                    let target = memory_id_of(&to).unwrap_or_default();
                    if self.eligible(&from, Some(d))?.is_some()
                        && self.eligible(target, Some(d))?.is_some()
                    {
                        tags += 1;
                    }
                }
            }
        }
        Ok(TagCorpus {
            docs: docs as usize,
            tags,
        })
    }

    /// The ids of the memories that carry a query, read once (a `--batch` run reuses them).
    pub fn with_query(&self) -> Result<&rustc_hash::FxHashSet<String>, StoreError> {
        if let Some(ids) = self.with_query.get() {
            return Ok(ids);
        }
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM memories WHERE has_query")?;
        let ids = stmt
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(self.with_query.get_or_init(|| ids))
    }

    /// Memory ids newest first (ties by id), for the recency fallback.
    pub fn newest_first(&self, mut visit: impl FnMut(&str) -> bool) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id FROM memories ORDER BY created_at DESC, id")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
            if !visit(id) {
                break;
            }
        }
        Ok(())
    }
}

impl Lookup for Corpus<'_> {
    fn memory_exists(&self, id: &str) -> Result<bool, String> {
        self.memory(id)
            .map(|found| found.is_some())
            .map_err(|e| e.to_string())
    }
}

/// Every canonical id the catalog holds (hidden ones included) under the datasource filter:
/// tags outside it are stale.
pub struct ValidEntities<'a> {
    datasource: Option<&'a str>,
    catalog: &'a Catalog,
    models: FxHashMap<(&'a str, &'a str), &'a slayer_common::records::Model>,
}

impl<'a> ValidEntities<'a> {
    /// Indexes the catalog's models by (datasource, name).
    pub fn new(catalog: &'a Catalog, datasource: Option<&'a str>) -> ValidEntities<'a> {
        let models = catalog
            .models
            .iter()
            .map(|m| ((m.data_source.as_str(), m.name.as_str()), m))
            .collect();
        ValidEntities {
            datasource,
            catalog,
            models,
        }
    }

    /// Whether the id names a datasource, model or leaf of the catalog under the filter.
    pub fn contains(&self, canonical: &str) -> bool {
        let mut parts = canonical.split('.');
        let ds = parts.next().unwrap_or_default();
        if self.datasource.is_some_and(|d| d != ds) {
            return false;
        }
        match (parts.next(), parts.next(), parts.next()) {
            (None, _, _) => self.catalog.datasources.contains(ds),
            (Some(m), None, _) => self.models.contains_key(&(ds, m)),
            (Some(m), Some(leaf), None) => self.models.get(&(ds, m)).is_some_and(|model| {
                model.columns.iter().any(|c| c.name == leaf)
                    || model
                        .measures
                        .iter()
                        .any(|x| x.name.as_deref() == Some(leaf))
                    || model.aggregations.iter().any(|a| a.name == leaf)
            }),
            _ => false,
        }
    }
}
