//! What a search reads from the store, loaded once per process (a `--batch` run reuses it).

use std::collections::HashSet;

use rustc_hash::FxHashMap;

use rusqlite::Connection;
use slayer_common::store::StoreError;
use slayer_memory::resolve::Catalog;

/// A memory as search needs it: tags for BM25 and the filters, the query flag for the buckets,
/// `created_at` for the recency fallback. Texts and queries are read only for returned hits.
#[derive(Debug, Clone)]
pub struct MemoryMeta {
    /// Memory id.
    pub id: String,
    /// Stored tags (stale ones included).
    pub tags: Vec<String>,
    /// Whether a query is attached.
    pub has_query: bool,
    /// Creation time (RFC 3339, sortable as text).
    pub created_at: String,
    /// `memory:<id>`: its implicit self-reference and its doc id.
    pub self_ref: String,
}

/// Every memory, and the catalog once a search needs it (a question alone does not).
pub struct Corpus {
    catalog: std::cell::OnceCell<Catalog>,
    /// Datasource names (the stored ones and those models name).
    pub datasources: std::collections::BTreeSet<String>,
    /// Every memory, in id order.
    pub memories: Vec<MemoryMeta>,
    /// Memory id → position in `memories`.
    pub index: FxHashMap<String, usize>,
}

impl Corpus {
    /// Loads the memories and the datasource names.
    pub fn load(conn: &Connection) -> Result<Corpus, slayer_memory::MemoryError> {
        let memories = load_memories(conn).map_err(slayer_memory::MemoryError::Store)?;
        let mut stmt = conn
            .prepare_cached("SELECT name FROM datasources UNION SELECT data_source FROM models")
            .map_err(StoreError::from)?;
        let datasources = stmt
            .query_map([], |r| r.get(0))
            .and_then(|rows| rows.collect::<Result<_, _>>())
            .map_err(StoreError::from)?;
        let index = memories
            .iter()
            .enumerate()
            .map(|(i, m)| (m.id.clone(), i))
            .collect();
        Ok(Corpus {
            catalog: std::cell::OnceCell::new(),
            datasources,
            memories,
            index,
        })
    }

    /// Datasources and models, for resolution, hidden checks and the stale-tag filter; parsed
    /// on first use.
    pub fn catalog(&self, conn: &Connection) -> Result<&Catalog, slayer_memory::MemoryError> {
        if let Some(c) = self.catalog.get() {
            return Ok(c);
        }
        let loaded = slayer_memory::service::load_catalog(conn)?;
        Ok(self.catalog.get_or_init(|| loaded))
    }
}

/// Every canonical id the catalog holds (hidden ones included): tags outside it are stale.
pub fn valid_entities(catalog: &Catalog, datasource: Option<&str>) -> HashSet<String> {
    let mut out = HashSet::new();
    for ds in &catalog.datasources {
        if datasource.is_none_or(|d| d == ds) {
            out.insert(ds.clone());
        }
    }
    for m in &catalog.models {
        if datasource.is_some_and(|d| d != m.data_source) {
            continue;
        }
        let id = m.canonical_id();
        for c in &m.columns {
            out.insert(format!("{id}.{}", c.name));
        }
        for name in m.measures.iter().filter_map(|x| x.name.as_ref()) {
            out.insert(format!("{id}.{name}"));
        }
        for a in &m.aggregations {
            out.insert(format!("{id}.{}", a.name));
        }
        out.insert(id);
    }
    out
}

fn load_memories(conn: &Connection) -> Result<Vec<MemoryMeta>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT id, created_at, has_query FROM memories ORDER BY id")?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, bool>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, created_at, has_query) = row?;
        let self_ref = format!("memory:{id}");
        out.push(MemoryMeta {
            id,
            tags: Vec::new(),
            has_query,
            created_at,
            self_ref,
        });
    }
    // Both lists come in id order (the same collation), so tags merge in without a map.
    let mut stmt =
        conn.prepare_cached("SELECT memory_id, entity FROM memory_entities ORDER BY memory_id")?;
    let mut rows = stmt.query([])?;
    let mut at = 0;
    while let Some(row) = rows.next()? {
        let id = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
        while at < out.len() && out[at].id.as_str() < id {
            at += 1;
        }
        if at < out.len() && out[at].id == id {
            out[at].tags.push(row.get(1)?);
        }
    }
    Ok(out)
}
