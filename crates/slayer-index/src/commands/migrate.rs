//! `slayer-index migrate`: the store brought to this build's schema.

use std::path::Path;

use anyhow::Result;
use serde_json::json;
use slayer_common::exit::ExitStatus;
use slayer_common::store::{self, OpenMode};

use slayer_common::cli::Output;

use crate::store_ops::{open_store, sync_index_or_warn};

pub(super) fn migrate(store_path: &Path, out: &mut Output) -> Result<ExitStatus> {
    let refusal = open_store(store_path, OpenMode::ReadOnly).err();
    let store_error =
        refusal
            .as_ref()
            .and_then(|e| match e.downcast_ref::<slayer_index::IndexError>() {
                Some(slayer_index::IndexError::Store(e)) => Some(e),
                _ => None,
            });
    let before = match store_error {
        Some(store::StoreError::Outdated { found, .. }) => Some(*found),
        _ => None,
    };
    let absent = matches!(store_error, Some(store::StoreError::Missing(_)));
    // A team sets up a server store with `migrate` (then grants its readers); a file is made
    // by the first command that writes it, as before.
    let server = matches!(
        store::Location::parse(store_path),
        Ok(store::Location::Server(_))
    );
    let mode = if server {
        OpenMode::CreateIfMissing
    } else {
        OpenMode::MustExist
    };
    let mut store = open_store(store_path, mode)?;
    let version = store.schema_version()?;
    let (from, text) = match before {
        Some(found) => (
            found,
            format!(
                "migrated {} from schema version {found} to {version}\n",
                store.shown()
            ),
        ),
        None if absent => (
            0,
            format!("created {} at schema version {version}\n", store.shown()),
        ),
        None => (
            version,
            format!(
                "{} is at schema version {version}; nothing to do\n",
                store.shown()
            ),
        ),
    };
    sync_index_or_warn(&mut store, out);
    out.result(
        &json!({"kind": "migrate", "store": store.shown(), "from": from, "to": version}),
        &text,
    )?;
    Ok(ExitStatus::Success)
}
