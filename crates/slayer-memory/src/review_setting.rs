//! The store's review setting (`memory_review`): read by every save of an agent's memory
//! ([`crate::write`]), set by `slayer-memory review --require` ([`crate::review`], which
//! re-exports it).

use slayer_common::store::{Store, StoreRead, StoreWrite};

use crate::MemoryError;

/// The setting that turns review of agent memories on (`on`) or off.
pub const SETTING: &str = "memory_review";

/// Whether the store requires review of agents' memories.
pub fn required(store: &dyn StoreRead) -> Result<bool, MemoryError> {
    Ok(store.setting(SETTING)?.as_deref() == Some("on"))
}

/// Turns review of agents' memories on or off. Memories already saved keep their state.
pub fn set_required(store: &mut Store, on: bool) -> Result<(), MemoryError> {
    let tx = store.write()?;
    tx.set_setting(SETTING, if on { "on" } else { "off" })?;
    tx.commit().map_err(|source| MemoryError::Commit {
        what: "review setting",
        source,
    })
}
