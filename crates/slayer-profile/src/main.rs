//! `slayer-profile`: see `slayer-profile --help`.

mod cli;
mod output;

use std::collections::HashMap;
use std::io::BufRead;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use slayer_common::canonical::check_entity_name;
use slayer_common::exit::{is_broken_pipe, ExitStatus};
use slayer_common::jsonl::tagged;
use slayer_profile::introspect::{self, TableInfo};
use slayer_profile::profile::{self, TableJob};
use slayer_profile::{catalog, connect, profile_all, refresh, source, ProfileError};

use crate::cli::Cli;
use crate::output::Output;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(status) => status.into(),
        Err(err) => {
            if err.chain().any(is_broken_pipe) {
                return ExitStatus::Success.into();
            }
            #[allow(clippy::print_stderr)]
            {
                eprintln!("error: {err:#}");
            }
            let usage = err
                .downcast_ref::<ProfileError>()
                .is_some_and(ProfileError::is_usage);
            if usage {
                ExitStatus::Usage
            } else {
                ExitStatus::Failure
            }
            .into()
        }
    }
}

fn run(cli: Cli) -> Result<ExitStatus> {
    let source = source::identify(&cli.sources)?;
    let threads = cli
        .threads
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut out = Output::new(cli.format, cli.quiet);
    let conns = connect(&source, threads)?;
    let source_name = cli
        .sources
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let all_tables = if source.files.is_empty() {
        introspect::list_tables(&conns[0]).map_err(|cause| ProfileError::Introspect {
            source_name: source_name.clone(),
            cause,
        })?
    } else {
        source
            .files
            .iter()
            .map(|(name, table_ref)| {
                introspect::describe_file(&conns[0], name.clone(), table_ref.clone())
            })
            .collect()
    };
    let tables = select_tables(all_tables, &cli)?;
    let mut failed = false;
    if let Some(models) = &cli.models {
        failed |= refresh_models(models, &tables, conns, &source_name, &cli, &mut out)?;
    } else {
        failed |= profile_source(&source, &tables, conns, &cli, &mut out)?;
    }
    out.finish()?;
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

fn select_tables(tables: Vec<TableInfo>, cli: &Cli) -> Result<Vec<TableInfo>, ProfileError> {
    let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
    for wanted in cli.tables.iter().chain(&cli.exclude) {
        if !names.contains(&wanted.as_str()) {
            return Err(ProfileError::Source(format!(
                "no table or view named '{wanted}' in the source; it has: {}",
                names.join(", ")
            )));
        }
    }
    Ok(tables
        .into_iter()
        .filter(|t| !(cli.no_views && t.is_view))
        .filter(|t| cli.tables.is_empty() || cli.tables.contains(&t.name))
        .filter(|t| !cli.exclude.contains(&t.name))
        .collect())
}

fn run_jobs(
    jobs: &[TableJob],
    conns: Vec<slayer_profile::db::Conn>,
    cli: &Cli,
    out: &Output,
) -> Result<Vec<profile::TableProfile>> {
    let bar = out.progress(jobs.len(), !cli.no_progress);
    let results = profile_all(conns, jobs, &|label: &str| {
        bar.set_message(label.to_owned());
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    Ok(results)
}

/// Reports a table's problems; true when something failed.
fn report(out: &Output, result: &profile::TableProfile) -> bool {
    for w in &result.warnings {
        out.warn(w);
    }
    if let Some(f) = &result.failure {
        out.warn(f);
    }
    result.failure.is_some() || !result.warnings.is_empty()
}

fn profile_source(
    source: &source::Source,
    tables: &[TableInfo],
    conns: Vec<slayer_profile::db::Conn>,
    cli: &Cli,
    out: &mut Output,
) -> Result<bool> {
    let ds_name = cli
        .datasource
        .clone()
        .or_else(|| source.default_name.clone())
        .ok_or_else(|| {
            ProfileError::Source(
                "several files given: name the datasource with --datasource NAME".into(),
            )
        })?;
    check_entity_name("--datasource", &ds_name).map_err(ProfileError::Source)?;
    let source_type = cli.source_type.as_deref().unwrap_or(source.default_type);
    out.record(tagged(
        "datasource",
        &catalog::datasource(&ds_name, source_type, source.database.as_deref()),
    ))?;

    let mut failed = false;
    let model_names = catalog::model_names(tables);
    let by_table: HashMap<&str, &str> = tables
        .iter()
        .zip(&model_names)
        .map(|(t, n)| (t.name.as_str(), n.as_str()))
        .collect();
    let mut models = Vec::new();
    let mut jobs = Vec::new();
    for (t, name) in tables.iter().zip(&model_names) {
        if let Some(e) = &t.error {
            out.warn(&format!(
                "{ds_name}.{name}: cannot read {}: {e}; skipped",
                t.table_ref.sql_table()
            ));
            failed = true;
            continue;
        }
        let (model, warnings) = catalog::model(&ds_name, name, t, &by_table);
        for w in &warnings {
            out.warn(w);
        }
        jobs.push(catalog::job(&model, t));
        models.push(model);
    }
    if !cli.no_samples {
        let results = run_jobs(&jobs, conns, cli, out)?;
        for (model, result) in models.iter_mut().zip(results) {
            failed |= report(out, &result);
            profile::apply(model, result.samples);
        }
    }
    for model in &models {
        out.record(tagged("model", model))?;
    }
    out.note(&format!(
        "profiled {} models of datasource {ds_name}",
        models.len()
    ));
    Ok(failed)
}

fn open_input(file: &Path) -> Result<Box<dyn BufRead>> {
    Ok(slayer_common::jsonl::open_input(file)?)
}

fn refresh_models(
    models: &Path,
    tables: &[TableInfo],
    conns: Vec<slayer_profile::db::Conn>,
    source_name: &str,
    cli: &Cli,
    out: &mut Output,
) -> Result<bool> {
    let mut lines = refresh::read_input(open_input(models)?)?;
    let mut failed = false;
    let mut jobs = Vec::new();
    let mut targets = Vec::new();
    let mut passed = 0;
    for (i, line) in lines.iter().enumerate() {
        let Some(model) = &line.model else { continue };
        match refresh::plan(model, tables, source_name) {
            refresh::Plan::Profile(t, job) => {
                if let Some(e) = &t.error {
                    out.warn(&format!(
                        "{}: cannot read {}: {e}; its samples are left as they were",
                        model.canonical_id(),
                        t.table_ref.sql_table()
                    ));
                    failed = true;
                    continue;
                }
                jobs.push(job);
                targets.push(i);
            }
            refresh::Plan::SqlBacked => passed += 1,
            refresh::Plan::Missing(w) => {
                out.warn(&w);
                failed = true;
            }
        }
    }
    if !cli.no_samples {
        let results = run_jobs(&jobs, conns, cli, out)?;
        for (i, result) in targets.iter().zip(results) {
            failed |= report(out, &result);
            refresh::patch(&mut lines[*i].value, &result.samples);
        }
    }
    let count = lines.len();
    for line in lines {
        out.record(line.value)?;
    }
    out.note(&format!(
        "refreshed the samples of {} models ({passed} SQL-backed passed through, {count} records in all)",
        jobs.len()
    ));
    Ok(failed)
}
