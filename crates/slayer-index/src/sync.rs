//! `load --sync`: converge the store's models on the input. For every datasource the input has
//! records of, the models it lacks are removed (with their docs, embeddings and memory tags,
//! [`crate::remove`]); `--dry-run` shows the plan and writes nothing; a sync that would remove
//! more than half of a datasource's models is refused unless asked for, so an empty or broken
//! upstream never wipes a store (docs/spec/store.md §11.5).

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use slayer_common::store::{StoreRead, StoreWrite};

use crate::catalog::{CatalogBatch, DocChanges};
use crate::error::IndexError;

/// What a load does to one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Not in the store yet.
    Added,
    /// In the store, different.
    Changed,
    /// In the store, absent from the input (a sync only).
    Removed,
}

/// One model a load adds, changes or removes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Planned {
    /// Added, changed or removed.
    pub change: Change,
    /// `<datasource>.<model>`.
    pub id: String,
}

/// A datasource a sync would shrink by more than half.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shrink {
    /// The datasource.
    pub datasource: String,
    /// Models the sync removes.
    pub removed: usize,
    /// Models stored now.
    pub stored: usize,
}

/// What a load (with `--sync`, a sync) would do, model by model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// The models added, changed and removed, in id order within each change.
    pub changes: Vec<Planned>,
    /// Models of the input equal to the stored ones.
    pub unchanged: usize,
    /// The datasources it would shrink by more than half.
    pub shrinking: Vec<Shrink>,
}

impl Plan {
    /// How many models of `change`.
    pub fn count(&self, change: Change) -> usize {
        self.changes.iter().filter(|p| p.change == change).count()
    }

    /// `2 added, 1 changed, 1 removed, 40 unchanged`.
    pub fn summary(&self) -> String {
        format!(
            "{} added, {} changed, {} removed, {} unchanged",
            self.count(Change::Added),
            self.count(Change::Changed),
            self.count(Change::Removed),
            self.unchanged
        )
    }

    /// The refusal of a sync that shrinks a datasource by more than half, when it does.
    pub fn shrink_refusal(&self) -> Option<String> {
        let s = self.shrinking.first()?;
        Some(format!(
            "load --sync would remove {} of the {} models of datasource '{}' (more than half); an empty or broken upstream would wipe the store this way: check the input, or add --allow-shrink to mean it",
            s.removed, s.stored, s.datasource
        ))
    }
}

/// The plan of loading `batch` into `store`; with `sync`, the models of the input's
/// datasources that the input lacks are removed.
pub fn plan(batch: &CatalogBatch, store: &dyn StoreRead, sync: bool) -> Result<Plan, IndexError> {
    let mut plan = Plan::default();
    let mut input: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for ds in batch.datasource_names() {
        input.entry(ds).or_default();
    }
    let mut added = Vec::new();
    let mut changed = Vec::new();
    for model in batch.models() {
        input
            .entry(&model.data_source)
            .or_default()
            .insert(&model.name);
        let id = format!("{}.{}", model.data_source, model.name);
        match store.model(&model.data_source, &model.name)? {
            None => added.push(id),
            Some(stored) if &stored != model => changed.push(id),
            Some(_) => plan.unchanged += 1,
        }
    }
    let mut removed = Vec::new();
    if sync {
        for (ds, names) in &input {
            let stored = store.models(Some(ds))?;
            let gone: Vec<String> = stored
                .iter()
                .filter(|m| !names.contains(m.name.as_str()))
                .map(|m| format!("{ds}.{}", m.name))
                .collect();
            if gone.len() * 2 > stored.len() {
                plan.shrinking.push(Shrink {
                    datasource: (*ds).to_owned(),
                    removed: gone.len(),
                    stored: stored.len(),
                });
            }
            removed.extend(gone);
        }
    }
    for (change, ids) in [
        (Change::Added, added),
        (Change::Changed, changed),
        (Change::Removed, removed),
    ] {
        plan.changes
            .extend(ids.into_iter().map(|id| Planned { change, id }));
    }
    Ok(plan)
}

/// Removes the models `plan` removes, inside the caller's transaction: the doc changes, and
/// one warning per memory left with no tag (it is kept).
pub fn remove_absent(
    store: &dyn StoreWrite,
    plan: &Plan,
) -> Result<(DocChanges, Vec<String>), IndexError> {
    let mut docs = DocChanges::default();
    let mut stripped: BTreeSet<String> = BTreeSet::new();
    for p in plan.changes.iter().filter(|p| p.change == Change::Removed) {
        let summary = crate::remove::remove(store, &p.id)?;
        docs.extend(summary.docs);
        stripped.extend(summary.stripped_memories);
    }
    let mut warnings = Vec::new();
    for id in stripped {
        if let Some(memory) = store.memory(&id)? {
            if memory.entities.is_empty() {
                warnings.push(format!(
                    "memory '{id}' was tagged only with models the sync removed; it is kept, with no tags (`slayer-memory show {id}`)"
                ));
            }
        }
    }
    Ok((docs, warnings))
}
