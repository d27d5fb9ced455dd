//! [`StoreRead`]: everything a command reads from the store, whatever the backend.

use std::collections::{BTreeSet, HashMap};

use super::rows::{
    Coverage, IndexLag, LiveRow, Marked, Stamp, StoredDoc, TaggedMemory, VectorChanges,
    VectorsState,
};
use super::StoreError;
use crate::records::{Datasource, Memory, Model, Occasion};

/// The store's reads. An open store reads through it, and so does a write transaction, which
/// sees its own writes. Every method is one consistent read; a caller that needs several to
/// agree holds a transaction (or a reader that another writer cannot move under it).
pub trait StoreRead {
    // Catalog records.

    /// One datasource record.
    fn datasource(&self, name: &str) -> Result<Option<Datasource>, StoreError>;
    /// Every datasource record, by name.
    fn datasources(&self) -> Result<Vec<Datasource>, StoreError>;
    /// Every datasource name: the stored datasources and those models name.
    fn datasource_names(&self) -> Result<BTreeSet<String>, StoreError>;
    /// One model record.
    fn model(&self, datasource: &str, name: &str) -> Result<Option<Model>, StoreError>;
    /// Every model record (of one datasource, or all), by datasource then name.
    fn models(&self, datasource: Option<&str>) -> Result<Vec<Model>, StoreError>;
    /// Every model as name resolution reads it (names, flags, leaves, joins), by datasource
    /// then name.
    fn model_skeletons(&self) -> Result<Vec<crate::records::skeleton::Model>, StoreError>;

    // Docs and the full-text index's record of them.

    /// One doc.
    fn doc(&self, canonical_id: &str) -> Result<Option<StoredDoc>, StoreError>;
    /// The docs of these ids that exist, in no particular order: one read for a response's
    /// hits.
    fn docs(&self, canonical_ids: &[String]) -> Result<Vec<StoredDoc>, StoreError>;
    /// The docs of one datasource (itself and its models' subtrees), in rebuild order.
    fn docs_of_datasource(&self, datasource: &str) -> Result<Vec<StoredDoc>, StoreError>;
    /// Every doc, in rebuild order.
    fn all_docs(&self) -> Result<Vec<StoredDoc>, StoreError>;
    /// Every doc's canonical id, in rebuild order.
    fn doc_ids(&self) -> Result<Vec<String>, StoreError>;
    /// How many docs of each kind.
    fn doc_counts_by_kind(&self) -> Result<Vec<(String, i64)>, StoreError>;
    /// The datasources a memory doc belongs to: the roots of its entity tags, sorted.
    fn memory_datasources(&self, memory_id: &str) -> Result<Vec<String>, StoreError>;
    /// [`StoreRead::memory_datasources`] of many memories, by memory id (a memory with none
    /// may be left out): one read for a batch.
    fn memories_datasources(
        &self,
        memory_ids: &[&str],
    ) -> Result<HashMap<String, Vec<String>>, StoreError> {
        let mut roots = HashMap::with_capacity(memory_ids.len());
        for id in memory_ids {
            roots.insert((*id).to_owned(), self.memory_datasources(id)?);
        }
        Ok(roots)
    }
    /// What the full-text index lacks of the docs.
    fn index_lag(&self) -> Result<IndexLag, StoreError>;
    /// How many docs the store believes the full-text index holds.
    fn indexed_count(&self) -> Result<i64, StoreError>;
    /// For a store whose full-text index is a per-host cache that records its own state (a
    /// server's): what changed in the docs after the change counter read `since` (a
    /// [`StoreRead::docs_version`] a cache synced to): the changed docs that exist, to
    /// (re)index, in rebuild order, and the changed ids that are gone, to drop. `None` for a
    /// store that records what its index holds itself (SQLite's `index_state`: see
    /// [`StoreRead::index_lag`]).
    fn docs_changed_since(&self, since: &str) -> Result<Option<IndexLag>, StoreError>;

    // Memories, and the ids an allocation counts past.

    /// One memory.
    fn memory(&self, id: &str) -> Result<Option<Memory>, StoreError>;
    /// Every memory, by id.
    fn memories(&self) -> Result<Vec<Memory>, StoreError>;
    /// The memories of `ids` that exist, in no particular order: one read for a batch (a
    /// server store answers it in a round trip per few thousand ids, not one per id).
    fn memories_by_ids(&self, ids: &[String]) -> Result<Vec<Memory>, StoreError>;
    /// Whether a memory with this id exists.
    fn memory_exists(&self, id: &str) -> Result<bool, StoreError>;
    /// The largest int-shaped memory id (a lesson's), for id allocation.
    fn largest_int_id(&self) -> Result<Option<String>, StoreError>;
    /// The largest `<prefix>_<n>` memory id (a tier's), for id allocation.
    fn largest_prefixed_id(&self, prefix: &str) -> Result<Option<String>, StoreError>;
    /// The ids of the memories whose id starts with `prefix`, in id order (what a sync by
    /// prefix compares its input with), without reading the memories themselves.
    fn memory_ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError>;
    /// How many memories there are.
    fn memory_count(&self) -> Result<i64, StoreError>;
    /// Every memory that is not a plain lesson, by id.
    fn marked_memories(&self) -> Result<Vec<Marked>, StoreError>;
    /// The memories with a tag equal to `root` or under it, by id.
    fn memories_tagged_under(&self, root: &str) -> Result<Vec<Memory>, StoreError>;
    /// A memory's tags and query flag.
    fn tagged_memory(&self, id: &str) -> Result<Option<TaggedMemory>, StoreError>;
    /// [`StoreRead::tagged_memory`] of each of these ids that exists, in no particular order:
    /// one read for a response's memories.
    fn tagged_memories(&self, ids: &[String]) -> Result<Vec<TaggedMemory>, StoreError>;
    /// The event time and session of each of `ids` that has either, in id order.
    fn memory_occasions(&self, ids: &[String]) -> Result<Vec<(String, Occasion)>, StoreError>;
    /// Whether any memory has a session.
    fn any_memory_session(&self) -> Result<bool, StoreError>;
    /// The memories saved just before and just after `id` in its session (by `created_at`,
    /// then id); neither when it has no session.
    fn session_neighbours(&self, id: &str) -> Result<(Option<String>, Option<String>), StoreError>;
    /// The memories that carry any of `tags`, or that a `memory:` tag among them names, by id.
    fn memories_sharing_a_tag(&self, tags: &[String]) -> Result<Vec<TaggedMemory>, StoreError>;
    /// How many memories carry a tag under `datasource`; with none, how many memories there are.
    fn memory_count_under(&self, datasource: Option<&str>) -> Result<usize, StoreError>;
    /// `visit(entity, memories)` for each entity tag under `datasource` (or of every one).
    fn entity_tag_counts(
        &self,
        datasource: Option<&str>,
        visit: &mut dyn FnMut(&str, usize),
    ) -> Result<(), StoreError>;
    /// How many `memory:` tags (a memory's tag naming itself aside) name a memory that exists.
    fn live_memory_tag_count(&self) -> Result<usize, StoreError>;
    /// Every `memory:` tag but a memory's tag naming itself: `(memory id, tag)` pairs.
    fn memory_tag_links(&self) -> Result<Vec<(String, String)>, StoreError>;
    /// The ids of the memories with a query attached.
    fn memory_ids_with_query(&self) -> Result<Vec<String>, StoreError>;
    /// Memory ids newest first, each passed to `visit` until it returns `false`.
    fn memory_ids_newest_first(
        &self,
        visit: &mut dyn FnMut(&str) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError>;

    // Embeddings.

    /// How many rows each model name holds.
    fn embedding_counts_by_model(&self) -> Result<Vec<(String, i64)>, StoreError>;
    /// For each of these docs: its embedding text and the stamp of its row under `model`.
    fn texts_and_stamps(
        &self,
        model: &str,
        canonical_ids: &[String],
    ) -> Result<HashMap<String, (String, Option<Stamp>)>, StoreError>;
    /// How the docs stand under one model name and revision.
    fn coverage(&self, model: &str, revision: &str) -> Result<Coverage, StoreError>;
    /// The docs whose row under `model` is missing or of another revision.
    fn stale_or_missing(&self, model: &str, revision: &str) -> Result<Vec<String>, StoreError>;
    /// How many live rows under `model` another revision wrote.
    fn stale_live_rows(&self, model: &str, revision: &str) -> Result<i64, StoreError>;
    /// How many docs the store holds.
    fn doc_count(&self) -> Result<i64, StoreError>;
    /// How many docs have no row under `model`.
    fn docs_lacking(&self, model: &str) -> Result<i64, StoreError>;
    /// Every live row of one model name and revision, by canonical id.
    fn live_rows(&self, model: &str, revision: &str) -> Result<Vec<LiveRow>, StoreError>;
    /// `(canonical id, doc kind, version)` of every live row, by canonical id.
    fn live_row_versions(
        &self,
        model: &str,
        revision: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError>;
    /// One live row's vector and version.
    fn vector_and_version(
        &self,
        canonical_id: &str,
        model: &str,
        revision: &str,
    ) -> Result<Option<(Vec<f32>, String)>, StoreError>;
    /// `each(canonical id, doc kind, vector bytes)` for every live row, by canonical id.
    fn for_each_live_row(
        &self,
        model: &str,
        revision: &str,
        each: &mut dyn FnMut(&str, &str, &[u8]),
    ) -> Result<(), StoreError>;
    /// `each(memory id, tag)` for every tag of every memory.
    fn for_each_memory_tag(&self, each: &mut dyn FnMut(&str, &str)) -> Result<(), StoreError>;

    // Settings.

    /// One setting.
    fn setting(&self, key: &str) -> Result<Option<String>, StoreError>;

    // Change detection: cheap reads that tell a long-lived reader what moved.

    /// Changes whenever another connection commits a write (SQLite's `PRAGMA data_version`): a
    /// reader that caches what it read drops its caches when this moves.
    fn data_version(&self) -> Result<i64, StoreError>;
    /// The docs' change counter, which the full-text index records when it syncs.
    fn docs_version(&self) -> Result<String, StoreError>;
    /// The count of the writes that may change which embedding rows are live (`None` on a
    /// store older than schema 6).
    fn embedding_changes(&self) -> Result<Option<i64>, StoreError>;
    /// What a vector sidecar must have recorded to be current (`None` before schema 7).
    fn vectors_state(&self) -> Result<Option<VectorsState>, StoreError>;
    /// The docs whose rows of `model` at `revision` (or tags) changed after `since`, when the
    /// store's change log still holds all of them and there are at most `limit`: `None` says
    /// a sidecar at `since` has to be rebuilt whole (another store, a pruned log, a store
    /// before schema 10, too many changes).
    fn vector_changes(
        &self,
        since: &VectorsState,
        model: &str,
        revision: &str,
        limit: usize,
    ) -> Result<Option<VectorChanges>, StoreError>;

    // Snapshots.

    /// Until [`StoreRead::end_snapshot`], every read sees the store as it is now (a search
    /// reads one state, whatever other writers commit meanwhile).
    fn begin_snapshot(&self) -> Result<(), StoreError>;
    /// Ends the snapshot [`StoreRead::begin_snapshot`] began.
    fn end_snapshot(&self) -> Result<(), StoreError>;
}
