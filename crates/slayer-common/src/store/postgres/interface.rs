//! [`StoreRead`] for [`PgStore`] and [`PgWriteTx`] (which reads on the transaction's
//! connection, seeing its own writes), and [`StoreWrite`] for [`PgWriteTx`]: each method is the
//! submodule's query of the same name. A callback is never called while the connection is held
//! (it may read the store): its rows are read first, or a chunk at a time.

use std::collections::{BTreeSet, HashMap};

use super::{catalog, changes, docs, embeddings, memories, PgStore, PgWriteTx};
use crate::records::{Datasource, Memory, Model, Occasion};
use crate::store::rows::{
    Coverage, IndexLag, LiveRow, Marked, Stamp, StoredDoc, TaggedMemory, VectorChanges,
    VectorsState,
};
use crate::store::{StoreError, StoreRead, StoreWrite};

/// Rows of vectors read per round trip by `for_each_live_row`.
const LIVE_ROW_CHUNK: i64 = 4096;
/// Memory ids read per round trip by `memory_ids_newest_first` (callers mostly stop early).
const NEWEST_PAGE: i64 = 256;

/// What reads a PostgreSQL store: the store itself, or its write transaction.
trait Reader {
    fn pg(&self) -> &PgStore;
}

impl Reader for PgStore {
    fn pg(&self) -> &PgStore {
        self
    }
}

impl Reader for PgWriteTx<'_> {
    fn pg(&self) -> &PgStore {
        self.store
    }
}

macro_rules! store_read {
    ($reader:ty) => {
        impl StoreRead for $reader {
            fn datasource(&self, name: &str) -> Result<Option<Datasource>, StoreError> {
                self.pg().with(|s| catalog::datasource(s, name))
            }
            fn datasources(&self) -> Result<Vec<Datasource>, StoreError> {
                self.pg().with(catalog::datasources)
            }
            fn datasource_names(&self) -> Result<BTreeSet<String>, StoreError> {
                self.pg().with(catalog::datasource_names)
            }
            fn model(&self, datasource: &str, name: &str) -> Result<Option<Model>, StoreError> {
                self.pg().with(|s| catalog::model(s, datasource, name))
            }
            fn models(&self, datasource: Option<&str>) -> Result<Vec<Model>, StoreError> {
                self.pg().with(|s| catalog::models(s, datasource))
            }
            fn model_skeletons(&self) -> Result<Vec<crate::records::skeleton::Model>, StoreError> {
                self.pg().with(catalog::model_skeletons)
            }

            fn doc(&self, canonical_id: &str) -> Result<Option<StoredDoc>, StoreError> {
                self.pg().with(|s| docs::get(s, canonical_id))
            }
            fn docs(&self, canonical_ids: &[String]) -> Result<Vec<StoredDoc>, StoreError> {
                self.pg().with(|s| docs::get_many(s, canonical_ids))
            }
            fn docs_of_datasource(&self, datasource: &str) -> Result<Vec<StoredDoc>, StoreError> {
                self.pg().with(|s| docs::of_datasource(s, datasource))
            }
            fn all_docs(&self) -> Result<Vec<StoredDoc>, StoreError> {
                self.pg().with(docs::all)
            }
            fn doc_ids(&self) -> Result<Vec<String>, StoreError> {
                self.pg().with(docs::ids)
            }
            fn doc_counts_by_kind(&self) -> Result<Vec<(String, i64)>, StoreError> {
                self.pg().with(docs::counts_by_kind)
            }
            fn memory_datasources(&self, memory_id: &str) -> Result<Vec<String>, StoreError> {
                self.pg().with(|s| docs::memory_datasources(s, memory_id))
            }
            fn memories_datasources(
                &self,
                memory_ids: &[&str],
            ) -> Result<HashMap<String, Vec<String>>, StoreError> {
                self.pg()
                    .with(|s| docs::memories_datasources(s, memory_ids))
            }
            fn index_lag(&self) -> Result<IndexLag, StoreError> {
                // No record of what an index holds: every doc is to be indexed.
                self.pg().with(docs::all).map(|upserts| IndexLag {
                    upserts,
                    deletes: Vec::new(),
                })
            }
            fn indexed_count(&self) -> Result<i64, StoreError> {
                self.pg().with(docs::count)
            }
            fn docs_changed_since(&self, since: &str) -> Result<Option<IndexLag>, StoreError> {
                self.pg()
                    .with(|s| changes::docs_changed_since(s, since))
                    .map(Some)
            }

            fn memory(&self, id: &str) -> Result<Option<Memory>, StoreError> {
                self.pg().with(|s| memories::get(s, id))
            }
            fn memories(&self) -> Result<Vec<Memory>, StoreError> {
                self.pg().with(memories::all)
            }
            fn memories_by_ids(&self, ids: &[String]) -> Result<Vec<Memory>, StoreError> {
                self.pg().with(|s| memories::get_many(s, ids))
            }
            fn memory_exists(&self, id: &str) -> Result<bool, StoreError> {
                self.pg().with(|s| memories::exists(s, id))
            }
            fn largest_int_id(&self) -> Result<Option<String>, StoreError> {
                self.pg().with(memories::largest_int_id)
            }
            fn largest_prefixed_id(&self, prefix: &str) -> Result<Option<String>, StoreError> {
                self.pg().with(|s| memories::largest_prefixed_id(s, prefix))
            }
            fn memory_ids_with_prefix(&self, prefix: &str) -> Result<Vec<String>, StoreError> {
                self.pg().with(|s| memories::ids_with_prefix(s, prefix))
            }
            fn memory_count(&self) -> Result<i64, StoreError> {
                self.pg().with(memories::count)
            }
            fn marked_memories(&self) -> Result<Vec<Marked>, StoreError> {
                self.pg().with(memories::marked)
            }
            fn memories_tagged_under(&self, root: &str) -> Result<Vec<Memory>, StoreError> {
                self.pg().with(|s| memories::tagged_under(s, root))
            }
            fn tagged_memory(&self, id: &str) -> Result<Option<TaggedMemory>, StoreError> {
                self.pg().with(|s| memories::tagged(s, id))
            }
            fn tagged_memories(&self, ids: &[String]) -> Result<Vec<TaggedMemory>, StoreError> {
                self.pg().with(|s| memories::tagged_many(s, ids))
            }
            fn memory_occasions(
                &self,
                ids: &[String],
            ) -> Result<Vec<(String, Occasion)>, StoreError> {
                self.pg().with(|s| memories::occasions(s, ids))
            }
            fn any_memory_session(&self) -> Result<bool, StoreError> {
                self.pg().with(memories::any_session)
            }
            fn session_neighbours(
                &self,
                id: &str,
            ) -> Result<(Option<String>, Option<String>), StoreError> {
                self.pg().with(|s| memories::session_neighbours(s, id))
            }
            fn memories_sharing_a_tag(
                &self,
                tags: &[String],
            ) -> Result<Vec<TaggedMemory>, StoreError> {
                self.pg().with(|s| memories::sharing_a_tag(s, tags))
            }
            fn memory_count_under(&self, datasource: Option<&str>) -> Result<usize, StoreError> {
                self.pg().with(|s| memories::count_under(s, datasource))
            }
            fn entity_tag_counts(
                &self,
                datasource: Option<&str>,
                visit: &mut dyn FnMut(&str, usize),
            ) -> Result<(), StoreError> {
                let counts = self
                    .pg()
                    .with(|s| memories::entity_tag_counts(s, datasource))?;
                for (entity, n) in &counts {
                    visit(entity, *n as usize);
                }
                Ok(())
            }
            fn live_memory_tag_count(&self) -> Result<usize, StoreError> {
                self.pg().with(memories::live_memory_tag_count)
            }
            fn memory_tag_links(&self) -> Result<Vec<(String, String)>, StoreError> {
                self.pg().with(memories::memory_tag_links)
            }
            fn memory_ids_with_query(&self) -> Result<Vec<String>, StoreError> {
                self.pg().with(memories::ids_with_query)
            }
            fn memory_ids_newest_first(
                &self,
                visit: &mut dyn FnMut(&str) -> Result<bool, StoreError>,
            ) -> Result<(), StoreError> {
                let mut last: Option<(String, String)> = None;
                loop {
                    let after = last.as_ref().map(|(c, i)| (c.as_str(), i.as_str()));
                    let page = self
                        .pg()
                        .with(|s| memories::newest_first_page(s, after, NEWEST_PAGE))?;
                    for (_, id) in &page {
                        if !visit(id)? {
                            return Ok(());
                        }
                    }
                    if (page.len() as i64) < NEWEST_PAGE {
                        return Ok(());
                    }
                    last = page.into_iter().last();
                }
            }

            fn embedding_counts_by_model(&self) -> Result<Vec<(String, i64)>, StoreError> {
                self.pg().with(embeddings::counts_by_model)
            }
            fn texts_and_stamps(
                &self,
                model: &str,
                canonical_ids: &[String],
            ) -> Result<HashMap<String, (String, Option<Stamp>)>, StoreError> {
                self.pg()
                    .with(|s| embeddings::texts_and_stamps(s, model, canonical_ids))
            }
            fn coverage(&self, model: &str, revision: &str) -> Result<Coverage, StoreError> {
                self.pg().with(|s| embeddings::coverage(s, model, revision))
            }
            fn stale_or_missing(
                &self,
                model: &str,
                revision: &str,
            ) -> Result<Vec<String>, StoreError> {
                self.pg()
                    .with(|s| embeddings::stale_or_missing(s, model, revision))
            }
            fn stale_live_rows(&self, model: &str, revision: &str) -> Result<i64, StoreError> {
                self.pg()
                    .with(|s| embeddings::stale_live_rows(s, model, revision))
            }
            fn doc_count(&self) -> Result<i64, StoreError> {
                self.pg().with(docs::count)
            }
            fn docs_lacking(&self, model: &str) -> Result<i64, StoreError> {
                self.pg().with(|s| embeddings::docs_lacking(s, model))
            }
            fn live_rows(&self, model: &str, revision: &str) -> Result<Vec<LiveRow>, StoreError> {
                self.pg()
                    .with(|s| embeddings::live_rows(s, model, revision))
            }
            fn live_row_versions(
                &self,
                model: &str,
                revision: &str,
            ) -> Result<Vec<(String, String, String)>, StoreError> {
                self.pg()
                    .with(|s| embeddings::live_row_versions(s, model, revision))
            }
            fn vector_and_version(
                &self,
                canonical_id: &str,
                model: &str,
                revision: &str,
            ) -> Result<Option<(Vec<f32>, String)>, StoreError> {
                self.pg()
                    .with(|s| embeddings::vector_and_version(s, canonical_id, model, revision))
            }
            fn for_each_live_row(
                &self,
                model: &str,
                revision: &str,
                each: &mut dyn FnMut(&str, &str, &[u8]),
            ) -> Result<(), StoreError> {
                let mut last: Option<String> = None;
                loop {
                    let chunk = self.pg().with(|s| {
                        embeddings::live_row_chunk(
                            s,
                            model,
                            revision,
                            last.as_deref(),
                            LIVE_ROW_CHUNK,
                        )
                    })?;
                    for (id, kind, vector) in &chunk {
                        each(id, kind, vector);
                    }
                    if (chunk.len() as i64) < LIVE_ROW_CHUNK {
                        return Ok(());
                    }
                    last = chunk.into_iter().last().map(|(id, _, _)| id);
                }
            }
            fn for_each_memory_tag(
                &self,
                each: &mut dyn FnMut(&str, &str),
            ) -> Result<(), StoreError> {
                for (memory, tag) in &self.pg().with(embeddings::memory_tags)? {
                    each(memory, tag);
                }
                Ok(())
            }

            fn setting(&self, key: &str) -> Result<Option<String>, StoreError> {
                self.pg().with(|s| {
                    Ok(
                        s.query_opt("SELECT value FROM settings WHERE key = $1", &[&key])?
                            .map(|r| r.get(0)),
                    )
                })
            }

            fn data_version(&self) -> Result<i64, StoreError> {
                self.pg().with(changes::data_version)
            }
            fn docs_version(&self) -> Result<String, StoreError> {
                self.pg().with(changes::docs_version)
            }
            fn embedding_changes(&self) -> Result<Option<i64>, StoreError> {
                self.pg().with(changes::embedding_changes)
            }
            fn vectors_state(&self) -> Result<Option<VectorsState>, StoreError> {
                self.pg().with(changes::vectors_state)
            }
            fn vector_changes(
                &self,
                since: &VectorsState,
                model: &str,
                revision: &str,
                limit: usize,
            ) -> Result<Option<VectorChanges>, StoreError> {
                self.pg()
                    .with(|s| changes::vector_changes(s, since, model, revision, limit))
            }

            fn begin_snapshot(&self) -> Result<(), StoreError> {
                self.pg().begin_snapshot()
            }
            fn end_snapshot(&self) -> Result<(), StoreError> {
                self.pg().end_snapshot()
            }
        }
    };
}

store_read!(PgStore);
store_read!(PgWriteTx<'_>);

impl StoreWrite for PgWriteTx<'_> {
    fn put_datasource(&self, datasource: &Datasource) -> Result<(), StoreError> {
        self.pg().with(|s| catalog::put_datasource(s, datasource))
    }
    fn delete_datasource(&self, name: &str) -> Result<bool, StoreError> {
        self.pg().with(|s| catalog::delete_datasource(s, name))
    }
    fn put_model(&self, model: &Model) -> Result<(), StoreError> {
        self.pg().with(|s| catalog::put_models(s, &[model]))
    }
    fn put_models(&self, models: &[&Model]) -> Result<(), StoreError> {
        self.pg().with(|s| catalog::put_models(s, models))
    }
    fn delete_model(&self, datasource: &str, name: &str) -> Result<bool, StoreError> {
        self.pg()
            .with(|s| catalog::delete_model(s, datasource, name))
    }
    fn delete_models_of(&self, datasource: &str) -> Result<usize, StoreError> {
        self.pg().with(|s| catalog::delete_models_of(s, datasource))
    }

    fn upsert_doc(&self, doc: &StoredDoc) -> Result<(), StoreError> {
        self.pg()
            .with(|s| docs::upsert_many(s, std::slice::from_ref(doc)))
    }
    fn upsert_docs(&self, stored: &[StoredDoc]) -> Result<(), StoreError> {
        self.pg().with(|s| docs::upsert_many(s, stored))
    }
    fn delete_doc(&self, canonical_id: &str) -> Result<bool, StoreError> {
        self.pg().with(|s| docs::delete(s, canonical_id))
    }
    fn delete_docs_under(&self, root: &str) -> Result<Vec<String>, StoreError> {
        self.pg().with(|s| docs::delete_under(s, root))
    }
    fn mark_indexed(&self, _lag: &IndexLag) -> Result<(), StoreError> {
        // A server store's index is a per-host cache that records its own state.
        Ok(())
    }
    fn clear_index_state(&self) -> Result<(), StoreError> {
        Ok(())
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
        self.pg().with(|s| {
            embeddings::put(
                s,
                canonical_id,
                model,
                revision,
                content_hash,
                vector,
                updated_at,
            )
        })
    }
    fn delete_embeddings_under(&self, root: &str) -> Result<usize, StoreError> {
        self.pg().with(|s| embeddings::delete_under(s, root))
    }
    fn delete_embeddings_of(&self, canonical_id: &str) -> Result<usize, StoreError> {
        self.pg()
            .with(|s| embeddings::delete_exact(s, canonical_id))
    }

    fn put_memory(&self, memory: &Memory) -> Result<(), StoreError> {
        self.pg()
            .with(|s| memories::put_many(s, std::slice::from_ref(memory)))
    }
    fn put_memories(&self, batch: &[Memory]) -> Result<(), StoreError> {
        self.pg().with(|s| memories::put_many(s, batch))
    }
    fn delete_memory(&self, id: &str) -> Result<bool, StoreError> {
        self.pg().with(|s| memories::delete(s, id))
    }
    fn strip_tags_under(&self, root: &str) -> Result<Vec<Memory>, StoreError> {
        self.pg().with(|s| memories::strip_tags_under(s, root))
    }
    fn suspend_counts(&self) -> Result<(), StoreError> {
        self.pg().with(memories::suspend_counts)
    }
    fn resume_counts(&self) -> Result<(), StoreError> {
        self.pg().with(memories::resume_counts)
    }

    fn set_setting(&self, key: &str, value: &str) -> Result<(), StoreError> {
        self.pg().with(|s| {
            s.execute(
                "INSERT INTO settings (key, value) VALUES ($1, $2)
                 ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                &[&key, &value],
            )?;
            Ok(())
        })
    }
}
