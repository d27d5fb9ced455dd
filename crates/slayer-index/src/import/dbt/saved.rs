//! dbt `saved_queries` as example-query memories (docs/spec/importers.md §17.3): each becomes a
//! memory `dbt.saved_query.<name>` whose learning says what it is and whose query is the
//! SlayerQuery it asks — its metrics as measures of the model of the first one, its `group_by` as
//! dimensions and time dimensions, its `where` as filters — so search returns it among
//! `example_queries`. `slayer-memory import` saves them once the catalog is loaded.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{json, Map, Value};

use super::convert::Built;
use super::jinja::translate_on;
use super::metrics::Placed;
use super::spec::SavedQuery;
use crate::import::{Fate, Tally};

static TIME_DIMENSION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^TimeDimension\(\s*['"](\w+)['"]\s*(?:,\s*['"]?(\w+)['"]?\s*)?\)\s*(?:\.grain\(\s*['"](\w+)['"]\s*\))?$"#)
        .expect("valid regex")
});

/// The memory id of a saved query.
pub fn memory_id(name: &str) -> String {
    format!("dbt.saved_query.{name}")
}

/// One memory record per saved query whose metrics were imported; each recorded in `tally`.
pub fn memories(
    queries: &[SavedQuery],
    built: &Built,
    placed: &Placed,
    datasource: &str,
    tally: &mut Tally,
) -> Vec<Value> {
    let mut out = Vec::new();
    for q in queries {
        let object = format!("saved query '{}'", q.name);
        let mut problems = Vec::new();
        match memory(q, built, placed, datasource, &mut problems) {
            Some(m) => out.push(m),
            None => problems.push((
                Fate::Skipped,
                "none of its metrics was imported, so it has no model to query".into(),
            )),
        }
        tally.object("saved_query", &object, &q.at, problems);
    }
    out
}

fn memory(
    q: &SavedQuery,
    built: &Built,
    placed: &Placed,
    datasource: &str,
    problems: &mut Vec<(Fate, String)>,
) -> Option<Value> {
    let mut lossy = |message: String| problems.push((Fate::Lossy, message));
    let mut homes = Vec::new();
    for metric in &q.metrics {
        match placed.get(metric) {
            Some(home) => homes.push(home.clone()),
            None => lossy(format!(
                "its metric '{metric}' was not imported; left out of the query"
            )),
        }
    }
    let source = homes.first()?.0;
    let source_name = &built.models[source].name;
    let joined = built.joined.get(source).cloned().unwrap_or_default();
    let measures: Vec<Value> = homes
        .iter()
        .map(|(model, name)| {
            if *model == source {
                return json!({"formula": name});
            }
            let other = &built.models[*model].name;
            if !joined.contains(other) {
                lossy(format!("its metric '{name}' lives on model '{other}', which '{source_name}' does not join; written '{other}.{name}'"));
            }
            json!({"formula": format!("{other}.{name}")})
        })
        .collect();
    let (dimensions, time_dimensions) = group_by(q, built, source, &mut lossy);
    let mut filters = Vec::new();
    for f in &q.filters {
        let (text, losses) = translate_on(built, source, f);
        if losses.is_empty() {
            filters.push(json!(text));
        } else {
            losses
                .into_iter()
                .for_each(|l| lossy(format!("where: {l}; the filter is left out")));
        }
    }
    if !q.order_by.is_empty() {
        lossy(format!(
            "order_by ({}) is not carried into the query",
            q.order_by.join(", ")
        ));
    }
    let mut query = Map::new();
    query.insert("source_model".into(), json!(source_name));
    query.insert("measures".into(), Value::Array(measures));
    if !dimensions.is_empty() {
        query.insert("dimensions".into(), Value::Array(dimensions));
    }
    if !time_dimensions.is_empty() {
        query.insert("time_dimensions".into(), Value::Array(time_dimensions));
    }
    if !filters.is_empty() {
        query.insert("filters".into(), Value::Array(filters));
    }
    if let Some(limit) = q.limit {
        query.insert("limit".into(), json!(limit));
    }
    let (learning, description) = words(q);
    let tags: Vec<Value> = homes
        .iter()
        .map(|(m, name)| json!(format!("{datasource}.{}.{name}", built.models[*m].name)))
        .collect();
    Some(json!({
        "kind": "memory",
        "id": memory_id(&q.name),
        "learning": learning,
        "description": description,
        "entities": tags,
        "query": Value::Object(query),
    }))
}

/// A saved query's `group_by`: its dimensions and its time dimensions (with their grain), as
/// paths from the model `source`.
fn group_by(
    q: &SavedQuery,
    built: &Built,
    source: usize,
    lossy: &mut impl FnMut(String),
) -> (Vec<Value>, Vec<Value>) {
    let mut dimensions = Vec::new();
    let mut time_dimensions = Vec::new();
    for g in &q.group_by {
        let g = g.trim();
        if let Some(c) = TIME_DIMENSION.captures(g) {
            let grain = c.get(3).or(c.get(2)).map(|m| m.as_str().to_owned());
            let (name, losses) =
                translate_on(built, source, &format!("{{{{ Dimension('{}') }}}}", &c[1]));
            if losses.is_empty() {
                let mut td = Map::new();
                td.insert("dimension".into(), json!({"name": name}));
                if let Some(grain) = grain {
                    td.insert("granularity".into(), json!(grain));
                }
                time_dimensions.push(Value::Object(td));
            } else {
                losses
                    .into_iter()
                    .for_each(|l| lossy(format!("group_by {g}: {l}")));
            }
            continue;
        }
        let (name, losses) = translate_on(built, source, &format!("{{{{ {g} }}}}"));
        if losses.is_empty() {
            dimensions.push(json!({"name": name}));
        } else {
            losses
                .into_iter()
                .for_each(|l| lossy(format!("group_by {g}: {l}")));
        }
    }
    (dimensions, time_dimensions)
}

/// The memory's learning (what the query is, in words search matches) and its one-line
/// description.
fn words(q: &SavedQuery) -> (String, String) {
    let mut learning = format!("Saved query '{}' of the dbt project", q.name);
    if let Some(label) = &q.label {
        learning.push_str(&format!(" ({label})"));
    }
    learning.push('.');
    if let Some(d) = &q.description {
        learning.push_str(&format!(" {}", d.trim()));
    }
    learning.push_str(&format!(" Metrics: {}.", q.metrics.join(", ")));
    if !q.group_by.is_empty() {
        learning.push_str(&format!(" Grouped by: {}.", q.group_by.join(", ")));
    }
    if !q.filters.is_empty() {
        learning.push_str(&format!(" Where: {}.", q.filters.join(" and ")));
    }
    let description: String = q
        .label
        .clone()
        .or_else(|| q.description.clone())
        .unwrap_or_else(|| format!("dbt saved query {}", q.name))
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(500)
        .collect();
    (learning, description)
}
