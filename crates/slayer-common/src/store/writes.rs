//! [`StoreWrite`]: everything a command writes, inside its one write transaction.

use super::reads::StoreRead;
use super::rows::{IndexLag, StoredDoc};
use super::StoreError;
use crate::records::{Datasource, Memory, Model};

/// The store's writes. Only a command's write transaction implements it: a command either
/// commits all of its writes or none (docs/spec/store.md §11.1), and reads what it wrote through
/// the same transaction.
pub trait StoreWrite: StoreRead {
    // Catalog records.

    /// Inserts or replaces a datasource record.
    fn put_datasource(&self, datasource: &Datasource) -> Result<(), StoreError>;
    /// Deletes a datasource record; whether there was one.
    fn delete_datasource(&self, name: &str) -> Result<bool, StoreError>;
    /// Inserts or replaces a model record (and its skeleton).
    fn put_model(&self, model: &Model) -> Result<(), StoreError>;
    /// [`StoreWrite::put_model`] for many: a server store writes them a few thousand rows to a
    /// statement, not a round trip each.
    fn put_models(&self, models: &[&Model]) -> Result<(), StoreError> {
        models.iter().try_for_each(|m| self.put_model(m))
    }
    /// Deletes a model record; whether there was one.
    fn delete_model(&self, datasource: &str, name: &str) -> Result<bool, StoreError>;
    /// Deletes every model of a datasource; how many.
    fn delete_models_of(&self, datasource: &str) -> Result<usize, StoreError>;

    // Docs.

    /// Inserts or replaces a doc.
    fn upsert_doc(&self, doc: &StoredDoc) -> Result<(), StoreError>;
    /// [`StoreWrite::upsert_doc`] for many (as [`StoreWrite::put_models`]); a later doc of one
    /// id replaces an earlier one.
    fn upsert_docs(&self, docs: &[StoredDoc]) -> Result<(), StoreError> {
        docs.iter().try_for_each(|d| self.upsert_doc(d))
    }
    /// Deletes a doc; whether there was one.
    fn delete_doc(&self, canonical_id: &str) -> Result<bool, StoreError>;
    /// Deletes the docs of `root` and of everything under it; their ids.
    fn delete_docs_under(&self, root: &str) -> Result<Vec<String>, StoreError>;
    /// Records that the full-text index now holds `lag`'s changes.
    fn mark_indexed(&self, lag: &IndexLag) -> Result<(), StoreError>;
    /// Forgets what the full-text index holds (before a rebuild from scratch).
    fn clear_index_state(&self) -> Result<(), StoreError>;

    // Embeddings.

    /// Inserts or replaces the row of one doc under one model name.
    fn put_embedding(
        &self,
        canonical_id: &str,
        model: &str,
        revision: &str,
        content_hash: &str,
        vector: &[f32],
        updated_at: &str,
    ) -> Result<(), StoreError>;
    /// Deletes the rows of `root` and of everything under it; how many.
    fn delete_embeddings_under(&self, root: &str) -> Result<usize, StoreError>;
    /// Deletes the rows of exactly this doc; how many.
    fn delete_embeddings_of(&self, canonical_id: &str) -> Result<usize, StoreError>;

    // Memories.

    /// Inserts or replaces a memory and its tags.
    fn put_memory(&self, memory: &Memory) -> Result<(), StoreError>;
    /// [`StoreWrite::put_memory`] for many (as [`StoreWrite::put_models`]); a later memory of
    /// one id replaces an earlier one.
    fn put_memories(&self, memories: &[Memory]) -> Result<(), StoreError> {
        memories.iter().try_for_each(|m| self.put_memory(m))
    }
    /// Deletes a memory (its tags go with it); whether there was one.
    fn delete_memory(&self, id: &str) -> Result<bool, StoreError>;
    /// Strips every tag equal to `root` or under it; the memories that lost one, as saved.
    fn strip_tags_under(&self, root: &str) -> Result<Vec<Memory>, StoreError>;
    /// For a write of many memories: stops keeping the tag and memory counts per row.
    /// [`StoreWrite::resume_counts`] must follow in the same transaction.
    fn suspend_counts(&self) -> Result<(), StoreError>;
    /// Recounts what [`StoreWrite::suspend_counts`] stopped keeping, and keeps it again.
    fn resume_counts(&self) -> Result<(), StoreError>;

    // Settings.

    /// Writes one setting.
    fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError>;
}
