//! `slayer-index show ID…`: the rendered docs of entities and memories, as search returns them.

use std::path::Path;

use anyhow::Result;
use slayer_common::exit::ExitStatus;
use slayer_common::store::{OpenMode, StoreRead};

use slayer_common::cli::Output;

use crate::output::{self};
use crate::store_ops::open_store;

pub(super) fn show(store_path: &Path, ids: &[String], out: &mut Output) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let mut found = Vec::new();
    let mut status = ExitStatus::Success;
    for id in ids {
        match store.doc(id)? {
            Some(stored) => found.push(stored.doc),
            None => {
                out.note(&format!(
                    "no doc '{id}' in the store (hidden entities have none)"
                ));
                status = ExitStatus::Failure;
            }
        }
    }
    output::doc_texts(out, &found)?;
    Ok(status)
}
