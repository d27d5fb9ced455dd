//! Background re-embed for a search that stays open (`--batch`, `mcp`; docs/spec/channels.md §7.4):
//! the docs whose row under the active model is stale (another revision wrote it) or missing
//! are embedded on a thread of their own, through a writer connection of its own, the way
//! `slayer-embed refresh` does it. Rows are committed 64 at a time, so the search, which
//! drops its caches whenever another connection committed (`Context::refresh_if_changed`),
//! ranks each group as soon as it is in; until then those docs are ranked without the dense
//! channel, with the search's stale-rows warning.
//!
//! It runs only when the active model is local and usable (a remote provider is not called
//! behind the caller's back), `SLAYER_NO_EMBED` is not set, and the store can be written; it
//! says nothing and stops at the first failure. After each chunk of docs it brings the vector
//! sidecar up to date; a chunk starts at 64 docs and doubles (up to 4,096) while rebuilding the
//! sidecar takes longer than embedding the chunk, so large stores are not rebuilt after every
//! few rows.

use slayer_common::store::StoreRead;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use slayer_common::store::{OpenMode, Store};
use slayer_embed::provider::{active_name, revision, spec, Embedder, Spec};
use slayer_embed::refresh::{refresh_using, Options, Status};

/// Docs per chunk at first.
const FIRST_CHUNK: usize = 64;
/// The largest chunk.
const MAX_CHUNK: usize = 4096;
/// Texts per forward pass: with one thread, a transaction holds four of them (64 rows).
const BATCH: usize = 16;

/// What a background re-embed did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Docs that were stale or missing when it started.
    pub pending: usize,
    /// Docs embedded and written.
    pub embedded: usize,
    /// Docs the model failed on (left as they were).
    pub failed: usize,
    /// Chunks done (each followed by a sidecar update).
    pub chunks: usize,
    /// Why it stopped early, if it did (a store or model error, or a read-only store).
    pub stopped: Option<String>,
}

/// A running background re-embed. Dropping it asks the thread to stop after its current
/// chunk (without waiting: a process that ends takes it along, and an unfinished transaction
/// is rolled back by SQLite).
pub struct Reembed {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Summary>>,
}

impl Reembed {
    /// Waits for the thread to finish everything there was to do.
    pub fn wait(mut self) -> Summary {
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Reembed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Whether `SLAYER_NO_EMBED` turns embedding off: a true value as `slayer-memory --no-embed`
/// reads it (`1`, `true`, `yes`, `on`, `y`, `t`, any case).
pub fn turned_off() -> bool {
    std::env::var(slayer_common::env::NO_EMBED).is_ok_and(|v| is_true(&v))
}

fn is_true(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on" | "y" | "t"
    )
}

/// Starts re-embedding the store's stale and missing docs in the background, when the active
/// model is local and usable and `SLAYER_NO_EMBED` is unset; `None` otherwise. Returns at
/// Why the background re-embedding stopped before it was done.
#[derive(Debug, thiserror::Error)]
enum Stopped {
    /// The model cannot be used.
    #[error(transparent)]
    Provider(#[from] slayer_embed::provider::ProviderError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] slayer_common::store::StoreError),
    /// The store is a read-only file.
    #[error("the store is read-only")]
    ReadOnly,
    /// Writing the embeddings failed.
    #[error(transparent)]
    Refresh(#[from] slayer_embed::EmbedError),
}

/// once: the thread itself finds out whether there is anything to do.
pub fn start(store: &Path) -> Option<Reembed> {
    if turned_off() {
        return None;
    }
    let model = active_name();
    if !matches!(spec(&model), Ok(Spec::Local(_))) || Embedder::check(&model).is_err() {
        return None;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let path = store.to_owned();
    let handle = std::thread::Builder::new()
        .name("slayer-reembed".into())
        .spawn(move || run(&path, &model, &flag))
        .ok()?;
    Some(Reembed {
        stop,
        handle: Some(handle),
    })
}

fn run(path: &Path, model: &str, stop: &AtomicBool) -> Summary {
    let mut summary = Summary::default();
    if let Err(why) = reembed(path, model, stop, &mut summary) {
        summary.stopped = Some(why.to_string());
    }
    summary
}

fn reembed(
    path: &Path,
    model: &str,
    stop: &AtomicBool,
    summary: &mut Summary,
) -> Result<(), Stopped> {
    let revision = revision(model)?;
    // What there is to do, read before anything is opened for writing or loaded.
    let ids = {
        let reader = Store::open(path, OpenMode::ReadOnly)?;
        reader.stale_or_missing(model, &revision)?
    };
    summary.pending = ids.len();
    if ids.is_empty() {
        return Ok(());
    }
    let mut store = Store::open(path, OpenMode::MustExist)?;
    let read_only_file = store
        .sqlite()
        .is_some_and(|file| file.conn().is_readonly(rusqlite::MAIN_DB).unwrap_or(true));
    if read_only_file {
        return Err(Stopped::ReadOnly);
    }
    let embedder = Embedder::open(model)?;
    let options = Options {
        batch_size: BATCH,
        threads: 1,
    };
    let mut chunk = FIRST_CHUNK;
    let mut done = 0;
    while done < ids.len() && !stop.load(Ordering::Relaxed) {
        let part = &ids[done..ids.len().min(done + chunk)];
        let started = Instant::now();
        let reports = refresh_using(&mut store, &embedder, &revision, part, options)?;
        let embedding = started.elapsed();
        summary.embedded += reports
            .iter()
            .filter(|r| r.status == Status::Embedded)
            .count();
        summary.failed += reports
            .iter()
            .filter(|r| r.status == Status::Failed)
            .count();
        let started = Instant::now();
        slayer_embed::vectors::update(store.reader(), &store.vectors_dir(), model, &revision)?;
        if started.elapsed() > embedding {
            chunk = (chunk * 2).min(MAX_CHUNK);
        }
        summary.chunks += 1;
        done += part.len();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_reads_like_slayer_memory_s() {
        for (value, off) in [
            ("1", true),
            ("TRUE", true),
            (" on", true),
            ("y", true),
            ("0", false),
            ("false", false),
            ("", false),
        ] {
            assert_eq!(is_true(value), off, "{value:?}");
        }
    }
}
