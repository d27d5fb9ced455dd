//! [`StoreRead`] and [`StoreWrite`] on SQLite: each method is the submodule's query of the same
//! name, on the connection the reader holds.

use std::collections::{BTreeSet, HashMap};

use rusqlite::Connection;

use super::{catalog, docs, embeddings, memories, settings, SqliteStore, SqliteWriteTx};
use crate::records::{Datasource, Memory, Model, Occasion};
use crate::store::rows::{
    Coverage, IndexLag, LiveRow, Marked, Stamp, StoredDoc, TaggedMemory, VectorChanges,
    VectorsState,
};
use crate::store::{StoreError, StoreRead, StoreWrite};

/// What reads an SQLite store: a connection, an open [`SqliteStore`], a [`SqliteWriteTx`] (which sees its
/// own writes).
pub trait Connected {
    /// The connection the reads run on.
    fn connection(&self) -> &Connection;
}

impl Connected for Connection {
    fn connection(&self) -> &Connection {
        self
    }
}

impl Connected for SqliteStore {
    fn connection(&self) -> &Connection {
        self.conn()
    }
}

impl Connected for SqliteWriteTx<'_> {
    fn connection(&self) -> &Connection {
        self
    }
}

impl<T: Connected> StoreRead for T {
    fn datasource(&self, name: &str) -> Result<Option<Datasource>, StoreError> {
        catalog::datasource(self.connection(), name)
    }
    fn datasources(&self) -> Result<Vec<Datasource>, StoreError> {
        catalog::datasources(self.connection())
    }
    fn datasource_names(&self) -> Result<BTreeSet<String>, StoreError> {
        catalog::datasource_names(self.connection())
    }
    fn model(&self, datasource: &str, name: &str) -> Result<Option<Model>, StoreError> {
        catalog::model(self.connection(), datasource, name)
    }
    fn models(&self, datasource: Option<&str>) -> Result<Vec<Model>, StoreError> {
        catalog::models(self.connection(), datasource)
    }
    fn model_skeletons(&self) -> Result<Vec<crate::records::skeleton::Model>, StoreError> {
        catalog::model_skeletons(self.connection())
    }

    fn doc(&self, canonical_id: &str) -> Result<Option<StoredDoc>, StoreError> {
        docs::get(self.connection(), canonical_id)
    }
    fn docs(&self, canonical_ids: &[String]) -> Result<Vec<StoredDoc>, StoreError> {
        // A cached statement per id: SQLite answers in-process, so one lookup is as cheap as
        // a share of a larger statement.
        let mut found = Vec::with_capacity(canonical_ids.len());
        for id in canonical_ids {
            found.extend(docs::get(self.connection(), id)?);
        }
        Ok(found)
    }
    fn docs_of_datasource(&self, datasource: &str) -> Result<Vec<StoredDoc>, StoreError> {
        docs::of_datasource(self.connection(), datasource)
    }
    fn all_docs(&self) -> Result<Vec<StoredDoc>, StoreError> {
        docs::all(self.connection())
    }
    fn doc_ids(&self) -> Result<Vec<String>, StoreError> {
        docs::ids(self.connection())
    }
    fn doc_counts_by_kind(&self) -> Result<Vec<(String, i64)>, StoreError> {
        docs::counts_by_kind(self.connection())
    }
    fn memory_datasources(&self, memory_id: &str) -> Result<Vec<String>, StoreError> {
        docs::memory_datasources(self.connection(), memory_id)
    }
    fn index_lag(&self) -> Result<IndexLag, StoreError> {
        docs::index_lag(self.connection())
    }
    fn indexed_count(&self) -> Result<i64, StoreError> {
        docs::indexed_count(self.connection())
    }
    fn docs_changed_since(&self, _since: &str) -> Result<Option<IndexLag>, StoreError> {
        Ok(None)
    }

    fn memory(&self, id: &str) -> Result<Option<Memory>, StoreError> {
        memories::get(self.connection(), id)
    }
    fn memories(&self) -> Result<Vec<Memory>, StoreError> {
        memories::all(self.connection())
    }
    fn memories_by_ids(&self, ids: &[String]) -> Result<Vec<Memory>, StoreError> {
        // In process, a lookup per id is as cheap as one statement for all.
        let mut found = Vec::new();
        for id in ids {
            found.extend(memories::get(self.connection(), id)?);
        }
        Ok(found)
    }
    fn memory_exists(&self, id: &str) -> Result<bool, StoreError> {
        memories::exists(self.connection(), id)
    }
    fn largest_int_id(&self) -> Result<Option<String>, StoreError> {
        memories::largest_int_id(self.connection())
    }
    fn largest_prefixed_id(&self, prefix: &str) -> Result<Option<String>, StoreError> {
        memories::largest_prefixed_id(self.connection(), prefix)
    }
    fn memory_ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
        memories::ids_with_prefix(self.connection(), prefix)
    }
    fn memory_count(&self) -> Result<i64, StoreError> {
        memories::count(self.connection())
    }
    fn marked_memories(&self) -> Result<Vec<Marked>, StoreError> {
        memories::marked(self.connection())
    }
    fn memories_tagged_under(&self, root: &str) -> Result<Vec<Memory>, StoreError> {
        memories::tagged_under(self.connection(), root)
    }
    fn tagged_memory(&self, id: &str) -> Result<Option<TaggedMemory>, StoreError> {
        memories::tagged(self.connection(), id)
    }
    fn tagged_memories(&self, ids: &[String]) -> Result<Vec<TaggedMemory>, StoreError> {
        let mut found = Vec::with_capacity(ids.len());
        for id in ids {
            found.extend(memories::tagged(self.connection(), id)?);
        }
        Ok(found)
    }
    fn memory_occasions(&self, ids: &[String]) -> Result<Vec<(String, Occasion)>, StoreError> {
        memories::occasions(self.connection(), ids)
    }
    fn any_memory_session(&self) -> Result<bool, StoreError> {
        memories::any_session(self.connection())
    }
    fn session_neighbours(&self, id: &str) -> Result<(Option<String>, Option<String>), StoreError> {
        memories::session_neighbours(self.connection(), id)
    }
    fn memories_sharing_a_tag(&self, tags: &[String]) -> Result<Vec<TaggedMemory>, StoreError> {
        memories::sharing_a_tag(self.connection(), tags)
    }
    fn memory_count_under(&self, datasource: Option<&str>) -> Result<usize, StoreError> {
        memories::count_under(self.connection(), datasource)
    }
    fn entity_tag_counts(
        &self,
        datasource: Option<&str>,
        visit: &mut dyn FnMut(&str, usize),
    ) -> Result<(), StoreError> {
        memories::entity_tag_counts(self.connection(), datasource, visit)
    }
    fn live_memory_tag_count(&self) -> Result<usize, StoreError> {
        memories::live_memory_tag_count(self.connection())
    }
    fn memory_tag_links(&self) -> Result<Vec<(String, String)>, StoreError> {
        memories::memory_tag_links(self.connection())
    }
    fn memory_ids_with_query(&self) -> Result<Vec<String>, StoreError> {
        memories::ids_with_query(self.connection())
    }
    fn memory_ids_newest_first(
        &self,
        visit: &mut dyn FnMut(&str) -> Result<bool, StoreError>,
    ) -> Result<(), StoreError> {
        memories::ids_newest_first(self.connection(), visit)
    }

    fn embedding_counts_by_model(&self) -> Result<Vec<(String, i64)>, StoreError> {
        embeddings::counts_by_model(self.connection())
    }
    fn texts_and_stamps(
        &self,
        model: &str,
        canonical_ids: &[String],
    ) -> Result<HashMap<String, (String, Option<Stamp>)>, StoreError> {
        embeddings::texts_and_stamps(self.connection(), model, canonical_ids)
    }
    fn coverage(&self, model: &str, revision: &str) -> Result<Coverage, StoreError> {
        embeddings::coverage(self.connection(), model, revision)
    }
    fn stale_or_missing(&self, model: &str, revision: &str) -> Result<Vec<String>, StoreError> {
        embeddings::stale_or_missing(self.connection(), model, revision)
    }
    fn stale_live_rows(&self, model: &str, revision: &str) -> Result<i64, StoreError> {
        embeddings::stale_live_rows(self.connection(), model, revision)
    }
    fn doc_count(&self) -> Result<i64, StoreError> {
        embeddings::doc_count(self.connection())
    }
    fn docs_lacking(&self, model: &str) -> Result<i64, StoreError> {
        embeddings::docs_lacking(self.connection(), model)
    }
    fn live_rows(&self, model: &str, revision: &str) -> Result<Vec<LiveRow>, StoreError> {
        embeddings::live_rows(self.connection(), model, revision)
    }
    fn live_row_versions(
        &self,
        model: &str,
        revision: &str,
    ) -> Result<Vec<(String, String, String)>, StoreError> {
        embeddings::live_row_versions(self.connection(), model, revision)
    }
    fn vector_and_version(
        &self,
        canonical_id: &str,
        model: &str,
        revision: &str,
    ) -> Result<Option<(Vec<f32>, String)>, StoreError> {
        embeddings::vector_and_version(self.connection(), canonical_id, model, revision)
    }
    fn for_each_live_row(
        &self,
        model: &str,
        revision: &str,
        each: &mut dyn FnMut(&str, &str, &[u8]),
    ) -> Result<(), StoreError> {
        embeddings::for_each_live_row(self.connection(), model, revision, each)
    }
    fn for_each_memory_tag(&self, each: &mut dyn FnMut(&str, &str)) -> Result<(), StoreError> {
        embeddings::for_each_memory_tag(self.connection(), each)
    }

    fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
        settings::get(self.connection(), key)
    }

    fn data_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .connection()
            .query_row("PRAGMA data_version", [], |r| r.get(0))?)
    }
    fn begin_snapshot(&self) -> Result<(), StoreError> {
        // A deferred read transaction: SQLite takes its snapshot at the first read.
        Ok(self.connection().execute_batch("BEGIN DEFERRED")?)
    }
    fn end_snapshot(&self) -> Result<(), StoreError> {
        Ok(self.connection().execute_batch("COMMIT")?)
    }
    fn docs_version(&self) -> Result<String, StoreError> {
        docs::version(self.connection())
    }
    fn embedding_changes(&self) -> Result<Option<i64>, StoreError> {
        embeddings::change_count(self.connection())
    }
    fn vectors_state(&self) -> Result<Option<VectorsState>, StoreError> {
        embeddings::vectors_state(self.connection())
    }
    fn vector_changes(
        &self,
        since: &VectorsState,
        model: &str,
        revision: &str,
        limit: usize,
    ) -> Result<Option<VectorChanges>, StoreError> {
        embeddings::vector_changes(self.connection(), since, model, revision, limit)
    }
}

impl StoreWrite for SqliteWriteTx<'_> {
    fn put_datasource(&self, datasource: &Datasource) -> Result<(), StoreError> {
        catalog::put_datasource(self, datasource)
    }
    fn delete_datasource(&self, name: &str) -> Result<bool, StoreError> {
        catalog::delete_datasource(self, name)
    }
    fn put_model(&self, model: &Model) -> Result<(), StoreError> {
        catalog::put_model(self, model)
    }
    fn delete_model(&self, datasource: &str, name: &str) -> Result<bool, StoreError> {
        catalog::delete_model(self, datasource, name)
    }
    fn delete_models_of(&self, datasource: &str) -> Result<usize, StoreError> {
        catalog::delete_models_of(self, datasource)
    }

    fn upsert_doc(&self, doc: &StoredDoc) -> Result<(), StoreError> {
        docs::upsert(self, doc)
    }
    fn delete_doc(&self, canonical_id: &str) -> Result<bool, StoreError> {
        docs::delete(self, canonical_id)
    }
    fn delete_docs_under(&self, root: &str) -> Result<Vec<String>, StoreError> {
        docs::delete_under(self, root)
    }
    fn mark_indexed(&self, lag: &IndexLag) -> Result<(), StoreError> {
        docs::mark_indexed(self, lag)
    }
    fn clear_index_state(&self) -> Result<(), StoreError> {
        docs::clear_index_state(self)
    }

    fn put_embedding(
        &self,
        canonical_id: &str,
        model: &str,
        revision: &str,
        content_hash: &str,
        vector: &[f32],
        updated_at: &str,
    ) -> Result<(), StoreError> {
        embeddings::put(
            self,
            canonical_id,
            model,
            revision,
            content_hash,
            vector,
            updated_at,
        )
    }
    fn delete_embeddings_under(&self, root: &str) -> Result<usize, StoreError> {
        embeddings::delete_under(self, root)
    }
    fn delete_embeddings_of(&self, canonical_id: &str) -> Result<usize, StoreError> {
        embeddings::delete_exact(self, canonical_id)
    }

    fn put_memory(&self, memory: &Memory) -> Result<(), StoreError> {
        memories::put(self, memory)
    }
    fn delete_memory(&self, id: &str) -> Result<bool, StoreError> {
        memories::delete(self, id)
    }
    fn strip_tags_under(&self, root: &str) -> Result<Vec<Memory>, StoreError> {
        memories::strip_tags_under(self, root)
    }
    fn suspend_counts(&self) -> Result<(), StoreError> {
        memories::suspend_counts(self)
    }
    fn resume_counts(&self) -> Result<(), StoreError> {
        memories::resume_counts(self)
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        settings::set(self, key, value)
    }
}
