//! `slayer-memory save`: one memory, its entities resolved or its query's extracted.

use std::path::Path;

use anyhow::Result;
use slayer_common::cli::{Output, UsageError};
use slayer_common::exit::ExitStatus;
use slayer_common::store::OpenMode;
use slayer_memory::service::SaveRequest;
use slayer_memory::write;

use crate::cli::SaveArgs;
use crate::opening::{load_limits, open_store};

fn parse_query(arg: &str) -> Result<serde_json::Value, UsageError> {
    slayer_memory::parse_query_arg(arg).map_err(|e| UsageError(e.to_string()))
}

pub(super) fn save(store_path: &Path, args: SaveArgs, out: &mut Output) -> Result<ExitStatus> {
    let SaveArgs {
        learning,
        entities,
        query,
        id,
        description,
        standing,
        event_time,
        session,
        no_embed,
    } = args;
    let (entities, query) = match (entities, query) {
        (Some(_), Some(_)) => {
            return Err(UsageError("--entities and --query are mutually exclusive.".into()).into())
        }
        (None, None) => {
            return Err(UsageError(
                "--entities or --query must be supplied (one or the other).".into(),
            )
            .into())
        }
        (Some(list), None) => {
            // Commas inside `avg(amount, weight=q)` do not split.
            let items: Vec<String> = slayer_memory::aggref::split_args(&list)
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect();
            (Some(items), None)
        }
        (None, Some(q)) => (None, Some(parse_query(&q)?)),
    };
    let limits = load_limits(store_path)?;
    let request = SaveRequest {
        learning,
        entities,
        query,
        id,
        description,
        standing: standing.standing(),
        occasion: slayer_common::records::Occasion {
            event_time,
            session,
        },
    };
    request.check_limits(&limits)?;
    let mut store = open_store(store_path, OpenMode::CreateIfMissing)?;
    let saved = write::save(&mut store, request, &limits, !no_embed)?;
    for warning in &saved.embedding_warnings {
        out.note(&format!("Warning: {warning}"));
    }
    let outcome = saved.outcome;
    out.result(
        &serde_json::to_value(&outcome)?,
        &format!("{}\n", outcome.to_text()),
    )?;
    Ok(ExitStatus::Success)
}
