//! The write commands as a library: save and forget each run in one transaction, commit, then
//! bring the full-text index up to date and (save) embed the memory. What fails after the
//! commit never undoes the write: it comes back as warnings, for the caller to show. The
//! `slayer-memory` binary calls these, and so can any other front end (an MCP server), so all
//! of them write, resolve and word their messages the same way.

use slayer_common::canonical::{check_memory_id, memory_ref};
use slayer_common::limits::Limits;
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
    /// requires review ([`crate::review::required`]).
    Agent,
}

/// Saves one memory (docs/spec.md §4.1) in one `BEGIN IMMEDIATE` transaction, then syncs the
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
    save_by(store, req, limits, embed, saver)
}

/// [`save`] by a known saver: an agent's memory is saved as proposed while the store requires
/// review (read inside the save's transaction, so a setting changed meanwhile is obeyed).
pub fn save_by(
    store: &mut Store,
    mut req: SaveRequest,
    limits: &Limits,
    embed: bool,
    saver: Saver,
) -> Result<Saved, MemoryError> {
    req.check_limits(limits)?;
    // Into an absent store, a save that would be refused creates no file.
    if let Some(rehearsal) = store.rehearsal()? {
        service::save(&rehearsal, req.clone())?;
    }
    let tx = store.write()?;
    if saver == Saver::Agent && crate::review::required(&tx)? {
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

/// Forgets one memory (docs/spec.md §4.2), cascading to its doc, tags and embeddings; the
/// index warning, if the index could not be updated.
pub fn forget(store: &mut Store, id: &str) -> Result<Option<String>, MemoryError> {
    check_memory_id(id).map_err(MemoryError::Invalid)?;
    let tx = store.write()?;
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
    check_memory_id(id).map_err(MemoryError::Invalid)?;
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

/// Embeds the saved memories under the active model (docs/spec.md §4.1 step 8). A model that
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
