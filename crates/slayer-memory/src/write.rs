//! The write commands as a library: save and forget each run in one transaction, commit, then
//! bring the full-text index up to date and (save) embed the memory. What fails after the
//! commit never undoes the write: it comes back as warnings, for the caller to show. The
//! `slayer-memory` binary calls these, and so can any other front end (an MCP server), so all
//! of them write, resolve and word their messages the same way.

use slayer_common::canonical::{check_memory_id, memory_ref};
use slayer_common::limits::Limits;
use slayer_common::records::Standing;
use slayer_common::store::{Store, StoreRead, StoreWrite};
use slayer_index::fulltext::FullText;
use slayer_index::IndexError;

use crate::service::{self, SaveOutcome, SaveRequest};
use crate::MemoryError;

/// A save's outcome (its `warnings` include an index that could not be updated) and the
/// warnings of inline embedding, which are notes rather than part of the record.
#[derive(Debug, Clone)]
pub struct Saved {
    /// What the save did.
    pub outcome: SaveOutcome,
    /// Why the memory was not embedded, if it was not (each without a `Warning: ` prefix).
    pub embedding_warnings: Vec<String>,
}

/// Who saves a memory: what decides whether the store's review setting applies to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saver {
    /// A person (`slayer-memory save` without `--agent`): saved as asked.
    Person,
    /// An agent (`--agent`, or the MCP server's `save_memory`): proposed while the store
    /// requires review ([`crate::review_setting::required`]).
    Agent,
}

/// Saves one memory (docs/spec/memory.md §4.1) in one `BEGIN IMMEDIATE` transaction, then syncs the
/// index and, with `embed`, embeds it under the active model. A memory with an agent owner is
/// an agent's save ([`save_by`]).
pub fn save(
    store: &mut Store,
    req: SaveRequest,
    limits: &Limits,
    embed: bool,
) -> Result<Saved, MemoryError> {
    let saver = if req.standing.agent.is_some() {
        Saver::Agent
    } else {
        Saver::Person
    };
    save_by(store, req, limits, embed, saver, &|_| Ok(()))
}

/// What a change must pass on the memory it replaces or removes, read inside the change's own
/// transaction (writers serialize), so that no other writer can swap the memory between the
/// check and the change: a session's scope. `Err` is the refusal's message: the message is the
/// value (the caller's own sentence, which the change reports as it is).
pub type Guard<'g> = &'g dyn Fn(&Standing) -> Result<(), String>;

/// [`save`] by a known saver: an agent's memory is saved as proposed while the store requires
/// review (read inside the save's transaction, so a setting changed meanwhile is obeyed).
pub fn save_by(
    store: &mut Store,
    mut req: SaveRequest,
    limits: &Limits,
    embed: bool,
    saver: Saver,
    guard: Guard<'_>,
) -> Result<Saved, MemoryError> {
    req.check_limits(limits)?;
    // Into an absent store, a save that would be refused creates no file.
    if let Some(rehearsal) = store.rehearsal()? {
        service::save(&rehearsal, req.clone())?;
    }
    let tx = store.write()?;
    if let Some(id) = &req.id {
        guarded(&tx, id, guard)?;
    }
    if saver == Saver::Agent && crate::review_setting::required(&tx)? {
        req.standing.proposed = true;
    }
    let mut outcome = service::save(&tx, req)?;
    tx.commit().map_err(|source| MemoryError::Commit {
        what: "save",
        source,
    })?;
    outcome.warnings.extend(sync_index(store));
    let embedding_warnings = if embed {
        embed_memories(store, std::slice::from_ref(&outcome.memory_id))
    } else {
        Vec::new()
    };
    outcome.warnings.extend(follow_vectors(store));
    Ok(Saved {
        outcome,
        embedding_warnings,
    })
}

/// Forgets one memory (docs/spec/memory.md §4.2), cascading to its doc, tags and embeddings; the
/// index warning, if the index could not be updated.
pub fn forget(store: &mut Store, id: &str) -> Result<Option<String>, MemoryError> {
    forget_guarded(store, id, &|_| Ok(()))
}

/// [`forget`], refused when the memory does not pass `guard`.
pub fn forget_guarded(
    store: &mut Store,
    id: &str,
    guard: Guard<'_>,
) -> Result<Option<String>, MemoryError> {
    check_memory_id(id).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let tx = store.write()?;
    guarded(&tx, id, guard)?;
    forget_in(&tx, id)?;
    tx.commit().map_err(|source| MemoryError::Commit {
        what: "deletion",
        source,
    })?;
    let index = sync_index(store);
    Ok(match (index, follow_vectors(store)) {
        (Some(a), Some(b)) => Some(format!("{a}; {b}")),
        (a, b) => a.or(b),
    })
}

/// The memory `id` as the transaction sees it passes `guard` (an absent one is the change's
/// own business).
fn guarded(tx: &dyn StoreWrite, id: &str, guard: Guard<'_>) -> Result<(), MemoryError> {
    match tx.memory(id)? {
        Some(memory) => guard(&memory.standing).map_err(MemoryError::Invalid),
        None => Ok(()),
    }
}

/// Forget's work inside the caller's transaction: the memory, its doc, its embedding rows and
/// the `memory:<id>` tag on other memories (whose docs are re-rendered). Rejecting a proposal
/// runs the same.
pub(crate) fn forget_in(tx: &dyn StoreWrite, id: &str) -> Result<(), MemoryError> {
    match slayer_index::remove::remove(tx, &memory_ref(id)) {
        Ok(_) => Ok(()),
        Err(IndexError::NotFound(_)) => {
            Err(MemoryError::Invalid(format!("No memory with id '{id}'.")))
        }
        Err(e) => Err(MemoryError::Index(e)),
    }
}

/// Soft-deletes one memory: it stays in the store (and in exports) marked `deleted`, and no
/// search returns or counts it. Its doc, tags and embeddings are kept, so undoing it is a
/// re-save or an import of the record without the flag.
pub fn forget_soft(store: &mut Store, id: &str) -> Result<(), MemoryError> {
    check_memory_id(id).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    let tx = store.write()?;
    let Some(mut memory) = tx.memory(id)? else {
        return Err(MemoryError::Invalid(format!("No memory with id '{id}'.")));
    };
    memory.standing.deleted = true;
    tx.put_memory(&memory)?;
    tx.commit().map_err(|source| MemoryError::Commit {
        what: "soft deletion",
        source,
    })?;
    Ok(())
}

/// Brings the full-text index up to date after a commit. A failure here does not undo the
/// write: it is reported, and the next command that opens the index catches up.
pub fn sync_index(store: &mut Store) -> Option<String> {
    match FullText::open_synced(store) {
        Ok(_) => None,
        Err(e) => Some(format!(
            "the full-text index was not updated ({e}); the next slayer command that opens it catches up"
        )),
    }
}

/// Brings the store's vector sidecars up to what was committed (appending the changed rows
/// to their journals), so the next search maps them current. A failure does not undo the
/// write: it is reported, and the next search catches up itself.
pub fn follow_vectors(store: &Store) -> Option<String> {
    slayer_embed::vectors::follow(store.reader(), &store.vectors_dir())
        .err()
        .map(|e| format!("the vector sidecar was not updated ({e}); the next search catches up"))
}

/// Embeds the saved memories under the active model (docs/spec/memory.md §4.1 step 8). A model that
/// cannot be used, or a text that fails, is a warning: the memory is saved either way and
/// search still finds it by tags and text.
pub fn embed_memories(store: &mut Store, ids: &[String]) -> Vec<String> {
    use slayer_embed::provider::{active_name, Embedder};
    let model = active_name();
    if let Err(why) = Embedder::check(&model) {
        return vec![format!(
            "not embedded: the embedding model '{model}' is unavailable ({why}); search still finds the memory by tags and text"
        )];
    }
    let docs: Vec<String> = ids.iter().map(|id| memory_ref(id)).collect();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let options = slayer_embed::refresh::Options {
        batch_size: 32,
        threads,
    };
    match slayer_embed::refresh::refresh(
        store,
        &model,
        &docs,
        options,
        || Embedder::open(&model),
        &|_| {},
    ) {
        Ok(reports) => reports.into_iter().filter_map(|r| r.warning).collect(),
        Err(e) => vec![format!("not embedded: {e}")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slayer_common::store::OpenMode;

    fn owned_by(project: &str) -> Standing {
        Standing {
            project: Some(project.to_owned()),
            ..Standing::default()
        }
    }

    fn note(id: &str, learning: &str, standing: Standing) -> SaveRequest {
        SaveRequest {
            learning: learning.to_owned(),
            entities: Some(vec!["shop".to_owned()]),
            query: None,
            id: Some(id.to_owned()),
            description: None,
            standing,
            occasion: Default::default(),
        }
    }

    /// The guard reads the memory inside the change's transaction and a refusal changes
    /// nothing; an absent memory is not the guard's to refuse.
    #[test]
    fn a_refused_guard_leaves_the_memory_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let tx = store.write().unwrap();
        let shop: slayer_common::records::Datasource =
            serde_json::from_value(serde_json::json!({"name": "shop"})).unwrap();
        tx.put_datasource(&shop).unwrap();
        tx.commit().unwrap();
        let limits = Limits::default();
        save(
            &mut store,
            note("m1", "first", owned_by("a")),
            &limits,
            false,
        )
        .unwrap();
        let only_b = |s: &Standing| match s.project.as_deref() {
            Some("b") => Ok(()),
            _ => Err("not this session's".to_owned()),
        };
        let refused = forget_guarded(&mut store, "m1", &only_b).unwrap_err();
        assert_eq!(refused.to_string(), "not this session's");
        let replaced = save_by(
            &mut store,
            note("m1", "second", owned_by("b")),
            &limits,
            false,
            Saver::Person,
            &only_b,
        )
        .unwrap_err();
        assert_eq!(replaced.to_string(), "not this session's");
        let kept = store.reader().memory("m1").unwrap().unwrap();
        assert_eq!(
            (kept.learning.as_str(), kept.standing.project.as_deref()),
            ("first", Some("a"))
        );
        // A new id passes whatever the guard says; a memory the guard accepts is forgotten.
        save_by(
            &mut store,
            note("m2", "new", owned_by("b")),
            &limits,
            false,
            Saver::Person,
            &only_b,
        )
        .unwrap();
        forget_guarded(&mut store, "m2", &only_b).unwrap();
        assert!(store.reader().memory("m2").unwrap().is_none());
    }
}
