//! One cube as a model: dimensions become columns, segments boolean columns, measures named
//! measures over one column per distinct SQL (a `filters:` measure over a hidden filtered
//! column), joins with an equality condition joins (docs/spec/importers.md §17.6).

use serde_json::{json, Map, Value};
use slayer_common::records::{DataType, Join, Model, NumberFormat, NumberFormatType};

use super::refs::{join_pairs, translate};
use super::{access, members, notes, Definition};
use crate::import::{
    column, is_identifier, measure, model as new_model, window_arg, At, Fate, Tally,
};

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(|s| s.trim().to_owned())
}

/// Whether `v` is hidden, with the loss when only Cube could decide it.
fn hidden(v: &Value, problems: &mut Vec<(Fate, String)>) -> bool {
    let (hidden, undecided) = access::hides(v);
    problems.extend(undecided.map(|why| (Fate::Lossy, why)));
    hidden
}

/// Keys with no SLayer counterpart, kept in `meta.cube_unmapped` and named once per cube.
const UNMAPPED: [&str; 7] = [
    "pre_aggregations",
    "refresh_key",
    "hierarchies",
    "data_source",
    "calendar",
    "sql_alias",
    "folders",
];

fn at(d: &Definition, name: &str) -> At {
    At {
        file: d.at.file.clone(),
        line: d.names.line_of(name, d.at.line),
    }
}

pub fn model(d: &Definition, datasource: &str, tally: &mut Tally) -> Option<Model> {
    let body = &d.body;
    let object = format!("cube '{}'", d.name);
    let mut m = new_model(&d.name, datasource);
    let mut problems = notes(body);
    match (text(body, "sql_table"), text(body, "sql")) {
        (Some(t), _) => m.sql_table = Some(translate(&t, &d.name)),
        (None, Some(sql)) => m.sql = Some(translate(&sql, &d.name)),
        (None, None) => {
            tally.object(
                "cube",
                &object,
                &d.at,
                vec![(
                    Fate::Skipped,
                    "neither sql_table nor sql: no source to read".into(),
                )],
            );
            super::skip_members(d, tally);
            return None;
        }
    }
    m.description = text(body, "description");
    m.hidden = hidden(body, &mut problems);
    let mut meta = Map::new();
    if let Some(t) = text(body, "title") {
        meta.insert("title".into(), json!(t));
    }
    if let Some(Value::Object(given)) = body.get("meta") {
        meta.extend(given.clone());
    }
    let unmapped: Vec<&str> = UNMAPPED
        .iter()
        .copied()
        .filter(|k| body.get(*k).is_some())
        .collect();
    if !unmapped.is_empty() {
        let kept: Map<String, Value> = unmapped
            .iter()
            .map(|k| ((*k).to_owned(), body[*k].clone()))
            .collect();
        meta.insert("cube_unmapped".into(), Value::Object(kept));
    }
    if !meta.is_empty() {
        m.extra.insert("meta".into(), Value::Object(meta));
    }
    for dim in members(body, "dimensions") {
        dimension(d, &dim, &mut m, tally);
    }
    for seg in members(body, "segments") {
        let Some(name) = text(&seg, "name") else {
            continue;
        };
        let mut c = column(&name);
        c.sql = text(&seg, "sql").map(|s| translate(&s, &d.name));
        c.data_type = DataType::Boolean;
        c.description =
            text(&seg, "description").or(Some("A segment: rows where this is true.".into()));
        let mut seg_problems = notes(&seg);
        c.hidden = hidden(&seg, &mut seg_problems);
        m.columns.push(c);
        tally.object(
            "segment",
            &format!("segment '{}.{name}'", d.name),
            &at(d, &name),
            seg_problems,
        );
    }
    for x in members(body, "measures") {
        cube_measure(d, &x, &mut m, tally);
    }
    access::apply(d, &mut m, tally);
    if !unmapped.is_empty() {
        problems.push((
            Fate::Lossy,
            format!(
                "no SLayer form for {}; kept in meta.cube_unmapped",
                unmapped.join(", ")
            ),
        ));
    }
    tally.object("cube", &object, &d.at, problems);
    Some(m)
}

fn data_type(t: &str) -> DataType {
    match t {
        "string" => DataType::Text,
        "number" => DataType::Double,
        "boolean" => DataType::Boolean,
        "time" => DataType::Timestamp,
        _ => DataType::Unknown,
    }
}

fn format_of(v: &Value) -> Option<NumberFormat> {
    let f = v.get("format")?.as_str()?;
    let format_type = match f {
        "percent" => NumberFormatType::Percent,
        "currency" => NumberFormatType::Currency,
        "number" => NumberFormatType::Float,
        _ => return None,
    };
    Some(NumberFormat {
        format_type,
        precision: None,
        symbol: None,
    })
}

pub(super) fn dimension(d: &Definition, dim: &Value, m: &mut Model, tally: &mut Tally) {
    let Some(name) = text(dim, "name") else {
        return;
    };
    let object = format!("dimension '{}.{name}'", d.name);
    let mut problems = notes(dim);
    let kind = text(dim, "type").unwrap_or_else(|| "string".into());
    let mut c = column(&name);
    let sql = if let Some(case) = dim.get("case") {
        case_sql(case, &d.name)
    } else {
        text(dim, "sql").map(|s| translate(&s, &d.name))
    };
    c.sql = sql.filter(|s| s != &name);
    c.data_type = data_type(&kind);
    match kind.as_str() {
        "string" | "number" | "boolean" | "time" => {}
        "geo" => problems.push((Fate::Lossy, "a geo dimension (latitude and longitude) has no SLayer type; kept as UNKNOWN".into())),
        "switch" => problems.push((Fate::Lossy, "a switch dimension (its values listed, no SQL) has no SLayer form; the column reads its name".into())),
        other => problems.push((Fate::Lossy, format!("unknown dimension type '{other}'; imported as UNKNOWN"))),
    }
    if dim.get("sub_query").and_then(Value::as_bool) == Some(true) {
        problems.push((Fate::Lossy, "a sub_query dimension (another cube's measure per row) is kept as its SQL, which SLayer reads as a plain expression".into()));
    }
    c.primary_key = dim
        .get("primary_key")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    c.hidden = hidden(dim, &mut problems);
    c.label = text(dim, "title");
    c.description = text(dim, "description");
    c.format = format_of(dim);
    if let Some(meta) = dim.get("meta") {
        c.extra.insert("meta".into(), meta.clone());
    }
    if m.columns.iter().any(|x| x.name == name) {
        tally.object(
            "dimension",
            &object,
            &at(d, &name),
            vec![(
                Fate::Skipped,
                "a second member of that name in the cube".into(),
            )],
        );
        return;
    }
    m.columns.push(c);
    tally.object("dimension", &object, &at(d, &name), problems);
}

/// `case: {when: [{sql, label}], else: {label}}` as SQL.
fn case_sql(case: &Value, this: &str) -> Option<String> {
    let mut out = String::from("CASE");
    for w in case.get("when")?.as_array()? {
        let cond = translate(w.get("sql")?.as_str()?, this);
        let label = match w.get("label")? {
            Value::String(s) => format!("'{}'", s.replace('\'', "''")),
            other => other
                .get("sql")
                .and_then(Value::as_str)
                .map(|s| translate(s, this))?,
        };
        out.push_str(&format!(" WHEN {cond} THEN {label}"));
    }
    if let Some(e) = case
        .get("else")
        .and_then(|e| e.get("label"))
        .and_then(Value::as_str)
    {
        out.push_str(&format!(" ELSE '{}'", e.replace('\'', "''")));
    }
    out.push_str(" END");
    Some(out)
}

fn aggregation(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "count" => "count",
        "count_distinct" | "countDistinct" => "count_distinct",
        "count_distinct_approx" | "countDistinctApprox" => "count_distinct_approx",
        "sum" => "sum",
        "avg" => "avg",
        "min" => "min",
        "max" => "max",
        "running_total" | "runningTotal" => "sum",
        _ => return None,
    })
}

/// Why a cube's measure is not imported.
#[derive(Debug, thiserror::Error)]
enum MeasureSkip {
    #[error("a {0} measure without sql")]
    NoSql(String),
    #[error("unknown measure type '{0}'")]
    UnknownType(String),
    #[error("a dimension or measure of that name is already in the cube")]
    Duplicate,
}

/// Adds the measure `x` of `d` to `m` as a named measure and records it.
pub(super) fn cube_measure(d: &Definition, x: &Value, m: &mut Model, tally: &mut Tally) {
    let Some(name) = text(x, "name") else { return };
    let object = format!("measure '{}.{name}'", d.name);
    let here = at(d, &name);
    let mut problems = notes(x);
    if let Err(skip) = add_measure(d, x, &name, m, &mut problems) {
        problems = vec![(Fate::Skipped, skip.to_string())];
    }
    tally.object("measure", &object, &here, problems);
}

fn add_measure(
    d: &Definition,
    x: &Value,
    name: &str,
    m: &mut Model,
    problems: &mut Vec<(Fate, String)>,
) -> Result<(), MeasureSkip> {
    let kind = text(x, "type").unwrap_or_default();
    let sql = text(x, "sql").map(|s| translate(&s, &d.name));
    let formula = if let Some(agg) = aggregation(&kind) {
        let operand = Operand {
            measure: name,
            agg,
            kind: &kind,
            sql,
        };
        aggregated(d, x, &operand, m, problems)?
    } else if matches!(kind.as_str(), "number" | "string" | "time" | "boolean") {
        let s = sql.ok_or_else(|| MeasureSkip::NoSql(kind.clone()))?;
        if raw_aggregate(&s) {
            problems.push((Fate::Lossy, "its SQL aggregates columns itself (SUM(…), COUNT(…)); kept as the formula's text, which SLayer cannot run as is".into()));
        }
        s
    } else {
        return Err(MeasureSkip::UnknownType(kind));
    };
    for key in [
        "multi_stage",
        "time_shift",
        "reduce_by",
        "group_by",
        "add_group_by",
    ] {
        if x.get(key).is_some() {
            problems.push((Fate::Lossy, format!("{key} (a multi-stage measure) has no SLayer form; imported as its plain formula")));
        }
    }
    let mut me = measure(name, formula);
    me.label = text(x, "title");
    me.description = text(x, "description");
    if hidden(x, problems) {
        me.extra.insert("meta".into(), json!({"hidden": true}));
    }
    if m.columns.iter().any(|c| c.name == name)
        || m.measures.iter().any(|y| y.name.as_deref() == Some(name))
    {
        return Err(MeasureSkip::Duplicate);
    }
    m.measures.push(me);
    Ok(())
}

/// What an aggregating measure aggregates.
struct Operand<'a> {
    /// The measure's name.
    measure: &'a str,
    /// The SLayer aggregation.
    agg: &'static str,
    /// The measure's `type`.
    kind: &'a str,
    /// Its `sql`, translated.
    sql: Option<String>,
}

/// The formula of an aggregating measure: over `*`, a column of its SQL, or a hidden filtered
/// column when it has `filters:`; a trailing `rolling_window` as a window, a running total
/// as `cumsum`.
fn aggregated(
    d: &Definition,
    x: &Value,
    o: &Operand,
    m: &mut Model,
    problems: &mut Vec<(Fate, String)>,
) -> Result<String, MeasureSkip> {
    let (name, agg) = (o.measure, o.agg);
    let filters: Vec<String> = x
        .get("filters")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| f.get("sql").and_then(Value::as_str))
        .map(|s| translate(s, &d.name))
        .collect();
    let operand = match (&o.sql, agg) {
        (None, "count") if filters.is_empty() => "*".to_owned(),
        (None, "count") => leaf(m, name, "1", &filters),
        (None, _) => return Err(MeasureSkip::NoSql(o.kind.to_owned())),
        (Some(s), _) if filters.is_empty() => column_for(m, name, s, agg),
        (Some(s), _) => leaf(m, name, s, &filters),
    };
    let mut formula = format!("{agg}({operand})");
    if let Some(w) = x.get("rolling_window") {
        match w.get("trailing").and_then(Value::as_str).and_then(window_arg) {
            Some(arg) if w.get("leading").is_none() && w.get("offset").is_none() => formula = format!("{agg}({operand}, window='{arg}')"),
            _ => problems.push((Fate::Lossy, format!("rolling_window {w} is not a plain trailing window; imported as the whole aggregation"))),
        }
    }
    if o.kind == "running_total" || o.kind == "runningTotal" {
        formula = format!("cumsum({formula})");
    }
    Ok(formula)
}

fn raw_aggregate(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    ["sum(", "count(", "avg(", "min(", "max(", "sum (", "count ("]
        .iter()
        .any(|a| lower.contains(a))
}

/// The column a measure aggregates: a column of that SQL, or a new one.
fn column_for(m: &mut Model, measure_name: &str, sql: &str, agg: &str) -> String {
    if let Some(c) = m
        .columns
        .iter()
        .find(|c| c.sql.as_deref().unwrap_or(&c.name) == sql && c.filter.is_none())
    {
        return c.name.clone();
    }
    let taken = |m: &Model, n: &str| {
        m.columns.iter().any(|c| c.name == n)
            || m.measures.iter().any(|x| x.name.as_deref() == Some(n))
            || n == measure_name
    };
    let mut name = if is_identifier(sql) && !taken(m, sql) {
        sql.to_owned()
    } else {
        format!("{measure_name}_col")
    };
    while taken(m, &name) {
        name.push_str("_col");
    }
    let mut c = column(&name);
    if sql != name {
        c.sql = Some(sql.to_owned());
    }
    c.data_type = if matches!(agg, "sum" | "avg") {
        DataType::Double
    } else {
        DataType::Unknown
    };
    m.columns.push(c);
    name
}

/// A hidden column reading `sql` where `filters` hold.
fn leaf(m: &mut Model, measure_name: &str, sql: &str, filters: &[String]) -> String {
    let predicate = if filters.len() == 1 {
        filters[0].clone()
    } else {
        filters
            .iter()
            .map(|f| format!("({f})"))
            .collect::<Vec<_>>()
            .join(" AND ")
    };
    let mut name = format!("{measure_name}_filtered");
    while m.columns.iter().any(|c| c.name == name) {
        name.push_str("_col");
    }
    let mut c = column(&name);
    c.sql = Some(sql.to_owned());
    c.filter = Some(predicate);
    c.hidden = true;
    m.columns.push(c);
    name
}

/// Joins: an ANDed equality of this cube's columns with another's becomes a join.
pub fn join(cubes: &[Definition], models: &mut [Model], tally: &mut Tally) {
    for d in cubes {
        let Some(i) = models.iter().position(|m| m.name == d.name) else {
            continue;
        };
        for j in members(&d.body, "joins") {
            let Some(target) = text(&j, "name") else {
                continue;
            };
            let object = format!("join '{}.{target}'", d.name);
            let here = at(d, &target);
            let skip = |tally: &mut Tally, why: String| {
                tally.object("join", &object, &here, vec![(Fate::Skipped, why)])
            };
            if !models.iter().any(|m| m.name == target) {
                skip(tally, format!("'{target}' is not a cube of the project"));
                continue;
            }
            let Some(sql) = text(&j, "sql") else {
                skip(tally, "it has no sql condition that could be read".into());
                continue;
            };
            let Some((other, pairs)) = join_pairs(&sql, &d.name) else {
                skip(
                    tally,
                    format!("its condition '{sql}' is not an equality of columns of the two cubes"),
                );
                continue;
            };
            let mut problems = Vec::new();
            if other != target {
                problems.push((Fate::Lossy, format!("it is named '{target}' but its condition reads '{other}'; joined to '{other}'")));
                if !models.iter().any(|m| m.name == other) {
                    skip(
                        tally,
                        format!(
                            "its condition reads '{other}', which is not a cube of the project"
                        ),
                    );
                    continue;
                }
            }
            let relationship = text(&j, "relationship").unwrap_or_default();
            let cardinality = match relationship.as_str() {
                "many_to_one" | "belongs_to" | "belongsTo" | "manyToOne" => Some("many_to_one"),
                "one_to_many" | "has_many" | "hasMany" | "oneToMany" => Some("one_to_many"),
                "one_to_one" | "has_one" | "hasOne" | "oneToOne" => Some("one_to_one"),
                _ => None,
            };
            let mut extra = Map::new();
            extra.insert("join_type".into(), json!("left"));
            if let Some(c) = cardinality {
                extra.insert("cardinality".into(), json!(c));
            } else {
                problems.push((
                    Fate::Lossy,
                    format!("unknown relationship '{relationship}'; the cardinality is left out"),
                ));
            }
            // Each key is the column reading it (a dimension `customer_key` with `sql:
            // c_custkey`), or a hidden column added for it, so the pairs name columns.
            let mut pairs = pairs;
            for (mine, theirs) in &mut pairs {
                for (model_name, key) in [(d.name.as_str(), mine), (other.as_str(), theirs)] {
                    if let Some(m) = models.iter_mut().find(|m| m.name == model_name) {
                        let reading = m.columns.iter().find(|c| c.name == *key).or_else(|| {
                            m.columns.iter().find(|c| {
                                c.sql.as_deref().map(|s| s.trim_matches(['"', '`']))
                                    == Some(key.as_str())
                            })
                        });
                        match reading {
                            Some(c) => *key = c.name.clone(),
                            None => {
                                let mut c = column(key);
                                c.hidden = true;
                                m.columns.push(c);
                            }
                        }
                    }
                }
            }
            models[i].joins.push(Join {
                target_model: other,
                join_pairs: pairs,
                extra,
            });
            tally.object("join", &object, &here, problems);
        }
    }
}
