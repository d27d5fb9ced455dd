//! Writing catalog records into the store and keeping their docs rendered.
//!
//! Everything here runs inside the caller's transaction: a command either commits all of it or
//! nothing. Docs are diffed by content hash, so re-loading identical records writes nothing.

use std::collections::{BTreeMap, BTreeSet};

use slayer_common::jsonl::{LineError, Record};
use slayer_common::records::{Datasource, Doc, Memory, Model};
use slayer_common::store::rows::StoredDoc;
use slayer_common::store::StoreWrite;

use crate::error::IndexError;
use crate::render;

/// What a write changed among the docs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DocChanges {
    /// Docs whose text is new or different, in rebuild order within each datasource.
    pub changed: Vec<Doc>,
    /// Canonical ids whose docs (and embedding rows) were deleted.
    pub deleted: Vec<String>,
}

impl DocChanges {
    /// Appends another change set.
    pub fn extend(&mut self, other: DocChanges) {
        self.changed.extend(other.changed);
        self.deleted.extend(other.deleted);
    }
}

/// The outcome of a load.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LoadSummary {
    /// Datasource records written.
    pub datasources: usize,
    /// Model records written.
    pub models: usize,
    /// Doc changes.
    pub docs: DocChanges,
}

/// A catalog batch, checked as a whole before anything is written.
#[derive(Debug, Default)]
pub struct CatalogBatch {
    datasources: BTreeMap<String, Datasource>,
    models: BTreeMap<(String, String), (usize, Model)>,
}

impl CatalogBatch {
    /// Adds one input record; memory and doc records are refused with a pointer to their stage.
    pub fn push(&mut self, line: usize, record: Record) -> Result<(), LineError> {
        match record {
            Record::Datasource(ds) => {
                self.datasources.insert(ds.name.clone(), ds);
            }
            Record::Model(m) => {
                self.models
                    .insert((m.data_source.clone(), m.name.clone()), (line, m));
            }
            Record::Memory(_) => {
                return Err(LineError {
                    line,
                    message: "memory records are written by `slayer-memory import`, not `slayer-index load`".into(),
                })
            }
            Record::Doc(_) => {
                return Err(LineError {
                    line,
                    message: "doc records are produced by slayer-index, not loaded; pass datasource and model records".into(),
                })
            }
        }
        Ok(())
    }

    /// The names of the datasources the batch has records of (datasource records).
    pub fn datasource_names(&self) -> impl Iterator<Item = &str> {
        self.datasources.keys().map(String::as_str)
    }

    /// The batch's model records, by datasource and name.
    pub fn models(&self) -> impl Iterator<Item = &Model> {
        self.models.values().map(|(_, m)| m)
    }

    /// Whether the batch is empty.
    pub fn is_empty(&self) -> bool {
        self.datasources.is_empty() && self.models.is_empty()
    }

    /// Writes the batch and re-renders the docs of every touched datasource.
    pub fn write(self, store: &dyn StoreWrite) -> Result<LoadSummary, IndexError> {
        for ((ds, _), (line, model)) in &self.models {
            if !self.datasources.contains_key(ds) && store.datasource(ds)?.is_none() {
                return Err(LineError {
                    line: *line,
                    message: format!(
                        "model '{}' belongs to datasource '{ds}', which is neither in the store nor in this input; add a datasource record for it first",
                        model.name
                    ),
                }
                .into());
            }
        }
        // A record equal to the stored one is not written again, so a re-run with nothing
        // changed writes nothing (the store's data version does not move). Its datasource's
        // docs are still re-rendered, and written where the text differs: a newer renderer's
        // docs reach a store when its records are loaded again.
        let mut touched: BTreeSet<String> = BTreeSet::new();
        for ds in self.datasources.values() {
            if store.datasource(&ds.name)?.as_ref() != Some(ds) {
                store.put_datasource(ds)?;
            }
            touched.insert(ds.name.clone());
        }
        // One read of each datasource's stored models and one batched write of the changed
        // ones: a server store pays a round trip per statement.
        let mut stored: BTreeMap<(String, String), Model> = BTreeMap::new();
        let sources: BTreeSet<&str> = self.models.keys().map(|(ds, _)| ds.as_str()).collect();
        for ds in sources {
            for m in store.models(Some(ds))? {
                stored.insert((m.data_source.clone(), m.name.clone()), m);
            }
        }
        let mut changed = Vec::new();
        for (key, (_, model)) in &self.models {
            if stored.get(key) != Some(model) {
                changed.push(model);
            }
            touched.insert(model.data_source.clone());
        }
        store.put_models(&changed)?;
        let mut summary = LoadSummary {
            datasources: self.datasources.len(),
            models: self.models.len(),
            docs: DocChanges::default(),
        };
        for ds in &touched {
            summary.docs.extend(refresh_datasource_docs(store, ds)?);
        }
        Ok(summary)
    }
}

/// The first description or label of `record` over `limit` bytes (`limits.description_bytes`),
/// as the error `load` refuses its input with: such a text would be rendered, indexed,
/// embedded and returned by every search that finds it.
pub fn over_long_text(line: usize, record: &mut Record, limit: usize) -> Option<LineError> {
    let (what, texts) = match record {
        Record::Datasource(ds) => (format!("datasource '{}'", ds.name), ds.texts_mut()),
        Record::Model(m) => (format!("model '{}'", m.name), m.texts_mut()),
        Record::Memory(_) | Record::Doc(_) => return None,
    };
    let long = texts.into_iter().find(|t| t.value.len() > limit)?;
    Some(LineError {
        line,
        message: format!(
            "{what}: its {} is {} bytes; the limit is {limit} (limits.description_bytes in slayer.toml): shorten it, or raise the limit",
            long.field,
            long.value.len()
        ),
    })
}

/// Re-renders every doc of a datasource and writes only the differences; docs that no longer
/// exist are deleted with their embedding rows.
pub fn refresh_datasource_docs(
    store: &dyn StoreWrite,
    ds_name: &str,
) -> Result<DocChanges, IndexError> {
    let mut wanted = Vec::new();
    if let Some(ds) = store.datasource(ds_name)? {
        let models = store.models(Some(ds_name))?;
        wanted.push(render::datasource_doc(&ds, &models));
        for model in &models {
            wanted.extend(render::model_docs(model));
        }
    }
    let mut stored: BTreeMap<String, StoredDoc> = store
        .docs_of_datasource(ds_name)?
        .into_iter()
        .map(|d| (d.doc.canonical_id.clone(), d))
        .collect();
    let mut changes = DocChanges::default();
    let mut upserts = Vec::new();
    for doc in wanted {
        match stored.remove(&doc.doc.canonical_id) {
            Some(old) if old == doc => {}
            Some(old) => {
                if old.doc != doc.doc {
                    changes.changed.push(doc.doc.clone());
                }
                upserts.push(doc);
            }
            None => {
                changes.changed.push(doc.doc.clone());
                upserts.push(doc);
            }
        }
    }
    store.upsert_docs(&upserts)?;
    for id in stored.into_keys() {
        store.delete_doc(&id)?;
        store.delete_embeddings_of(&id)?;
        changes.deleted.push(id);
    }
    Ok(changes)
}

/// Re-renders a memory's doc; returns it when its text changed.
pub fn refresh_memory_doc(
    store: &dyn StoreWrite,
    memory: &Memory,
) -> Result<Option<Doc>, IndexError> {
    let doc = render::memory_doc(memory);
    match store.doc(&doc.doc.canonical_id)? {
        Some(old) if old == doc => Ok(None),
        _ => {
            store.upsert_doc(&doc)?;
            Ok(Some(doc.doc))
        }
    }
}
