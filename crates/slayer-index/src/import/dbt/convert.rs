//! dbt semantic models as SLayer models: dimensions become columns, primary, unique and
//! natural entities key columns, foreign entities joins to the model that owns the entity, and
//! measures named measures over one column per distinct expression (docs/spec.md §17.2).

use std::collections::{BTreeMap, HashMap};

use serde_json::{json, Map, Value};
use slayer_common::records::{DataType, Join, Model};

use super::spec::{EntityKind, SemanticModel};
use crate::import::{column, is_identifier, measure, model, Fate, Tally};

/// What the metrics need to know about a measure: where it lives and how it aggregates.
#[derive(Debug, Clone)]
pub struct MeasureHome {
    /// Index into the models.
    pub model: usize,
    /// The column it aggregates.
    pub column: String,
    /// That column's SQL (its name when plain).
    pub sql: String,
    /// `sum(`…`)` around a column: the function and any extra arguments (`, p=0.5`).
    pub function: String,
    pub extra_args: String,
}

impl MeasureHome {
    /// The aggregation over `column` (a leaf, or a dotted path from another model).
    pub fn over(&self, column: &str) -> String {
        format!("{}({column}{})", self.function, self.extra_args)
    }
}

/// The models, with what the metrics and filters resolve against.
#[derive(Debug, Default)]
pub struct Built {
    pub models: Vec<Model>,
    pub by_name: HashMap<String, usize>,
    pub measures: HashMap<String, MeasureHome>,
    /// Entity → (owning model, its key column).
    pub owners: HashMap<String, (String, String)>,
    /// Per model: entity → whether it owns it.
    pub entities: Vec<HashMap<String, bool>>,
    /// Per model: the models it joins.
    pub joined: Vec<Vec<String>>,
}

/// Column descriptions from the dbt models' `columns:` (model → column → description), and
/// the columns whose tests make them a key (`unique` and `not_null`).
#[derive(Debug, Default)]
pub struct ColumnDocs {
    pub descriptions: HashMap<(String, String), String>,
    pub keys: HashMap<String, Vec<String>>,
    pub relations: HashMap<String, String>,
    /// Semantic model → the relation `target/semantic_manifest.json` compiled it to.
    pub semantic_relations: HashMap<String, String>,
    /// dbt model → `(column, other dbt model, its column)` from `relationships` tests.
    pub references: HashMap<String, Vec<(String, String, String)>>,
    pub types: HashMap<(String, String), DataType>,
}

fn agg_function(agg: &str) -> Option<&'static str> {
    Some(match agg {
        "sum" | "sum_boolean" => "sum",
        "average" | "avg" => "avg",
        "count" => "count",
        "count_distinct" => "count_distinct",
        "min" => "min",
        "max" => "max",
        "median" => "median",
        "percentile" => "percentile",
        _ => return None,
    })
}

/// A name not yet taken: `base`, else `base` with `_col` added until free.
fn free_name(base: &str, taken: &mut Vec<String>) -> String {
    let mut name = base.to_owned();
    while taken.contains(&name) {
        name.push_str("_col");
    }
    taken.push(name.clone());
    name
}

/// Builds one model per semantic model, in order, and records every object in `tally`.
pub fn build(
    semantic_models: &[SemanticModel],
    datasource: &str,
    docs: &ColumnDocs,
    tally: &mut Tally,
) -> Built {
    let mut built = Built::default();
    for (i, sm) in semantic_models.iter().enumerate() {
        built.by_name.insert(sm.name.clone(), i);
        let mut m = model(&sm.name, datasource);
        m.sql_table = Some(
            docs.semantic_relations
                .get(&sm.name)
                .or(docs.relations.get(&sm.dbt_model))
                .cloned()
                .unwrap_or(sm.dbt_model.clone()),
        );
        m.description = sm.description.clone();
        m.default_time_dimension = sm.agg_time_dimension.clone();
        let mut meta = Map::new();
        if let Some(label) = &sm.label {
            meta.insert("label".into(), json!(label));
        }
        if let Some(Value::Object(given)) = &sm.meta {
            meta.extend(given.clone());
        }
        if !meta.is_empty() {
            m.extra.insert("meta".into(), Value::Object(meta));
        }
        let doc_of = |col: &str| {
            docs.descriptions
                .get(&(sm.dbt_model.clone(), col.to_owned()))
                .cloned()
        };
        let type_of = |col: &str| {
            docs.types
                .get(&(sm.dbt_model.clone(), col.to_owned()))
                .copied()
        };
        let mut taken: Vec<String> = Vec::new();
        for d in &sm.dimensions {
            let mut problems = Vec::new();
            let mut c = column(&d.name);
            if d.expr != d.name {
                c.sql = Some(d.expr.clone());
            }
            c.data_type = type_of(&d.expr).unwrap_or(if d.is_time {
                DataType::Timestamp
            } else {
                DataType::Unknown
            });
            c.description = d.description.clone().or_else(|| doc_of(&d.expr));
            c.label = d.label.clone();
            if let Some(g) = &d.granularity {
                c.extra.insert("granularity".into(), json!(g));
            }
            if !d.is_time && !d.kind_text.eq_ignore_ascii_case("categorical") {
                problems.push((
                    Fate::Lossy,
                    format!(
                        "unknown dimension type '{}'; imported as categorical",
                        d.kind_text
                    ),
                ));
            }
            if taken.contains(&d.name) {
                tally.object(
                    "dimension",
                    &format!("dimension '{}.{}'", sm.name, d.name),
                    &d.at,
                    vec![(
                        Fate::Skipped,
                        "a second dimension of that name in the same semantic model".into(),
                    )],
                );
                continue;
            }
            taken.push(d.name.clone());
            m.columns.push(c);
            tally.object(
                "dimension",
                &format!("dimension '{}.{}'", sm.name, d.name),
                &d.at,
                problems,
            );
        }
        // Keys first, so measures never take a key column's name.
        let mut own = HashMap::new();
        for e in &sm.entities {
            let kind = match &e.kind {
                Ok(kind) => *kind,
                Err(other) => {
                    tally.object(
                        "entity",
                        &format!("entity '{}.{}'", sm.name, e.name),
                        &e.at,
                        vec![(Fate::Skipped, format!("unknown entity type '{other}'; expected primary, unique, natural or foreign"))],
                    );
                    continue;
                }
            };
            own.insert(e.name.clone(), kind != EntityKind::Foreign);
            if kind == EntityKind::Foreign {
                continue; // joined below, once every model is built
            }
            let problems = match key_column(&mut m, &e.expr, &mut taken) {
                Some(col) => {
                    let c = m.columns.iter_mut().find(|c| c.name == col).expect("key column");
                    c.primary_key |= kind != EntityKind::Natural;
                    if c.description.is_none() {
                        c.description = e.description.clone().or_else(|| doc_of(&e.expr));
                    }
                    if c.label.is_none() {
                        c.label = e.label.clone();
                    }
                    if let Some(t) = type_of(&e.expr) {
                        c.data_type = t;
                    }
                    built.owners.entry(e.name.clone()).or_insert((sm.name.clone(), col));
                    vec![]
                }
                None => vec![(
                    Fate::Lossy,
                    format!("its expression '{}' is not a column, so no key is declared and no model joins on it", e.expr),
                )],
            };
            tally.object(
                "entity",
                &format!("entity '{}.{}'", sm.name, e.name),
                &e.at,
                problems,
            );
        }
        // Columns whose dbt tests make them a key.
        for key in docs.keys.get(&sm.dbt_model).into_iter().flatten() {
            if let Some(c) = m
                .columns
                .iter_mut()
                .find(|c| c.sql.as_deref().unwrap_or(&c.name) == key)
            {
                c.primary_key = true;
            }
        }
        taken.extend(sm.measures.iter().map(|x| x.name.clone()));
        let mut column_of_expr: BTreeMap<String, String> = BTreeMap::new();
        for x in &sm.measures {
            let object = format!("measure '{}.{}'", sm.name, x.name);
            let mut problems = Vec::new();
            let Some(function) = agg_function(&x.agg) else {
                tally.object(
                    "measure",
                    &object,
                    &x.at,
                    vec![(Fate::Skipped, format!("unknown agg '{}'", x.agg))],
                );
                continue;
            };
            let mut extra_args = String::new();
            if x.agg == "percentile" {
                match x.percentile {
                    Some(p) => extra_args = format!(", p={p}"),
                    None => {
                        tally.object(
                            "measure",
                            &object,
                            &x.at,
                            vec![(
                                Fate::Skipped,
                                "a percentile without agg_params.percentile".into(),
                            )],
                        );
                        continue;
                    }
                }
                if x.inexact_percentile {
                    problems.push((Fate::Lossy, "a discrete or approximate percentile, imported as the exact continuous one".into()));
                }
            }
            if x.non_additive.is_some() {
                problems.push((Fate::Lossy, "non_additive_dimension (a semi-additive measure) has no SLayer form; imported as a plain aggregation, the dimension kept in its meta".into()));
            }
            let (sql, data_type) = if x.agg == "sum_boolean" {
                (
                    format!("CASE WHEN ({}) THEN 1 ELSE 0 END", x.expr),
                    DataType::Int,
                )
            } else {
                let numeric = matches!(function, "sum" | "avg" | "median" | "percentile");
                (
                    x.expr.clone(),
                    if numeric {
                        DataType::Double
                    } else {
                        DataType::Unknown
                    },
                )
            };
            // A plain column of that name (a key, a dimension read as is) is aggregated as is.
            let plain = m
                .columns
                .iter()
                .find(|c| c.name == sql && c.sql.is_none())
                .map(|c| c.name.clone());
            let col = match column_of_expr.get(&sql).cloned().or(plain) {
                Some(col) => col,
                None => {
                    let base = if is_identifier(&sql) && !taken.contains(&sql) {
                        sql.clone()
                    } else {
                        format!("{}_col", x.name)
                    };
                    let name = free_name(&base, &mut taken);
                    let mut c = column(&name);
                    if sql != name {
                        c.sql = Some(sql.clone());
                    }
                    c.data_type = type_of(&sql).unwrap_or(data_type);
                    c.description = doc_of(&sql);
                    m.columns.push(c);
                    column_of_expr.insert(sql.clone(), name.clone());
                    name
                }
            };
            let home = MeasureHome {
                model: i,
                column: col.clone(),
                sql: sql.clone(),
                function: function.to_owned(),
                extra_args,
            };
            let mut me = measure(&x.name, home.over(&col));
            me.label = x.label.clone();
            me.description = x.description.clone();
            if let Some(nad) = &x.non_additive {
                me.extra
                    .insert("meta".into(), json!({"non_additive_dimension": nad}));
            }
            m.measures.push(me);
            built.measures.insert(x.name.clone(), home);
            tally.object("measure", &object, &x.at, problems);
        }
        built.entities.push(own);
        built.models.push(m);
    }
    join(semantic_models, &mut built, tally);
    join_tested(semantic_models, docs, &mut built);
    built
}

/// `relationships` tests (`to: ref('customers')`, `field: id`) join the semantic models of the
/// two dbt models, where no entity already does.
fn join_tested(semantic_models: &[SemanticModel], docs: &ColumnDocs, built: &mut Built) {
    for (i, sm) in semantic_models.iter().enumerate() {
        for (key, other, field) in docs.references.get(&sm.dbt_model).into_iter().flatten() {
            let Some(target) = semantic_models
                .iter()
                .find(|t| &t.dbt_model == other && t.name != sm.name)
            else {
                continue;
            };
            if built.models[i]
                .joins
                .iter()
                .any(|j| j.target_model == target.name)
            {
                continue;
            }
            let Some(t) = built.by_name.get(&target.name).copied() else {
                continue;
            };
            let has = |m: &Model, c: &str| m.columns.iter().any(|x| x.name == c && x.sql.is_none());
            if !has(&built.models[t], field) {
                continue;
            }
            if !has(&built.models[i], key) {
                let mut c = column(key);
                c.hidden = true;
                built.models[i].columns.push(c);
            }
            push_join(
                &mut built.models[i],
                &target.name,
                key,
                field,
                "many_to_one",
            );
            built.joined[i].push(target.name.clone());
        }
    }
}

/// The column reading `expr` (by name, else by SQL), or a new one named `expr` when it is a
/// free identifier.
fn key_column(m: &mut Model, expr: &str, taken: &mut Vec<String>) -> Option<String> {
    if let Some(c) = m.columns.iter().find(|c| c.name == expr && c.sql.is_none()) {
        return Some(c.name.clone());
    }
    if let Some(c) = m.columns.iter().find(|c| c.sql.as_deref() == Some(expr)) {
        return Some(c.name.clone());
    }
    if is_identifier(expr) && !taken.iter().any(|t| t == expr) {
        taken.push(expr.to_owned());
        m.columns.push(column(expr));
        return Some(expr.to_owned());
    }
    None
}

/// Foreign entities become joins to the model owning the entity; models sharing a primary
/// entity join one to one, from the one whose name sorts first.
fn join(semantic_models: &[SemanticModel], built: &mut Built, tally: &mut Tally) {
    built.joined = vec![Vec::new(); semantic_models.len()];
    for (i, sm) in semantic_models.iter().enumerate() {
        let mut taken: Vec<String> = built.models[i]
            .columns
            .iter()
            .map(|c| c.name.clone())
            .chain(
                built.models[i]
                    .measures
                    .iter()
                    .filter_map(|m| m.name.clone()),
            )
            .collect();
        for e in sm
            .entities
            .iter()
            .filter(|e| e.kind == Ok(EntityKind::Foreign))
        {
            let object = format!("entity '{}.{}'", sm.name, e.name);
            let Some((owner, key)) = built.owners.get(&e.name).cloned() else {
                tally.object("entity", &object, &e.at, vec![(Fate::Lossy, format!("no semantic model has '{}' as its primary, unique or natural entity, so no join is made", e.name))]);
                continue;
            };
            if owner == sm.name {
                tally.object("entity", &object, &e.at, vec![]);
                continue;
            }
            let m = &mut built.models[i];
            let Some(fk) = key_column(m, &e.expr, &mut taken) else {
                tally.object(
                    "entity",
                    &object,
                    &e.at,
                    vec![(
                        Fate::Lossy,
                        format!(
                            "its expression '{}' is not a column, so no join to '{owner}' is made",
                            e.expr
                        ),
                    )],
                );
                continue;
            };
            if let Some(c) = m.columns.iter_mut().find(|c| c.name == fk) {
                if c.description.is_none() {
                    c.description = e.description.clone();
                }
            }
            push_join(m, &owner, &fk, &key, "many_to_one");
            built.joined[i].push(owner);
            tally.object("entity", &object, &e.at, vec![]);
        }
    }
    // Peers: the same primary entity on two models.
    let mut by_entity: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, sm) in semantic_models.iter().enumerate() {
        for e in &sm.entities {
            if matches!(e.kind, Ok(EntityKind::Primary | EntityKind::Unique)) {
                by_entity.entry(e.name.as_str()).or_default().push(i);
            }
        }
    }
    for (entity, mut models) in by_entity {
        models.sort_by(|a, b| semantic_models[*a].name.cmp(&semantic_models[*b].name));
        let Some((&first, rest)) = models.split_first() else {
            continue;
        };
        for &other in rest {
            let key_of = |i: usize| {
                semantic_models[i]
                    .entities
                    .iter()
                    .find(|e| e.name == entity)
                    .map(|e| e.expr.clone())
                    .and_then(|expr| {
                        built.models[i]
                            .columns
                            .iter()
                            .find(|c| c.name == expr || c.sql.as_deref() == Some(expr.as_str()))
                            .map(|c| c.name.clone())
                    })
            };
            if let (Some(a), Some(b)) = (key_of(first), key_of(other)) {
                let target = semantic_models[other].name.clone();
                push_join(&mut built.models[first], &target, &a, &b, "one_to_one");
                built.joined[first].push(target);
            }
        }
    }
}

fn push_join(m: &mut Model, target: &str, from: &str, to: &str, cardinality: &str) {
    let pair = (from.to_owned(), to.to_owned());
    if m.joins
        .iter()
        .any(|j| j.target_model == target && j.join_pairs == [pair.clone()])
    {
        return;
    }
    let mut extra = Map::new();
    extra.insert("join_type".into(), json!("left"));
    extra.insert("cardinality".into(), json!(cardinality));
    m.joins.push(Join {
        target_model: target.to_owned(),
        join_pairs: vec![pair],
        extra,
    });
}
