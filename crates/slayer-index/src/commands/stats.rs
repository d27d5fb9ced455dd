//! `slayer-index stats [--check]`: what the store, its index and its vector sidecars hold.

use std::path::Path;

use anyhow::Result;
use serde_json::json;
use slayer_common::exit::ExitStatus;
use slayer_common::store::{self, OpenMode, StoreRead};
use slayer_index::fulltext::FullText;

use slayer_common::cli::Output;

use crate::store_ops::open_store;

/// Each vector sidecar of the store: its model and revision, and whether it records the
/// store's current state.
pub(super) fn vectors_report(store: &store::Store) -> Result<Vec<serde_json::Value>> {
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

pub(super) fn stats(store_path: &Path, check: bool, out: &mut Output) -> Result<ExitStatus> {
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
