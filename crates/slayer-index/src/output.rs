//! slayer-index's text renderers; [`slayer_common::cli::Output`] decides the rest.
#![allow(clippy::print_stderr)]

use std::io;

use serde_json::Value;
use slayer_common::cli::{Format, Output};
use slayer_common::jsonl::tagged;
use slayer_common::records::Doc;

/// Doc records: jsonl / json array / `verb kind id` lines.
pub fn docs(out: &mut Output, docs: &[Doc], verb: &str) -> io::Result<()> {
    let values: Vec<Value> = docs.iter().map(|d| tagged("doc", d)).collect();
    out.records(&values, |v| {
        let field = |k: &str| v[k].as_str().unwrap_or("").to_owned();
        format!(
            "{verb:<8} {:<11} {}",
            field("doc_kind"),
            field("canonical_id")
        )
    })
}

/// Rendered docs for reading: the full text of each, headed by its id (records in json/jsonl).
pub fn doc_texts(out: &mut Output, docs: &[Doc]) -> io::Result<()> {
    if out.format() != Format::Text {
        return self::docs(out, docs, "");
    }
    for (i, d) in docs.iter().enumerate() {
        let gap = if i > 0 { "\n" } else { "" };
        out.text(&format!(
            "{gap}── {} ({})\n{}\n",
            d.canonical_id, d.doc_kind, d.text
        ))?;
    }
    out.finish()
}

/// A load's plan (`--dry-run`): one `plan` record per model added, changed or removed; text
/// `added    shop.orders`.
pub fn plan(out: &mut Output, plan: &slayer_index::sync::Plan) -> io::Result<()> {
    let values: Vec<Value> = plan.changes.iter().map(|p| tagged("plan", p)).collect();
    out.records(&values, |v| {
        format!(
            "{:<8} {}",
            v["change"].as_str().unwrap_or(""),
            v["id"].as_str().unwrap_or("")
        )
    })
}

/// Prints bad input lines on stderr, one style with every other error.
pub fn report_line_errors(errors: &[slayer_common::jsonl::LineError]) {
    for e in errors {
        eprintln!(
            "Error: {}",
            slayer_common::cli::terminal_safe(&e.to_string())
        );
    }
    if errors.len() >= slayer_index::MAX_REPORTED_ERRORS {
        eprintln!("Error: stopped after {} bad lines", errors.len());
    }
    eprintln!("nothing was written; fix the lines above and run again");
}
