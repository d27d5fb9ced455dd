//! One function per subcommand: read what it needs, do it, report.

use std::io::{self, BufRead};
use std::path::Path;

use anyhow::Result;
use serde_json::{json, Value};
use slayer_common::cli::{Format, Output};
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::{open_input, read_lines, ReadError};
use slayer_common::store::{OpenMode, Store};
use slayer_embed::provider::{active_name, revision, Embedder};
use slayer_embed::refresh::{refresh, Options, Status};
use slayer_embed::EmbedError;

use crate::cli::{Cli, Command};
use crate::output;

/// Texts per provider call in `slayer-embed text`.
const TEXT_CHUNK: usize = 64;

pub fn run(cli: Cli) -> Result<ExitStatus> {
    match cli.command {
        Command::Refresh {
            file,
            all,
            batch_size,
            threads,
        } => {
            let threads = threads.unwrap_or_else(|| {
                std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
            });
            // candle sizes its matrix-multiply threads from this variable on every call, and
            // rayon's global pool from it once: set it before either starts.
            std::env::set_var("RAYON_NUM_THREADS", threads.to_string());
            let mut out = cli.common.output.output(Format::Jsonl)?;
            // Read the input before opening the store: in `slayer-index load | slayer-embed
            // refresh` the store may not exist until the first stage is done.
            let named = if all {
                None
            } else {
                Some(named_ids(file.as_deref())?)
            };
            let mut store = Store::open(&cli.common.store, OpenMode::MustExist)?;
            let ids = match named {
                Some(ids) => ids,
                None => store.reader().doc_ids()?,
            };
            run_refresh(&mut store, &ids, batch_size, threads, &mut out)
        }
        Command::Status => status(&cli.common.store, cli.common.output.output(Format::Text)?),
        Command::Text { texts } => embed_texts(texts, cli.common.output.output(Format::Jsonl)?),
    }
}

/// `status`: rows per model and what the active model lacks: docs without a row, and (when
/// the model's revision can be read) docs whose row another revision wrote.
fn status(store_path: &Path, mut out: Output) -> Result<ExitStatus> {
    let store = Store::open(store_path, OpenMode::ReadOnly)?;
    let model = active_name();
    let counts = store.reader().embedding_counts_by_model()?;
    let lacking = store.reader().docs_lacking(&model)?;
    let usable = Embedder::check(&model);
    let revision = usable.as_ref().ok().and_then(|_| revision(&model).ok());
    let coverage = revision
        .as_deref()
        .map(|r| store.reader().coverage(&model, r))
        .transpose()?;
    let value = json!({
        "kind": "embedding_status",
        "active_model": model,
        "active_revision": revision,
        "usable": usable.is_ok(),
        "problem": usable.as_ref().err().map(ToString::to_string),
        "rows": counts.iter().map(|(m, n)| (m.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
        "docs_lacking_active": lacking,
        "docs_current": coverage.map(|c| c.current),
        "docs_stale": coverage.map(|c| c.stale),
    });
    let text = output::status_text(
        &model,
        revision.as_deref(),
        &usable,
        &counts,
        lacking,
        coverage,
    );
    out.result(&value, &text)?;
    Ok(ExitStatus::Success)
}

/// `text`: the embedding of each text, in chunks of [`TEXT_CHUNK`].
fn embed_texts(texts: Vec<String>, mut out: Output) -> Result<ExitStatus> {
    let texts = if texts.is_empty() {
        io::stdin()
            .lock()
            .lines()
            .collect::<io::Result<Vec<String>>>()?
    } else {
        texts
    };
    let model = active_name();
    let embedder = Embedder::open(&model).map_err(EmbedError::Provider)?;
    let mut records = Vec::new();
    let mut failed = false;
    // One forward pass (or one request) per chunk: all of stdin at once would be one
    // huge batch, and OpenAI-compatible servers refuse more than 2,048 inputs.
    let results = texts.chunks(TEXT_CHUNK).flat_map(|chunk| {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        embedder.embed(&refs)
    });
    for (text, result) in texts.iter().zip(results) {
        match result {
            Ok(v) => {
                records.push(json!({"text": text, "model": model, "dim": v.len(), "embedding": v}))
            }
            Err(e) => {
                failed = true;
                out.warn(&format!("embedding failed for {text:?}: {e}"));
            }
        }
    }
    out.records(&records, output::embedding_line)?;
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}

/// Canonical ids from doc records (`canonical_id`) or memory results (`memory_id`).
fn named_ids(file: Option<&Path>) -> Result<Vec<String>> {
    let path = file.unwrap_or(Path::new("-"));
    let input = open_input(path)?;
    let mut ids: Vec<String> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for line in read_lines(input) {
        let (no, text) = match line {
            Ok(line) => line,
            Err(e @ ReadError::Io(_)) => return Err(e.into()),
            Err(e) => return Err(EmbedError::Input(e.to_string()).into()),
        };
        let value: Value = serde_json::from_str(&text).map_err(|e| {
            EmbedError::Input(format!("line {no}: not a JSON record ({e}); expected doc records as slayer-index load prints"))
        })?;
        let id = match (
            value["kind"].as_str(),
            value.get("canonical_id"),
            value.get("memory_id"),
        ) {
            (Some("doc"), Some(Value::String(id)), _) => id.clone(),
            (_, _, Some(Value::String(id))) => slayer_common::canonical::memory_ref(id),
            _ => continue,
        };
        if seen.insert(id.clone()) {
            ids.push(id);
        }
    }
    Ok(ids)
}

fn run_refresh(
    store: &mut Store,
    ids: &[String],
    batch_size: usize,
    threads: usize,
    out: &mut Output,
) -> Result<ExitStatus> {
    let model = active_name();
    let bar = if out.progress_allowed() {
        indicatif::ProgressBar::new(ids.len() as u64)
    } else {
        indicatif::ProgressBar::hidden()
    };
    let started = std::time::Instant::now();
    let reports = refresh(
        store,
        &model,
        ids,
        Options {
            batch_size,
            threads,
        },
        || Embedder::open(&model),
        &|n| bar.inc(n),
    )?;
    bar.finish_and_clear();
    // Searches scan the sidecar: bring it up to date here, so the next search does not. (The
    // revision was read by the refresh above unless it had no doc to look at.)
    let rebuilt = match revision(&model) {
        Ok(revision) => {
            slayer_embed::vectors::refresh(store.reader(), &store.vectors_dir(), &model, &revision)?
        }
        Err(_) => false,
    };
    let failed = reports.iter().any(|r| r.status == Status::Failed);
    output::reports(out, &model, &reports)?;
    out.note(&output::summary(
        &model,
        &reports,
        rebuilt,
        started.elapsed().as_secs_f64(),
    ));
    Ok(if failed {
        ExitStatus::Failure
    } else {
        ExitStatus::Success
    })
}
