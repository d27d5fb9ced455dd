//! What every writing command does around its transaction: open the store, say what the
//! docs did, and bring the full-text index up to date after the commit.

use std::path::Path;

use anyhow::Result;
use slayer_common::cli::Output;
use slayer_common::store::{OpenMode, Store};
use slayer_index::catalog::DocChanges;
use slayer_index::fulltext::{FullText, SyncReport};

/// The store at `path`, its errors as the index reports them.
pub(crate) fn open_store(path: &Path, mode: OpenMode) -> Result<Store> {
    Store::open(path, mode)
        .map_err(slayer_index::IndexError::from)
        .map_err(Into::into)
}

fn sync_index(store: &mut Store, out: &Output) -> Result<SyncReport> {
    let (_, report) = FullText::open_synced(store)?;
    if report.rebuilt {
        out.note(&format!("index: rebuilt with {} docs", report.upserted));
    } else if report.upserted + report.deleted > 0 {
        out.note(&format!(
            "index: {} docs updated, {} removed",
            report.upserted, report.deleted
        ));
    }
    Ok(report)
}

/// `N docs changed, M removed`.
pub(crate) fn describe_changes(changes: &DocChanges) -> String {
    format!(
        "{} docs changed, {} removed",
        changes.changed.len(),
        changes.deleted.len()
    )
}

/// After a commit, a failed index sync does not undo the write: it is a warning, and the next
/// command that opens the index catches up.
pub(crate) fn sync_index_or_warn(store: &mut Store, out: &Output) {
    if let Err(e) = sync_index(store, out) {
        out.warn(&format!(
            "the full-text index was not updated ({}); the next slayer command that opens it catches up",
            slayer_common::cli::error_message(&e)
        ));
    }
    // The vector sidecars follow the commit too (a removal kills rows, a load re-kinds docs).
    if let Err(e) = slayer_embed::vectors::follow(store.reader(), &store.vectors_dir()) {
        out.warn(&format!(
            "the vector sidecar was not updated ({e}); the next search catches up"
        ));
    }
}
