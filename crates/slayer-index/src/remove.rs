//! `remove`: delete a datasource, model, leaf or memory and cascade.
//!
//! The cascade rule is the one of the original: an entity target takes itself and its strict
//! dotted descendants (`shop.orders` takes `shop.orders.amount`, never `shop.orders_archive`); a
//! `memory:<id>` target takes only that exact string. Docs and embedding rows go by the same
//! rule, and every memory tag it matches is stripped. Memories left with no tags are kept.

use slayer_common::canonical::memory_id_of;
use slayer_common::store::StoreWrite;

use crate::catalog::{refresh_datasource_docs, refresh_memory_doc, DocChanges};
use crate::error::IndexError;

/// What a removal did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct RemoveSummary {
    /// The canonical id removed.
    pub target: String,
    /// Ids of memories whose tags were stripped.
    pub stripped_memories: Vec<String>,
    /// Embedding rows deleted.
    pub embeddings_deleted: usize,
    /// Doc changes (re-rendered parents and memories; deleted docs).
    pub docs: DocChanges,
}

/// Removes `target` and cascades, inside the caller's transaction.
pub fn remove(store: &dyn StoreWrite, target: &str) -> Result<RemoveSummary, IndexError> {
    let mut summary = RemoveSummary {
        target: target.to_owned(),
        ..RemoveSummary::default()
    };
    let mut datasource_to_refresh = None;
    if let Some(id) = memory_id_of(target) {
        if !store.delete_memory(id)? {
            return Err(IndexError::NotFound(target.to_owned()));
        }
    } else {
        let segments: Vec<&str> = target.split('.').collect();
        if segments.iter().any(|s| s.is_empty()) || segments.len() > 3 {
            return Err(IndexError::BadTarget(target.to_owned()));
        }
        match segments[..] {
            [ds] => {
                let had_ds = store.delete_datasource(ds)?;
                let had_models = store.delete_models_of(ds)? > 0;
                if !had_ds && !had_models {
                    return Err(IndexError::NotFound(target.to_owned()));
                }
            }
            [ds, model] => {
                if !store.delete_model(ds, model)? {
                    return Err(IndexError::NotFound(target.to_owned()));
                }
                datasource_to_refresh = Some(ds);
            }
            [ds, model_name, leaf] => {
                let Some(mut model) = store.model(ds, model_name)? else {
                    return Err(IndexError::NotFound(target.to_owned()));
                };
                let before = (
                    model.columns.len(),
                    model.measures.len(),
                    model.aggregations.len(),
                );
                model.columns.retain(|c| c.name != leaf);
                model.measures.retain(|m| m.name.as_deref() != Some(leaf));
                model.aggregations.retain(|a| a.name != leaf);
                if before
                    == (
                        model.columns.len(),
                        model.measures.len(),
                        model.aggregations.len(),
                    )
                {
                    return Err(IndexError::NotFound(target.to_owned()));
                }
                store.put_model(&model)?;
                datasource_to_refresh = Some(ds);
            }
            _ => return Err(IndexError::BadTarget(target.to_owned())),
        }
    }
    summary.docs.deleted = store.delete_docs_under(target)?;
    summary.embeddings_deleted = store.delete_embeddings_under(target)?;
    if let Some(ds) = datasource_to_refresh {
        summary.docs.extend(refresh_datasource_docs(store, ds)?);
    }
    for memory in store.strip_tags_under(target)? {
        if let Some(doc) = refresh_memory_doc(store, &memory)? {
            summary.docs.changed.push(doc);
        }
        summary.stripped_memories.push(memory.id);
    }
    Ok(summary)
}
