//! dbt semantic models as SLayer models: dimensions become columns, primary, unique and
//! natural entities key columns, foreign entities joins to the model that owns the entity, and
//! measures named measures over one column per distinct expression (docs/spec/importers.md §17.2).

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{json, Map, Value};
use slayer_common::records::{DataType, Model};

use super::spec::{DbtMeasure, Entity, EntityKind, SemanticModel};
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

/// A name not yet taken nor a metric's: `base`, else `base` with `_col` added until free.
fn free_name(base: &str, taken: &mut Vec<String>, metric_names: &HashSet<&str>) -> String {
    let mut name = base.to_owned();
    while taken.contains(&name) || metric_names.contains(name.as_str()) {
        name.push_str("_col");
    }
    taken.push(name.clone());
    name
}

/// Builds one model per semantic model, in order, and records every object in `tally`; the
/// joins between them are `joins.rs`'s.
pub fn build(
    semantic_models: &[SemanticModel],
    datasource: &str,
    docs: &ColumnDocs,
    metric_names: &[String],
    tally: &mut Tally,
) -> Built {
    let mut built = Built::default();
    let metric_names: HashSet<&str> = metric_names.iter().map(String::as_str).collect();
    for (i, sm) in semantic_models.iter().enumerate() {
        built.by_name.insert(sm.name.clone(), i);
        let mut b = Building::new(sm, i, datasource, docs, &metric_names);
        b.dimensions(tally);
        // Keys first, so measures never take a key column's name.
        let own = b.entities(&mut built.owners, tally);
        b.tested_keys();
        b.measures(&mut built.measures, tally);
        built.entities.push(own);
        built.models.push(b.model);
    }
    built
}

/// Why a measure is not imported.
#[derive(Debug, thiserror::Error)]
enum MeasureSkip {
    #[error("unknown agg '{0}'")]
    UnknownAgg(String),
    #[error("a percentile without agg_params.percentile")]
    NoPercentile,
}

/// The SLayer aggregation of a dbt measure: the function, any extra arguments, and what is
/// lost on the way.
struct Aggregation {
    function: &'static str,
    extra_args: String,
    problems: Vec<(Fate, String)>,
}

impl Aggregation {
    fn of(x: &DbtMeasure) -> Result<Aggregation, MeasureSkip> {
        let function =
            agg_function(&x.agg).ok_or_else(|| MeasureSkip::UnknownAgg(x.agg.clone()))?;
        let mut problems = Vec::new();
        let mut extra_args = String::new();
        if x.agg == "percentile" {
            let p = x.percentile.ok_or(MeasureSkip::NoPercentile)?;
            extra_args = format!(", p={p}");
            if x.inexact_percentile {
                problems.push((
                    Fate::Lossy,
                    "a discrete or approximate percentile, imported as the exact continuous one"
                        .into(),
                ));
            }
        }
        if x.non_additive.is_some() {
            problems.push((Fate::Lossy, "non_additive_dimension (a semi-additive measure) has no SLayer form; imported as a plain aggregation, the dimension kept in its meta".into()));
        }
        Ok(Aggregation {
            function,
            extra_args,
            problems,
        })
    }

    /// The SQL the measure aggregates and the type of a column holding it.
    fn operand(&self, x: &DbtMeasure) -> (String, DataType) {
        if x.agg == "sum_boolean" {
            return (
                format!("CASE WHEN ({}) THEN 1 ELSE 0 END", x.expr),
                DataType::Int,
            );
        }
        let numeric = matches!(self.function, "sum" | "avg" | "median" | "percentile");
        (
            x.expr.clone(),
            if numeric {
                DataType::Double
            } else {
                DataType::Unknown
            },
        )
    }
}

/// One semantic model's model as it is built: its columns' names taken so far and the column
/// made for each measure expression.
struct Building<'a> {
    sm: &'a SemanticModel,
    /// Its index among the models.
    index: usize,
    docs: &'a ColumnDocs,
    model: Model,
    taken: Vec<String>,
    /// A helper column never takes a metric's name: the metric keeps its dbt name.
    metric_names: &'a HashSet<&'a str>,
    column_of_expr: BTreeMap<String, String>,
}

impl<'a> Building<'a> {
    /// The model with its source, description, default time dimension and meta.
    fn new(
        sm: &'a SemanticModel,
        index: usize,
        datasource: &str,
        docs: &'a ColumnDocs,
        metric_names: &'a HashSet<&'a str>,
    ) -> Building<'a> {
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
        Building {
            sm,
            index,
            docs,
            model: m,
            taken: Vec::new(),
            metric_names,
            column_of_expr: BTreeMap::new(),
        }
    }

    fn doc_of(&self, col: &str) -> Option<String> {
        self.docs
            .descriptions
            .get(&(self.sm.dbt_model.clone(), col.to_owned()))
            .cloned()
    }

    fn type_of(&self, col: &str) -> Option<DataType> {
        self.docs
            .types
            .get(&(self.sm.dbt_model.clone(), col.to_owned()))
            .copied()
    }

    /// Dimensions become columns; a second of one name is skipped.
    fn dimensions(&mut self, tally: &mut Tally) {
        let sm = self.sm;
        for d in &sm.dimensions {
            let mut problems = Vec::new();
            let mut c = column(&d.name);
            if d.expr != d.name {
                c.sql = Some(d.expr.clone());
            }
            c.data_type = self.type_of(&d.expr).unwrap_or(if d.is_time {
                DataType::Timestamp
            } else {
                DataType::Unknown
            });
            c.description = d.description.clone().or_else(|| self.doc_of(&d.expr));
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
            if self.taken.contains(&d.name) {
                problems = vec![(
                    Fate::Skipped,
                    "a second dimension of that name in the same semantic model".into(),
                )];
            } else {
                self.taken.push(d.name.clone());
                self.model.columns.push(c);
            }
            tally.object(
                "dimension",
                &format!("dimension '{}.{}'", sm.name, d.name),
                &d.at,
                problems,
            );
        }
    }

    /// Primary, unique and natural entities make their column a key (and the entity's owner
    /// this model); foreign ones are joined once every model is built. Each entity name, with
    /// whether this model owns it.
    fn entities(
        &mut self,
        owners: &mut HashMap<String, (String, String)>,
        tally: &mut Tally,
    ) -> HashMap<String, bool> {
        let sm = self.sm;
        let mut own = HashMap::new();
        // `primary_entity:` names the model's entity without a key column: filters reach its
        // dimensions through it; no join can be made on it.
        if let Some(p) = &sm.primary_entity {
            own.insert(p.clone(), true);
            owners
                .entry(p.clone())
                .or_insert((sm.name.clone(), String::new()));
        }
        for e in &sm.entities {
            let object = format!("entity '{}.{}'", sm.name, e.name);
            let kind = match &e.kind {
                Ok(kind) => *kind,
                Err(unknown) => {
                    tally.object(
                        "entity",
                        &object,
                        &e.at,
                        vec![(Fate::Skipped, unknown.to_string())],
                    );
                    continue;
                }
            };
            own.insert(e.name.clone(), kind != EntityKind::Foreign);
            if kind == EntityKind::Foreign {
                continue; // joined below, once every model is built
            }
            let problems = match key_column(&mut self.model, &e.expr, &mut self.taken) {
                Some(col) => {
                    self.key(e, kind, &col);
                    owners.entry(e.name.clone()).or_insert((sm.name.clone(), col));
                    vec![]
                }
                None => vec![(
                    Fate::Lossy,
                    format!("its expression '{}' is not a column, so no key is declared and no model joins on it", e.expr),
                )],
            };
            tally.object("entity", &object, &e.at, problems);
        }
        own
    }

    /// The key column `col` of entity `e`: marked, and given the entity's words and the
    /// warehouse's type where it has none.
    fn key(&mut self, e: &Entity, kind: EntityKind, col: &str) {
        let description = self.doc_of(&e.expr);
        let data_type = self.type_of(&e.expr);
        let c = self
            .model
            .columns
            .iter_mut()
            .find(|c| c.name == col)
            .expect("key column");
        c.primary_key |= kind != EntityKind::Natural;
        if c.description.is_none() {
            c.description = e.description.clone().or(description);
        }
        if c.label.is_none() {
            c.label = e.label.clone();
        }
        if let Some(t) = data_type {
            c.data_type = t;
        }
    }

    /// Columns whose dbt tests make them a key.
    fn tested_keys(&mut self) {
        for key in self.docs.keys.get(&self.sm.dbt_model).into_iter().flatten() {
            if let Some(c) = self
                .model
                .columns
                .iter_mut()
                .find(|c| c.sql.as_deref().unwrap_or(&c.name) == key)
            {
                c.primary_key = true;
            }
        }
    }

    /// Measures become named measures over one column per distinct expression.
    fn measures(&mut self, homes: &mut HashMap<String, MeasureHome>, tally: &mut Tally) {
        let sm = self.sm;
        self.taken
            .extend(sm.measures.iter().map(|x| x.name.clone()));
        for x in &sm.measures {
            let object = format!("measure '{}.{}'", sm.name, x.name);
            let aggregation = match Aggregation::of(x) {
                Ok(a) => a,
                Err(skip) => {
                    tally.object(
                        "measure",
                        &object,
                        &x.at,
                        vec![(Fate::Skipped, skip.to_string())],
                    );
                    continue;
                }
            };
            let (sql, data_type) = aggregation.operand(x);
            let col = self.measure_column(x, &sql, data_type);
            let home = MeasureHome {
                model: self.index,
                column: col.clone(),
                sql,
                function: aggregation.function.to_owned(),
                extra_args: aggregation.extra_args,
            };
            let mut me = measure(&x.name, home.over(&col));
            me.label = x.label.clone();
            me.description = x.description.clone();
            if let Some(nad) = &x.non_additive {
                me.extra
                    .insert("meta".into(), json!({"non_additive_dimension": nad}));
            }
            self.model.measures.push(me);
            homes.insert(x.name.clone(), home);
            if x.of_metric {
                // The metric it belongs to is what is recorded; its losses are the metric's.
                let metric = format!("metric '{}'", x.name);
                for (_, message) in aggregation.problems {
                    tally.issues.push(crate::import::Issue {
                        file: x.at.file.clone(),
                        line: x.at.line,
                        object: metric.clone(),
                        fate: Fate::Lossy,
                        message,
                    });
                }
                continue;
            }
            tally.object("measure", &object, &x.at, aggregation.problems);
        }
    }

    /// The column measure `x` aggregates: the one already made for `sql`, a plain column of
    /// that name (a key, a dimension read as is), or a new one.
    fn measure_column(&mut self, x: &DbtMeasure, sql: &str, data_type: DataType) -> String {
        let plain = self
            .model
            .columns
            .iter()
            .find(|c| c.name == sql && c.sql.is_none())
            .map(|c| c.name.clone());
        if let Some(col) = self.column_of_expr.get(sql).cloned().or(plain) {
            return col;
        }
        let base = if is_identifier(sql)
            && !self.taken.iter().any(|t| t == sql)
            && !self.metric_names.contains(sql)
        {
            sql.to_owned()
        } else {
            format!("{}_col", x.name)
        };
        let name = free_name(&base, &mut self.taken, self.metric_names);
        let mut c = column(&name);
        if sql != name {
            c.sql = Some(sql.to_owned());
        }
        c.data_type = self.type_of(sql).unwrap_or(data_type);
        c.description = self.doc_of(sql);
        self.model.columns.push(c);
        self.column_of_expr.insert(sql.to_owned(), name.clone());
        name
    }
}

/// The column reading `expr` (by name, else by SQL), or a new one named `expr` when it is a
/// free identifier.
pub fn key_column(m: &mut Model, expr: &str, taken: &mut Vec<String>) -> Option<String> {
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
