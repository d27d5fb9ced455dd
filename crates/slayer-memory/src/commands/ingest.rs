//! `slayer-memory ingest PATH…`: a Markdown knowledge base converged into the store
//! ([`slayer_memory::kb`] reads the pages; [`super::import`] writes them in one transaction,
//! forgetting the `kb.` memories whose file is gone).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;
use slayer_common::cli::{Output, UsageError};
use slayer_common::exit::ExitStatus;
use slayer_common::store::{OpenMode, StoreRead};
use slayer_index::import::{project_files, read_bounded, Syntax};
use slayer_memory::kb::{self, Source, Split};
use slayer_memory::resolve::Catalog;
use slayer_memory::service;

use super::import::{import_record, write_memories, ImportLine, Writing};
use crate::opening::{load_limits, open_store};

pub(crate) fn ingest(
    store_path: &Path,
    paths: &[PathBuf],
    split: Split,
    writing: &Writing,
    out: &mut Output,
) -> Result<ExitStatus> {
    let limits = load_limits(store_path)?;
    for path in paths {
        if !path.exists() {
            return Err(UsageError(format!(
                "{}: no such file or folder; give the knowledge base's folder (or .md files)",
                path.display()
            ))
            .into());
        }
    }
    let store = open_store(store_path, OpenMode::CreateIfMissing)?;
    let reader = store.reader();
    let catalog = service::load_catalog(reader)?;
    let mut parsed: Vec<ImportLine> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    let mut unreadable = 0;
    for path in paths {
        let files = project_files(path, &|name: &str| name.ends_with(".md"), &[])
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        for (passed, why) in &files.passed_over {
            notes.push(format!("{}: skipped: {why}", passed.display()));
        }
        for file in &files.files {
            let relative = file.strip_prefix(&files.base).unwrap_or(file);
            let pages = read_bounded(file, Syntax::Text, &limits)
                .and_then(|text| kb::read_page(relative, &text, split).map_err(|e| e.to_string()));
            let pages = match pages {
                Ok(pages) => pages,
                Err(why) => {
                    unreadable += 1;
                    notes.push(format!("{}: skipped: {why}", file.display()));
                    continue;
                }
            };
            for page in pages {
                let ordinal = parsed.len() + 1;
                let record = memory_of(page, reader, &catalog, file, &mut notes);
                let memory = import_record(&record.to_string(), &limits);
                if let Err(why) = &memory {
                    unreadable += 1;
                    notes.push(format!("{}: skipped: {why}", file.display()));
                    continue;
                }
                parsed.push((ordinal, memory));
            }
        }
    }
    let mut writing = writing.clone();
    if unreadable > 0 && writing.sync.is_some() {
        // A page that could not be read is not a page that is gone: its memory stays.
        notes.push(format!(
            "{unreadable} pages could not be read, so nothing was forgotten this run; fix them and run again"
        ));
        writing.sync = None;
    }
    drop(store);
    write_memories(store_path, parsed, 0, &writing, &notes, out)
}

/// A page as a memory record: its references resolved into tags (an unresolvable front-matter
/// entity or link is a note naming file and line; a backticked name that names nothing is
/// ordinary code).
fn memory_of(
    page: kb::Page,
    store: &dyn StoreRead,
    catalog: &Catalog,
    file: &Path,
    notes: &mut Vec<String>,
) -> Value {
    let mut tags: Vec<String> = Vec::new();
    let mut seen = BTreeSet::new();
    for reference in &page.references {
        match service::resolve_ref(store, catalog, &reference.text) {
            Ok(resolution) => {
                for tag in resolution.canonical_forms {
                    if seen.insert(tag.clone()) {
                        tags.push(tag);
                    }
                }
            }
            Err(e) if reference.source != Source::Backticked => notes.push(format!(
                "{}:{}: entity '{}' is not tagged: {e}",
                file.display(),
                reference.line,
                reference.text
            )),
            Err(_) => {}
        }
    }
    let mut record = page.record;
    record.insert("kind".into(), Value::String("memory".into()));
    record.insert(
        "entities".into(),
        Value::Array(tags.into_iter().map(Value::String).collect()),
    );
    Value::Object(record)
}
