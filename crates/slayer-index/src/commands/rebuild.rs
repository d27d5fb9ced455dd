//! `slayer-index rebuild`: the full-text index rebuilt from the store.

use std::path::Path;

use anyhow::{Context, Result};
use slayer_common::exit::ExitStatus;
use slayer_common::store::OpenMode;
use slayer_index::fulltext::FullText;

use slayer_common::cli::Output;

use crate::store_ops::open_store;

pub(super) fn rebuild(store_path: &Path, out: &mut Output) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    let dir = store.index_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .with_context(|| format!("cannot remove the old index at {}", dir.display()))?;
    }
    let (fulltext, report) = FullText::open_synced(&mut store)?;
    out.note(&format!(
        "index: rebuilt {} with {} docs",
        dir.display(),
        fulltext.num_docs()
    ));
    debug_assert!(report.rebuilt);
    Ok(ExitStatus::Success)
}
