//! The spec of the dbt_metrics package (dbt Core 1.0–1.5, before MetricFlow): a top-level
//! `metrics:` item names its dbt model (`model: ref('x')`) and aggregates an expression of it,
//! `calculation_method` + `expression` (1.3–1.5) or `type` + `sql` (1.0–1.2); a `derived`
//! (1.0–1.2: `expression`) metric combines other metrics through `{{ metric('name') }}`.
//! `timestamp` and `dimensions` are columns of the model; `filters` (`field`, `operator`,
//! `value`) are ANDed; `time_grains` say nothing SLayer needs (any grain groups).
//!
//! An aggregating metric is a measure of its dbt model named as the metric (as a newer simple
//! metric's own aggregation is), on a model the import makes from what the metrics say of it
//! when the project has no semantic model of that name.

use serde_json::Value;

use super::{items, label_and_description, ref_name, text, DbtMeasure, Input, Metric, MetricKind};
use crate::import::At;

/// The aggregations of the package's spec, as the other specs name them.
const AGGREGATIONS: [(&str, &str); 8] = [
    ("count", "count"),
    ("count_distinct", "count_distinct"),
    ("sum", "sum"),
    ("average", "average"),
    ("avg", "average"),
    ("min", "min"),
    ("max", "max"),
    ("median", "median"),
];

/// A package-spec metric and what it says of its dbt model.
#[derive(Debug, Clone)]
pub struct PackageMetric {
    pub metric: Metric,
    /// The dbt model whose measure it is (`ref('x')` → `x`); `None` when it adds no measure
    /// (a derived metric, or one skipped), so no model is made for it.
    pub model: Option<String>,
    /// Its `timestamp` column.
    pub timestamp: Option<String>,
    /// Its `dimensions`.
    pub dimensions: Vec<String>,
}

/// Whether a top-level `metrics:` item is written in the package's spec: it says how it is
/// computed (`calculation_method`; 1.0–1.2: `type` with `sql`, or `type: expression`), and
/// has no `type_params` (MetricFlow's) nor `agg` (the latest spec's).
pub fn is_package_metric(v: &Value) -> bool {
    if v.get("type_params").is_some() || v.get("agg").is_some() {
        return false;
    }
    v.get("calculation_method").is_some()
        || (v.get("type").is_some() && (v.get("sql").is_some() || v.get("model").is_some()))
}

/// A package-spec metric, read.
pub fn package_metric(v: &Value, at: At) -> Option<PackageMetric> {
    let name = text(v, "name")?;
    let (label, description) = label_and_description(v);
    let method = text(v, "calculation_method")
        .or_else(|| text(v, "type"))
        .unwrap_or_default()
        .to_ascii_lowercase();
    let expression = text(v, "expression").or_else(|| text(v, "sql"));
    let model = text(v, "model").map(|m| ref_name(&m));
    let mut lossy = Vec::new();
    if let Some(w) = v.get("window").filter(|w| !w.is_null()) {
        let count = w.get("count").map(|c| c.to_string()).unwrap_or_default();
        let period = text(w, "period").unwrap_or_default();
        lossy.push(format!(
            "window '{count} {period}' (a rolling window) is not applied: the measure aggregates every row"
        ));
    }
    let mut inline_measure = None;
    let kind = match (method.as_str(), &expression, &model) {
        ("derived" | "expression", Some(expr), _) => derived(expr),
        ("derived" | "expression", None, _) => {
            MetricKind::Invalid("a derived metric without expression".into())
        }
        (m, Some(expr), Some(model)) => match AGGREGATIONS.iter().find(|(k, _)| *k == m) {
            Some((_, agg)) => {
                inline_measure = Some((
                    model.clone(),
                    DbtMeasure {
                        name: name.clone(),
                        agg: (*agg).to_owned(),
                        expr: expr.clone(),
                        description: description.clone(),
                        label: label.clone(),
                        percentile: None,
                        inexact_percentile: false,
                        non_additive: None,
                        create_metric: false,
                        of_metric: true,
                        at: at.clone(),
                    },
                ));
                MetricKind::Simple {
                    measure: Input {
                        name: name.clone(),
                        ..Input::default()
                    },
                }
            }
            None if m.is_empty() => {
                MetricKind::Invalid("a metric without calculation_method".into())
            }
            None => MetricKind::Invalid(format!("unknown calculation_method '{m}'")),
        },
        (_, None, _) => MetricKind::Invalid(format!(
            "a {method} metric without expression (the column or SQL it aggregates)"
        )),
        (_, Some(_), None) => MetricKind::Invalid(format!(
            "a {method} metric without model (the dbt model it aggregates, model: ref('x'))"
        )),
    };
    let own_measure = inline_measure.is_some();
    let metric = Metric {
        name,
        label,
        description,
        filter: filters(v),
        fill_nulls_with: v
            .get("config")
            .and_then(|c| c.get("treat_null_values_as_zero"))
            .and_then(Value::as_bool)
            .filter(|zero| *zero)
            .map(|_| Value::from(0)),
        join_to_timespine: false,
        hidden: v.get("config").and_then(|c| c.get("enabled")) == Some(&Value::Bool(false)),
        kind,
        declared_on: None,
        created: false,
        inline_measure,
        own_measure,
        lossy,
        at,
    };
    Some(PackageMetric {
        model: metric
            .inline_measure
            .as_ref()
            .map(|(model, _)| model.clone()),
        timestamp: text(v, "timestamp"),
        dimensions: items(v, "dimensions")
            .filter_map(|d| d.as_str().map(str::to_owned))
            .collect(),
        metric,
    })
}

/// `filters: [{field, operator, value}]`, ANDed into one SQL predicate.
fn filters(v: &Value) -> Option<String> {
    let clauses: Vec<String> = items(v, "filters")
        .filter_map(|f| {
            let field = text(f, "field")?;
            let operator = text(f, "operator").unwrap_or_else(|| "=".into());
            let value = text(f, "value").unwrap_or_default();
            Some(format!("{field} {operator} {value}").trim().to_owned())
        })
        .collect();
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

/// A derived metric's expression, each `{{ metric('x') }}` replaced by `x`, and its inputs.
fn derived(expression: &str) -> MetricKind {
    let mut expr = String::new();
    let mut inputs: Vec<Input> = Vec::new();
    let mut rest = expression;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            break;
        };
        let inner = rest[start + 2..start + len].trim();
        let called = inner
            .strip_prefix("metric(")
            .and_then(|r| r.strip_suffix(')'))
            .map(|a| a.trim().trim_matches(|c| c == '\'' || c == '"').to_owned());
        expr.push_str(&rest[..start]);
        match called {
            Some(name) if !name.is_empty() => {
                expr.push_str(&name);
                if !inputs.iter().any(|i| i.name == name) {
                    inputs.push(Input {
                        name,
                        ..Input::default()
                    });
                }
            }
            _ => expr.push_str(&rest[start..start + len + 2]),
        }
        rest = &rest[start + len + 2..];
    }
    expr.push_str(rest);
    if inputs.is_empty() {
        return MetricKind::Invalid(
            "a derived metric whose expression names no {{ metric('…') }}".into(),
        );
    }
    MetricKind::Derived {
        expr: expr.trim().to_owned(),
        inputs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at() -> At {
        At {
            file: "models/metrics.yml".into(),
            line: 3,
        }
    }

    #[test]
    fn an_aggregating_metric_is_a_measure_of_its_dbt_model() {
        let v = json!({
            "name": "google_ads__monthly_clicks", "label": "Monthly Clicks",
            "model": "ref('google_ads_main')", "description": "Total clicks",
            "calculation_method": "sum", "expression": "clicks", "timestamp": "date_day",
            "time_grains": ["month"], "dimensions": ["ad_name"],
            "filters": [{"field": "is_paid", "operator": "=", "value": "true"}]
        });
        assert!(is_package_metric(&v));
        let p = package_metric(&v, at()).unwrap();
        assert_eq!(p.model.as_deref(), Some("google_ads_main"));
        assert_eq!(p.timestamp.as_deref(), Some("date_day"));
        assert_eq!(p.dimensions, ["ad_name"]);
        let (model, x) = p.metric.inline_measure.clone().unwrap();
        assert_eq!(model, "google_ads_main");
        assert_eq!((x.agg.as_str(), x.expr.as_str()), ("sum", "clicks"));
        assert!(p.metric.own_measure);
        assert_eq!(p.metric.filter.as_deref(), Some("is_paid = true"));
        assert!(matches!(p.metric.kind, MetricKind::Simple { .. }));
    }

    #[test]
    fn the_older_type_and_sql_and_a_window_read_too() {
        let v = json!({"name": "n_users", "model": "ref('users')", "type": "count_distinct",
                       "sql": "user_id", "window": {"count": 14, "period": "day"}});
        assert!(is_package_metric(&v));
        let p = package_metric(&v, at()).unwrap();
        let (_, x) = p.metric.inline_measure.clone().unwrap();
        assert_eq!(
            (x.agg.as_str(), x.expr.as_str()),
            ("count_distinct", "user_id")
        );
        assert_eq!(p.metric.lossy.len(), 1, "{:?}", p.metric.lossy);
        assert!(p.metric.lossy[0].contains("14 day"));
    }

    #[test]
    fn a_derived_metric_names_its_inputs() {
        let v = json!({"name": "ctr", "calculation_method": "derived",
                       "expression": "{{ metric('clicks') }} / nullif({{metric(\"impressions\")}}, 0)"});
        let p = package_metric(&v, at()).unwrap();
        assert_eq!(p.model, None);
        let MetricKind::Derived { expr, inputs } = &p.metric.kind else {
            panic!("{:?}", p.metric.kind)
        };
        assert_eq!(expr, "clicks / nullif(impressions, 0)");
        let names: Vec<&str> = inputs.iter().map(|i| i.name.as_str()).collect();
        assert_eq!(names, ["clicks", "impressions"]);
    }

    #[test]
    fn what_cannot_be_computed_says_why() {
        let no_expr = json!({"name": "a", "model": "ref('m')", "calculation_method": "sum"});
        let unknown = json!({"name": "b", "model": "ref('m')", "calculation_method": "p99",
                             "expression": "x"});
        let no_model = json!({"name": "c", "calculation_method": "sum", "expression": "x"});
        for (v, says) in [
            (no_expr, "without expression"),
            (unknown, "unknown calculation_method 'p99'"),
            (no_model, "without model"),
        ] {
            let p = package_metric(&v, at()).unwrap();
            let MetricKind::Invalid(why) = &p.metric.kind else {
                panic!("{:?}", p.metric.kind)
            };
            assert!(why.contains(says), "{why}");
        }
    }

    #[test]
    fn metricflow_and_latest_metrics_are_not_the_packages() {
        assert!(!is_package_metric(
            &json!({"name": "a", "type": "simple", "type_params": {"measure": "x"}})
        ));
        assert!(!is_package_metric(
            &json!({"name": "a", "type": "simple", "agg": "sum"})
        ));
        assert!(!is_package_metric(
            &json!({"name": "a", "type": "ratio", "numerator": "x", "denominator": "y"})
        ));
    }
}
