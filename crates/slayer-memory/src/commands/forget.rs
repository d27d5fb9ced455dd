//! `slayer-memory forget`: one memory deleted (or soft-deleted), its tags with it.

use std::path::Path;

use anyhow::Result;
use serde_json::json;
use slayer_common::cli::Output;
use slayer_common::exit::ExitStatus;
use slayer_common::store::OpenMode;
use slayer_memory::{service, write};

use crate::opening::open_store;

pub(super) fn forget(
    store_path: &Path,
    id: &str,
    soft: bool,
    out: &mut Output,
) -> Result<ExitStatus> {
    let mut store = open_store(store_path, OpenMode::MustExist)?;
    if soft {
        write::forget_soft(&mut store, id)?;
        out.result(
            &json!({"deleted_id": id, "soft": true}),
            &format!("Soft-deleted memory {id}.\n"),
        )?;
        return Ok(ExitStatus::Success);
    }
    let warning = write::forget(&mut store, id)?;
    let text = service::forgotten_text(id, warning.as_deref());
    out.result(&json!({"deleted_id": id}), &format!("{text}\n"))?;
    Ok(ExitStatus::Success)
}
