//! `slayer-index import-slayer DIR`: a SLayer project (YAML) loaded, its memories printed for `slayer-memory import`.

use std::path::Path;

use anyhow::{Context, Result};
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_common::store::OpenMode;
use slayer_index::catalog::CatalogBatch;
use slayer_index::project;

use slayer_common::cli::Output;

use crate::store_ops::{describe_changes, open_store, sync_index_or_warn};

pub(super) fn import_slayer(store_path: &Path, dir: &Path, out: &mut Output) -> Result<ExitStatus> {
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
    // Held from before the commit to the last line: a signal once committed waits (within
    // --drain) for the summary and the index, so a committed load is answered (§16.9).
    let _answering = slayer_common::shutdown::Busy::start();
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
