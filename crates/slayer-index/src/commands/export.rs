//! `slayer-index export`: the catalog as records, for `load` elsewhere.

use std::path::Path;

use anyhow::Result;
use slayer_common::exit::ExitStatus;
use slayer_common::jsonl::tagged;
use slayer_common::store::{OpenMode, StoreRead};
use slayer_index::IndexError;

use slayer_common::cli::Output;

use crate::store_ops::open_store;

pub(super) fn export(
    store_path: &Path,
    only: Option<&str>,
    out: &mut Output,
) -> Result<ExitStatus> {
    let store = open_store(store_path, OpenMode::ReadOnly)?;
    let all = store.datasources()?;
    if let Some(name) = only {
        if !all.iter().any(|ds| ds.name == name) {
            let known: Vec<&str> = all.iter().map(|ds| ds.name.as_str()).collect();
            return Err(IndexError::UnknownDatasource {
                name: name.to_owned(),
                known: if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                },
            }
            .into());
        }
    }
    let datasources: Vec<_> = all
        .into_iter()
        .filter(|ds| only.is_none_or(|name| ds.name == name))
        .collect();
    let mut records: Vec<_> = datasources
        .iter()
        .map(|ds| tagged("datasource", ds))
        .collect();
    for model in store.models(only)? {
        records.push(tagged("model", &model));
    }
    out.records(&records, |v| v.to_string())?;
    Ok(ExitStatus::Success)
}
