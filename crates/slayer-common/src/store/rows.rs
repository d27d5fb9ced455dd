//! The rows the store hands out beyond the records themselves, the same for every backend.

use crate::records::{Doc, Standing};

/// A doc with the position that fixes its place in a full rebuild.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDoc {
    /// The doc itself.
    pub doc: Doc,
    /// Owning model name for model-subtree docs.
    pub model: Option<String>,
    /// Order within its model subtree (model doc 0, then columns, measures, aggregations).
    pub position: i64,
}

impl StoredDoc {
    /// A doc of this id, kind and datasource with placeholder text and hash (`t`, `h`), no
    /// model, position 0: the fixture every crate's store tests write.
    pub fn placeholder(id: &str, kind: &str, datasource: Option<&str>) -> StoredDoc {
        StoredDoc {
            doc: Doc {
                canonical_id: id.into(),
                doc_kind: kind.into(),
                datasource: datasource.map(str::to_owned),
                text: "t".into(),
                content_hash: "h".into(),
                embedding_text: None,
            },
            model: None,
            position: 0,
        }
    }
}

/// What the index lacks: docs it does not hold at their current hash, and ids it holds that
/// are gone from `docs`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IndexLag {
    /// Docs to (re)index, in rebuild order.
    pub upserts: Vec<StoredDoc>,
    /// Canonical ids to drop from the index.
    pub deletes: Vec<String>,
}

impl IndexLag {
    /// Whether the index already matches the store.
    pub fn is_empty(&self) -> bool {
        self.upserts.is_empty() && self.deletes.is_empty()
    }
}

/// What a doc's row under a model name holds of its provenance: the content hash of the text
/// it embedded and the model revision that wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// SHA-256 of the embedded text.
    pub content_hash: String,
    /// The model's revision when the row was written (`''` before schema 8).
    pub revision: String,
}

/// How the store's docs stand under one model name and revision.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Coverage {
    /// Docs whose row was written by this revision.
    pub current: i64,
    /// Docs whose row was written by another revision (or before schema 8, `''`).
    pub stale: i64,
    /// Docs with no row under the model name.
    pub missing: i64,
}

/// One stored row as a long-lived reader keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveRow {
    /// The doc's canonical id.
    pub canonical_id: String,
    /// The doc's kind (`memory`, `column`, …).
    pub doc_kind: String,
    /// Changes whenever the row is written: its rowid, content hash and write time.
    pub version: String,
    /// The vector as stored.
    pub vector: Vec<f32>,
}

/// What the vector sidecar of a store is current with: the store's identity and the counts of
/// the writes that change its rows (`embeddings_changes`) or their datasources
/// (`memory_tags_changes`). `None` on a store older than schema 7.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VectorsState {
    /// Random per store, kept across migrations.
    pub store_id: String,
    /// `settings.embeddings_changes`.
    pub embeddings_changes: i64,
    /// `settings.memory_tags_changes`.
    pub memory_tags_changes: i64,
}

/// What changed in a store's vector rows after a sidecar's [`VectorsState`]
/// (`StoreRead::vector_changes`): each doc logged since, as it is now.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorChanges {
    /// The state the log reached when it was read: a sidecar with these rows applied records it.
    pub to: VectorsState,
    /// Each doc whose row, kind or tags changed, in canonical id order, read at `to` or later
    /// (re-reading a doc is idempotent, so a later catch-up from `to` corrects nothing twice).
    pub rows: Vec<ChangedRow>,
}

/// One doc of [`VectorChanges`].
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedRow {
    /// The doc's canonical id.
    pub canonical_id: String,
    /// Its doc kind and vector bytes when it has a live row of the model and revision.
    pub live: Option<(String, Vec<u8>)>,
    /// Whether it has a live row under the model name that another revision wrote.
    pub stale: bool,
    /// A memory's stored tags (stale ones included); empty for an entity.
    pub tags: Vec<String>,
}

/// A memory that is not a plain lesson, as search filters and weighs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Marked {
    /// Memory id.
    pub id: String,
    /// Its tier, trust and owners.
    pub standing: Standing,
}

/// A memory as a ranking needs it: its tags and whether a query is attached, not its JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaggedMemory {
    /// Memory id.
    pub id: String,
    /// Stored tags (stale ones included), sorted.
    pub tags: Vec<String>,
    /// Whether a query is attached.
    pub has_query: bool,
}
