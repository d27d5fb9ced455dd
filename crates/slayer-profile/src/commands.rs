//! The two modes of the binary, one function each: profile a source into new records
//! ([`profile_source`]), or refresh the samples of existing model records ([`refresh_models`]).
//! [`run`] opens the source, selects its tables and hands them to one of them.

use anyhow::Result;
use slayer_common::canonical::check_entity_name;
use slayer_common::cli::{Format, Output};
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_profile::budget::Budget;
use slayer_profile::db::{Conn, Opener};
use slayer_profile::duckdb::SpillDir;
use slayer_profile::profile::{self, Limits, TableJob, TableProfile};
use slayer_profile::source::Source;
use slayer_profile::table::{TableInfo, TableRef};
use slayer_profile::{catalog, connect, profile_all, refresh, source, ProfileError};

use crate::cli::Cli;
use crate::output::{progress, text_record};

/// Opens the source, lists and selects its tables, and profiles them or refreshes `--models`.
pub fn run(cli: Cli) -> Result<ExitStatus> {
    let timeout = (!cli.statement_timeout.is_zero()).then_some(cli.statement_timeout);
    let source = source::identify(&cli.sources, timeout)?;
    // Bad `--models` input is found before the source is opened, and nothing is written.
    let input = cli
        .models
        .as_deref()
        .map(|models| {
            let reader = slayer_common::jsonl::open_input(models)?;
            refresh::read_input(reader)
        })
        .transpose()?;
    let threads = cli
        .threads
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    // Declared before the connections, so it is removed after the last of them has closed.
    let spill = match source.opener {
        Opener::DuckDbFile(_) | Opener::DuckDbMemory => {
            Some(SpillDir::create().map_err(|cause| ProfileError::Spill {
                dir: std::env::temp_dir().display().to_string(),
                cause,
            })?)
        }
        Opener::Sqlite(_) | Opener::Postgres(_) | Opener::Mysql(_) => None,
    };
    let budget = Budget {
        threads,
        memory_bytes: cli.memory_limit,
        spill_dir: spill.as_ref().map(|s| s.path().to_owned()),
    };
    let mut out = cli.output.output(Format::Jsonl)?;
    out.begin_records();
    let conns = connect(&source, &budget)?;
    let source_name = match &source.opener {
        Opener::Postgres(pg) => pg.target.masked(),
        Opener::Mysql(my) => my.target.masked(),
        _ => cli
            .sources
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
    };
    let all_tables = slayer_profile::tables(&source, &conns[0], &source_name)?;
    let tables = select_tables(all_tables, &cli)?;
    match input {
        Some(lines) => refresh_models(lines, &tables, conns, &source_name, &cli, &mut out)?,
        None => profile_source(&source, &tables, conns, &cli, &mut out)?,
    }
    out.finish()?;
    // Every warning is a problem the user has to look at, whichever path wrote it.
    Ok(if out.warned() {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// How `--tables` / `--exclude` may name a table: by its name, or `schema.name` outside the
/// default schema.
fn selector(t: &TableInfo) -> String {
    match &t.table_ref {
        TableRef::Table {
            schema: Some(s),
            name,
        } => format!("{s}.{name}"),
        _ => t.name.clone(),
    }
}

fn select_tables(tables: Vec<TableInfo>, cli: &Cli) -> Result<Vec<TableInfo>, ProfileError> {
    let mut schemas: Vec<&str> = tables.iter().map(|t| t.schema.as_str()).collect();
    schemas.sort_unstable();
    schemas.dedup();
    for wanted in &cli.schemas {
        if !schemas.contains(&wanted.as_str()) {
            return Err(ProfileError::Source(format!(
                "no schema named '{wanted}' with tables or views in the source; it has: {}",
                schemas.join(", ")
            )));
        }
    }
    let in_schema = |t: &TableInfo| cli.schemas.is_empty() || cli.schemas.contains(&t.schema);
    let names = |t: &TableInfo| [t.name.clone(), selector(t)];
    let known: Vec<String> = tables
        .iter()
        .filter(|t| in_schema(t))
        .map(selector)
        .collect();
    for wanted in cli.tables.iter().chain(&cli.exclude) {
        if !tables
            .iter()
            .any(|t| in_schema(t) && names(t).contains(wanted))
        {
            return Err(ProfileError::Source(format!(
                "no table or view named '{wanted}' in the source; it has: {}",
                known.join(", ")
            )));
        }
    }
    Ok(tables
        .into_iter()
        .filter(|t| in_schema(t))
        .filter(|t| !(cli.no_views && t.is_view))
        .filter(|t| cli.tables.is_empty() || names(t).iter().any(|n| cli.tables.contains(n)))
        .filter(|t| !names(t).iter().any(|n| cli.exclude.contains(n)))
        .collect())
}

fn run_jobs(
    jobs: &[TableJob],
    conns: Vec<Conn>,
    cli: &Cli,
    out: &Output,
) -> Result<Vec<TableProfile>> {
    let bar = progress(out, jobs.len(), !cli.no_progress);
    // Only DuckDB estimates distinct values, so the limits matter only there.
    let limits = Limits::for_memory(cli.memory_limit);
    let results = profile_all(conns, jobs, limits, &|label: &str| {
        bar.set_message(label.to_owned());
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    Ok(results)
}

/// Reports a table's problems.
fn report(out: &Output, result: &TableProfile) {
    for w in &result.warnings {
        out.warn(w);
    }
    if let Some(f) = &result.failure {
        out.warn(f);
    }
}

/// Profiling mode: the datasource record, then one model record per readable table.
fn profile_source(
    source: &Source,
    tables: &[TableInfo],
    conns: Vec<Conn>,
    cli: &Cli,
    out: &mut Output,
) -> Result<()> {
    let ds_name = cli
        .datasource
        .clone()
        .or_else(|| source.default_name.clone())
        .ok_or_else(|| {
            ProfileError::Source(
                "several files given: name the datasource with --datasource NAME".into(),
            )
        })?;
    check_entity_name("--datasource", &ds_name).map_err(|e| ProfileError::Source(e.to_string()))?;
    let source_type = cli.source_type.as_deref().unwrap_or(source.default_type);
    out.record(
        &tagged(
            "datasource",
            &catalog::datasource(&ds_name, source_type, &source.connection),
        ),
        text_record,
    )?;

    let readable: Vec<&TableInfo> = tables.iter().filter(|t| t.error.is_none()).collect();
    let targets = catalog::join_targets(&readable);
    let mut models = Vec::new();
    let mut jobs = Vec::new();
    for t in tables {
        if let Some(e) = &t.error {
            out.warn(&format!(
                "{ds_name}.{}: cannot read {}: {e}; skipped",
                t.model.name,
                t.sql_table()
            ));
            continue;
        }
        let (model, warnings) = catalog::model(&ds_name, t, &targets);
        for w in &warnings {
            out.warn(w);
        }
        jobs.push(catalog::job(&model, t));
        models.push(model);
    }
    if !cli.no_samples {
        let results = run_jobs(&jobs, conns, cli, out)?;
        for (model, result) in models.iter_mut().zip(results) {
            report(out, &result);
            profile::apply(model, result.samples);
        }
    }
    for model in &models {
        out.record(&tagged("model", model), text_record)?;
    }
    out.note(&format!(
        "profiled {} models of datasource {ds_name}",
        models.len()
    ));
    Ok(())
}

/// Refresh mode: the `--models` records back out, with the samples of those whose table is in
/// the source filled.
fn refresh_models(
    mut lines: Vec<refresh::InputLine>,
    tables: &[TableInfo],
    conns: Vec<Conn>,
    source_name: &str,
    cli: &Cli,
    out: &mut Output,
) -> Result<()> {
    let mut jobs = Vec::new();
    let mut targets = Vec::new();
    let mut passed = 0;
    let mut typed = 0;
    for (i, line) in lines.iter_mut().enumerate() {
        let Some(model) = &mut line.model else {
            continue;
        };
        if let refresh::Plan::Profile(t, _) = refresh::plan(model, tables, source_name) {
            typed += refresh::fill_types(model, &mut line.value, t);
        }
        let model = &*model;
        match refresh::plan(model, tables, source_name) {
            refresh::Plan::Profile(t, job) => {
                if let Some(e) = &t.error {
                    out.warn(&format!(
                        "{}: cannot read {}: {e}; its samples are left as they were",
                        model.canonical_id(),
                        t.sql_table()
                    ));
                    continue;
                }
                jobs.push(job);
                targets.push(i);
            }
            refresh::Plan::SqlBacked => passed += 1,
            refresh::Plan::Missing(w) => out.warn(&w),
        }
    }
    if !cli.no_samples {
        let results = run_jobs(&jobs, conns, cli, out)?;
        for (i, result) in targets.iter().zip(results) {
            report(out, &result);
            refresh::patch(&mut lines[*i].value, &result.samples);
        }
    }
    let count = lines.len();
    for line in lines {
        out.record(&line.value, text_record)?;
    }
    out.note(&format!(
        "refreshed the samples of {} models ({passed} SQL-backed passed through, {count} records in all{})",
        jobs.len(),
        if typed > 0 {
            format!("; {typed} UNKNOWN columns typed from the source")
        } else {
            String::new()
        }
    ));
    Ok(())
}
