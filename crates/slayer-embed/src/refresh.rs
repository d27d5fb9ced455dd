//! Content-hash refresh: a doc is embedded only when the SHA-256 of its exact embedding text
//! differs from its row's under the active model, or when its row was written by another
//! revision of the model (`crate::revision`), or when it has none.

use rayon::prelude::*;
use slayer_common::records::content_hash;
use slayer_common::store::Store;
use slayer_common::store::StoreWrite;

use crate::provider::Embedder;
use crate::{EmbedError, EmbedResult};

/// What happened to one doc.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Report {
    /// The doc's canonical id.
    pub canonical_id: String,
    /// What happened.
    pub status: Status,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// What happened to one doc.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Its text changed (or it had no row, or its row was another revision's) and it was
    /// embedded.
    Embedded,
    /// Its row's content hash matches its text and this revision wrote it: no provider call.
    Unchanged,
    /// No such doc, or the provider failed on it (the report's warning says which).
    Failed,
}

impl Status {
    /// The word reports carry.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Embedded => "embedded",
            Status::Unchanged => "unchanged",
            Status::Failed => "failed",
        }
    }
}

/// How a refresh runs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Texts per provider call.
    pub batch_size: usize,
    /// Batches in flight at once.
    pub threads: usize,
}

/// A report with its doc's position in the input.
type Numbered = (usize, Report);

/// Docs to embed, once their hashes are known.
struct Pending {
    /// Position in the input, so reports come out in input order.
    position: usize,
    canonical_id: String,
    text: String,
    hash: String,
}

/// The docs of these ids whose embedding text changed or whose row another revision wrote,
/// and reports for the rest: one pass over the docs joined with their rows (a refresh of an
/// unchanged store is this pass only).
fn triage(
    store: &Store,
    model: &str,
    revision: &str,
    ids: &[String],
) -> Result<(Vec<Pending>, Vec<Numbered>), EmbedError> {
    let mut found = store.reader().texts_and_stamps(model, ids)?;
    let mut reports = Vec::new();
    let mut pending = Vec::new();
    for (position, id) in ids.iter().enumerate() {
        let report = |status, warning| {
            (
                position,
                Report {
                    canonical_id: id.clone(),
                    status,
                    warning,
                },
            )
        };
        match found.remove(id) {
            None => reports.push(report(
                Status::Failed,
                Some(format!("no doc '{id}' in the store; load or save it first")),
            )),
            Some((text, stored)) => {
                let hash = content_hash(&text);
                if stored.is_some_and(|s| s.content_hash == hash && s.revision == revision) {
                    reports.push(report(Status::Unchanged, None));
                } else {
                    pending.push(Pending {
                        position,
                        canonical_id: id.clone(),
                        text,
                        hash,
                    });
                }
            }
        }
    }
    Ok((pending, reports))
}

/// Refreshes these docs under the named model and its current revision
/// ([`crate::provider::revision`], which loads nothing): unchanged ones make no provider call
/// (and when none changed, the provider is never opened). Vectors are written a group of
/// batches per transaction, so an interrupted run keeps what it finished. `progress` is told
/// how many docs each finished group held.
pub fn refresh(
    store: &mut Store,
    model: &str,
    ids: &[String],
    options: Options,
    open: impl FnOnce() -> Result<Embedder, crate::provider::ProviderError>,
    progress: &dyn Fn(u64),
) -> Result<Vec<Report>, EmbedError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let revision = crate::provider::revision(model).map_err(EmbedError::Provider)?;
    let (pending, reports) = triage(store, model, &revision, ids)?;
    progress(reports.len() as u64);
    if pending.is_empty() {
        return Ok(in_input_order(reports));
    }
    let embedder = open().map_err(EmbedError::Provider)?;
    embed(
        store, model, &revision, pending, reports, options, &embedder, progress,
    )
}

/// [`refresh`] with a provider already open and its revision known: what a long-lived process
/// re-embedding in the background calls, batch after batch, without loading the model again.
pub fn refresh_using(
    store: &mut Store,
    embedder: &Embedder,
    revision: &str,
    ids: &[String],
    options: Options,
) -> Result<Vec<Report>, EmbedError> {
    let model = embedder.name().to_owned();
    let (pending, reports) = triage(store, &model, revision, ids)?;
    if pending.is_empty() {
        return Ok(in_input_order(reports));
    }
    embed(
        store,
        &model,
        revision,
        pending,
        reports,
        options,
        embedder,
        &|_| {},
    )
}

/// Embeds the pending docs and writes their rows, stamped with `revision`.
#[allow(clippy::too_many_arguments)]
fn embed(
    store: &mut Store,
    model: &str,
    revision: &str,
    mut pending: Vec<Pending>,
    mut reports: Vec<Numbered>,
    options: Options,
    embedder: &Embedder,
    progress: &dyn Fn(u64),
) -> Result<Vec<Report>, EmbedError> {
    // A batch is padded to its longest text: batching texts of similar length wastes far
    // less of the forward pass on padding.
    pending.sort_by_key(|p| p.text.len());
    let batch = options.batch_size.max(1);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.threads.max(1))
        .build()
        .map_err(EmbedError::Threads)?;
    for group in pending.chunks(batch * options.threads.max(1) * 4) {
        let results: Vec<EmbedResult> = pool.install(|| {
            group
                .par_chunks(batch)
                .flat_map_iter(|chunk| {
                    let texts: Vec<&str> = chunk.iter().map(|p| p.text.as_str()).collect();
                    embedder.embed(&texts)
                })
                .collect()
        });
        let now = slayer_common::store::now_utc();
        let tx = store.write()?;
        for (p, result) in group.iter().zip(results) {
            match result {
                Ok(vector) => {
                    tx.put_embedding(
                        &p.canonical_id,
                        model,
                        revision,
                        &p.hash,
                        &vector,
                        &now,
                    )?;
                    reports.push((
                        p.position,
                        Report {
                            canonical_id: p.canonical_id.clone(),
                            status: Status::Embedded,
                            warning: None,
                        },
                    ));
                }
                Err(e) => reports.push((
                    p.position,
                    Report {
                        canonical_id: p.canonical_id.clone(),
                        status: Status::Failed,
                        warning: Some(format!(
                            "embedding refresh failed for {}: {e}; skipped (search will still find this entity via tantivy + BM25).",
                            p.canonical_id
                        )),
                    },
                )),
            }
        }
        tx.commit()
            .map_err(slayer_common::store::StoreError::from)?;
        progress(group.len() as u64);
    }
    Ok(in_input_order(reports))
}

fn in_input_order(mut reports: Vec<Numbered>) -> Vec<Report> {
    reports.sort_by_key(|(position, _)| *position);
    reports.into_iter().map(|(_, r)| r).collect()
}
