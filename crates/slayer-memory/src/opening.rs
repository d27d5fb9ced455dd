//! What every command opens first: the store, and the limits beside it.

use std::path::Path;

use anyhow::Result;
use slayer_common::cli::UsageError;
use slayer_common::limits::Limits;
use slayer_common::store::{OpenMode, Store};
use slayer_memory::MemoryError;

/// The store at `path`, opened as `mode` says.
pub(crate) fn open_store(path: &Path, mode: OpenMode) -> Result<Store> {
    Store::open(path, mode).map_err(|e| MemoryError::Store(e).into())
}

/// `[limits]` of slayer.toml beside the store (docs/spec/limits.md §16).
pub(crate) fn load_limits(store_path: &Path) -> Result<Limits, UsageError> {
    Limits::load(store_path).map_err(|e| UsageError(e.to_string()))
}
