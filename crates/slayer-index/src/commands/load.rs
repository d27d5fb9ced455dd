//! `slayer-index load [--sync]`: catalog records into the store in one transaction, the changed docs out.

use std::path::Path;

use anyhow::{Context, Result};
use slayer_common::exit::ExitStatus;
use slayer_common::store::OpenMode;
use slayer_index::catalog::{over_long_text, CatalogBatch};
use slayer_index::{read_records, sync};

use slayer_common::cli::Output;
use slayer_common::jsonl::open_input;

use crate::output::{self, report_line_errors};
use crate::store_ops::{describe_changes, open_store, sync_index_or_warn};

/// How `load` runs: `--sync`, `--dry-run`, `--allow-shrink`.
#[derive(Debug, Clone, Copy)]
pub(super) struct LoadMode {
    pub sync: bool,
    pub dry_run: bool,
    pub allow_shrink: bool,
}

pub(super) fn load(
    store_path: &Path,
    file: &Path,
    mode: LoadMode,
    out: &mut Output,
) -> Result<ExitStatus> {
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
    // Held from before the commit to the last line: a signal once committed waits (within
    // --drain) for the summary and the index, so a committed load is answered (§16.9).
    let _answering = slayer_common::shutdown::Busy::start();
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
