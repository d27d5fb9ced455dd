//! `slayer-search`: see `slayer-search --help`.
#![forbid(unsafe_code)]

mod cli;
mod mcp;
mod process;

/// A served question allocates and frees thousands of ids, maps and rankings of 100,000
/// entries; glibc's allocator returned the large ones to the kernel and faulted them in again,
/// zeroed, on the next question. Built without asking for transparent huge pages (`no_thp`):
/// the two arrays a served search reads whole ask for them themselves
/// (`mapped::HugePageBuffer`), and a one-shot search zeroed 2 MiB per first touch (10,000
/// memories, an entity lookup: 6.3 -> 5.8 ms, peak 21 -> 18 MiB; served unchanged).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;
use slayer_common::cli::{Format, JsonArg, UsageError};
use slayer_common::env;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::{read_lines_within, write_line, ReadError};
use slayer_common::limits::Limits;
use slayer_common::store::{OpenMode, Store};
use slayer_search::context::Context;
use slayer_search::output::response::render_text;
use slayer_search::plan::config::PlanConfig;
use slayer_search::plan::terms::Injected;
use slayer_search::plan::Planner;
use slayer_search::request::{Request, RequestFields};
use slayer_search::tuning::Tuning;
use slayer_search::SearchError;

use crate::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.batch.is_none() && cli.command.is_none() {
        slayer_common::mapped::no_transparent_huge_pages();
    }
    // The global pool gets every core: the mapped encoder's forward pass of a question and the
    // vector scan split across it (a question at 100k memories: 4 ms to embed on two threads,
    // 10 on one). candle's matrix products, which embed batches in the background re-embed,
    // read the variable on every call and stay on one thread (single texts there use the pool).
    // Set before any other thread reads the environment. A caller's setting wins for both.
    //
    // The thread that searches is one of the pool's: it works on its own splits and fusion's
    // other side instead of handing them over and sleeping until they come back. In this
    // virtual machine a sleeping thread woke up to a millisecond late, several times a
    // question (100k memories, served: a question 9.4 -> 8.5 ms). A one-shot or `--batch`
    // search runs on this thread; the MCP server's on its store thread, which builds the pool
    // when it starts (`join_the_pool`).
    //
    // A one-shot search without a question (an entity lookup) has nothing to split: its pool
    // is this thread alone, so starting it costs no thread, and fusion's other side runs here
    // when this thread waits for it (an entity lookup at 10,000 memories: 5.9 -> 5.2 ms, at
    // 100,000: 11.7 -> 10.4 ms).
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        process::pool_of_every_core();
        if cli.command.is_none() && cli.batch.is_none() && cli.question.is_none() {
            process::pool_here(1);
        } else if cli.command.is_none() {
            process::join_the_pool();
        }
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
    // After the environment is set (the watchdog is a thread). The server stops taking
    // requests itself; `--batch` ends once the request under way is answered. A one-shot
    // search keeps the default actions: it has nothing to drain (a planner cache it may write
    // is one transaction, rolled back if killed), and no thread to start.
    match (&cli.command, &cli.batch) {
        (Some(_), _) => cli
            .common
            .handle_signals("slayer-search", slayer_common::shutdown::Mode::Server),
        (None, Some(_)) => cli
            .common
            .handle_signals("slayer-search", slayer_common::shutdown::Mode::Batch),
        (None, None) => {}
    }
    let store = cli.common.store.clone();
    slayer_common::cli::main_on_store(
        &store,
        || run(cli),
        |err| {
            matches!(
                err.downcast_ref::<SearchError>(),
                Some(SearchError::Request(_))
            )
        },
    )
}

fn parse_query(arg: &str) -> Result<serde_json::Value, UsageError> {
    slayer_memory::parse_query_arg(arg).map_err(|e| UsageError(e.to_string()))
}

fn parse_tuning(arg: &str) -> Result<Tuning, UsageError> {
    serde_json::from_str(arg).map_err(|e| UsageError(format!("--tuning: {e}")))
}

/// `--inject`: the terms as JSON, or `@FILE` holding them.
fn parse_injected(arg: &str) -> Result<Injected, UsageError> {
    let given = JsonArg::read(arg).map_err(|e| UsageError(format!("--inject {arg}: {e}")))?;
    serde_json::from_str(&given.text)
        .map_err(|e| UsageError(format!("{}: {e}", given.source("--inject"))))
}

/// The settings flags (caps, channels, tuning, plan, rerank, filters): the defaults of every
/// `--batch` line, and of the one search otherwise.
fn settings_of(cli: &Cli) -> Result<RequestFields, UsageError> {
    Ok(RequestFields {
        max_memories: cli.max_memories,
        max_example_queries: cli.max_example_queries,
        max_entities: cli.max_entities,
        explain: cli.explain.then_some(true),
        channels: cli.channels.clone(),
        tuning: cli.tuning.as_deref().map(parse_tuning).transpose()?,
        plan: cli.plan,
        rerank: cli.rerank,
        tiers: (!cli.tiers.is_empty()).then(|| cli.tiers.clone()),
        confidence_floor: cli.confidence_floor,
        as_of: cli.as_of.clone(),
        project: cli.project.clone(),
        agent: cli.agent.clone(),
        schema: cli.schema.then_some(true),
        schema_models: cli.schema_models,
        schema_columns: cli.schema_columns,
        ..RequestFields::default()
    })
}

/// The inputs flags of the one search (`--batch` lines carry their own).
fn inputs_of(cli: &Cli) -> Result<RequestFields, UsageError> {
    Ok(RequestFields {
        entities: Some(cli.entity.clone()),
        query: cli.query.as_deref().map(parse_query).transpose()?,
        question: cli.question.clone(),
        datasource: cli.datasource.clone(),
        injected: cli.inject.as_deref().map(parse_injected).transpose()?,
        expand_ids: Some(cli.expand_ids.clone()),
        ..RequestFields::default()
    })
}

fn run(cli: Cli) -> Result<ExitStatus> {
    if let Some(Command::Mcp(args)) = cli.command {
        mcp::serve(&cli.common.store, args, cli.common.drain)?;
        return Ok(ExitStatus::Success);
    }
    let settings = Request::default().with(settings_of(&cli)?);
    let request = match cli.batch {
        Some(_) => None,
        None => Some(settings.clone().with(inputs_of(&cli)?)),
    };
    let mut output = cli.common.output.output(Format::Json)?;
    let store_path = &cli.common.store;
    let plan_config = PlanConfig::load(cli.plan_config.as_deref(), store_path)
        .map_err(|e| UsageError(e.to_string()))?;
    let memory_defaults = process::memory_defaults()?;
    let started = std::time::Instant::now();
    let store = Store::open(store_path, OpenMode::ReadOnly).map_err(SearchError::Store)?;
    let planner = Planner::new(plan_config, env::var);
    let mut ctx = Context::on(&store, planner)?;
    ctx.limits = Limits::load(store_path).map_err(|e| UsageError(e.to_string()))?;
    ctx.memory_defaults = memory_defaults;
    let opened = started.elapsed();
    let Some(request) = request else {
        let batch = cli.batch.as_deref().unwrap_or(std::path::Path::new("-"));
        let mut out = BufWriter::new(io::stdout().lock());
        let _reembed = slayer_search::reembed::start(store_path);
        ctx.serve();
        let status = run_batch(&mut ctx, batch, &settings, &mut out)?;
        out.flush()?;
        report_timings(&output, &ctx, opened, started);
        return Ok(status);
    };
    let searched = std::time::Instant::now();
    let response = ctx.search(&request)?;
    ctx.timings.add("search", searched.elapsed());
    let written = std::time::Instant::now();
    let text = match output.format() {
        Format::Text => render_text(&response),
        Format::Json | Format::Jsonl => String::new(),
    };
    output.result(&serde_json::to_value(&response)?, &text)?;
    ctx.timings.add("output", written.elapsed());
    report_timings(&output, &ctx, opened, started);
    // The process ends here: freeing the catalog, the rankings and the caches one allocation
    // at a time is work the exit does at once (10,000 memories, an entity lookup: 6.1 -> 5.4
    // ms; 100,000, all channels: 4 ms). The store is closed as usual (a server's connection
    // says goodbye).
    std::mem::forget(response);
    std::mem::forget(ctx);
    drop(store);
    Ok(ExitStatus::Success)
}

/// With `SLAYER_TIMINGS` set, one `timings` record on stderr: milliseconds per stage (the
/// dense stages and `text` are part of `search`; what `main` does not see is process start).
fn report_timings(
    output: &slayer_common::cli::Output,
    ctx: &Context<'_>,
    opened: std::time::Duration,
    started: std::time::Instant,
) {
    if env::var(env::TIMINGS).is_none_or(|v| v.is_empty()) {
        return;
    }
    let ms = |d: std::time::Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    let record = serde_json::json!({
        "kind": "timings",
        "store_open": ms(opened),
        "stages": ctx.timings.to_json(),
        "main": ms(started.elapsed()),
    });
    output.note(&record.to_string());
}

/// One request per line in, one response per line out, each flushed as soon as it is written
/// (a wrapper that keeps the process open waits for it); a bad line is an `error` record and
/// the exit status 1 at the end. The flags `--max-*`, `--explain`, `--channels`, `--tuning`,
/// `--plan` and `--rerank` are the defaults of every line.
fn run_batch(
    ctx: &mut Context<'_>,
    file: &std::path::Path,
    settings: &Request,
    out: &mut impl Write,
) -> Result<ExitStatus> {
    let input: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(BufReader::new(io::stdin().lock()))
    } else {
        Box::new(BufReader::new(File::open(file).map_err(|e| {
            UsageError(format!("cannot open {}: {e}", file.display()))
        })?))
    };
    let mut failed = false;
    for line in read_lines_within(input, ctx.limits.request_bytes) {
        // SIGTERM or SIGINT: the requests read so far are answered; no new one is taken.
        if slayer_common::shutdown::requested() {
            break;
        }
        let _busy = slayer_common::shutdown::Busy::start();
        let result = match line {
            Ok((no, text)) => batch_request(&text, settings)
                .map_err(|e| (no, format!("line {no}: bad request: {e}")))
                .and_then(|req| {
                    // Another process may have written since the last line: a store that
                    // changed is read afresh, an unchanged one costs one pragma.
                    ctx.refresh_if_changed()
                        .and_then(|_| ctx.search(&req))
                        .map_err(|e| {
                            let told = slayer_common::cli::error_message_on(
                                &e.into(),
                                Some(ctx.text.store()),
                            );
                            (no, format!("line {no}: {told}"))
                        })
                }),
            Err(ReadError::Utf8(no)) => Err((
                no,
                format!("line {no}: not valid UTF-8; a request is one UTF-8 JSON object"),
            )),
            Err(e @ ReadError::TooLong { line, .. }) => Err((line, e.to_string())),
            Err(e) => return Err(e.into()),
        };
        match result {
            Ok(response) => write_line(out, &serde_json::to_value(&response)?)?,
            Err((no, message)) => {
                failed = true;
                write_line(
                    out,
                    &serde_json::json!({"kind": "error", "line": no, "error": message}),
                )?;
            }
        }
        out.flush()?;
    }
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// A `--batch` line as a request, its missing fields taken from the flags.
fn batch_request(text: &str, settings: &Request) -> Result<Request, serde_json::Error> {
    let fields: RequestFields = serde_json::from_str(text)?;
    Ok(settings.clone().with(fields))
}
