//! The one renderer: the exact text of every search doc.
//!
//! Lines are joined with `\n`, no trailing newline; a line is emitted only when its value is set
//! and non-empty (Python truthiness). `meta` and other unrendered fields never appear. Hidden
//! models produce no docs; hidden columns produce no doc and are left out of `Columns:`.
//! The same text is indexed, embedded and returned as hit text.

use slayer_common::canonical::{leaf_id, memory_ref};
use slayer_common::records::{
    content_hash, Aggregation, Column, Datasource, Doc, Measure, Memory, Model,
};
use slayer_common::store::docs::StoredDoc;

use crate::pyfmt;

fn set(value: &Option<String>) -> Option<&str> {
    value.as_deref().filter(|v| !v.is_empty())
}

fn named_list<'a>(names: impl IntoIterator<Item = &'a str>, kind: &str) -> String {
    names
        .into_iter()
        .map(|n| format!("{n} ({kind})"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `Datasource: …` with its visible models listed in the given order.
pub fn datasource_text(ds: &Datasource, visible_models: &[&str]) -> String {
    let mut lines = vec![format!("Datasource: {}", ds.name)];
    if let Some(d) = set(&ds.description) {
        lines.push(format!("Description: {d}"));
    }
    if !visible_models.is_empty() {
        lines.push(format!(
            "Models: {}",
            named_list(visible_models.iter().copied(), "model")
        ));
    }
    lines.join("\n")
}

/// `Model: <ds>.<model>` and its summary lines.
pub fn model_text(model: &Model) -> String {
    let mut lines = vec![format!("Model: {}", model.canonical_id())];
    if let Some(d) = set(&model.description) {
        lines.push(format!("Description: {d}"));
    }
    if let Some(t) = set(&model.sql_table) {
        lines.push(format!("sql_table: {t}"));
    }
    if let Some(s) = set(&model.sql) {
        lines.push(format!("SQL block: {s}"));
    }
    if let Some(stages) = &model.source_queries {
        let names: Vec<&str> = stages
            .iter()
            .filter_map(|q| q.get("name").and_then(|n| n.as_str()))
            .filter(|n| !n.is_empty())
            .collect();
        if !names.is_empty() {
            lines.push(format!("Backing query stages: {}", names.join(", ")));
        }
    }
    if let Some(t) = set(&model.default_time_dimension) {
        lines.push(format!("default_time_dimension: {t}"));
    }
    if !model.filters.is_empty() {
        lines.push(format!("Filters: {}", model.filters.join("; ")));
    }
    let columns: Vec<&str> = model
        .columns
        .iter()
        .filter(|c| !c.hidden)
        .map(|c| c.name.as_str())
        .collect();
    if !columns.is_empty() {
        lines.push(format!("Columns: {}", named_list(columns, "column")));
    }
    let measures: Vec<&str> = model
        .measures
        .iter()
        .filter_map(|m| m.name.as_deref())
        .collect();
    if !measures.is_empty() {
        lines.push(format!("Measures: {}", named_list(measures, "measure")));
    }
    if !model.aggregations.is_empty() {
        lines.push(format!(
            "Aggregations: {}",
            named_list(
                model.aggregations.iter().map(|a| a.name.as_str()),
                "aggregation"
            )
        ));
    }
    if !model.joins.is_empty() {
        lines.push(format!(
            "Joins: {}",
            named_list(model.joins.iter().map(|j| j.target_model.as_str()), "model")
        ));
        for join in model.joins.iter().filter(|j| !j.join_pairs.is_empty()) {
            let pairs: Vec<String> = join
                .join_pairs
                .iter()
                .map(|(src, tgt)| format!("{src}={tgt}"))
                .collect();
            lines.push(format!(
                "Join pairs to {}: {}",
                join.target_model,
                pairs.join("; ")
            ));
        }
    }
    lines.join("\n")
}

/// `Column: <ds>.<model>.<col>` with type, descriptions, format, SQL, samples and PK flag.
pub fn column_text(model: &Model, column: &Column) -> String {
    let mut lines = vec![
        format!(
            "Column: {}",
            leaf_id(&model.data_source, &model.name, &column.name)
        ),
        format!("Type: {}", column.data_type.as_str()),
    ];
    if let Some(d) = set(&column.description) {
        lines.push(format!("Description: {d}"));
    }
    if let Some(l) = set(&column.label) {
        lines.push(format!("Label: {l}"));
    }
    if let Some(f) = &column.format {
        lines.push(format!("Format: {}", pyfmt::number_format(f)));
    }
    if let Some(aggs) = column
        .allowed_aggregations
        .as_ref()
        .filter(|a| !a.is_empty())
    {
        lines.push(format!("Allowed aggregations: {}", aggs.join(", ")));
    }
    if let Some(s) = set(&column.sql) {
        lines.push(format!("SQL: {s}"));
    }
    if let Some(f) = set(&column.filter) {
        lines.push(format!("Filter: {f}"));
    }
    match (&column.sampled_values, set(&column.sampled)) {
        // A structured list wins, and an empty one is authoritative: no fallback to `sampled`.
        (Some(values), _) => {
            if !values.is_empty() {
                lines.push(format!(
                    "Sample values: {}",
                    pyfmt::json_string_list(values)
                ));
                if let Some(n) = column.distinct_count.filter(|&n| n > values.len() as i64) {
                    lines.push(format!("Distinct count: {n}"));
                }
            }
        }
        (None, Some(sampled)) => lines.push(format!("Sample values: {sampled}")),
        (None, None) => {}
    }
    if column.primary_key {
        lines.push("Primary key: yes".to_owned());
    }
    lines.join("\n")
}

/// What the embedder reads of a measure's or an aggregation's doc: the doc with its first line
/// (`Measure: <ds>.<model>.<name>`) naming the object in words (`Measure: min stringency
/// index (measures)`), its abbreviations spelled out (`churned monthly recurring revenue
/// (mrr)`). A sentence encoder reads `minStringencyIndex` or `total_sales_qty` as code; split
/// into words, the name is what a metric question paraphrases (docs/spec/render.md §2.5).
pub fn named_in_words(text: &str, name: &str, model: &str) -> String {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    let kind = first.split_once(": ").map_or(first, |(kind, _)| kind);
    let name = crate::abbreviations::with_spelled(&words(name));
    let mut out = format!("{kind}: {name} ({})", words(model));
    if !rest.is_empty() {
        out.push('\n');
        out.push_str(rest);
    }
    out
}

/// A code name as lowercase words: `_`, `-`, `.` and spaces split, and so does a lowercase
/// letter or digit followed by a capital (`minStringencyIndex` → `min stringency index`).
pub fn words(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut prev: Option<char> = None;
    for c in name.chars() {
        if matches!(c, '_' | '-' | '.' | ' ') {
            if !out.ends_with(' ') && !out.is_empty() {
                out.push(' ');
            }
        } else {
            if c.is_uppercase()
                && prev.is_some_and(|p| p.is_lowercase() || p.is_ascii_digit())
                && !out.ends_with(' ')
            {
                out.push(' ');
            }
            out.extend(c.to_lowercase());
        }
        prev = Some(c);
    }
    out.trim_end().to_owned()
}

/// `Measure: …` for a named measure.
pub fn measure_text(model: &Model, name: &str, measure: &Measure) -> String {
    let mut lines = vec![
        format!(
            "Measure: {}",
            leaf_id(&model.data_source, &model.name, name)
        ),
        format!("Formula: {}", measure.formula),
    ];
    if let Some(d) = set(&measure.description) {
        lines.push(format!("Description: {d}"));
    }
    if let Some(l) = set(&measure.label) {
        lines.push(format!("Label: {l}"));
    }
    lines.join("\n")
}

/// The prefix of a measure's [`formula_reads`] line in its embedding text.
pub const READS: &str = "Reads: ";

/// What a measure's formula reads, as one line (`Reads: amount where status = 'failed'; …`):
/// each column of the model its formula names, once, in formula order, by its SQL when that is
/// not its name, and its filter. A formula over the helper columns importers make
/// (`count(high_priority_cases_filtered)`, `avg(avg_completion_time_col)`) says what it counts
/// only through them. Not a column's description: that finds the column itself, and a measure
/// carrying it would pass the column for a question about the column ("basket value").
/// `None` when no column it names says more than its name.
pub fn formula_reads(model: &Model, formula: &str) -> Option<String> {
    let mut seen: Vec<&str> = Vec::new();
    let mut parts: Vec<String> = Vec::new();
    let idents = formula
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty());
    for ident in idents {
        let Some(column) = model.columns.iter().find(|c| c.name == ident) else {
            continue;
        };
        if seen.contains(&ident) {
            continue;
        }
        seen.push(ident);
        let sql = set(&column.sql).filter(|s| s.trim() != column.name);
        let filter = set(&column.filter);
        if sql.is_none() && filter.is_none() {
            continue;
        }
        let mut part = sql.unwrap_or(&column.name).trim().to_owned();
        if let Some(f) = filter {
            part.push_str(" where ");
            part.push_str(f.trim());
        }
        parts.push(part);
    }
    (!parts.is_empty()).then(|| format!("{READS}{}", parts.join("; ")))
}

/// `Aggregation: …` with formula, description and params.
pub fn aggregation_text(model: &Model, agg: &Aggregation) -> String {
    let mut lines = vec![format!(
        "Aggregation: {}",
        leaf_id(&model.data_source, &model.name, &agg.name)
    )];
    if let Some(f) = set(&agg.formula) {
        lines.push(format!("Formula: {f}"));
    }
    if let Some(d) = set(&agg.description) {
        lines.push(format!("Description: {d}"));
    }
    if !agg.params.is_empty() {
        let params: Vec<String> = agg
            .params
            .iter()
            .map(|p| format!("{}={}", p.name, p.sql))
            .collect();
        lines.push(format!("Params: {}", params.join("; ")));
    }
    lines.join("\n")
}

/// The lexical text of a memory: learning, description, then its tags as stored.
pub fn memory_text(memory: &Memory) -> String {
    let mut lines = vec![memory.learning.clone()];
    if let Some(d) = set(&memory.description) {
        lines.push(d.to_owned());
    }
    if !memory.entities.is_empty() {
        lines.push(format!("Tagged entities: {}", memory.entities.join(", ")));
    }
    lines.join("\n")
}

/// The embedding text of a memory: without tags, so tag-only cascades keep its hash.
pub fn memory_embedding_text(memory: &Memory) -> String {
    match set(&memory.description) {
        Some(d) => format!("{}\n\n{d}", memory.learning),
        None => memory.learning.clone(),
    }
}

fn entity_doc(
    datasource: &str,
    model: Option<&str>,
    position: i64,
    kind: &str,
    id: String,
    text: String,
) -> StoredDoc {
    StoredDoc {
        doc: Doc {
            canonical_id: id,
            doc_kind: kind.to_owned(),
            datasource: Some(datasource.to_owned()),
            content_hash: content_hash(&text),
            text,
            embedding_text: None,
        },
        model: model.map(str::to_owned),
        position,
    }
}

/// The doc of a datasource, listing its visible models in the given order.
pub fn datasource_doc(ds: &Datasource, models: &[Model]) -> StoredDoc {
    let visible: Vec<&str> = models
        .iter()
        .filter(|m| !m.hidden)
        .map(|m| m.name.as_str())
        .collect();
    entity_doc(
        &ds.name,
        None,
        0,
        "datasource",
        ds.name.clone(),
        datasource_text(ds, &visible),
    )
}

/// A model's docs in order: model, visible columns, named measures, aggregations.
/// A hidden model has none.
pub fn model_docs(model: &Model) -> Vec<StoredDoc> {
    if model.hidden {
        return Vec::new();
    }
    let ds = model.data_source.as_str();
    let name = Some(model.name.as_str());
    let mut docs = vec![entity_doc(
        ds,
        name,
        0,
        "model",
        model.canonical_id(),
        model_text(model),
    )];
    let leaf = |n: &str| leaf_id(ds, &model.name, n);
    for column in model.columns.iter().filter(|c| !c.hidden) {
        let pos = docs.len() as i64;
        let mut doc = entity_doc(
            ds,
            name,
            pos,
            "column",
            leaf(&column.name),
            column_text(model, column),
        );
        // The value index is not rendered, but the full-text index holds it: a change to it
        // must change the hash, so that the doc is indexed again.
        if let Some(values) = column.value_index.as_deref().filter(|v| !v.is_empty()) {
            let hashed = format!("{}\nValue index: {}", doc.doc.text, values.join("\n"));
            doc.doc.content_hash = content_hash(&hashed);
        }
        docs.push(doc);
    }
    for measure in &model.measures {
        if let Some(mname) = measure.name.as_deref() {
            let pos = docs.len() as i64;
            let mut doc = entity_doc(
                ds,
                name,
                pos,
                "measure",
                leaf(mname),
                measure_text(model, mname, measure),
            );
            let mut embedded = named_in_words(&doc.doc.text, mname, &model.name);
            // What the formula reads, for the embedding and the full-text index (not the
            // rendered text): the hash covers it, so a change re-embeds and re-indexes.
            if let Some(reads) = formula_reads(model, &measure.formula) {
                embedded.push('\n');
                embedded.push_str(&reads);
                doc.doc.content_hash = content_hash(&format!("{}\n{reads}", doc.doc.text));
            }
            doc.doc.embedding_text = Some(embedded);
            docs.push(doc);
        }
    }
    for agg in &model.aggregations {
        let pos = docs.len() as i64;
        let mut doc = entity_doc(
            ds,
            name,
            pos,
            "aggregation",
            leaf(&agg.name),
            aggregation_text(model, agg),
        );
        doc.doc.embedding_text = Some(named_in_words(&doc.doc.text, &agg.name, &model.name));
        docs.push(doc);
    }
    docs
}

/// The doc of a memory (`memory:<id>`), with its tag-free embedding text.
pub fn memory_doc(memory: &Memory) -> StoredDoc {
    let text = memory_text(memory);
    StoredDoc {
        doc: Doc {
            canonical_id: memory_ref(&memory.id),
            doc_kind: "memory".to_owned(),
            datasource: None,
            content_hash: content_hash(&text),
            text,
            embedding_text: Some(memory_embedding_text(memory)),
        },
        model: None,
        position: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_measure_is_embedded_by_its_name_in_words() {
        assert_eq!(words("minStringencyIndex"), "min stringency index");
        assert_eq!(words("total_sales_qty"), "total sales qty");
        assert_eq!(words("p99Spend2x-ratio"), "p99 spend2x ratio");
        assert_eq!(words("CDSCode"), "cdscode");
        assert_eq!(
            named_in_words(
                "Measure: covid.Measures.minStringencyIndex\nFormula: min(stringency_index)",
                "minStringencyIndex",
                "Measures"
            ),
            "Measure: min stringency index (measures)\nFormula: min(stringency_index)"
        );
    }

    #[test]
    fn a_formula_reads_its_helper_columns_sql_and_filters() {
        let model: Model = serde_json::from_value(serde_json::json!({
            "kind": "model", "name": "cases", "data_source": "crm",
            "columns": [
                {"name": "id", "type": "INT"},
                {"name": "high_priority_filtered", "type": "INT", "sql": "id",
                 "filter": "priority = 'High'", "hidden": true},
                {"name": "hours_col", "type": "DOUBLE",
                 "sql": "EXTRACT(EPOCH FROM (closed_at - created_at)) / 3600"},
                {"name": "amount", "type": "DOUBLE", "description": "Amount due, in cents.\nFrom Stripe."}
            ]
        }))
        .unwrap();
        assert_eq!(
            formula_reads(&model, "count(high_priority_filtered)").as_deref(),
            Some("Reads: id where priority = 'High'")
        );
        assert_eq!(
            formula_reads(
                &model,
                "avg(hours_col) / nullif(sum(amount), 0) + avg(hours_col)"
            )
            .as_deref(),
            Some("Reads: EXTRACT(EPOCH FROM (closed_at - created_at)) / 3600")
        );
        // A plain column adds nothing, described or not (its description finds the column).
        assert_eq!(formula_reads(&model, "count(id)"), None);
        assert_eq!(formula_reads(&model, "sum(amount)"), None);
        assert_eq!(formula_reads(&model, "count(*)"), None);
    }

    #[test]
    fn what_a_formula_reads_is_embedded_and_hashed_not_rendered() {
        let model: Model = serde_json::from_value(serde_json::json!({
            "kind": "model", "name": "cases", "data_source": "crm",
            "columns": [{"name": "urgent_filtered", "type": "INT", "sql": "id",
                         "filter": "priority = 'High'", "hidden": true}],
            "measures": [{"name": "urgent_cases", "formula": "count(urgent_filtered)"}]
        }))
        .unwrap();
        let docs = model_docs(&model);
        let doc = &docs
            .iter()
            .find(|d| d.doc.doc_kind == "measure")
            .unwrap()
            .doc;
        assert_eq!(
            doc.text,
            "Measure: crm.cases.urgent_cases\nFormula: count(urgent_filtered)"
        );
        assert_eq!(
            doc.embedding_text.as_deref(),
            Some("Measure: urgent cases (cases)\nFormula: count(urgent_filtered)\nReads: id where priority = 'High'")
        );
        assert_ne!(doc.content_hash, content_hash(&doc.text));
    }
}
