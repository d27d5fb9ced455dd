//! `slayer-memory list`: the memories, or those tagged under an entity, filtered by tier.

use std::path::Path;

use anyhow::Result;
use serde_json::Value;
use slayer_common::cli::Output;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_common::records::{Memory, Tier};
use slayer_common::store::{OpenMode, StoreRead};
use slayer_memory::service;

use super::show::standing_text;
use crate::opening::open_store;

pub(super) fn memory_line(v: &Value) -> String {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    let tags: Vec<&str> = v
        .get("entities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let kind = if v.get("query").is_some() { "Q" } else { "M" };
    let first = s("learning").lines().next().unwrap_or("").to_owned();
    format!(
        "{kind} {}  {}  [{}]{}\n    {first}",
        s("id"),
        s("created_at"),
        tags.join(", "),
        standing_text(v, "  ", " ")
    )
}

pub(super) fn list(
    store_path: &Path,
    entity: Option<&str>,
    tiers: &[Tier],
    deleted: bool,
    out: &mut Output,
) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let found = match entity {
        None => store.memories()?,
        Some(raw) => {
            let catalog = service::load_catalog(&store)?;
            let r = service::resolve_ref(&store, &catalog, raw)?;
            let mut seen = Vec::new();
            let mut found: Vec<Memory> = Vec::new();
            for root in &r.canonical_forms {
                for m in store.memories_tagged_under(root)? {
                    if !seen.contains(&m.id) {
                        seen.push(m.id.clone());
                        found.push(m);
                    }
                }
            }
            found.sort_by(|a, b| a.id.cmp(&b.id));
            found
        }
    };
    let found: Vec<Memory> = found
        .into_iter()
        .filter(|m| deleted || !m.standing.deleted)
        .filter(|m| tiers.is_empty() || tiers.contains(&m.standing.tier))
        .collect();
    let values: Vec<Value> = found.iter().map(|m| tagged("memory", m)).collect();
    out.records(&values, memory_line)?;
    out.note(&format!("{} memories", values.len()));
    Ok(ExitStatus::Success)
}
