//! One function per subcommand: open what it needs, do it in one transaction, report.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_common::store::{self, OpenMode, StoreRead};
use slayer_index::catalog::{over_long_text, CatalogBatch};
use slayer_index::fulltext::FullText;
use slayer_index::{project, read_records, remove, render_records, sync, IndexError};

use slayer_common::cli::{Format, Output};
use slayer_common::jsonl::open_input;

use crate::cli::{Cli, Command};
use crate::output::{self, report_line_errors};
use crate::store_ops::{describe_changes, open_store, sync_index_or_warn};

pub fn run(cli: Cli) -> Result<ExitStatus> {
    let default_format = match cli.command {
        Command::Stats { .. } => Format::Text,
        _ => Format::Jsonl,
    };
    let mut out = cli.common.output.output(default_format)?;
    let store = &cli.common.store;
    match cli.command {
        Command::Load {
            file,
            sync,
            dry_run,
            allow_shrink,
        } => load(
            store,
            &file,
            LoadMode {
                sync,
                dry_run,
                allow_shrink,
            },
            &mut out,
        ),
        Command::Render { file } => render(&file, &mut out),
        Command::ImportSlayer { dir } => import_slayer(store, &dir, &mut out),
        Command::Import {
            layer,
            path,
            datasource,
            load,
            report,
            memories,
            dialect,
        } => crate::importing::run(
            store,
            crate::importing::Source {
                layer,
                path: &path,
                datasource: datasource.as_deref(),
                dialect: &dialect,
            },
            load,
            report.as_deref(),
            memories.as_deref(),
            &mut out,
        ),
        Command::Remove { canonical } => remove_entity(store, &canonical, &mut out),
        Command::Show { canonical } => show(store, &canonical, &mut out),
        Command::Export { datasource } => export(store, datasource.as_deref(), &mut out),
        Command::Rebuild => rebuild(store, &mut out),
        Command::Stats { check } => stats(store, check, &mut out),
        Command::Migrate => migrate(store, &mut out),
    }
}

/// How `load` runs: `--sync`, `--dry-run`, `--allow-shrink`.
#[derive(Debug, Clone, Copy)]
struct LoadMode {
    sync: bool,
    dry_run: bool,
    allow_shrink: bool,
}

fn load(store_path: &Path, file: &Path, mode: LoadMode, out: &mut Output) -> Result<ExitStatus> {
    let records = match read_records(open_input(file)?)? {
        Ok(records) => records,
        Err(errors) => {
            report_line_errors(&errors);
            return Ok(ExitStatus::Usage);
        }
    };
    let limits = slayer_common::limits::Limits::load(store_path)?;
    let mut batch = CatalogBatch::default();
    let mut errors = Vec::new();
    for (line, mut record) in records {
        if let Some(e) = over_long_text(line, &mut record, limits.description_bytes) {
            errors.push(e);
        } else if let Err(e) = batch.push(line, record) {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        report_line_errors(&errors);
        return Ok(ExitStatus::Usage);
    }
    let mut store = open_store(store_path, OpenMode::CreateIfMissing)?;
    if mode.dry_run {
        // Read as the write would, but in a read transaction: nothing is written.
        let plan = sync::plan(&batch, store.reader(), mode.sync)?;
        output::plan(out, &plan)?;
        out.note(&format!("dry run, nothing written: {}", plan.summary()));
        if let Some(refusal) = plan.shrink_refusal().filter(|_| !mode.allow_shrink) {
            out.warn(&refusal);
            return Ok(ExitStatus::Usage);
        }
        return Ok(ExitStatus::Success);
    }
    // The plan is read inside the write transaction, so two syncs of one store serialize on
    // its write lock and the second plans against what the first committed.
    let tx = store.write()?;
    let plan = sync::plan(&batch, &tx, mode.sync)?;
    if let Some(refusal) = plan.shrink_refusal().filter(|_| !mode.allow_shrink) {
        anyhow::bail!(slayer_common::cli::UsageError(format!(
            "{refusal}; nothing was written"
        )));
    }
    let (removed_docs, warnings) = sync::remove_absent(&tx, &plan)?;
    let mut summary = batch.write(&tx)?;
    summary.docs.extend(removed_docs);
    // The changed docs are on stdout (and flushed) before the commit, so a run that dies at
    // any point never commits a change its consumer (`| slayer-embed refresh`) did not get.
    // A run that dies before the commit printed docs of a load that did not happen; the
    // consumer re-reads them from the store (unchanged, so nothing is re-embedded) and the
    // re-run prints them again.
    output::docs(out, &summary.docs.changed, "changed")?;
    tx.commit().context("cannot commit the load")?;
    for warning in &warnings {
        out.warn(warning);
    }
    out.note(&format!(
        "loaded {} datasources, {} models ({}): {}",
        summary.datasources,
        summary.models,
        plan.summary(),
        describe_changes(&summary.docs)
    ));
    sync_index_or_warn(&mut store, out);
    Ok(ExitStatus::Success)
}

fn render(file: &Path, out: &mut Output) -> Result<ExitStatus> {
    match read_records(open_input(file)?)? {
        Ok(records) => {
            output::doc_texts(out, &render_records(&records))?;
            Ok(ExitStatus::Success)
        }
        Err(errors) => {
            report_line_errors(&errors);
            Ok(ExitStatus::Usage)
        }
    }
}

fn import_slayer(store_path: &Path, dir: &Path, out: &mut Output) -> Result<ExitStatus> {
    let mut project = project::read_project(dir)?;
    let limits = slayer_common::limits::Limits::load(store_path)?;
    let cut = |what: String, texts| {
        for (field, len) in slayer_common::records::cut_long(texts, limits.description_bytes) {
            out.warn(&format!(
                "{what}: its {field} is {len} bytes, cut to its first {} (limits.description_bytes in slayer.toml)",
                limits.description_bytes
            ));
        }
    };
    for ds in &mut project.datasources {
        cut(format!("datasource '{}'", ds.name), ds.texts_mut());
    }
    for m in &mut project.models {
        cut(format!("model '{}'", m.name), m.texts_mut());
    }
    let mut batch = CatalogBatch::default();
    for ds in project.datasources {
        batch.push(0, slayer_common::jsonl::Record::Datasource(ds))?;
    }
    for model in project.models {
        batch.push(0, slayer_common::jsonl::Record::Model(model))?;
    }
    let mut store = open_store(store_path, OpenMode::CreateIfMissing)?;
    let tx = store.write()?;
    let summary = batch.write(&tx)?;
    tx.commit().context("cannot commit the import")?;
    out.note(&format!(
        "imported {} datasources, {} models, {} memories from {}: {}",
        summary.datasources,
        summary.models,
        project.memories.len(),
        dir.display(),
        describe_changes(&summary.docs)
    ));
    sync_index_or_warn(&mut store, out);
    let records: Vec<_> = project
        .memories
        .iter()
        .map(|m| tagged("memory", m))
        .collect();
    out.records(&records, |v| v.to_string())?;
    Ok(ExitStatus::Success)
}

fn remove_entity(store_path: &Path, target: &str, out: &mut Output) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    let tx = store.write()?;
    let summary = remove::remove(&tx, target)?;
    output::docs(out, &summary.docs.changed, "changed")?;
    tx.commit().context("cannot commit the removal")?;
    let stripped = if summary.stripped_memories.is_empty() {
        String::new()
    } else {
        format!(
            "; tags stripped from memories {}",
            summary.stripped_memories.join(", ")
        )
    };
    out.note(&format!(
        "removed {}: {} docs deleted, {} docs changed, {} embedding rows deleted{stripped}",
        summary.target,
        summary.docs.deleted.len(),
        summary.docs.changed.len(),
        summary.embeddings_deleted
    ));
    sync_index_or_warn(&mut store, out);
    Ok(ExitStatus::Success)
}

fn show(store_path: &Path, ids: &[String], out: &mut Output) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let mut found = Vec::new();
    let mut status = ExitStatus::Success;
    for id in ids {
        match store.doc(id)? {
            Some(stored) => found.push(stored.doc),
            None => {
                out.note(&format!(
                    "no doc '{id}' in the store (hidden entities have none)"
                ));
                status = ExitStatus::Failure;
            }
        }
    }
    output::doc_texts(out, &found)?;
    Ok(status)
}

fn export(store_path: &Path, only: Option<&str>, out: &mut Output) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let all = store.datasources()?;
    if let Some(name) = only {
        if !all.iter().any(|ds| ds.name == name) {
            let known: Vec<&str> = all.iter().map(|ds| ds.name.as_str()).collect();
            return Err(IndexError::UnknownDatasource {
                name: name.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            }
            .into());
        }
    }
    let datasources: Vec<_> = all
        .into_iter()
        .filter(|ds| only.is_none_or(|name| ds.name == name))
        .collect();
    let mut records: Vec<_> = datasources
        .iter()
        .map(|ds| tagged("datasource", ds))
        .collect();
    for model in store.models(only)? {
        records.push(tagged("model", &model));
    }
    out.records(&records, |v| v.to_string())?;
    Ok(ExitStatus::Success)
}

fn rebuild(store_path: &Path, out: &mut Output) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    let dir = store.index_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the old index at {}", dir.display()))?;
    }
    let (fulltext, report) = FullText::open_synced(&mut store)?;
    out.note(&format!(
        "index: rebuilt {} with {} docs",
        dir.display(),
        fulltext.num_docs()
    ));
    debug_assert!(report.rebuilt);
    Ok(ExitStatus::Success)
}

fn migrate(store_path: &Path, out: &mut Output) -> Result<ExitStatus> {
    let refusal = open_store(store_path, OpenMode::ReadOnly).err();
    let store_error =
        refusal
            .as_ref()
            .and_then(|e| match e.downcast_ref::<slayer_index::IndexError>() {
                Some(slayer_index::IndexError::Store(e)) => Some(e),
                _ => None,
            });
    let before = match store_error {
        Some(store::StoreError::Outdated { found, .. }) => Some(*found),
        _ => None,
    };
    let absent = matches!(store_error, Some(store::StoreError::Missing(_)));
    // A team sets up a server store with `migrate` (then grants its readers); a file is made
    // by the first command that writes it, as before.
    let server = matches!(
        store::Location::parse(store_path),
        Ok(store::Location::Server(_))
    );
    let mode = if server {
        OpenMode::CreateIfMissing
    } else {
        OpenMode::MustExist
    };
    let mut store = open_store(store_path, mode)?;
    let version = store.schema_version()?;
    let (from, text) = match before {
        Some(found) => (
            found,
            format!(
                "migrated {} from schema version {found} to {version}\n",
                store.shown()
            ),
        ),
        None if absent => (
            0,
            format!("created {} at schema version {version}\n", store.shown()),
        ),
        None => (
            version,
            format!(
                "{} is at schema version {version}; nothing to do\n",
                store.shown()
            ),
        ),
    };
    sync_index_or_warn(&mut store, out);
    out.result(
        &json!({"kind": "migrate", "store": store.shown(), "from": from, "to": version}),
        &text,
    )?;
    Ok(ExitStatus::Success)
}

/// Each vector sidecar of the store: its model and revision, and whether it records the
/// store's current state.
fn vectors_report(store: &store::Store) -> Result<Vec<serde_json::Value>> {
    let state = store.vectors_state()?;
    Ok(slayer_embed::vectors::recorded(&store.vectors_dir())
        .into_iter()
        .map(|r| match r.built_for {
            Some((model, revision, built)) => json!({
                "model": model,
                "revision": revision,
                "current": Some(&built) == state.as_ref(),
            }),
            None => json!({"model": null, "current": false}),
        })
        .collect())
}

fn stats(store_path: &Path, check: bool, out: &mut Output) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let datasources = store.datasources()?.len();
    let models = store.models(None)?.len();
    let memories = store.memory_count()?;
    let doc_counts = store.doc_counts_by_kind()?;
    let embedding_counts = store.embedding_counts_by_model()?;
    let total_docs: i64 = doc_counts.iter().map(|(_, n)| n).sum();
    let index_dir = store.index_dir();
    // A damaged index is reported as missing: the next command that reads it rebuilds it.
    let fulltext = FullText::open_existing(&index_dir).ok().flatten();
    let (present, indexed, agrees, lag) = match &fulltext {
        Some(ft) => (
            true,
            ft.num_docs(),
            ft.agrees_with(&store)?,
            ft.lag(&store)?,
        ),
        None if store.is_server() => (false, 0, false, Default::default()),
        None => (false, 0, false, store.index_lag()?),
    };
    let vectors = vectors_report(&store)?;
    let vectors_current = vectors.iter().all(|v| v["current"] == json!(true));
    // A server store's caches are this host's: `--check` holds every one of them to the store.
    // Beside a file the sidecars catch up when a search next opens them, as before.
    let agrees_all = agrees && (!store.is_server() || vectors_current);
    let value = json!({
        "kind": "stats",
        "store": store.shown(),
        "schema_version": store.supported_version(),
        "written_by": store.setting(slayer_common::store::WRITTEN_BY)?,
        "datasources": datasources,
        "models": models,
        "memories": memories,
        "docs": doc_counts.iter().map(|(k, n)| (k.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "embeddings": embedding_counts.iter().map(|(k, n)| (k.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "index": {
            "path": index_dir,
            "present": present,
            "docs": indexed,
            "pending_upserts": lag.upserts.len(),
            "pending_deletes": lag.deletes.len(),
            "agrees_with_store": agrees,
        },
        "vectors": vectors,
    });
    let mut text = format!(
        "store        {}\ndatasources  {datasources}\nmodels       {models}\nmemories     {memories}\ndocs         {total_docs}\n",
        store.shown()
    );
    for (kind, n) in &doc_counts {
        text.push_str(&format!("  {kind:<12} {n}\n"));
    }
    text.push_str("embeddings\n");
    for (model, n) in &embedding_counts {
        text.push_str(&format!("  {model:<12} {n}\n"));
    }
    let state = match (present, agrees) {
        (false, _) => "missing (any slayer command that reads it will build it)".to_owned(),
        (true, true) => "in sync with the store".to_owned(),
        (true, false) => format!(
            "behind the store ({} docs to update, {} to remove; the next command that opens it catches up)",
            lag.upserts.len(),
            lag.deletes.len()
        ),
    };
    text.push_str(&format!("index        {indexed} docs, {state}\n"));
    for v in &vectors {
        text.push_str(&format!(
            "vectors      {} ({})\n",
            v["model"].as_str().unwrap_or("unreadable file"),
            if v["current"] == json!(true) {
                "in sync with the store"
            } else {
                "behind the store (the next search rebuilds it)"
            }
        ));
    }
    out.result(&value, &text)?;
    Ok(if check && !agrees_all {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
