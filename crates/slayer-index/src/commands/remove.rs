//! `slayer-index remove ID`: an entity and what hangs from it, with its docs and index entries.

use std::path::Path;

use anyhow::{Context, Result};
use slayer_common::exit::ExitStatus;
use slayer_common::store::OpenMode;
use slayer_index::remove;

use slayer_common::cli::Output;

use crate::output::{self};
use crate::store_ops::{open_store, sync_index_or_warn};

pub(super) fn remove_entity(
    store_path: &Path,
    target: &str,
    out: &mut Output,
) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    let tx = store.write()?;
    let summary = remove::remove(&tx, target)?;
    output::docs(out, &summary.docs.changed, "changed")?;
    tx.commit().context("cannot commit the removal")?;
    let stripped = if summary.stripped_memories.is_empty() {
        String::new()
    } else {
        format!(
            "; tags stripped from memories {}",
            summary.stripped_memories.join(", ")
        )
    };
    out.note(&format!(
        "removed {}: {} docs deleted, {} docs changed, {} embedding rows deleted{stripped}",
        summary.target,
        summary.docs.deleted.len(),
        summary.docs.changed.len(),
        summary.embeddings_deleted
    ));
    sync_index_or_warn(&mut store, out);
    Ok(ExitStatus::Success)
}
