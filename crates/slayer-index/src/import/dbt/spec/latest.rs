//! The latest spec (dbt 1.12, Fusion): a `models:` item says `semantic_model:`, its columns
//! carry `entity:` / `dimension:`, `derived_semantics:` adds computed ones, and its
//! `metrics:` (or the top-level ones) use flat keys (`agg`, `expr`, `input_metric`, …).

use serde_json::Value;

use super::{
    derived, entity_kind, filter, input, items, label_and_description, measure_from, text, window,
    Conversion, Cumulative, DbtMeasure, Dimension, Entity, Input, Metric, MetricKind,
    SemanticModel,
};
use crate::import::At;

/// A latest-spec metric (flat keys: `agg`, `expr`, `numerator`, `input_metric`, …), declared on
/// `model` (a model-level metric) or at the top level. A simple one also returns the measure
/// it aggregates.
pub fn latest_metric(
    v: &Value,
    model: Option<&str>,
    at: At,
) -> Option<(Metric, Option<DbtMeasure>)> {
    let name = text(v, "name")?;
    let (label, description) = label_and_description(v);
    let kind_text = text(v, "type")
        .unwrap_or_else(|| "simple".into())
        .to_ascii_lowercase();
    let mut measure = None;
    let kind = match kind_text.as_str() {
        "simple" => match model {
            Some(_) if v.get("agg").is_some() => {
                measure = Some(measure_from(v, &name, at.clone()));
                MetricKind::Simple {
                    measure: Input {
                        name: name.clone(),
                        ..Input::default()
                    },
                }
            }
            Some(_) => MetricKind::Invalid("a simple metric without agg".into()),
            None => MetricKind::Invalid(
                "a simple metric at the top level; dbt wants it under its model's metrics:".into(),
            ),
        },
        "ratio" => match (
            v.get("numerator").and_then(input),
            v.get("denominator").and_then(input),
        ) {
            (Some(numerator), Some(denominator)) => MetricKind::Ratio {
                numerator,
                denominator,
            },
            _ => MetricKind::Invalid("a ratio metric without numerator and denominator".into()),
        },
        "derived" => derived(v),
        "cumulative" => match v.get("input_metric").and_then(input) {
            Some(input) => MetricKind::Cumulative(Cumulative {
                input,
                input_is_metric: true,
                window: window(v.get("window")),
                grain_to_date: text(v, "grain_to_date"),
                period_agg: text(v, "period_agg"),
            }),
            None => MetricKind::Invalid("a cumulative metric without input_metric".into()),
        },
        "conversion" => match (
            v.get("base_metric").and_then(input),
            v.get("conversion_metric").and_then(input),
        ) {
            (Some(base), Some(conversion)) => MetricKind::Conversion(Conversion {
                base,
                conversion,
                inputs_are_metrics: true,
                calculation: text(v, "calculation").unwrap_or_else(|| "conversion_rate".into()),
                window: window(v.get("window")),
            }),
            _ => MetricKind::Invalid(
                "a conversion metric without base_metric and conversion_metric".into(),
            ),
        },
        other => MetricKind::Invalid(format!("unknown metric type '{other}'")),
    };
    Some((
        Metric {
            filter: filter(v.get("filter")),
            fill_nulls_with: v.get("fill_nulls_with").cloned(),
            join_to_timespine: v
                .get("join_to_timespine")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            hidden: v.get("hidden").and_then(Value::as_bool).unwrap_or(false),
            declared_on: model.map(str::to_owned),
            created: false,
            inline_measure: None,
            own_measure: false,
            lossy: Vec::new(),
            name,
            label,
            description,
            kind,
            at,
        },
        measure,
    ))
}

/// A latest-spec model (`models:` item with `semantic_model:`): its semantic model, or `None`
/// when it has none or it is disabled.
pub fn latest_semantic_model(
    v: &Value,
    at: At,
    line_in: &dyn Fn(&str, usize) -> usize,
) -> Option<SemanticModel> {
    let model_name = text(v, "name")?;
    let name = enabled_name(v, &model_name)?;
    let here = |name: &str| At {
        file: at.file.clone(),
        line: line_in(name, at.line),
    };
    let mut sm = SemanticModel {
        name,
        label: None,
        description: text(v, "description"),
        dbt_model: model_name,
        agg_time_dimension: text(v, "agg_time_dimension"),
        meta: v
            .get("semantic_model")
            .and_then(|s| s.get("config"))
            .and_then(|c| c.get("meta"))
            .cloned(),
        at: at.clone(),
        ..SemanticModel::default()
    };
    for c in items(v, "columns") {
        column_members(c, &here, &mut sm);
    }
    if let Some(derived) = v.get("derived_semantics") {
        derived_members(derived, &here, &mut sm);
    }
    Some(sm)
}

/// The semantic model's name (`semantic_model: {name}`, else the model's), or `None` when
/// `semantic_model:` is missing, disabled or neither a flag nor a mapping.
fn enabled_name(v: &Value, model_name: &str) -> Option<String> {
    let (name, enabled) = match v.get("semantic_model")? {
        Value::Bool(b) => (model_name.to_owned(), *b),
        Value::Object(m) => (
            m.get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or(model_name.to_owned()),
            m.get("enabled").and_then(Value::as_bool).unwrap_or(true),
        ),
        _ => return None,
    };
    enabled.then_some(name)
}

/// The entity and the dimension a column declares (`entity:` / `dimension:`, a type or a
/// mapping), each reading the column.
fn column_members(c: &Value, here: &dyn Fn(&str) -> At, sm: &mut SemanticModel) {
    let Some(column) = text(c, "name") else {
        return;
    };
    let column_description = text(c, "description");
    match c.get("entity") {
        Some(Value::String(kind)) => sm.entities.push(Entity {
            name: column.clone(),
            kind: entity_kind(kind),
            expr: column.clone(),
            description: column_description.clone(),
            label: None,
            at: here(&column),
        }),
        Some(e @ Value::Object(_)) => sm.entities.push(Entity {
            name: text(e, "name").unwrap_or(column.clone()),
            kind: entity_kind(&text(e, "type").unwrap_or_default()),
            expr: column.clone(),
            description: text(e, "description").or(column_description.clone()),
            label: text(e, "label"),
            at: here(&column),
        }),
        _ => {}
    }
    let dimension = |kind_text: String, d: Option<&Value>| Dimension {
        name: d.and_then(|d| text(d, "name")).unwrap_or(column.clone()),
        is_time: kind_text.eq_ignore_ascii_case("time"),
        kind_text,
        expr: column.clone(),
        granularity: text(c, "granularity"),
        description: d
            .and_then(|d| text(d, "description"))
            .or(column_description.clone()),
        label: d.and_then(|d| text(d, "label")),
        at: here(&column),
    };
    match c.get("dimension") {
        Some(Value::String(kind)) => sm.dimensions.push(dimension(kind.clone(), None)),
        Some(d @ Value::Object(_)) => sm.dimensions.push(dimension(
            text(d, "type").unwrap_or_else(|| "categorical".into()),
            Some(d),
        )),
        _ => {}
    }
}

/// `derived_semantics:`: entities and dimensions over an expression rather than one column.
fn derived_members(derived: &Value, here: &dyn Fn(&str) -> At, sm: &mut SemanticModel) {
    for e in items(derived, "entities") {
        let Some(name) = text(e, "name") else {
            continue;
        };
        sm.entities.push(Entity {
            kind: entity_kind(&text(e, "type").unwrap_or_default()),
            expr: text(e, "expr").unwrap_or(name.clone()),
            description: text(e, "description"),
            label: text(e, "label"),
            at: here(&name),
            name,
        });
    }
    for d in items(derived, "dimensions") {
        let Some(name) = text(d, "name") else {
            continue;
        };
        let kind_text = text(d, "type").unwrap_or_else(|| "categorical".into());
        sm.dimensions.push(Dimension {
            is_time: kind_text.eq_ignore_ascii_case("time"),
            kind_text,
            expr: text(d, "expr").unwrap_or(name.clone()),
            granularity: text(d, "granularity"),
            description: text(d, "description"),
            label: text(d, "label"),
            at: here(&name),
            name,
        });
    }
}
