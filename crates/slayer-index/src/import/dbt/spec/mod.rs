//! dbt's semantic layer as read from its YAML, both specs in one shape: the legacy spec's
//! top-level `semantic_models:` / `metrics:` (MetricFlow's `type_params`), and the latest
//! spec (dbt 1.12, Fusion) where a model says `semantic_model:`, its columns carry `entity:` /
//! `dimension:` and it lists `metrics:` with `agg` / `expr`. A latest-spec simple metric is a
//! measure of its model plus a simple metric of the same name, as MetricFlow compiles it.
//! The shapes and the readers both specs share are here; `legacy.rs` and `latest.rs` read
//! each spec's objects into them.

mod latest;
mod legacy;
mod package;

pub use latest::{latest_metric, latest_semantic_model};
pub use legacy::{legacy_metric, legacy_semantic_model};
pub use package::{is_package_metric, package_metric};

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
    /// `primary_entity:`, the entity of a semantic model with no primary key column.
    pub primary_entity: Option<String>,
    /// Made from what dbt_metrics package metrics say of their dbt model, not written in the
    /// project (its metrics are the objects recorded).
    pub of_package_metrics: bool,
    pub at: At,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityKind {
    Primary,
    Unique,
    Natural,
    Foreign,
}

/// An entity `type` this importer does not know: the entity is skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown entity type '{0}'; expected primary, unique, natural or foreign")]
pub struct UnknownEntityType(pub String);

#[derive(Debug, Clone)]
pub struct Entity {
    pub name: String,
    pub kind: Result<EntityKind, UnknownEntityType>,
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
    /// `create_metric: true`: MetricFlow makes a simple metric of the same name.
    pub create_metric: bool,
    /// A newer simple metric's own aggregation, not a `measures:` item: the metric is the
    /// object recorded, not this.
    pub of_metric: bool,
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

/// A running total: `input` is a measure (legacy) or a metric (latest: `input_metric`).
#[derive(Debug, Clone)]
pub struct Cumulative {
    pub input: Input,
    pub input_is_metric: bool,
    pub window: Option<String>,
    pub grain_to_date: Option<String>,
    pub period_agg: Option<String>,
}

/// A conversion funnel: its inputs are measures (legacy) or metrics (latest).
#[derive(Debug, Clone)]
pub struct Conversion {
    pub base: Input,
    pub conversion: Input,
    pub inputs_are_metrics: bool,
    pub calculation: String,
    pub window: Option<String>,
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
    Cumulative(Cumulative),
    Conversion(Conversion),
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
    /// Made by a measure's `create_metric: true`, not written in the project.
    pub created: bool,
    /// The newer simple metric's own aggregation (`type_params.metric_aggregation_params`):
    /// a measure of that semantic model, named as the metric.
    pub inline_measure: Option<(String, DbtMeasure)>,
    /// Its input is a measure of its own name that it is (latest spec, or the newer simple
    /// shape): a filter or a default rewrites that measure instead of adding another.
    pub own_measure: bool,
    /// What reading it already lost (the dbt_metrics package's `window`), named with the rest.
    pub lossy: Vec<String>,
    pub at: At,
}

/// A `saved_queries:` item: a curated query of metrics by dimensions.
#[derive(Debug, Clone)]
pub struct SavedQuery {
    pub name: String,
    pub label: Option<String>,
    pub description: Option<String>,
    pub metrics: Vec<String>,
    /// `Dimension('customer__region')`, `TimeDimension('metric_time', 'day')`, as written.
    pub group_by: Vec<String>,
    /// Jinja filters, ANDed.
    pub filters: Vec<String>,
    pub order_by: Vec<String>,
    pub limit: Option<u64>,
    pub at: At,
}

/// A saved query as read (its name is required; a missing list is empty).
pub fn saved_query(v: &Value, at: At) -> Option<SavedQuery> {
    let name = text(v, "name")?;
    let (label, description) = label_and_description(v);
    let params = v.get("query_params").unwrap_or(&Value::Null);
    let strings = |key: &str| -> Vec<String> {
        match params.get(key) {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|i| match i {
                    Value::String(s) => Some(s.trim().to_owned()),
                    other => text(other, "where_sql_template"),
                })
                .collect(),
            Some(Value::String(s)) => vec![s.trim().to_owned()],
            _ => Vec::new(),
        }
    };
    let mut filters = strings("where");
    if let Some(f) = params.get("where").and_then(|w| w.get("where_filters")) {
        filters.extend(
            f.as_array()
                .into_iter()
                .flatten()
                .filter_map(|x| text(x, "where_sql_template")),
        );
    }
    Some(SavedQuery {
        metrics: strings("metrics"),
        group_by: strings("group_by"),
        order_by: strings("order_by"),
        limit: params.get("limit").and_then(Value::as_u64),
        filters,
        name,
        label,
        description,
        at,
    })
}

pub fn text(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::String(s) => Some(s.trim_end_matches('\n').to_owned()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The items of the list under `key` (none when it is missing or not a list).
pub fn items<'a>(v: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    v.get(key).and_then(Value::as_array).into_iter().flatten()
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

fn entity_kind(text: &str) -> Result<EntityKind, UnknownEntityType> {
    match text.to_ascii_lowercase().as_str() {
        "primary" => Ok(EntityKind::Primary),
        "unique" => Ok(EntityKind::Unique),
        "natural" => Ok(EntityKind::Natural),
        "foreign" => Ok(EntityKind::Foreign),
        other => Err(UnknownEntityType(other.to_owned())),
    }
}

pub fn measure_from(m: &Value, name: &str, at: At) -> DbtMeasure {
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
        create_metric: m.get("create_metric").and_then(Value::as_bool) == Some(true),
        of_metric: false,
        description,
        label,
        at,
    }
}

fn derived(p: &Value) -> MetricKind {
    let key = if p.get("metrics").is_some() {
        "metrics"
    } else {
        "input_metrics"
    };
    let inputs: Vec<Input> = items(p, key).filter_map(input).collect();
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
