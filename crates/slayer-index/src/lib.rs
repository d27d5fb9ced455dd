//! slayer-index: the write path from catalog records to searchable docs.
//!
//! - [`render`]: the one renderer (the exact text of every doc kind; docs/spec/render.md §2).
//! - [`catalog`]: load datasource and model records into the store in the caller's transaction,
//!   re-render the touched datasources' docs and keep only real changes.
//! - [`remove`]: delete an entity or memory and cascade to docs, embeddings and memory tags.
//! - [`sync`]: `load --sync`: the plan of a load, and the removal of the models the input lacks.
//! - [`analysis`]: how doc text and questions become index terms; [`abbreviations`] spelled
//!   out beside names (`mrr`: monthly recurring revenue), and [`reporting_terms`], the plain
//!   words of a measure name's jargon (`churned`: cancelled).
//! - [`fulltext`]: the persistent tantivy index beside the store, synced by content hash.
//! - [`project`]: read a SLayer YAML project folder.
//! - [`import`]: read another semantic layer's project (dbt) as catalog records.
//!
//! Rules: nothing here prints or exits; every store write happens inside one transaction the
//! caller commits; the index is derived and is only ever updated after the store commits.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod abbreviations;
pub mod analysis;
pub mod catalog;
pub mod error;
pub mod fulltext;
pub mod import;
pub mod project;
pub mod pyfmt;
pub mod remove;
pub mod render;
pub mod reporting_terms;
pub mod sync;

pub use error::IndexError;

use std::io::BufRead;

use slayer_common::jsonl::{parse_record, read_lines, LineError, Record};
use slayer_common::records::{Doc, Model};

/// Most bad lines reported from one input before giving up.
pub const MAX_REPORTED_ERRORS: usize = 20;

/// Records with their input line numbers, or every bad line found.
pub type ReadOutcome = Result<Vec<(usize, Record)>, Vec<LineError>>;

/// Reads records, collecting every bad line (up to [`MAX_REPORTED_ERRORS`]) instead of stopping
/// at the first, so one run shows everything to fix.
pub fn read_records(reader: impl BufRead) -> Result<ReadOutcome, IndexError> {
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for line in read_lines(reader) {
        let (no, text) = line?;
        match parse_record(no, &text) {
            Ok(r) => records.push((no, r)),
            Err(e) => {
                errors.push(e);
                if errors.len() >= MAX_REPORTED_ERRORS {
                    break;
                }
            }
        }
    }
    Ok(if errors.is_empty() {
        Ok(records)
    } else {
        Err(errors)
    })
}

/// Renders records without a store: each datasource lists the models of the same input.
pub fn render_records(records: &[(usize, Record)]) -> Vec<Doc> {
    let models: Vec<&Model> = records
        .iter()
        .filter_map(|(_, r)| match r {
            Record::Model(m) => Some(m),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for (_, record) in records {
        match record {
            Record::Datasource(ds) => {
                let mut own: Vec<Model> = models
                    .iter()
                    .filter(|m| m.data_source == ds.name)
                    .map(|m| (*m).clone())
                    .collect();
                own.sort_by(|a, b| a.name.cmp(&b.name));
                out.push(render::datasource_doc(ds, &own).doc);
            }
            Record::Model(m) => out.extend(render::model_docs(m).into_iter().map(|d| d.doc)),
            Record::Memory(m) => out.push(render::memory_doc(m).doc),
            Record::Doc(d) => out.push(d.clone()),
        }
    }
    out
}
