//! `slayer-memory export`: every memory as a record, for `import` elsewhere.

use std::path::Path;

use anyhow::Result;
use serde_json::Value;
use slayer_common::cli::Output;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_common::store::{OpenMode, StoreRead};

use super::list::memory_line;
use crate::opening::open_store;

pub(super) fn export(store_path: &Path, out: &mut Output) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let values: Vec<Value> = store
        .memories()?
        .iter()
        .map(|m| tagged("memory", m))
        .collect();
    out.records(&values, memory_line)?;
    Ok(ExitStatus::Success)
}
