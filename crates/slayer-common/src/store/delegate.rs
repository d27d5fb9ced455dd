//! [`StoreRead`] and [`StoreWrite`] on the facade types: each method is the backend's.

use std::collections::{BTreeSet, HashMap};

use super::rows::{
    Coverage, IndexLag, LiveRow, Marked, Stamp, StoredDoc, TaggedMemory, VectorChanges,
    VectorsState,
};
use super::{Store, StoreError, StoreRead, StoreWrite, WriteTx};
use crate::records::{Datasource, Memory, Model, Occasion};

/// `StoreRead` on `$ty`, every method handed to what `self.$via()` returns: one list for the
/// store and its write transaction.
macro_rules! delegate_reads {
    ($ty:ty, $via:ident) => {
        impl StoreRead for $ty {
            fn datasource(&self, name: &str) -> Result<Option<Datasource>, StoreError> {
                self.$via().datasource(name)
            }
            fn datasources(&self) -> Result<Vec<Datasource>, StoreError> {
                self.$via().datasources()
            }
            fn datasource_names(&self) -> Result<BTreeSet<String>, StoreError> {
                self.$via().datasource_names()
            }
            fn model(&self, datasource: &str, name: &str) -> Result<Option<Model>, StoreError> {
                self.$via().model(datasource, name)
            }
            fn models(&self, datasource: Option<&str>) -> Result<Vec<Model>, StoreError> {
                self.$via().models(datasource)
            }
            fn model_skeletons(&self) -> Result<Vec<crate::records::skeleton::Model>, StoreError> {
                self.$via().model_skeletons()
            }
            fn doc(&self, canonical_id: &str) -> Result<Option<StoredDoc>, StoreError> {
                self.$via().doc(canonical_id)
            }
            fn docs(&self, canonical_ids: &[String]) -> Result<Vec<StoredDoc>, StoreError> {
                self.$via().docs(canonical_ids)
            }
            fn docs_of_datasource(&self, datasource: &str) -> Result<Vec<StoredDoc>, StoreError> {
                self.$via().docs_of_datasource(datasource)
            }
            fn all_docs(&self) -> Result<Vec<StoredDoc>, StoreError> {
                self.$via().all_docs()
            }
            fn doc_ids(&self) -> Result<Vec<String>, StoreError> {
                self.$via().doc_ids()
            }
            fn doc_counts_by_kind(&self) -> Result<Vec<(String, i64)>, StoreError> {
                self.$via().doc_counts_by_kind()
            }
            fn memory_datasources(&self, memory_id: &str) -> Result<Vec<String>, StoreError> {
                self.$via().memory_datasources(memory_id)
            }
            fn memories_datasources(
                &self,
                memory_ids: &[&str],
            ) -> Result<HashMap<String, Vec<String>>, StoreError> {
                self.$via().memories_datasources(memory_ids)
            }
            fn index_lag(&self) -> Result<IndexLag, StoreError> {
                self.$via().index_lag()
            }
            fn indexed_count(&self) -> Result<i64, StoreError> {
                self.$via().indexed_count()
            }
            fn docs_changed_since(&self, since: &str) -> Result<Option<IndexLag>, StoreError> {
                self.$via().docs_changed_since(since)
            }
            fn memory(&self, id: &str) -> Result<Option<Memory>, StoreError> {
                self.$via().memory(id)
            }
            fn memories(&self) -> Result<Vec<Memory>, StoreError> {
                self.$via().memories()
            }
            fn memories_by_ids(&self, ids: &[String]) -> Result<Vec<Memory>, StoreError> {
                self.$via().memories_by_ids(ids)
            }
            fn memory_exists(&self, id: &str) -> Result<bool, StoreError> {
                self.$via().memory_exists(id)
            }
            fn largest_int_id(&self) -> Result<Option<String>, StoreError> {
                self.$via().largest_int_id()
            }
            fn largest_prefixed_id(&self, prefix: &str) -> Result<Option<String>, StoreError> {
                self.$via().largest_prefixed_id(prefix)
            }
            fn memory_ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
                self.$via().memory_ids_with_prefix(prefix)
            }
            fn memory_count(&self) -> Result<i64, StoreError> {
                self.$via().memory_count()
            }
            fn marked_memories(&self) -> Result<Vec<Marked>, StoreError> {
                self.$via().marked_memories()
            }
            fn memories_tagged_under(&self, root: &str) -> Result<Vec<Memory>, StoreError> {
                self.$via().memories_tagged_under(root)
            }
            fn tagged_memory(&self, id: &str) -> Result<Option<TaggedMemory>, StoreError> {
                self.$via().tagged_memory(id)
            }
            fn tagged_memories(&self, ids: &[String]) -> Result<Vec<TaggedMemory>, StoreError> {
                self.$via().tagged_memories(ids)
            }
            fn memory_occasions(
                &self,
                ids: &[String],
            ) -> Result<Vec<(String, Occasion)>, StoreError> {
                self.$via().memory_occasions(ids)
            }
            fn any_memory_session(&self) -> Result<bool, StoreError> {
                self.$via().any_memory_session()
            }
            fn session_neighbours(
                &self,
                id: &str,
            ) -> Result<(Option<String>, Option<String>), StoreError> {
                self.$via().session_neighbours(id)
            }
            fn memories_sharing_a_tag(
                &self,
                tags: &[String],
            ) -> Result<Vec<TaggedMemory>, StoreError> {
                self.$via().memories_sharing_a_tag(tags)
            }
            fn memory_count_under(&self, datasource: Option<&str>) -> Result<usize, StoreError> {
                self.$via().memory_count_under(datasource)
            }
            fn entity_tag_counts(
                &self,
                datasource: Option<&str>,
                visit: &mut dyn FnMut(&str, usize),
            ) -> Result<(), StoreError> {
                self.$via().entity_tag_counts(datasource, visit)
            }
            fn live_memory_tag_count(&self) -> Result<usize, StoreError> {
                self.$via().live_memory_tag_count()
            }
            fn memory_tag_links(&self) -> Result<Vec<(String, String)>, StoreError> {
                self.$via().memory_tag_links()
            }
            fn memory_ids_with_query(&self) -> Result<Vec<String>, StoreError> {
                self.$via().memory_ids_with_query()
            }
            fn memory_ids_newest_first(
                &self,
                visit: &mut dyn FnMut(&str) -> Result<bool, StoreError>,
            ) -> Result<(), StoreError> {
                self.$via().memory_ids_newest_first(visit)
            }
            fn embedding_counts_by_model(&self) -> Result<Vec<(String, i64)>, StoreError> {
                self.$via().embedding_counts_by_model()
            }
            fn texts_and_stamps(
                &self,
                model: &str,
                canonical_ids: &[String],
            ) -> Result<HashMap<String, (String, Option<Stamp>)>, StoreError> {
                self.$via().texts_and_stamps(model, canonical_ids)
            }
            fn coverage(&self, model: &str, revision: &str) -> Result<Coverage, StoreError> {
                self.$via().coverage(model, revision)
            }
            fn stale_or_missing(
                &self,
                model: &str,
                revision: &str,
            ) -> Result<Vec<String>, StoreError> {
                self.$via().stale_or_missing(model, revision)
            }
            fn stale_live_rows(&self, model: &str, revision: &str) -> Result<i64, StoreError> {
                self.$via().stale_live_rows(model, revision)
            }
            fn doc_count(&self) -> Result<i64, StoreError> {
                self.$via().doc_count()
            }
            fn docs_lacking(&self, model: &str) -> Result<i64, StoreError> {
                self.$via().docs_lacking(model)
            }
            fn live_rows(&self, model: &str, revision: &str) -> Result<Vec<LiveRow>, StoreError> {
                self.$via().live_rows(model, revision)
            }
            fn live_row_versions(
                &self,
                model: &str,
                revision: &str,
            ) -> Result<Vec<(String, String, String)>, StoreError> {
                self.$via().live_row_versions(model, revision)
            }
            fn vector_and_version(
                &self,
                canonical_id: &str,
                model: &str,
                revision: &str,
            ) -> Result<Option<(Vec<f32>, String)>, StoreError> {
                self.$via()
                    .vector_and_version(canonical_id, model, revision)
            }
            fn for_each_live_row(
                &self,
                model: &str,
                revision: &str,
                each: &mut dyn FnMut(&str, &str, &[u8]),
            ) -> Result<(), StoreError> {
                self.$via().for_each_live_row(model, revision, each)
            }
            fn for_each_memory_tag(
                &self,
                each: &mut dyn FnMut(&str, &str),
            ) -> Result<(), StoreError> {
                self.$via().for_each_memory_tag(each)
            }
            fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
                self.$via().setting(key)
            }
            fn data_version(&self) -> Result<i64, StoreError> {
                self.$via().data_version()
            }
            fn docs_version(&self) -> Result<String, StoreError> {
                self.$via().docs_version()
            }
            fn embedding_changes(&self) -> Result<Option<i64>, StoreError> {
                self.$via().embedding_changes()
            }
            fn vectors_state(&self) -> Result<Option<VectorsState>, StoreError> {
                self.$via().vectors_state()
            }
            fn vector_changes(
                &self,
                since: &VectorsState,
                model: &str,
                revision: &str,
                limit: usize,
            ) -> Result<Option<VectorChanges>, StoreError> {
                self.$via().vector_changes(since, model, revision, limit)
            }
            fn begin_snapshot(&self) -> Result<(), StoreError> {
                self.$via().begin_snapshot()
            }
            fn end_snapshot(&self) -> Result<(), StoreError> {
                self.$via().end_snapshot()
            }
        }
    };
}

delegate_reads!(Store, reader);
delegate_reads!(WriteTx<'_>, backend);

impl StoreWrite for WriteTx<'_> {
    fn put_datasource(&self, datasource: &Datasource) -> Result<(), StoreError> {
        self.backend().put_datasource(datasource)
    }
    fn delete_datasource(&self, name: &str) -> Result<bool, StoreError> {
        self.backend().delete_datasource(name)
    }
    fn put_model(&self, model: &Model) -> Result<(), StoreError> {
        self.backend().put_model(model)
    }
    fn put_models(&self, models: &[&Model]) -> Result<(), StoreError> {
        self.backend().put_models(models)
    }
    fn delete_model(&self, datasource: &str, name: &str) -> Result<bool, StoreError> {
        self.backend().delete_model(datasource, name)
    }
    fn delete_models_of(&self, datasource: &str) -> Result<usize, StoreError> {
        self.backend().delete_models_of(datasource)
    }
    fn upsert_doc(&self, doc: &StoredDoc) -> Result<(), StoreError> {
        self.backend().upsert_doc(doc)
    }
    fn upsert_docs(&self, docs: &[StoredDoc]) -> Result<(), StoreError> {
        self.backend().upsert_docs(docs)
    }
    fn delete_doc(&self, canonical_id: &str) -> Result<bool, StoreError> {
        self.backend().delete_doc(canonical_id)
    }
    fn delete_docs_under(&self, root: &str) -> Result<Vec<String>, StoreError> {
        self.backend().delete_docs_under(root)
    }
    fn mark_indexed(&self, lag: &IndexLag) -> Result<(), StoreError> {
        self.backend().mark_indexed(lag)
    }
    fn clear_index_state(&self) -> Result<(), StoreError> {
        self.backend().clear_index_state()
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
        self.backend().put_embedding(
            canonical_id,
            model,
            revision,
            content_hash,
            vector,
            updated_at,
        )
    }
    fn delete_embeddings_under(&self, root: &str) -> Result<usize, StoreError> {
        self.backend().delete_embeddings_under(root)
    }
    fn delete_embeddings_of(&self, canonical_id: &str) -> Result<usize, StoreError> {
        self.backend().delete_embeddings_of(canonical_id)
    }
    fn put_memory(&self, memory: &Memory) -> Result<(), StoreError> {
        self.backend().put_memory(memory)
    }
    fn put_memories(&self, memories: &[Memory]) -> Result<(), StoreError> {
        self.backend().put_memories(memories)
    }
    fn delete_memory(&self, id: &str) -> Result<bool, StoreError> {
        self.backend().delete_memory(id)
    }
    fn strip_tags_under(&self, root: &str) -> Result<Vec<Memory>, StoreError> {
        self.backend().strip_tags_under(root)
    }
    fn suspend_counts(&self) -> Result<(), StoreError> {
        self.backend().suspend_counts()
    }
    fn resume_counts(&self) -> Result<(), StoreError> {
        self.backend().resume_counts()
    }
    fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.backend().set_setting(key, value)
    }
}
