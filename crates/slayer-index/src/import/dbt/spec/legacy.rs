//! The legacy spec (MetricFlow's): top-level `semantic_models:` with their entities,
//! dimensions and measures, and top-level `metrics:` with `type` and `type_params`.

use serde_json::Value;

use super::{
    derived, entity_kind, filter, input, items, label_and_description, measure_from, ref_name,
    text, window, Conversion, Cumulative, Dimension, Entity, Input, Metric, MetricKind,
    SemanticModel,
};
use crate::import::At;

/// A legacy `semantic_models:` item.
pub fn legacy_semantic_model(
    v: &Value,
    at: At,
    line_in: &dyn Fn(&str, usize) -> usize,
) -> Option<SemanticModel> {
    let name = text(v, "name")?;
    let (label, description) = label_and_description(v);
    let here = |name: &str| At {
        file: at.file.clone(),
        line: line_in(name, at.line),
    };
    let entities = items(v, "entities")
        .filter_map(|e| {
            let name = text(e, "name")?;
            let (label, description) = label_and_description(e);
            Some(Entity {
                kind: entity_kind(&text(e, "type").unwrap_or_default()),
                expr: text(e, "expr").unwrap_or_else(|| name.clone()),
                at: here(&name),
                name,
                description,
                label,
            })
        })
        .collect();
    let dimensions = items(v, "dimensions")
        .filter_map(|d| {
            let name = text(d, "name")?;
            let (label, description) = label_and_description(d);
            let kind_text = text(d, "type").unwrap_or_else(|| "categorical".into());
            Some(Dimension {
                is_time: kind_text.eq_ignore_ascii_case("time"),
                expr: text(d, "expr").unwrap_or_else(|| name.clone()),
                granularity: d
                    .get("type_params")
                    .and_then(|p| text(p, "time_granularity")),
                at: here(&name),
                kind_text,
                name,
                description,
                label,
            })
        })
        .collect();
    let measures = items(v, "measures")
        .filter_map(|m| {
            let name = text(m, "name")?;
            Some(measure_from(m, &name, here(&name)))
        })
        .collect();
    Some(SemanticModel {
        dbt_model: text(v, "model")
            .map(|m| ref_name(&m))
            .unwrap_or_else(|| name.clone()),
        agg_time_dimension: v
            .get("defaults")
            .and_then(|d| text(d, "agg_time_dimension")),
        meta: v.get("config").and_then(|c| c.get("meta")).cloned(),
        primary_entity: text(v, "primary_entity"),
        of_package_metrics: false,
        name,
        label,
        description,
        entities,
        dimensions,
        measures,
        at,
    })
}

/// A legacy top-level `metrics:` item (`type` + `type_params`).
pub fn legacy_metric(v: &Value, at: At) -> Option<Metric> {
    let name = text(v, "name")?;
    let (label, description) = label_and_description(v);
    let kind_text = text(v, "type").unwrap_or_default().to_ascii_lowercase();
    let p = v.get("type_params").cloned().unwrap_or(Value::Null);
    let measure_input = p.get("measure").and_then(input);
    let fill_nulls_with = p
        .get("measure")
        .and_then(|m| m.get("fill_nulls_with"))
        .cloned();
    let join_to_timespine = p
        .get("measure")
        .and_then(|m| m.get("join_to_timespine"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // The newer simple metric aggregates on its own: `expr` with `metric_aggregation_params`.
    let inline_measure = match (
        kind_text.as_str(),
        &measure_input,
        p.get("metric_aggregation_params"),
    ) {
        ("simple", None, Some(Value::Object(params))) => {
            let mut spec = params.clone();
            if let Some(expr) = p.get("expr") {
                spec.insert("expr".into(), expr.clone());
            }
            let model = params
                .get("semantic_model")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let (label, description) = label_and_description(v);
            let mut x = measure_from(&Value::Object(spec), &name, at.clone());
            x.label = label;
            x.description = description;
            x.of_metric = true;
            Some((model.to_owned(), x))
        }
        _ => None,
    };
    let measure_input = measure_input.or_else(|| {
        inline_measure.as_ref().map(|_| Input {
            name: name.clone(),
            ..Input::default()
        })
    });
    let kind = kind_of(&kind_text, &p, measure_input);
    Some(Metric {
        own_measure: inline_measure.is_some(),
        lossy: Vec::new(),
        inline_measure,
        filter: filter(v.get("filter")),
        hidden: v.get("hidden").and_then(Value::as_bool).unwrap_or(false),
        declared_on: None,
        created: false,
        name,
        label,
        description,
        fill_nulls_with,
        join_to_timespine,
        kind,
        at,
    })
}

/// What a legacy metric of type `kind_text` computes, from its `type_params` `p`.
fn kind_of(kind_text: &str, p: &Value, measure_input: Option<Input>) -> MetricKind {
    match kind_text {
        "simple" => match measure_input {
            Some(measure) => MetricKind::Simple { measure },
            None => MetricKind::Invalid("a simple metric without type_params.measure".into()),
        },
        "ratio" => match (
            p.get("numerator").and_then(input),
            p.get("denominator").and_then(input),
        ) {
            (Some(numerator), Some(denominator)) => MetricKind::Ratio {
                numerator,
                denominator,
            },
            _ => MetricKind::Invalid("a ratio metric without numerator and denominator".into()),
        },
        "derived" => derived(p),
        "cumulative" => {
            let c = p
                .get("cumulative_type_params")
                .cloned()
                .unwrap_or(Value::Null);
            let metric_input = c.get("metric").and_then(input);
            match measure_input.clone().or(metric_input.clone()) {
                Some(input) => MetricKind::Cumulative(Cumulative {
                    input,
                    input_is_metric: measure_input.is_none(),
                    window: window(c.get("window").or(p.get("window"))),
                    grain_to_date: text(&c, "grain_to_date").or_else(|| text(p, "grain_to_date")),
                    period_agg: text(&c, "period_agg"),
                }),
                None => MetricKind::Invalid("a cumulative metric without a measure".into()),
            }
        }
        "conversion" => {
            let c = p
                .get("conversion_type_params")
                .cloned()
                .unwrap_or(Value::Null);
            match (
                c.get("base_measure").and_then(input),
                c.get("conversion_measure").and_then(input),
            ) {
                (Some(base), Some(conversion)) => MetricKind::Conversion(Conversion {
                    base,
                    conversion,
                    inputs_are_metrics: false,
                    calculation: text(&c, "calculation")
                        .unwrap_or_else(|| "conversion_rate".into()),
                    window: window(c.get("window")),
                }),
                _ => MetricKind::Invalid(
                    "a conversion metric without base_measure and conversion_measure".into(),
                ),
            }
        }
        "" => MetricKind::Invalid("a metric without a type".into()),
        other => MetricKind::Invalid(format!("unknown metric type '{other}'")),
    }
}
