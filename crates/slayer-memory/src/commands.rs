//! One function per subcommand: open the store, do it in one transaction, bring the index up
//! to date, report.

use std::path::Path;

use anyhow::Result;
use serde_json::{json, Value};
use slayer_common::canonical::check_memory_id;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_common::records::{Memory, Standing, Tier};
use slayer_common::store::{OpenMode, StoreRead};
use slayer_memory::service::{self, SaveRequest};
use slayer_memory::MemoryError;
use slayer_memory::{review, write};

use slayer_common::cli::{Format, Output, UsageError};

use crate::cli::{Cli, Command, OnOff};
use crate::importing::{self, Writing};
use crate::ingest;
use crate::opening::{load_limits, open_store};
use crate::reviewing;

pub fn run(cli: Cli) -> Result<ExitStatus> {
    let default_format = match cli.command {
        Command::Export | Command::Import { .. } | Command::Ingest { .. } => Format::Jsonl,
        _ => Format::Text,
    };
    let mut out = cli.common.output.output(default_format)?;
    let store = &cli.common.store;
    let status = match cli.command {
        Command::Save {
            learning,
            entities,
            query,
            id,
            description,
            standing,
            no_embed,
        } => save(
            store,
            SaveInput {
                learning,
                entities,
                query,
                id,
                description,
                standing: standing.standing(),
                embed: !no_embed,
            },
            &mut out,
        ),
        Command::Forget { id, soft } => forget(store, &id, soft, &mut out),
        Command::List {
            entity,
            tiers,
            deleted,
        } => list(store, entity.as_deref(), &tiers, deleted, &mut out),
        Command::Show { ids } => show(store, &ids, &mut out),
        Command::Review {
            require,
            project,
            agent,
        } => match require {
            Some(on) => reviewing::require(store, on == OnOff::On, &mut out),
            None => {
                let owners = review::Owners {
                    project: project.as_deref(),
                    agent: agent.as_deref(),
                };
                reviewing::list(store, &owners, &mut out)
            }
        },
        Command::Approve { ids } => reviewing::approve(store, &ids, &mut out),
        Command::Reject { ids } => reviewing::reject(store, &ids, &mut out),
        Command::Export => export(store, &mut out),
        Command::Import {
            file,
            keep_going,
            no_embed,
            sync,
            dry_run,
            allow_shrink,
        } => {
            let writing = Writing {
                sync,
                dry_run,
                allow_shrink,
                embed: !no_embed,
            };
            importing::import(store, &file, keep_going, &writing, &mut out)
        }
        Command::Ingest {
            paths,
            split,
            no_sync,
            dry_run,
            allow_shrink,
            no_embed,
        } => {
            let writing = Writing {
                sync: (!no_sync).then(|| slayer_memory::kb::PREFIX.to_owned()),
                dry_run,
                allow_shrink,
                embed: !no_embed,
            };
            ingest::ingest(store, &paths, split, &writing, &mut out)
        }
    }?;
    out.finish()?;
    Ok(status)
}

fn parse_query(arg: &str) -> Result<serde_json::Value, UsageError> {
    slayer_memory::parse_query_arg(arg).map_err(UsageError)
}

/// `save`'s flags.
struct SaveInput {
    learning: String,
    entities: Option<String>,
    query: Option<String>,
    id: Option<String>,
    description: Option<String>,
    standing: Standing,
    embed: bool,
}

fn save(store_path: &Path, input: SaveInput, out: &mut Output) -> Result<ExitStatus> {
    let SaveInput {
        learning,
        entities,
        query,
        id,
        description,
        standing,
        embed,
    } = input;
    let (entities, query) = match (entities, query) {
        (Some(_), Some(_)) => {
            return Err(UsageError("--entities and --query are mutually exclusive.".into()).into())
        }
        (None, None) => {
            return Err(UsageError(
                "--entities or --query must be supplied (one or the other).".into(),
            )
            .into())
        }
        (Some(list), None) => {
            // Commas inside `avg(amount, weight=q)` do not split.
            let items: Vec<String> = slayer_memory::aggref::split_args(&list)
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
            (Some(items), None)
        }
        (None, Some(q)) => (None, Some(parse_query(&q)?)),
    };
    let limits = load_limits(store_path)?;
    let request = SaveRequest {
        learning,
        entities,
        query,
        id,
        description,
        standing,
    };
    request.check_limits(&limits)?;
    let mut store = open_store(store_path, OpenMode::CreateIfMissing)?;
    let saved = write::save(&mut store, request, &limits, embed)?;
    for warning in &saved.embedding_warnings {
        out.note(&format!("Warning: {warning}"));
    }
    let outcome = saved.outcome;
    out.result(
        &serde_json::to_value(&outcome)?,
        &format!("{}\n", outcome.to_text()),
    )?;
    Ok(ExitStatus::Success)
}

fn forget(store_path: &Path, id: &str, soft: bool, out: &mut Output) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    if soft {
        write::forget_soft(&mut store, id)?;
        out.result(
            &json!({"deleted_id": id, "soft": true}),
            &format!("Soft-deleted memory {id}.\n"),
        )?;
        return Ok(ExitStatus::Success);
    }
    let warning = write::forget(&mut store, id)?;
    let text = service::forgotten_text(id, warning.as_deref());
    out.result(&json!({"deleted_id": id}), &format!("{text}\n"))?;
    Ok(ExitStatus::Success)
}

fn memory_line(v: &Value) -> String {
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

/// The record's standing fields that differ from a plain lesson (`tier=semantic
/// confidence=0.9`), each after `lead` and joined by `sep`; empty for a plain lesson.
fn standing_text(v: &Value, lead: &str, sep: &str) -> String {
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

fn list(
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

/// Every memory asked for, in the order asked, whatever its tier; a missing id is an error
/// before anything is printed.
fn show(store_path: &Path, ids: &[String], out: &mut Output) -> Result<ExitStatus> {
    for id in ids {
        check_memory_id(id).map_err(MemoryError::Invalid)?;
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
pub(crate) fn shown_records(memories: &[Memory], out: &mut Output) -> Result<()> {
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
pub(crate) fn show_text(m: &Memory) -> String {
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

fn export(store_path: &Path, out: &mut Output) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let values: Vec<Value> = store
        .memories()?
        .iter()
        .map(|m| tagged("memory", m))
        .collect();
    out.records(&values, memory_line)?;
    Ok(ExitStatus::Success)
}
