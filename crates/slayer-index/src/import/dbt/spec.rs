//! dbt's semantic layer as read from its YAML, both specs in one shape: the legacy spec's
//! top-level `semantic_models:` / `metrics:` (MetricFlow's `type_params`), and the latest
//! spec (dbt 1.12, Fusion) where a model says `semantic_model:`, its columns carry `entity:` /
//! `dimension:` and it lists `metrics:` with `agg` / `expr`. A latest-spec simple metric is a
//! measure of its model plus a simple metric of the same name, as MetricFlow compiles it.

use serde_json::Value;

use crate::import::At;

/// A semantic model.
#[derive(Debug, Clone, Default)]
pub struct SemanticModel {
    pub name: String,
    pub label: Option<String>,
    pub description: Option<String>,
    /// The dbt model it reads (`ref('x')` → `x`).
    pub dbt_model: String,
    pub agg_time_dimension: Option<String>,
    pub entities: Vec<Entity>,
    pub dimensions: Vec<Dimension>,
    pub measures: Vec<DbtMeasure>,
    pub meta: Option<Value>,
    pub at: At,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityKind {
    Primary,
    Unique,
    Natural,
    Foreign,
}

#[derive(Debug, Clone)]
pub struct Entity {
    pub name: String,
    pub kind: Result<EntityKind, String>,
    /// The column or SQL it reads (its name when not given).
    pub expr: String,
    pub description: Option<String>,
    pub label: Option<String>,
    pub at: At,
}

#[derive(Debug, Clone)]
pub struct Dimension {
    pub name: String,
    pub is_time: bool,
    pub kind_text: String,
    pub expr: String,
    pub granularity: Option<String>,
    pub description: Option<String>,
    pub label: Option<String>,
    pub at: At,
}

#[derive(Debug, Clone)]
pub struct DbtMeasure {
    pub name: String,
    pub agg: String,
    pub expr: String,
    pub description: Option<String>,
    pub label: Option<String>,
    pub percentile: Option<f64>,
    /// `use_discrete_percentile` or `use_approximate_percentile`.
    pub inexact_percentile: bool,
    pub non_additive: Option<Value>,
    pub at: At,
}

/// One input of a metric: a measure (legacy simple, cumulative, conversion) or a metric.
#[derive(Debug, Clone, Default)]
pub struct Input {
    pub name: String,
    pub alias: Option<String>,
    pub filter: Option<String>,
    pub offset_window: Option<String>,
    pub offset_to_grain: Option<String>,
}

#[derive(Debug, Clone)]
pub enum MetricKind {
    /// Aggregates one measure.
    Simple {
        measure: Input,
    },
    Ratio {
        numerator: Input,
        denominator: Input,
    },
    Derived {
        expr: String,
        inputs: Vec<Input>,
    },
    /// `input` is a measure (legacy) or a metric (latest: `input_metric`).
    Cumulative {
        input: Input,
        input_is_metric: bool,
        window: Option<String>,
        grain_to_date: Option<String>,
        period_agg: Option<String>,
    },
    /// Inputs are measures (legacy) or metrics (latest).
    Conversion {
        base: Input,
        conversion: Input,
        inputs_are_metrics: bool,
        calculation: String,
        window: Option<String>,
    },
    /// A type this importer does not know, or a metric missing what its type needs.
    Invalid(String),
}

#[derive(Debug, Clone)]
pub struct Metric {
    pub name: String,
    pub label: Option<String>,
    pub description: Option<String>,
    pub filter: Option<String>,
    pub fill_nulls_with: Option<Value>,
    pub join_to_timespine: bool,
    pub hidden: bool,
    pub kind: MetricKind,
    /// The semantic model a latest-spec metric is declared on.
    pub declared_on: Option<String>,
    pub at: At,
}

pub fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.trim_end_matches('\n').to_owned()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn label_and_description(v: &Value) -> (Option<String>, Option<String>) {
    (text(v, "label"), text(v, "description"))
}

/// `ref('x')`, `ref("x")`, `ref('package', 'x')`, `ref('x', v=1)` → `x`; anything else as is.
pub fn ref_name(text: &str) -> String {
    let t = text
        .trim()
        .trim_start_matches("{{")
        .trim_end_matches("}}")
        .trim();
    let Some(inner) = t.strip_prefix("ref(").and_then(|r| r.strip_suffix(')')) else {
        return text.trim().to_owned();
    };
    let args: Vec<&str> = inner
        .split(',')
        .map(str::trim)
        .filter(|a| !a.contains('='))
        .collect();
    args.last()
        .map(|a| a.trim_matches(|c| c == '\'' || c == '"').to_owned())
        .unwrap_or_default()
}

/// A dbt filter: a string, a list of strings (ANDed) or `{where_filters: [{where_sql_template}]}`.
pub fn filter(v: Option<&Value>) -> Option<String> {
    let clauses: Vec<String> = match v? {
        Value::String(s) => vec![s.trim().to_owned()],
        Value::Array(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(|s| s.trim().to_owned()))
            .collect(),
        Value::Object(m) => m
            .get("where_filters")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|w| w.get("where_sql_template").and_then(Value::as_str))
            .map(|s| s.trim().to_owned())
            .collect(),
        _ => return None,
    };
    let clauses: Vec<String> = clauses.into_iter().filter(|c| !c.is_empty()).collect();
    match clauses.len() {
        0 => None,
        1 => clauses.into_iter().next(),
        _ => Some(
            clauses
                .iter()
                .map(|c| format!("({c})"))
                .collect::<Vec<_>>()
                .join(" AND "),
        ),
    }
}

/// `{count: 1, granularity: month}` or `"1 month"` → `1 month`.
fn window(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Object(m) => {
            let count = m.get("count").map(|c| c.to_string()).unwrap_or("1".into());
            let grain = m.get("granularity").and_then(Value::as_str)?;
            Some(format!("{count} {grain}"))
        }
        _ => None,
    }
}

/// A metric input: a bare name or a mapping with `name`, `alias`, `filter`, `offset_window`,
/// `offset_to_grain`, `fill_nulls_with`.
pub fn input(v: &Value) -> Option<Input> {
    match v {
        Value::String(s) => Some(Input {
            name: s.trim().to_owned(),
            ..Input::default()
        }),
        Value::Object(_) => Some(Input {
            name: text(v, "name")?,
            alias: text(v, "alias"),
            filter: filter(v.get("filter")),
            offset_window: window(v.get("offset_window")),
            offset_to_grain: text(v, "offset_to_grain"),
        }),
        _ => None,
    }
}

fn entity_kind(text: &str) -> Result<EntityKind, String> {
    match text.to_ascii_lowercase().as_str() {
        "primary" => Ok(EntityKind::Primary),
        "unique" => Ok(EntityKind::Unique),
        "natural" => Ok(EntityKind::Natural),
        "foreign" => Ok(EntityKind::Foreign),
        other => Err(other.to_owned()),
    }
}

/// A legacy `semantic_models:` item.
pub fn legacy_semantic_model(
    v: &Value,
    at: At,
    line_in: &dyn Fn(&str, usize) -> usize,
) -> Option<SemanticModel> {
    let name = text(v, "name")?;
    let (label, description) = label_and_description(v);
    let list = |key: &str| {
        v.get(key)
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let here = |name: &str| At {
        file: at.file.clone(),
        line: line_in(name, at.line),
    };
    let entities = list("entities")
        .iter()
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
    let dimensions = list("dimensions")
        .iter()
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
    let measures = list("measures")
        .iter()
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
        name,
        label,
        description,
        entities,
        dimensions,
        measures,
        at,
    })
}

fn measure_from(m: &Value, name: &str, at: At) -> DbtMeasure {
    let (label, description) = label_and_description(m);
    let params = m.get("agg_params");
    let flag = |key: &str| {
        params
            .and_then(|p| p.get(key))
            .and_then(Value::as_bool)
            .unwrap_or(false)
    };
    let percentile_type = text(m, "percentile_type").unwrap_or_default();
    DbtMeasure {
        name: name.to_owned(),
        agg: text(m, "agg").unwrap_or_default().to_ascii_lowercase(),
        expr: text(m, "expr").unwrap_or_else(|| name.to_owned()),
        percentile: params
            .and_then(|p| p.get("percentile"))
            .or_else(|| m.get("percentile"))
            .and_then(Value::as_f64),
        inexact_percentile: flag("use_discrete_percentile")
            || flag("use_approximate_percentile")
            || percentile_type.contains("discrete")
            || percentile_type.contains("approximate"),
        non_additive: m.get("non_additive_dimension").cloned(),
        description,
        label,
        at,
    }
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
    let kind = match kind_text.as_str() {
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
        "derived" => derived(&p),
        "cumulative" => {
            let c = p
                .get("cumulative_type_params")
                .cloned()
                .unwrap_or(Value::Null);
            let metric_input = c.get("metric").and_then(input);
            match measure_input.clone().or(metric_input.clone()) {
                Some(input) => MetricKind::Cumulative {
                    input,
                    input_is_metric: measure_input.is_none(),
                    window: window(c.get("window").or(p.get("window"))),
                    grain_to_date: text(&c, "grain_to_date").or_else(|| text(&p, "grain_to_date")),
                    period_agg: text(&c, "period_agg"),
                },
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
                (Some(base), Some(conversion)) => MetricKind::Conversion {
                    base,
                    conversion,
                    inputs_are_metrics: false,
                    calculation: text(&c, "calculation")
                        .unwrap_or_else(|| "conversion_rate".into()),
                    window: window(c.get("window")),
                },
                _ => MetricKind::Invalid(
                    "a conversion metric without base_measure and conversion_measure".into(),
                ),
            }
        }
        "" => MetricKind::Invalid("a metric without a type".into()),
        other => MetricKind::Invalid(format!("unknown metric type '{other}'")),
    };
    Some(Metric {
        filter: filter(v.get("filter")),
        hidden: v.get("hidden").and_then(Value::as_bool).unwrap_or(false),
        declared_on: None,
        name,
        label,
        description,
        fill_nulls_with,
        join_to_timespine,
        kind,
        at,
    })
}

fn derived(p: &Value) -> MetricKind {
    let inputs: Vec<Input> = p
        .get("metrics")
        .or(p.get("input_metrics"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(input)
        .collect();
    match text(p, "expr") {
        Some(expr) if !inputs.is_empty() => MetricKind::Derived { expr, inputs },
        // A single input and no expression: the input itself.
        None if inputs.len() == 1 => MetricKind::Derived {
            expr: inputs[0].alias.clone().unwrap_or(inputs[0].name.clone()),
            inputs,
        },
        _ => MetricKind::Invalid("a derived metric without expr and input metrics".into()),
    }
}

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
            Some(input) => MetricKind::Cumulative {
                input,
                input_is_metric: true,
                window: window(v.get("window")),
                grain_to_date: text(v, "grain_to_date"),
                period_agg: text(v, "period_agg"),
            },
            None => MetricKind::Invalid("a cumulative metric without input_metric".into()),
        },
        "conversion" => match (
            v.get("base_metric").and_then(input),
            v.get("conversion_metric").and_then(input),
        ) {
            (Some(base), Some(conversion)) => MetricKind::Conversion {
                base,
                conversion,
                inputs_are_metrics: true,
                calculation: text(v, "calculation").unwrap_or_else(|| "conversion_rate".into()),
                window: window(v.get("window")),
            },
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
    let (name, enabled) = match v.get("semantic_model")? {
        Value::Bool(b) => (model_name.clone(), *b),
        Value::Object(m) => (
            m.get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or(model_name.clone()),
            m.get("enabled").and_then(Value::as_bool).unwrap_or(true),
        ),
        _ => return None,
    };
    if !enabled {
        return None;
    }
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
    for c in v
        .get("columns")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(column) = text(c, "name") else {
            continue;
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
    if let Some(derived) = v.get("derived_semantics") {
        for e in derived
            .get("entities")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
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
        for d in derived
            .get("dimensions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
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
    Some(sm)
}
