//! `slayer-search`: see `slayer-search --help`.
#![allow(clippy::print_stderr)]

mod cli;

use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use clap::Parser;
use slayer_common::exit::{is_broken_pipe, ExitStatus};
use slayer_common::jsonl::{read_lines, write_line};
use slayer_common::store::{OpenMode, Store};
use slayer_search::corpus::Corpus;
use slayer_search::search::{render_text, Context, Request, TextIndex};
use slayer_search::SearchError;

use crate::cli::{Cli, Format};

/// Bad usage: exit 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct UsageError(String);

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(status) => status.into(),
        Err(err) => {
            if err.chain().any(is_broken_pipe) {
                return ExitStatus::Success.into();
            }
            eprintln!("Error: {err:#}");
            let usage = err.downcast_ref::<UsageError>().is_some()
                || matches!(
                    err.downcast_ref::<SearchError>(),
                    Some(SearchError::Request(_))
                );
            if usage {
                ExitStatus::Usage
            } else {
                ExitStatus::Failure
            }
            .into()
        }
    }
}

fn parse_query(arg: &str) -> Result<serde_json::Value, UsageError> {
    slayer_memory::parse_query_arg(arg).map_err(UsageError)
}

fn run(cli: Cli) -> Result<ExitStatus> {
    let store = Store::open(&cli.store, OpenMode::MustExist).map_err(SearchError::Store)?;
    let ctx = Context {
        conn: store.conn(),
        text: TextIndex::new(cli.store.clone()),
        corpus: Corpus::load(store.conn()).map_err(SearchError::Memory)?,
        dense: Default::default(),
    };
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    if let Some(batch) = &cli.batch {
        let status = run_batch(&ctx, batch, &mut out)?;
        out.flush()?;
        return Ok(status);
    }
    let request = Request {
        entities: cli.entity.clone(),
        query: cli.query.as_deref().map(parse_query).transpose()?,
        question: cli.question.clone(),
        datasource: cli.datasource.clone(),
        max_memories: cli.max_memories,
        max_example_queries: cli.max_example_queries,
        max_entities: cli.max_entities,
        explain: cli.explain,
        channels: cli.channels.clone(),
    };
    let response = ctx.search(&request)?;
    match cli.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut out, &response)?;
            writeln!(out)?;
        }
        Format::Jsonl => write_line(&mut out, &serde_json::to_value(&response)?)?,
        Format::Text => write!(out, "{}", render_text(&response))?,
    }
    out.flush()?;
    Ok(ExitStatus::Success)
}

/// One request per line in, one response per line out; a bad line is an `error` record and
/// the exit status 1 at the end.
fn run_batch(
    ctx: &Context<'_>,
    file: &std::path::Path,
    out: &mut impl Write,
) -> Result<ExitStatus> {
    let input: Box<dyn BufRead> = if file.as_os_str() == "-" {
        Box::new(BufReader::new(io::stdin().lock()))
    } else {
        Box::new(BufReader::new(
            File::open(file).with_context(|| format!("cannot open {}", file.display()))?,
        ))
    };
    let mut failed = false;
    for line in read_lines(input) {
        let (no, text) = line?;
        let result = serde_json::from_str::<Request>(&text)
            .map_err(|e| format!("line {no}: bad request: {e}"))
            .and_then(|req| ctx.search(&req).map_err(|e| format!("line {no}: {e}")));
        match result {
            Ok(response) => write_line(out, &serde_json::to_value(&response)?)?,
            Err(message) => {
                failed = true;
                write_line(
                    out,
                    &serde_json::json!({"kind": "error", "line": no, "error": message}),
                )?;
            }
        }
    }
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
