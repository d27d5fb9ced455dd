//! slayer-embed's text renderers and summaries; [`slayer_common::cli::Output`] decides the rest.

use std::io;

use serde_json::{json, Value};
use slayer_common::cli::Output;
use slayer_common::store::embeddings::Coverage;
use slayer_embed::refresh::{Report, Status};

/// `status` as text: the active model, its revision and what it lacks.
pub fn status_text(
    model: &str,
    revision: Option<&str>,
    usable: &Result<(), slayer_embed::provider::ProviderError>,
    counts: &[(String, i64)],
    lacking: i64,
    coverage: Option<Coverage>,
) -> String {
    let mut text = format!("active model: {model}\n");
    if let Some(revision) = revision {
        text.push_str(&format!("active revision: {revision}\n"));
    }
    if let Err(problem) = &usable {
        text.push_str(&format!("unusable: {problem}\n"));
    }
    text.push_str("rows per model:\n");
    for (m, n) in counts {
        let marker = if m == model { " (active)" } else { "" };
        text.push_str(&format!("  {m}: {n}{marker}\n"));
    }
    text.push_str(&format!(
        "docs without a row for the active model: {lacking}\n"
    ));
    if let Some(c) = coverage {
        text.push_str(&format!(
            "docs whose row another revision of the active model wrote (stale): {}\n",
            c.stale
        ));
        text.push_str(&format!("docs with a current row: {}\n", c.current));
    }
    text
}

/// One `text` record as a line: the text, the dimension and the first components.
pub fn embedding_line(v: &Value) -> String {
    let head: Vec<String> = v["embedding"]
        .as_array()
        .map(|a| {
            a.iter()
                .take(4)
                .map(|x| format!("{:.4}", x.as_f64().unwrap_or(0.0)))
                .collect()
        })
        .unwrap_or_default();
    format!(
        "{} [{}] {}, ...]",
        v["text"].as_str().unwrap_or(""),
        v["dim"],
        head.join(", ")
    )
}

/// `refresh`'s warnings, then one record per doc.
pub fn reports(out: &mut Output, model: &str, reports: &[Report]) -> io::Result<()> {
    for r in reports {
        if let Some(w) = &r.warning {
            out.warn(w);
        }
    }
    let values: Vec<Value> = reports
        .iter()
        .map(|r| {
            let mut v = json!({"kind": "embedding", "canonical_id": r.canonical_id, "model": model, "status": r.status.as_str()});
            if let Some(w) = &r.warning {
                v["warning"] = json!(w);
            }
            v
        })
        .collect();
    out.records(&values, |v| {
        format!(
            "{} {}",
            v["status"].as_str().unwrap_or(""),
            v["canonical_id"].as_str().unwrap_or("")
        )
    })
}

/// `refresh`'s closing note: how many docs were embedded, unchanged and failed.
pub fn summary(model: &str, reports: &[Report], rebuilt: bool, seconds: f64) -> String {
    let count = |status| reports.iter().filter(|r| r.status == status).count();
    let (embedded, failed) = (count(Status::Embedded), count(Status::Failed));
    format!(
        "{model}: {embedded} embedded, {} unchanged, {failed} failed{} ({seconds:.1}s)",
        reports.len() - embedded - failed,
        if rebuilt {
            "; vector sidecar rebuilt"
        } else {
            ""
        },
    )
}
