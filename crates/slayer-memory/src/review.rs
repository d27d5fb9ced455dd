//! Review of agent memories: a store shared by a team can require that what an agent saves
//! waits for a person's approval, so one wrong "lesson" does not reach every agent at once.
//!
//! A proposed memory (`Standing::proposed`) is kept, listed and exported, and no search
//! returns, counts or is scored by it (search treats it as a soft-deleted one). The store's
//! `memory_review` setting (`on`; absent or `off`: no review, the default) makes every agent's
//! save proposed ([`crate::write::save_by`]). Approving clears the flag; rejecting deletes
//! the memory exactly as `forget` does. Each batch is one transaction: every id is checked
//! before anything is written, so a bad id leaves the store as it was.

use slayer_common::canonical::check_memory_id;
use slayer_common::records::Memory;
use slayer_common::store::{Store, StoreRead, StoreWrite};

pub use crate::review_setting::{required, set_required, SETTING};
use crate::write::{forget_in, sync_index};
use crate::MemoryError;

/// Which proposals to list: exact owners (unlike search's scoping, where a memory without an
/// owner is everyone's, a reviewer asks for what one agent or project proposed).
#[derive(Debug, Clone, Default)]
pub struct Owners<'a> {
    /// Only proposals of this project.
    pub project: Option<&'a str>,
    /// Only proposals of this agent.
    pub agent: Option<&'a str>,
}

/// The proposed memories, oldest first (ties by id): a queue, the longest waiting first. They
/// are found through the store's index of marked memories, never by reading every memory.
pub fn proposed(store: &dyn StoreRead, owners: &Owners<'_>) -> Result<Vec<Memory>, MemoryError> {
    let wanted = |asked: Option<&str>, owner: &Option<String>| {
        asked.is_none_or(|a| owner.as_deref() == Some(a))
    };
    let mut found = Vec::new();
    for marked in store.marked_memories()? {
        let s = &marked.standing;
        if s.proposed && wanted(owners.project, &s.project) && wanted(owners.agent, &s.agent) {
            if let Some(memory) = store.memory(&marked.id)? {
                found.push(memory);
            }
        }
    }
    found.sort_by(|a, b| {
        a.created_at
            .cmp(&b.created_at)
            .then_with(|| a.id.cmp(&b.id))
    });
    Ok(found)
}

/// Approves proposed memories: each becomes an ordinary memory, seen by the next search.
/// Returns the ids approved, each once, in the order given.
pub fn approve(store: &mut Store, ids: &[String]) -> Result<Vec<String>, MemoryError> {
    let tx = store.write()?;
    let memories = proposals(&tx, ids, "approved")?;
    let mut approved = Vec::with_capacity(memories.len());
    for mut memory in memories {
        memory.standing.proposed = false;
        // Its doc, tags and embedding do not depend on the flag: only the row changes.
        tx.put_memory(&memory)?;
        approved.push(memory.id);
    }
    tx.commit().map_err(|source| MemoryError::Commit {
        what: "approval",
        source,
    })?;
    Ok(approved)
}

/// What a rejection did: the ids deleted, and the index warning if the index could not be
/// updated.
#[derive(Debug, Clone)]
pub struct Rejected {
    /// The ids deleted, each once, in the order given.
    pub ids: Vec<String>,
    /// Why the full-text index was not brought up to date, if it was not.
    pub warning: Option<String>,
}

/// Rejects proposed memories: each is deleted as `forget` deletes a memory (its doc, its
/// embedding rows, the `memory:<id>` tag on other memories), all in one transaction.
pub fn reject(store: &mut Store, ids: &[String]) -> Result<Rejected, MemoryError> {
    let tx = store.write()?;
    let memories = proposals(&tx, ids, "rejected")?;
    let mut rejected = Vec::with_capacity(memories.len());
    for memory in memories {
        forget_in(&tx, &memory.id)?;
        rejected.push(memory.id);
    }
    tx.commit().map_err(|source| MemoryError::Commit {
        what: "rejection",
        source,
    })?;
    Ok(Rejected {
        ids: rejected,
        warning: sync_index(store),
    })
}

/// The memories `ids` name, each once, in the order given; every id must name a proposed
/// memory, else the error names each one that does not (and nothing is `done`).
fn proposals(
    store: &dyn StoreRead,
    ids: &[String],
    done: &str,
) -> Result<Vec<Memory>, MemoryError> {
    let mut memories: Vec<Memory> = Vec::with_capacity(ids.len());
    let mut problems = Vec::new();
    for id in ids {
        if memories.iter().any(|m| &m.id == id) {
            continue;
        }
        if let Err(refused) = check_memory_id(id) {
            problems.push(refused.to_string());
            continue;
        }
        match store.memory(id)? {
            None => problems.push(format!("No memory with id '{id}'.")),
            Some(m) if !m.standing.proposed => problems.push(format!(
                "Memory '{id}' is not proposed (nothing about it awaits review)."
            )),
            Some(m) => memories.push(m),
        }
    }
    if problems.is_empty() {
        Ok(memories)
    } else {
        Err(MemoryError::Invalid(format!(
            "{} Nothing was {done}; `slayer-memory review` lists the proposed memories.",
            problems.join(" ")
        )))
    }
}
