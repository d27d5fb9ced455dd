//! `slayer-index import <format> PATH`: a project of another semantic layer as catalog records,
//! printed or loaded, with one warning per object skipped or mapped lossily (docs/spec/importers.md
//! §17).

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::json;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::{record_from_value, tagged, Record};
use slayer_common::store::OpenMode;
use slayer_index::catalog::CatalogBatch;
use slayer_index::import::{self, Fate, Imported, Issue, Report};
use slayer_index::project;

use slayer_common::cli::Output;

use crate::cli::ImportFormat;
use crate::output;
use crate::store_ops::{describe_changes, open_store, sync_index_or_warn};

/// What to import.
pub struct Source<'a> {
    pub layer: ImportFormat,
    pub path: &'a Path,
    pub datasource: Option<&'a str>,
    pub dialect: &'a str,
}

pub fn run(
    store_path: &Path,
    source: Source,
    load: bool,
    report: Option<&Path>,
    memories: Option<&Path>,
    out: &mut Output,
) -> Result<ExitStatus> {
    let (path, datasource) = (source.path, source.datasource);
    // The store's [limits] bound what the importers read (file size, nesting).
    let limits = slayer_common::limits::Limits::load(store_path)?;
    let mut imported = match source.layer {
        ImportFormat::Dbt => import::dbt::import(path, datasource, &limits)?,
        ImportFormat::Ossie => import::ossie::import(path, datasource, source.dialect, &limits)?,
        ImportFormat::Cube => import::cube::import(path, datasource, &limits)?,
        ImportFormat::Slayer => slayer_project(path, datasource, &limits, out)?,
    };
    let records = checked_records(&mut imported);
    for issue in &imported.issues {
        out.warn(&issue.to_string());
    }
    if let Some(file) = report {
        let body = json!({
            "format": imported.report.format,
            "project": imported.report.project,
            "datasource": imported.datasource.name,
            "kinds": imported.report.kinds,
            "issues": imported.issues,
        });
        std::fs::write(file, format!("{}\n", serde_json::to_string_pretty(&body)?))
            .with_context(|| format!("cannot write the report {}", file.display()))?;
    }
    match memories {
        Some(file) => {
            let lines: String = imported
                .memories
                .iter()
                .map(|m| format!("{m}\n"))
                .collect();
            std::fs::write(file, lines)
                .with_context(|| format!("cannot write the memories {}", file.display()))?;
        }
        None if !imported.memories.is_empty() => out.note(&format!(
            "{} saved queries read; --memories FILE writes them as example-query memories for `slayer-memory import FILE`",
            imported.memories.len()
        )),
        None => {}
    }
    if load {
        let mut batch = CatalogBatch::default();
        for record in records {
            batch.push(0, record)?;
        }
        let mut store = open_store(store_path, OpenMode::CreateIfMissing)?;
        let tx = store.write()?;
        let summary = batch.write(&tx)?;
        output::docs(out, &summary.docs.changed, "changed")?;
        // Held from before the commit to the last line: a signal once committed waits (within
        // --drain) for the summary and the index, so a committed load is answered (§16.9).
        let _answering = slayer_common::shutdown::Busy::start();
        tx.commit().context("cannot commit the import")?;
        out.note(&format!(
            "imported {} models of {} into datasource '{}': {}",
            summary.models,
            path.display(),
            imported.datasource.name,
            describe_changes(&summary.docs)
        ));
        sync_index_or_warn(&mut store, out);
    } else {
        let values: Vec<_> = records
            .iter()
            .map(|r| match r {
                Record::Datasource(ds) => tagged("datasource", ds),
                Record::Model(m) => tagged("model", m),
                _ => unreachable!("only catalog records are imported"),
            })
            .collect();
        out.records(&values, |v| v.to_string())?;
        out.note(&summary_line(&imported.report));
    }
    Ok(if imported.report.skipped_any() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// `read 6 semantic_model (6 mapped), 19 metric (16 mapped, 3 lossy)`.
fn summary_line(report: &Report) -> String {
    let kinds: Vec<String> = report
        .kinds
        .iter()
        .map(|(kind, c)| {
            let mut parts = vec![format!("{} mapped", c.mapped)];
            if c.lossy > 0 {
                parts.push(format!("{} lossy", c.lossy));
            }
            if c.skipped > 0 {
                parts.push(format!("{} skipped", c.skipped));
            }
            format!("{} {kind} ({})", c.read, parts.join(", "))
        })
        .collect();
    format!("read {}", kinds.join(", "))
}

/// The records, each checked as `load` checks it: a model `load` would refuse is skipped here,
/// with an issue, rather than failing the whole load later.
fn checked_records(imported: &mut Imported) -> Vec<Record> {
    let mut records = Vec::new();
    match record_from_value("datasource", tagged("datasource", &imported.datasource)) {
        Ok(r) => records.push(r),
        Err(e) => {
            imported.issues.push(Issue {
                file: imported.report.project.clone(),
                line: 0,
                object: format!("datasource '{}'", imported.datasource.name),
                fate: Fate::Skipped,
                message: format!("{e}; choose another name with --datasource"),
            });
            return records;
        }
    }
    for m in imported.models.drain(..) {
        match record_from_value("model", tagged("model", &m)) {
            Ok(r) => records.push(r),
            Err(e) => {
                let kind = model_kind(&imported.report.format, &m);
                if let Some(c) = imported.report.kinds.get_mut(kind) {
                    // Counted as imported (whole or lossy) when read; it is not.
                    if c.mapped > 0 {
                        c.mapped -= 1;
                    } else {
                        c.lossy = c.lossy.saturating_sub(1);
                    }
                    c.skipped += 1;
                }
                imported.issues.push(Issue {
                    file: imported.report.project.clone(),
                    line: 0,
                    object: format!("{} '{}'", kind.replace('_', " "), m.name),
                    fate: Fate::Skipped,
                    message: e.to_string(),
                });
            }
        }
    }
    records
}

/// The report's kind for the object a model was made from.
fn model_kind(format: &str, m: &slayer_common::records::Model) -> &'static str {
    match format {
        "dbt" => "semantic_model",
        "ossie" => "dataset",
        "cube"
            if m.extra
                .get("meta")
                .and_then(|x| x.get("cube_kind"))
                .is_some() =>
        {
            "view"
        }
        "cube" => "cube",
        _ => "model",
    }
}

/// A SLayer YAML project through the same path: its datasources and models (memories are not
/// catalog records; `import-slayer DIR | slayer-memory import` loads them).
fn slayer_project(
    dir: &Path,
    datasource: Option<&str>,
    limits: &slayer_common::limits::Limits,
    out: &Output,
) -> Result<Imported> {
    let mut project = project::read_project(dir)?;
    if let Some(name) = datasource {
        for ds in &mut project.datasources {
            ds.name = name.to_owned();
        }
        for m in &mut project.models {
            m.data_source = name.to_owned();
        }
    }
    if !project.memories.is_empty() {
        out.note(&format!(
            "{} memories in {} are not catalog records; `slayer-index import-slayer {} | slayer-memory import -` loads them",
            project.memories.len(),
            dir.join("memories").display(),
            dir.display()
        ));
    }
    let mut tally = import::Tally::default();
    let at = import::At::default();
    for m in &project.models {
        tally.object("model", &format!("model '{}'", m.name), &at, vec![]);
    }
    import::cut_long_texts(&mut project.models, &mut tally, limits.description_bytes);
    let datasource = project
        .datasources
        .first()
        .cloned()
        .context("the project has no datasources/*.yaml")?;
    if project.datasources.len() > 1 {
        anyhow::bail!(
            "{} holds {} datasources; `import` reads one (use import-slayer for several)",
            dir.display(),
            project.datasources.len()
        );
    }
    Ok(Imported {
        datasource,
        models: project.models,
        issues: tally.issues,
        memories: Vec::new(),
        report: Report {
            format: "slayer".into(),
            project: dir.to_owned(),
            kinds: tally.kinds,
        },
    })
}
