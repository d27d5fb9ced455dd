//! The PostgreSQL store: the same tables as the SQLite file in one schema of a server's
//! database, shared by every host of a team. (Contract only; the backend is being written.)

use std::sync::Mutex;

use super::{CommitError, OpenMode, StoreError};

/// The PostgreSQL schema version this build writes.
pub const PG_SCHEMA_VERSION: i64 = 1;

/// Where a PostgreSQL store is, as the store facade hands it over.
pub struct PgEndpoint {
    /// Opens a new connection to the server (called again after the server went away).
    pub connect: Box<dyn Fn() -> Result<postgres::Client, StoreError> + Send + Sync>,
    /// The schema that holds the store (a writer creates it when absent).
    pub schema: String,
    /// The store as messages show it: its URL with the password masked.
    pub shown: String,
    /// Removes the password from a text (server and driver messages).
    pub scrub: Box<dyn Fn(&str) -> String + Send + Sync>,
}

/// An open PostgreSQL store.
pub struct PgStore {
    #[allow(dead_code)]
    client: Mutex<Option<postgres::Client>>,
    endpoint: PgEndpoint,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.endpoint.shown)
    }
}

/// A command's one write transaction on a PostgreSQL store.
#[derive(Debug)]
pub struct PgWriteTx<'a> {
    #[allow(dead_code)]
    store: &'a PgStore,
}

impl PgStore {
    /// Connects and checks (a writer creates or migrates) the store.
    pub fn open(endpoint: PgEndpoint, _mode: OpenMode) -> Result<PgStore, StoreError> {
        Err(StoreError::Postgres {
            server: endpoint.shown,
            message: "the PostgreSQL store is not built yet".into(),
        })
    }

    /// The store's schema version.
    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(0)
    }

    /// The store's identity (`settings.store_id`).
    pub fn store_id(&self) -> Result<String, StoreError> {
        Ok(String::new())
    }

    /// Starts the one write transaction of a command (the store's write lock taken at once).
    pub fn write(&mut self) -> Result<PgWriteTx<'_>, StoreError> {
        Ok(PgWriteTx { store: self })
    }
}

impl PgWriteTx<'_> {
    /// Commits every write of the transaction, or none.
    pub fn commit(self) -> Result<(), CommitError> {
        Ok(())
    }
}

// Placeholders until the backend lands: every call says so.
use super::rows::{
    Coverage, IndexLag, LiveRow, Marked, Stamp, StoredDoc, TaggedMemory, VectorsState,
};
use super::{StoreRead, StoreWrite};
use crate::records::{Datasource, Memory, Model};
use std::collections::{BTreeSet, HashMap};
fn unbuilt() -> StoreError {
    StoreError::Postgres {
        server: String::new(),
        message: "the PostgreSQL store is not built yet".into(),
    }
}
impl StoreRead for PgStore {
    fn datasource(&self, _name: &str) -> Result<Option<Datasource>, StoreError> {
        Err(unbuilt())
    }
    fn datasources(&self) -> Result<Vec<Datasource>, StoreError> {
        Err(unbuilt())
    }
    fn datasource_names(&self) -> Result<BTreeSet<String>, StoreError> {
        Err(unbuilt())
    }
    fn model(&self, _datasource: &str, _name: &str) -> Result<Option<Model>, StoreError> {
        Err(unbuilt())
    }
    fn models(&self, _datasource: Option<&str>) -> Result<Vec<Model>, StoreError> {
        Err(unbuilt())
    }
    fn model_skeletons(&self) -> Result<Vec<Model>, StoreError> {
        Err(unbuilt())
    }
    fn doc(&self, _canonical_id: &str) -> Result<Option<StoredDoc>, StoreError> {
        Err(unbuilt())
    }
    fn docs_of_datasource(&self, _datasource: &str) -> Result<Vec<StoredDoc>, StoreError> {
        Err(unbuilt())
    }
    fn all_docs(&self) -> Result<Vec<StoredDoc>, StoreError> {
        Err(unbuilt())
    }
    fn doc_ids(&self) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn doc_counts_by_kind(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Err(unbuilt())
    }
    fn memory_datasources(&self, _memory_id: &str) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn index_lag(&self) -> Result<IndexLag, StoreError> {
        Err(unbuilt())
    }
    fn indexed_count(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn docs_changed_since(&self, _since: &str) -> Result<Option<IndexLag>, StoreError> {
        Err(unbuilt())
    }
    fn memory(&self, _id: &str) -> Result<Option<Memory>, StoreError> {
        Err(unbuilt())
    }
    fn memories(&self) -> Result<Vec<Memory>, StoreError> {
        Err(unbuilt())
    }
    fn memory_exists(&self, _id: &str) -> Result<bool, StoreError> {
        Err(unbuilt())
    }
    fn largest_int_id(&self) -> Result<Option<String>, StoreError> {
        Err(unbuilt())
    }
    fn largest_prefixed_id(&self, _prefix: &str) -> Result<Option<String>, StoreError> {
        Err(unbuilt())
    }
    fn memory_count(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn marked_memories(&self) -> Result<Vec<Marked>, StoreError> {
        Err(unbuilt())
    }
    fn memories_tagged_under(&self, _root: &str) -> Result<Vec<Memory>, StoreError> {
        Err(unbuilt())
    }
    fn tagged_memory(&self, _id: &str) -> Result<Option<TaggedMemory>, StoreError> {
        Err(unbuilt())
    }
    fn memories_sharing_a_tag(&self, _tags: &[String]) -> Result<Vec<TaggedMemory>, StoreError> {
        Err(unbuilt())
    }
    fn memory_count_under(&self, _datasource: Option<&str>) -> Result<usize, StoreError> {
        Err(unbuilt())
    }
    fn entity_tag_counts(
        &self,
        _datasource: Option<&str>,
        _visit: &mut dyn FnMut(&str, usize),
    ) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn live_memory_tag_count(&self) -> Result<usize, StoreError> {
        Err(unbuilt())
    }
    fn memory_tag_links(&self) -> Result<Vec<(String, String)>, StoreError> {
        Err(unbuilt())
    }
    fn memory_ids_with_query(&self) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn memory_ids_newest_first(
        &self,
        _visit: &mut dyn FnMut(&str) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn embedding_counts_by_model(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Err(unbuilt())
    }
    fn texts_and_stamps(
        &self,
        _model: &str,
        _canonical_ids: &[String],
    ) -> Result<HashMap<String, (String, Option<Stamp>)>, StoreError> {
        Err(unbuilt())
    }
    fn coverage(&self, _model: &str, _revision: &str) -> Result<Coverage, StoreError> {
        Err(unbuilt())
    }
    fn stale_or_missing(&self, _model: &str, _revision: &str) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn stale_live_rows(&self, _model: &str, _revision: &str) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn doc_count(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn docs_lacking(&self, _model: &str) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn live_rows(&self, _model: &str, _revision: &str) -> Result<Vec<LiveRow>, StoreError> {
        Err(unbuilt())
    }
    fn live_row_versions(
        &self,
        _model: &str,
        _revision: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        Err(unbuilt())
    }
    fn vector_and_version(
        &self,
        _canonical_id: &str,
        _model: &str,
        _revision: &str,
    ) -> Result<Option<(Vec<f32>, String)>, StoreError> {
        Err(unbuilt())
    }
    fn for_each_live_row(
        &self,
        _model: &str,
        _revision: &str,
        _each: &mut dyn FnMut(&str, &str, &[u8]),
    ) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn for_each_memory_tag(&self, _each: &mut dyn FnMut(&str, &str)) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn setting(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Err(unbuilt())
    }
    fn data_version(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn docs_version(&self) -> Result<String, StoreError> {
        Err(unbuilt())
    }
    fn embedding_changes(&self) -> Result<Option<i64>, StoreError> {
        Err(unbuilt())
    }
    fn vectors_state(&self) -> Result<Option<VectorsState>, StoreError> {
        Err(unbuilt())
    }
    fn begin_snapshot(&self) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn end_snapshot(&self) -> Result<(), StoreError> {
        Err(unbuilt())
    }
}
impl StoreRead for PgWriteTx<'_> {
    fn datasource(&self, _name: &str) -> Result<Option<Datasource>, StoreError> {
        Err(unbuilt())
    }
    fn datasources(&self) -> Result<Vec<Datasource>, StoreError> {
        Err(unbuilt())
    }
    fn datasource_names(&self) -> Result<BTreeSet<String>, StoreError> {
        Err(unbuilt())
    }
    fn model(&self, _datasource: &str, _name: &str) -> Result<Option<Model>, StoreError> {
        Err(unbuilt())
    }
    fn models(&self, _datasource: Option<&str>) -> Result<Vec<Model>, StoreError> {
        Err(unbuilt())
    }
    fn model_skeletons(&self) -> Result<Vec<Model>, StoreError> {
        Err(unbuilt())
    }
    fn doc(&self, _canonical_id: &str) -> Result<Option<StoredDoc>, StoreError> {
        Err(unbuilt())
    }
    fn docs_of_datasource(&self, _datasource: &str) -> Result<Vec<StoredDoc>, StoreError> {
        Err(unbuilt())
    }
    fn all_docs(&self) -> Result<Vec<StoredDoc>, StoreError> {
        Err(unbuilt())
    }
    fn doc_ids(&self) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn doc_counts_by_kind(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Err(unbuilt())
    }
    fn memory_datasources(&self, _memory_id: &str) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn index_lag(&self) -> Result<IndexLag, StoreError> {
        Err(unbuilt())
    }
    fn indexed_count(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn docs_changed_since(&self, _since: &str) -> Result<Option<IndexLag>, StoreError> {
        Err(unbuilt())
    }
    fn memory(&self, _id: &str) -> Result<Option<Memory>, StoreError> {
        Err(unbuilt())
    }
    fn memories(&self) -> Result<Vec<Memory>, StoreError> {
        Err(unbuilt())
    }
    fn memory_exists(&self, _id: &str) -> Result<bool, StoreError> {
        Err(unbuilt())
    }
    fn largest_int_id(&self) -> Result<Option<String>, StoreError> {
        Err(unbuilt())
    }
    fn largest_prefixed_id(&self, _prefix: &str) -> Result<Option<String>, StoreError> {
        Err(unbuilt())
    }
    fn memory_count(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn marked_memories(&self) -> Result<Vec<Marked>, StoreError> {
        Err(unbuilt())
    }
    fn memories_tagged_under(&self, _root: &str) -> Result<Vec<Memory>, StoreError> {
        Err(unbuilt())
    }
    fn tagged_memory(&self, _id: &str) -> Result<Option<TaggedMemory>, StoreError> {
        Err(unbuilt())
    }
    fn memories_sharing_a_tag(&self, _tags: &[String]) -> Result<Vec<TaggedMemory>, StoreError> {
        Err(unbuilt())
    }
    fn memory_count_under(&self, _datasource: Option<&str>) -> Result<usize, StoreError> {
        Err(unbuilt())
    }
    fn entity_tag_counts(
        &self,
        _datasource: Option<&str>,
        _visit: &mut dyn FnMut(&str, usize),
    ) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn live_memory_tag_count(&self) -> Result<usize, StoreError> {
        Err(unbuilt())
    }
    fn memory_tag_links(&self) -> Result<Vec<(String, String)>, StoreError> {
        Err(unbuilt())
    }
    fn memory_ids_with_query(&self) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn memory_ids_newest_first(
        &self,
        _visit: &mut dyn FnMut(&str) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn embedding_counts_by_model(&self) -> Result<Vec<(String, i64)>, StoreError> {
        Err(unbuilt())
    }
    fn texts_and_stamps(
        &self,
        _model: &str,
        _canonical_ids: &[String],
    ) -> Result<HashMap<String, (String, Option<Stamp>)>, StoreError> {
        Err(unbuilt())
    }
    fn coverage(&self, _model: &str, _revision: &str) -> Result<Coverage, StoreError> {
        Err(unbuilt())
    }
    fn stale_or_missing(&self, _model: &str, _revision: &str) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn stale_live_rows(&self, _model: &str, _revision: &str) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn doc_count(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn docs_lacking(&self, _model: &str) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn live_rows(&self, _model: &str, _revision: &str) -> Result<Vec<LiveRow>, StoreError> {
        Err(unbuilt())
    }
    fn live_row_versions(
        &self,
        _model: &str,
        _revision: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        Err(unbuilt())
    }
    fn vector_and_version(
        &self,
        _canonical_id: &str,
        _model: &str,
        _revision: &str,
    ) -> Result<Option<(Vec<f32>, String)>, StoreError> {
        Err(unbuilt())
    }
    fn for_each_live_row(
        &self,
        _model: &str,
        _revision: &str,
        _each: &mut dyn FnMut(&str, &str, &[u8]),
    ) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn for_each_memory_tag(&self, _each: &mut dyn FnMut(&str, &str)) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn setting(&self, _key: &str) -> Result<Option<String>, StoreError> {
        Err(unbuilt())
    }
    fn data_version(&self) -> Result<i64, StoreError> {
        Err(unbuilt())
    }
    fn docs_version(&self) -> Result<String, StoreError> {
        Err(unbuilt())
    }
    fn embedding_changes(&self) -> Result<Option<i64>, StoreError> {
        Err(unbuilt())
    }
    fn vectors_state(&self) -> Result<Option<VectorsState>, StoreError> {
        Err(unbuilt())
    }
    fn begin_snapshot(&self) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn end_snapshot(&self) -> Result<(), StoreError> {
        Err(unbuilt())
    }
}
impl StoreWrite for PgWriteTx<'_> {
    fn put_datasource(&self, _datasource: &Datasource) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn delete_datasource(&self, _name: &str) -> Result<bool, StoreError> {
        Err(unbuilt())
    }
    fn put_model(&self, _model: &Model) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn delete_model(&self, _datasource: &str, _name: &str) -> Result<bool, StoreError> {
        Err(unbuilt())
    }
    fn delete_models_of(&self, _datasource: &str) -> Result<usize, StoreError> {
        Err(unbuilt())
    }
    fn upsert_doc(&self, _doc: &StoredDoc) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn delete_doc(&self, _canonical_id: &str) -> Result<bool, StoreError> {
        Err(unbuilt())
    }
    fn delete_docs_under(&self, _root: &str) -> Result<Vec<String>, StoreError> {
        Err(unbuilt())
    }
    fn mark_indexed(&self, _lag: &IndexLag) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn clear_index_state(&self) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn put_embedding(
        &self,
        _canonical_id: &str,
        _model: &str,
        _revision: &str,
        _content_hash: &str,
        _vector: &[f32],
        _updated_at: &str,
    ) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn delete_embeddings_under(&self, _root: &str) -> Result<usize, StoreError> {
        Err(unbuilt())
    }
    fn delete_embeddings_of(&self, _canonical_id: &str) -> Result<usize, StoreError> {
        Err(unbuilt())
    }
    fn put_memory(&self, _memory: &Memory) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn delete_memory(&self, _id: &str) -> Result<bool, StoreError> {
        Err(unbuilt())
    }
    fn strip_tags_under(&self, _root: &str) -> Result<Vec<Memory>, StoreError> {
        Err(unbuilt())
    }
    fn suspend_counts(&self) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn resume_counts(&self) -> Result<(), StoreError> {
        Err(unbuilt())
    }
    fn set_setting(&self, _key: &str, _value: &str) -> Result<(), StoreError> {
        Err(unbuilt())
    }
}
