//! `slayer-memory import`: memory records (JSON lines) into the store in one transaction, and
//! the writer `ingest` shares: with a sync prefix, the memories of that prefix the input lacks
//! are forgotten in the same transaction; `--dry-run` prints the plan and writes nothing.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;

use anyhow::{Context, Result};
use serde_json::{json, Value};
use slayer_common::cli::{Output, UsageError};
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::{open_input, read_lines, record_from_value, tagged, ReadError, Record};
use slayer_common::limits::Limits;
use slayer_common::records::Memory;
use slayer_common::store::{OpenMode, StoreRead, StoreWrite};
use slayer_index::sync::{Change, Planned};
use slayer_memory::service::{self, ImportStatus};
use slayer_memory::{write, MemoryError};

use crate::opening::{load_limits, open_store};

/// How a batch of memories is written: `--sync PREFIX`, `--dry-run`, `--allow-shrink`, and
/// whether to embed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Writing {
    /// Forget the memories of this id prefix that the input lacks.
    pub sync: Option<String>,
    /// Print the plan; write nothing.
    pub dry_run: bool,
    /// Let a sync forget more than half of the prefix's memories.
    pub allow_shrink: bool,
    /// Embed what was added or changed.
    pub embed: bool,
}

/// Why an import line (or a knowledge-base page) is not a memory record.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RecordLineError {
    /// Not JSON.
    #[error("invalid JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// JSON, but not an object.
    #[error("expected a JSON object (a memory record)")]
    NotObject,
    /// No `kind`.
    #[error(
        "missing field 'kind'; a memory record has \"kind\": \"memory\" (as export writes it)"
    )]
    MissingKind,
    /// Another `kind`.
    #[error("field 'kind': expected \"memory\", got {got}")]
    WrongKind {
        /// The kind given, as JSON.
        got: Value,
    },
    /// An `id` that is not a string.
    #[error("field 'id': expected a string, got {got}; quote it (\"id\": \"{}\") or leave it out to have one allocated", .got.to_string().trim_matches('"'))]
    IdNotString {
        /// The id given, as JSON.
        got: Value,
    },
    /// Not of a memory record's shape.
    #[error(transparent)]
    Record(#[from] slayer_common::jsonl::RecordError),
    /// A field that is not valid.
    #[error(transparent)]
    Field(#[from] service::FieldError),
    /// Over a limit, or otherwise refused.
    #[error(transparent)]
    Refused(#[from] MemoryError),
    /// A line that is not UTF-8.
    #[error("not valid UTF-8; input must be UTF-8 JSON lines")]
    NotUtf8,
}

/// Parses and checks one import line into a memory record.
pub(crate) fn import_record(text: &str, limits: &Limits) -> Result<Memory, RecordLineError> {
    let value: Value = serde_json::from_str(text)?;
    let Value::Object(mut object) = value else {
        return Err(RecordLineError::NotObject);
    };
    match object.remove("kind") {
        Some(Value::String(k)) if k == "memory" => {}
        None => return Err(RecordLineError::MissingKind),
        Some(got) => return Err(RecordLineError::WrongKind { got }),
    }
    match object.get("id") {
        None | Some(Value::String(_)) => {}
        Some(got) => return Err(RecordLineError::IdNotString { got: got.clone() }),
    }
    object
        .entry("id")
        .or_insert_with(|| Value::String(String::new()));
    object
        .entry("created_at")
        .or_insert_with(|| Value::String(service::now_utc()));
    // An empty id is the "allocate one" sentinel: validate the rest with a stand-in id.
    let allocate = object.get("id") == Some(&Value::String(String::new()));
    if allocate {
        object.insert("id".into(), Value::String("pending".into()));
    }
    let Record::Memory(mut memory) = record_from_value("memory", Value::Object(object))? else {
        unreachable!("record_from_value returns the kind it is asked for");
    };
    if allocate {
        memory.id.clear();
    }
    service::check_record(&mut memory)?;
    let id = (!memory.id.is_empty()).then_some(memory.id.as_str());
    let entities = memory.entities.iter().map(String::as_str);
    service::check_fields(
        limits,
        &memory.learning,
        id,
        entities,
        memory.query.as_ref(),
        &memory.standing,
        &memory.occasion,
    )?;
    Ok(memory)
}

/// The lines whose explicit id an earlier line of the same input already has, with that line.
fn duplicate_ids(parsed: &[ImportLine]) -> HashMap<usize, usize> {
    let mut first_line: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    let mut duplicates = std::collections::HashMap::new();
    for (no, memory) in parsed {
        let Ok(memory) = memory else { continue };
        if memory.id.is_empty() {
            continue;
        }
        match first_line.get(memory.id.as_str()) {
            Some(&first) => {
                duplicates.insert(*no, first);
            }
            None => {
                first_line.insert(&memory.id, *no);
            }
        }
    }
    duplicates
}

/// From this many records, an import recounts tags once instead of per row.
const BULK_IMPORT: usize = 1000;

/// An import line's number and its memory, or why it is not one.
pub(crate) type ImportLine = (usize, Result<Memory, RecordLineError>);

/// The import's lines, each a memory or why it is not one, and how many are bad; without
/// `keep_going` the first bad line stops the import before the store is opened.
fn read_import(file: &Path, keep_going: bool, limits: &Limits) -> Result<(Vec<ImportLine>, usize)> {
    let mut parsed: Vec<ImportLine> = Vec::new();
    let mut bad = 0;
    for line in read_lines(open_input(file)?) {
        let (no, result) = match line {
            Ok((no, text)) => (no, import_record(&text, limits)),
            Err(ReadError::Utf8(no)) => (no, Err(RecordLineError::NotUtf8)),
            Err(e) => return Err(MemoryError::Read(e).into()),
        };
        if let Err(message) = &result {
            bad += 1;
            if !keep_going {
                return Err(MemoryError::Line {
                    line: no,
                    message: format!("{message}; nothing was imported"),
                }
                .into());
            }
        }
        parsed.push((no, result));
    }
    Ok((parsed, bad))
}

/// One import result for people: `line N: <status> memory <id>` and its warnings.
fn import_line(r: &Value) -> String {
    match r["kind"].as_str() {
        Some("forgotten") => format!(
            "forgotten memory {} (absent from the input)",
            r["memory_id"].as_str().unwrap_or("")
        ),
        Some("error") => format!(
            "line {}: error: {}",
            r["line"],
            r["error"].as_str().unwrap_or("")
        ),
        _ => {
            let mut line = format!(
                "line {}: {} memory {}",
                r["line"],
                r["status"].as_str().unwrap_or(""),
                r["memory_id"].as_str().unwrap_or("")
            );
            for w in r["warnings"].as_array().into_iter().flatten() {
                line.push_str(&format!("\n  Warning: {}", w.as_str().unwrap_or("")));
            }
            line
        }
    }
}

pub(crate) fn import(
    store_path: &Path,
    file: &Path,
    keep_going: bool,
    writing: &Writing,
    out: &mut Output,
) -> Result<ExitStatus> {
    let limits = load_limits(store_path)?;
    let (parsed, bad) = read_import(file, keep_going, &limits)?;
    let mut writing = writing.clone();
    let mut notes = Vec::new();
    if bad > 0 && writing.sync.is_some() {
        // A line that could not be read may be a memory that is not gone: nothing is forgotten.
        notes.push(format!(
            "{bad} lines could not be read, so --sync forgot nothing this run; fix them and run again"
        ));
        writing.sync = None;
    }
    write_memories(store_path, parsed, bad, &writing, &notes, out)
}

/// What a sync by prefix forgets: the stored memories of `writing.sync`'s prefix that
/// `present` lacks (none without a prefix), read once, and the refusal of a sync that would
/// forget more than half of them (unless `--allow-shrink`).
fn to_forget(
    store: &dyn StoreRead,
    writing: &Writing,
    present: &BTreeSet<&str>,
) -> Result<(Vec<String>, Option<String>)> {
    let Some(prefix) = writing.sync.as_deref() else {
        return Ok((Vec::new(), None));
    };
    let stored = store.memory_ids_with_prefix(prefix)?;
    let total = stored.len();
    let gone: Vec<String> = stored
        .into_iter()
        .filter(|id| !present.contains(id.as_str()))
        .collect();
    let n = gone.len();
    let refusal = (!writing.allow_shrink && n * 2 > total).then(|| {
        format!(
            "this sync would forget {n} of the {total} memories whose id starts with '{prefix}' (more than half); an empty or broken source would wipe them this way: check the input, or add --allow-shrink to mean it"
        )
    });
    Ok((gone, refusal))
}

/// `3 added, 1 changed, 2 removed, 40 unchanged`.
fn summary(added: usize, changed: usize, removed: usize, unchanged: usize) -> String {
    format!("{added} added, {changed} changed, {removed} removed, {unchanged} unchanged")
}

/// Writes checked memories (and the bad lines' errors) in one transaction, as `writing` says;
/// `notes` are warnings the reader found (printed before the summary).
pub(crate) fn write_memories(
    store_path: &Path,
    parsed: Vec<ImportLine>,
    bad: usize,
    writing: &Writing,
    notes: &[String],
    out: &mut Output,
) -> Result<ExitStatus> {
    let duplicates = duplicate_ids(&parsed);
    let present: BTreeSet<&str> = parsed
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok().map(|m| m.id.as_str()))
        .collect();
    if writing.dry_run {
        return plan(store_path, &parsed, &present, writing, notes, out);
    }
    let mut store = open_store(store_path, OpenMode::CreateIfMissing)?;
    let tx = store.write()?;
    // Read inside the write transaction: two syncs of one store serialize on its write lock.
    let (forgotten, refusal) = to_forget(&tx, writing, &present)?;
    if let Some(refusal) = refusal {
        return Err(UsageError(format!("{refusal}; nothing was written")).into());
    }
    let mut ids = service::TierIds::new(
        &tx,
        parsed
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok().map(|m| m.id.clone()))
            .collect(),
    );
    let mut results = Vec::new();
    let (mut created, mut updated, mut unchanged) = (0, 0, 0);
    let mut imported = Vec::new();
    let mut to_embed = Vec::new();
    // Many writes: recount once at the end instead of per tag row. Only writes count: turning
    // the counting off is itself a write, and a re-run with nothing changed writes nothing.
    let stored = stored_memories(&tx, &parsed)?;
    let writes = forgotten.len()
        + parsed
            .iter()
            .filter_map(|(_, r)| r.as_ref().ok())
            .filter(|m| change_of(&stored, m).is_some())
            .count();
    let bulk = writes >= BULK_IMPORT;
    if bulk {
        tx.suspend_counts()?;
    }
    let (lines, records) = take_records(parsed, &mut results);
    let batch = service::import_batch(&tx, &mut ids, records, stored)?;
    for ((no, at), (id, status)) in lines.into_iter().zip(batch.statuses) {
        match status {
            ImportStatus::Created => created += 1,
            ImportStatus::Updated => updated += 1,
            ImportStatus::Unchanged => unchanged += 1,
        }
        if status != ImportStatus::Unchanged {
            to_embed.push(id.clone());
        }
        imported.push(id.clone());
        results[at] = json!({"kind": "imported", "line": no, "memory_id": id, "status": status, "warnings": []});
    }
    for id in &forgotten {
        slayer_index::remove::remove(&tx, &format!("memory:{id}"))
            .map_err(|e| anyhow::anyhow!("cannot forget memory '{id}': {e}"))?;
        results.push(json!({"kind": "forgotten", "memory_id": id}));
    }
    if bulk {
        tx.resume_counts()?;
    }
    // Dangling tags are judged after the whole batch, so memory: links to later lines count.
    add_warnings(&tx, &batch.memories, &mut results, &duplicates)?;
    // Not held while the index is built from every doc.
    drop(batch.memories);
    tx.commit().context("cannot commit the import")?;
    // Committed: a signal from here waits (within --drain) for the embedding and the result
    // records, so the import is answered (docs/spec/limits.md §16.9).
    let _answering = slayer_common::shutdown::Busy::start();
    let index_warning = write::sync_index(&mut store);
    // Only what was added or changed is embedded: a re-run with nothing changed embeds nothing.
    if writing.embed && !to_embed.is_empty() {
        for warning in write::embed_memories(&mut store, &to_embed) {
            out.note(&format!("Warning: {warning}"));
        }
    }
    if let Some(warning) = write::follow_vectors(&store) {
        out.note(&format!("Warning: {warning}"));
    }
    out.records(&results, import_line)?;
    for note in notes {
        out.warn(note);
    }
    let tally = summary(created, updated, forgotten.len(), unchanged);
    out.note(&format!(
        "imported {} memories ({tally}){}",
        imported.len(),
        if bad > 0 {
            format!(", {bad} bad lines skipped")
        } else {
            String::new()
        }
    ));
    if let Some(w) = index_warning {
        out.note(&format!("Warning: {w}"));
    }
    Ok(if bad > 0 || !notes.is_empty() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// The input's memories, in order, each with its line and the place of its result in
/// `results` (filled once it is written); a bad line's error result goes in its place now.
fn take_records(
    parsed: Vec<ImportLine>,
    results: &mut Vec<Value>,
) -> (Vec<(usize, usize)>, Vec<Memory>) {
    let mut lines = Vec::new();
    let mut records = Vec::new();
    for (no, result) in parsed {
        match result {
            Ok(memory) => {
                lines.push((no, results.len()));
                results.push(Value::Null);
                records.push(memory);
            }
            Err(message) => {
                results.push(json!({"kind": "error", "line": no, "error": message.to_string()}))
            }
        }
    }
    (lines, records)
}

/// Each `imported` result's warnings: its tags that name nothing in the store yet, and an id
/// an earlier line of the input also had.
fn add_warnings(
    tx: &dyn StoreRead,
    imported: &HashMap<String, Memory>,
    results: &mut [Value],
    duplicates: &HashMap<usize, usize>,
) -> Result<()> {
    let catalog = service::load_catalog(tx)?;
    for r in results.iter_mut().filter(|r| r["kind"] == "imported") {
        let id = r["memory_id"].as_str().unwrap_or_default().to_owned();
        if let Some(m) = imported.get(&id) {
            let dangling = service::dangling_tags(tx, &catalog, m, imported)?;
            r["warnings"] = dangling
                .iter()
                .map(|t| Value::String(format!("tag '{t}' names nothing in the store yet; search ignores it until it exists")))
                .collect();
        }
        let line = r["line"].as_u64().unwrap_or_default() as usize;
        if let Some(first) = duplicates.get(&line) {
            if let Some(warnings) = r["warnings"].as_array_mut() {
                warnings.insert(0, Value::String(format!(
                    "id '{id}' is also on line {first}; this line (the later one) is what the store keeps"
                )));
            }
        }
    }
    Ok(())
}

/// What writing `memory` would change: added (a new id, or one to allocate), changed, or
/// nothing (`None`: equal to the stored one but for `created_at`, which import keeps).
fn change_of(stored: &HashMap<String, Memory>, memory: &Memory) -> Option<Change> {
    if memory.id.is_empty() {
        return Some(Change::Added);
    }
    match stored.get(&memory.id) {
        None => Some(Change::Added),
        Some(old) => {
            let mut same = memory.clone();
            same.created_at = old.created_at.clone();
            (same != *old).then_some(Change::Changed)
        }
    }
}

/// The stored memories of the input's ids, in one read.
fn stored_memories(
    store: &dyn StoreRead,
    parsed: &[ImportLine],
) -> Result<HashMap<String, Memory>> {
    let ids: Vec<String> = parsed
        .iter()
        .filter_map(|(_, r)| r.as_ref().ok())
        .filter(|m| !m.id.is_empty())
        .map(|m| m.id.clone())
        .collect();
    Ok(store
        .memories_by_ids(&ids)?
        .into_iter()
        .map(|m| (m.id.clone(), m))
        .collect())
}

/// `--dry-run`: one `plan` record per memory added, changed or forgotten, the summary on
/// stderr; nothing is written.
fn plan(
    store_path: &Path,
    parsed: &[ImportLine],
    present: &BTreeSet<&str>,
    writing: &Writing,
    notes: &[String],
    out: &mut Output,
) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::CreateIfMissing)?;
    let reader = store.reader();
    let mut planned = Vec::new();
    let mut unchanged = 0;
    let stored = stored_memories(reader, parsed)?;
    for memory in parsed.iter().filter_map(|(_, r)| r.as_ref().ok()) {
        match change_of(&stored, memory) {
            Some(change) => planned.push(Planned {
                change,
                id: memory.id.clone(),
            }),
            None => unchanged += 1,
        }
    }
    let (forgotten, refusal) = to_forget(reader, writing, present)?;
    planned.extend(forgotten.into_iter().map(|id| Planned {
        change: Change::Removed,
        id,
    }));
    let count = |c: Change| planned.iter().filter(|p| p.change == c).count();
    let tally = summary(
        count(Change::Added),
        count(Change::Changed),
        count(Change::Removed),
        unchanged,
    );
    let values: Vec<Value> = planned.iter().map(|p| tagged("plan", p)).collect();
    out.records(&values, |v| {
        format!(
            "{:<8} {}",
            v["change"].as_str().unwrap_or(""),
            v["id"].as_str().unwrap_or("")
        )
    })?;
    for note in notes {
        out.warn(note);
    }
    out.note(&format!("dry run, nothing written: {tally}"));
    if let Some(refusal) = refusal {
        out.warn(&refusal);
        return Ok(ExitStatus::Usage);
    }
    Ok(if notes.is_empty() {
        ExitStatus::Success
    } else {
        ExitStatus::Failure
    })
}
