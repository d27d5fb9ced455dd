//! `review`, `approve` and `reject`: review of agents' memories (the work is in
//! `slayer_memory::review`; this only reports it).

use std::path::Path;

use anyhow::Result;
use serde_json::json;
use slayer_common::cli::Output;
use slayer_common::exit::ExitStatus;
use slayer_common::store::OpenMode;
use slayer_memory::review::{self, Owners};

use super::show::shown_records;
use crate::opening::open_store;

/// How the setting reads, for people.
fn state_text(on: bool) -> &'static str {
    if on {
        "on (a memory saved by an agent is proposed and waits for approval)"
    } else {
        "off (memories are saved as asked)"
    }
}

/// `review --require on|off`: sets the store's setting and prints it.
pub fn require(store_path: &Path, on: bool, out: &mut Output) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::CreateIfMissing)?;
    review::set_required(&mut store, on)?;
    out.result(
        &json!({ review::SETTING: if on { "on" } else { "off" } }),
        &format!("Review of agent memories: {}.\n", state_text(on)),
    )?;
    Ok(ExitStatus::Success)
}

/// `review`: the proposed memories with their entities, oldest first; how many, and whether
/// review is on, as a note.
pub fn list(store_path: &Path, owners: &Owners<'_>, out: &mut Output) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let found = review::proposed(&store, owners)?;
    let on = review::required(&store)?;
    shown_records(&found, out)?;
    out.note(&format!(
        "{} proposed memories; review of agent memories is {}",
        found.len(),
        if on { "on" } else { "off" }
    ));
    Ok(ExitStatus::Success)
}

/// `approve ID…`.
pub fn approve(store_path: &Path, ids: &[String], out: &mut Output) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    let approved = review::approve(&mut store, ids)?;
    let text: String = approved
        .iter()
        .map(|id| format!("Approved memory {id}.\n"))
        .collect();
    out.result(&json!({ "approved": approved }), &text)?;
    Ok(ExitStatus::Success)
}

/// `reject ID…`.
pub fn reject(store_path: &Path, ids: &[String], out: &mut Output) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    let rejected = review::reject(&mut store, ids)?;
    let mut text: String = rejected
        .ids
        .iter()
        .map(|id| format!("Rejected memory {id}: deleted.\n"))
        .collect();
    if let Some(w) = &rejected.warning {
        text.push_str(&format!("Warning: {w}\n"));
    }
    out.result(&json!({ "rejected": rejected.ids }), &text)?;
    Ok(ExitStatus::Success)
}
