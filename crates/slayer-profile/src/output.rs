//! slayer-profile's text renderer and progress bar; [`slayer_common::cli::Output`] decides the
//! rest.

use std::fmt::Write as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use slayer_common::cli::Output;

/// A progress bar on stderr, drawn only when stderr is a terminal (and `-q` is off).
pub fn progress(out: &Output, len: usize, enabled: bool) -> ProgressBar {
    if !enabled || !out.progress_allowed() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) =
        ProgressStyle::with_template("{spinner} profiling [{bar:30}] {pos}/{len} tables  {msg}")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar
}

/// One record for people: a datasource line, or a model line and one line per column.
pub fn text_record(v: &Value) -> String {
    let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    match v.get("kind").and_then(Value::as_str) {
        Some("datasource") => format!("datasource {} ({})", s(v, "name"), s(v, "type")),
        Some("model") => {
            let empty = Vec::new();
            let cols = v.get("columns").and_then(Value::as_array).unwrap_or(&empty);
            let sampled = cols.iter().filter(|c| c.get("sampled").is_some()).count();
            let mut out = format!(
                "model {}.{}  {}  {} columns, {} sampled",
                s(v, "data_source"),
                s(v, "name"),
                v.get("sql_table")
                    .and_then(Value::as_str)
                    .map_or("(sql)".to_owned(), str::to_owned),
                cols.len(),
                sampled
            );
            for c in cols {
                let ty = c.get("type").and_then(Value::as_str).unwrap_or("TEXT");
                let pk = if c.get("primary_key").and_then(Value::as_bool) == Some(true) {
                    " pk"
                } else {
                    ""
                };
                let mut line = format!("  {:<22} {:<9}{pk:<3}", s(c, "name"), ty);
                if let Some(text) = c.get("sampled").and_then(Value::as_str) {
                    line.push_str(if text.is_empty() { "(no values)" } else { text });
                }
                let _ = write!(out, "\n{}", line.trim_end());
            }
            out
        }
        _ => v.to_string(),
    }
}
