//! `slayer-memory show`: memories by id, whole; and the text every command shows a memory in.

use std::path::Path;

use anyhow::Result;
use serde_json::Value;
use slayer_common::canonical::check_memory_id;
use slayer_common::cli::Output;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_common::records::Memory;
use slayer_common::store::{OpenMode, StoreRead};
use slayer_memory::MemoryError;

use crate::opening::open_store;

/// Every memory asked for, in the order asked, whatever its tier; a missing id is an error
/// before anything is printed.
pub(super) fn show(store_path: &Path, ids: &[String], out: &mut Output) -> Result<ExitStatus> {
    for id in ids {
        check_memory_id(id).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    }
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let mut found = Vec::new();
    for id in ids {
        let Some(m) = store.memory(id)? else {
            return Err(MemoryError::Invalid(format!("No memory with id '{id}'.")).into());
        };
        found.push(m);
    }
    if let [one] = found.as_slice() {
        out.result(&tagged("memory", one), &format!("{}\n", show_text(one)))?;
    } else {
        shown_records(&found, out)?;
    }
    Ok(ExitStatus::Success)
}

/// Memories as records (json, jsonl) or each as `show` prints it (text).
pub(super) fn shown_records(memories: &[Memory], out: &mut Output) -> Result<()> {
    let values: Vec<Value> = memories.iter().map(|m| tagged("memory", m)).collect();
    let texts: std::collections::HashMap<&str, String> = memories
        .iter()
        .map(|m| (m.id.as_str(), show_text(m)))
        .collect();
    out.records(&values, |v| {
        let id = v.get("id").and_then(Value::as_str).unwrap_or_default();
        format!("{}\n", texts.get(id).cloned().unwrap_or_default())
    })?;
    Ok(())
}

/// `show`'s text for one memory (the original's, plus a `Standing:` line for a memory that is
/// not a plain lesson).
fn show_text(m: &Memory) -> String {
    let mut text = format!("Memory {}\nCreated: {}", m.id, m.created_at);
    let standing = standing_text(&tagged("memory", m), "\nStanding: ", ", ");
    text.push_str(&standing);
    if let Some(d) = &m.description {
        text.push_str(&format!("\nDescription: {d}"));
    }
    if !m.entities.is_empty() {
        text.push_str(&format!("\nEntities: {}", m.entities.join(", ")));
    }
    if let Some(q) = &m.query {
        text.push_str(&format!("\nQuery: {q}"));
    }
    text.push_str(&format!("\n\n{}", m.learning));
    text
}

/// The record's standing fields that differ from a plain lesson (`tier=semantic
/// confidence=0.9`), each after `lead` and joined by `sep`; empty for a plain lesson.
pub(super) fn standing_text(v: &Value, lead: &str, sep: &str) -> String {
    let parts: Vec<String> = [
        "tier",
        "confidence",
        "strength",
        "project",
        "agent",
        "deleted",
        "proposed",
    ]
    .into_iter()
    .filter_map(|k| {
        v.get(k).map(|x| match x {
            Value::String(s) => format!("{k}={s}"),
            other => format!("{k}={other}"),
        })
    })
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("{lead}{}", parts.join(sep))
    }
}
