//! Stage 6 for the schema answer (docs/spec/search.md §9.13): what an agent needs to write SQL,
//! read from the same fused entity order as the flat `entities` list.
//!
//! 1. **Models**: the first `models` models to place in the fused order, by themselves or by
//!    one of their columns (a question about a table names what its columns hold).
//! 2. **Joins**: the join pairs between each two of them ([`crate::joins`]).
//! 3. **Columns**, `columns` in all: first those that must be there (named by the question,
//!    named by a returned memory, used by a join), then the rest of the fused order's leaves
//!    of the chosen models, best first. Each model lists its own in fused order.
//!
//! Picking is pure over the catalog's skeletons; the full models (types, descriptions,
//! values) are read for the chosen few only ([`fill`]).

use rustc_hash::FxHashSet;
use serde::Serialize;
use slayer_common::records::{skeleton, Model};
use slayer_memory::resolve::Catalog;

use crate::fusion::bridges::{bridges, model_part, same_datasource};
use crate::fusion::fuse::Fused;
use crate::fusion::named::named_in;
use crate::joins::{visible_model, JoinPair, Joins};
use crate::request::SchemaSize;
use crate::SearchError;

/// How many sampled values a column shows.
const VALUES: usize = 3;

/// The schema answer: models with their columns, and how they join.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemaAnswer {
    /// The models, best first.
    pub models: Vec<SchemaModel>,
    /// The join pairs between the models.
    pub joins: Vec<JoinPair>,
}

/// A model of the schema answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemaModel {
    /// Canonical id (`ds.model`).
    pub id: String,
    /// The fused score of its best-placed entry, itself or one of its leaves.
    pub score: f64,
    /// The table it reads, when it names one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql_table: Option<String>,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its chosen leaves, in fused order (those no channel ranked last).
    pub columns: Vec<SchemaColumn>,
    /// A model no channel chose, there because it joins two that were (a link table); it
    /// shows its join keys only.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub bridge: bool,
}

/// A leaf of a model in the schema answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SchemaColumn {
    /// Canonical id (`ds.model.column`).
    pub id: String,
    /// column, measure or aggregation.
    pub kind: &'static str,
    /// A column's type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub data_type: Option<&'static str>,
    /// The SQL that reads it, when not its name (a column's expression, a measure's or an
    /// aggregation's formula).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// Its description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A few of its profiled values.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
    /// Why it is there.
    pub why: Why,
}

/// Why a leaf is in the schema answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Why {
    /// The question names it.
    Question,
    /// A returned memory is about it.
    Memory,
    /// A join between two of the models uses it.
    Join,
    /// It ranked among the model's best.
    Ranked,
}

/// A model picking chose.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PickedModel {
    /// Canonical id.
    pub id: String,
    /// See [`SchemaModel::score`].
    pub score: f64,
    /// See [`SchemaModel::bridge`].
    pub bridge: bool,
}

/// What picking chose, before the full models are read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Picked {
    /// The models, best first, then the bridges.
    pub models: Vec<PickedModel>,
    /// Leaf ids, why each is there, and its place in the fused order (`None`: unranked).
    pub leaves: Vec<(String, Why, Option<usize>)>,
    /// The join pairs.
    pub joins: Vec<JoinPair>,
}

/// Whether the model has a visible leaf of that name.
fn has_leaf(model: &skeleton::Model, leaf: &str) -> bool {
    model.columns.iter().any(|c| !c.hidden && c.name == leaf)
        || model
            .measures
            .iter()
            .any(|m| m.name.as_deref() == Some(leaf))
        || model.aggregations.iter().any(|a| a.name == leaf)
}

/// The visible columns of the models that the question names ([`named_in`]).
fn columns_named_in(question: &str, models: &[(String, f64)], catalog: &Catalog) -> Vec<String> {
    let mut names: Vec<(&str, String)> = Vec::new();
    for (model, _) in models {
        let Some(m) = visible_model(catalog, model) else {
            continue;
        };
        for column in m.columns.iter().filter(|c| !c.hidden) {
            names.push((&column.name, format!("{model}.{}", column.name)));
        }
    }
    named_in(question, names)
}

/// Picks the models, join pairs and leaves of the answer (see the module's doc).
pub(crate) fn pick(
    ordered: &[Fused],
    catalog: &Catalog,
    joins: &Joins<'_>,
    size: SchemaSize,
    question: Option<&str>,
    memory_named: &[String],
) -> Picked {
    let mut models: Vec<(String, f64)> = Vec::new();
    for f in ordered {
        if models.len() >= size.models {
            break;
        }
        let Some((model, _)) = model_part(&f.key) else {
            continue;
        };
        if !models.iter().any(|(m, _)| m == model) && visible_model(catalog, model).is_some() {
            models.push((model.to_owned(), f.score));
        }
    }
    let mut pairs: Vec<JoinPair> = Vec::new();
    let mut unjoined: Vec<(usize, usize)> = Vec::new();
    for (i, (a, _)) in models.iter().enumerate() {
        for (j, (b, _)) in models.iter().enumerate().skip(i + 1) {
            let found = joins.pairs(a, b);
            if found.is_empty() && same_datasource(a, b) {
                unjoined.push((i, j));
            }
            pairs.extend(found);
        }
    }
    let bridges = bridges(ordered, catalog, joins, &models, unjoined);
    for (_, bridge_pairs) in &bridges {
        pairs.extend(bridge_pairs.iter().cloned());
    }
    let place: rustc_hash::FxHashMap<&str, usize> = ordered
        .iter()
        .enumerate()
        .map(|(i, f)| (f.key.as_str(), i))
        .rev()
        .collect();
    let chosen = |id: &str| {
        model_part(id).is_some_and(|(m, own)| !own && models.iter().any(|(c, _)| c == m))
    };
    let mut leaves: Vec<(String, Why, Option<usize>)> = Vec::new();
    let mut taken: FxHashSet<String> = FxHashSet::default();
    let mut take = |id: &str, why: Why, leaves: &mut Vec<_>| {
        if taken.insert(id.to_owned()) {
            leaves.push((id.to_owned(), why, place.get(id).copied()));
        }
    };
    if let Some(question) = question {
        for id in columns_named_in(question, &models, catalog) {
            take(&id, Why::Question, &mut leaves);
        }
    }
    for id in memory_named {
        let known = model_part(id)
            .and_then(|(m, _)| visible_model(catalog, m))
            .is_some_and(|m| has_leaf(m, id.rsplit('.').next().unwrap_or_default()));
        if chosen(id) && known {
            take(id, Why::Memory, &mut leaves);
        }
    }
    for pair in &pairs {
        take(&pair.from, Why::Join, &mut leaves);
        take(&pair.to, Why::Join, &mut leaves);
    }
    for f in ordered {
        if leaves.len() >= size.columns {
            break;
        }
        if chosen(&f.key) {
            take(&f.key, Why::Ranked, &mut leaves);
        }
    }
    let models = models
        .into_iter()
        .map(|(id, score)| PickedModel {
            id,
            score,
            bridge: false,
        })
        .chain(bridges.into_iter().map(|(id, _)| {
            PickedModel {
                score: ordered
                    .iter()
                    .find(|f| model_part(&f.key).is_some_and(|(m, _)| m == id))
                    .map_or(0.0, |f| f.score),
                id,
                bridge: true,
            }
        }))
        .collect();
    Picked {
        models,
        leaves,
        joins: pairs,
    }
}

/// The answer of what was picked, with each chosen model read whole by `full_model`
/// (`ds`, `name`); a model gone since the catalog was read is left out, with its leaves and
/// joins.
pub(crate) fn fill(
    picked: Picked,
    mut full_model: impl FnMut(&str, &str) -> Result<Option<Model>, SearchError>,
) -> Result<SchemaAnswer, SearchError> {
    let mut models: Vec<SchemaModel> = Vec::new();
    for PickedModel { id, score, bridge } in &picked.models {
        let Some((ds, name)) = id.split_once('.') else {
            continue;
        };
        let Some(model) = full_model(ds, name)? else {
            continue;
        };
        let mut leaves: Vec<&(String, Why, Option<usize>)> = picked
            .leaves
            .iter()
            .filter(|(leaf, _, _)| model_part(leaf).is_some_and(|(m, _)| m == id))
            .collect();
        // Ranked leaves by their place, then the unranked ones as picked (a stable sort).
        leaves.sort_by_key(|(_, _, place)| place.unwrap_or(usize::MAX));
        let columns = leaves
            .into_iter()
            .filter_map(|(leaf, why, _)| {
                let name = leaf.rsplit('.').next()?;
                leaf_of(&model, name, leaf, *why)
            })
            .collect();
        models.push(SchemaModel {
            id: id.clone(),
            score: *score,
            sql_table: model.sql_table.clone(),
            description: model.description.clone(),
            columns,
            bridge: *bridge,
        });
    }
    let kept = |column: &str| {
        models
            .iter()
            .any(|m| m.columns.iter().any(|c| c.id == column))
    };
    let joins = picked
        .joins
        .into_iter()
        .filter(|p| kept(&p.from) && kept(&p.to))
        .collect();
    Ok(SchemaAnswer { models, joins })
}

/// One leaf of a full model, as the answer shows it.
fn leaf_of(model: &Model, name: &str, id: &str, why: Why) -> Option<SchemaColumn> {
    let leaf = |kind, data_type, sql, description: &Option<String>, values| SchemaColumn {
        id: id.to_owned(),
        kind,
        data_type,
        sql,
        description: description.clone(),
        values,
        why,
    };
    if let Some(c) = model.columns.iter().find(|c| !c.hidden && c.name == name) {
        let values = c
            .sampled_values
            .iter()
            .flatten()
            .take(VALUES)
            .cloned()
            .collect();
        let sql = c.sql.clone().filter(|s| *s != c.name);
        return Some(leaf(
            "column",
            Some(c.data_type.as_str()),
            sql,
            &c.description,
            values,
        ));
    }
    if let Some(m) = model
        .measures
        .iter()
        .find(|m| m.name.as_deref() == Some(name))
    {
        return Some(leaf(
            "measure",
            None,
            Some(m.formula.clone()),
            &m.description,
            vec![],
        ));
    }
    model.aggregations.iter().find(|a| a.name == name).map(|a| {
        leaf(
            "aggregation",
            None,
            a.formula.clone(),
            &a.description,
            vec![],
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::joins::{JoinHow, JoinMemo};

    fn model(name: &str, columns: &[&str]) -> Model {
        let columns: Vec<serde_json::Value> = columns
            .iter()
            .map(|c| serde_json::json!({ "name": c, "type": "INT", "description": format!("the {c}") }))
            .collect();
        serde_json::from_value(serde_json::json!({
            "name": name, "data_source": "db", "sql_table": name, "columns": columns,
            "measures": [{"name": "revenue", "formula": "amount:sum"}]
        }))
        .unwrap()
    }

    /// The full models, sorted by name.
    fn shop() -> Vec<Model> {
        let mut models = vec![
            model(
                "orders",
                &["id", "customer_id", "amount", "status", "placed_at"],
            ),
            model("customers", &["id", "name", "county name", "segment"]),
            model("notes", &["id", "text"]),
        ];
        models.sort_by(|a, b| a.name.cmp(&b.name));
        models
    }

    /// The catalog of these full models (sorted by name, all of datasource `db`).
    fn catalog_of(models: &[Model]) -> Catalog {
        Catalog {
            datasources: ["db".to_owned()].into(),
            models: models.iter().map(skeleton::Model::from).collect(),
        }
    }

    /// The full model `ds.name`, as [`fill`] reads it.
    fn full(models: &[Model], ds: &str, name: &str) -> Option<Model> {
        models
            .iter()
            .find(|m| m.data_source == ds && m.name == name)
            .cloned()
    }

    fn fused(keys: &[&str]) -> Vec<Fused> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| Fused {
                key: (*k).to_owned(),
                score: 1.0 / (i + 1) as f64,
                contributions: vec![],
            })
            .collect()
    }

    #[test]
    fn models_come_by_their_best_entry_and_columns_by_need_then_rank() {
        let models = shop();
        let c = catalog_of(&models);
        let memo = JoinMemo::default();
        let joins = Joins::new(&c, &memo);
        let order = fused(&[
            "db",
            "db.orders.amount",
            "memory:1",
            "db.customers",
            "db.orders.status",
            "db.notes.text",
            "db.orders.placed_at",
            "db.customers.segment",
        ]);
        let size = SchemaSize {
            models: 2,
            columns: 6,
        };
        let named = ["db.orders.revenue".to_owned(), "db.notes.text".to_owned()];
        let picked = pick(
            &order,
            &c,
            &joins,
            size,
            Some("Revenue by County Name?"),
            &named,
        );
        assert_eq!(
            picked
                .models
                .iter()
                .map(|m| m.id.as_str())
                .collect::<Vec<_>>(),
            ["db.orders", "db.customers"]
        );
        assert_eq!(
            picked.models[0].score, 0.5,
            "the score of the column that placed it"
        );
        let leaves: Vec<(&str, Why)> = picked
            .leaves
            .iter()
            .map(|(l, w, _)| (l.as_str(), *w))
            .collect();
        // Named by the question, by a memory (of a chosen model only), the join's keys, then
        // the fused order until six.
        assert_eq!(
            leaves,
            [
                ("db.customers.county name", Why::Question),
                ("db.orders.revenue", Why::Memory),
                ("db.orders.customer_id", Why::Join),
                ("db.customers.id", Why::Join),
                ("db.orders.amount", Why::Ranked),
                ("db.orders.status", Why::Ranked),
            ]
        );
        assert_eq!(
            picked.joins,
            [JoinPair {
                from: "db.orders.customer_id".into(),
                to: "db.customers.id".into(),
                how: JoinHow::Reference
            }]
        );
        let answer = fill(picked, |ds, name| Ok(full(&models, ds, name))).unwrap();
        let orders = &answer.models[0];
        assert_eq!(orders.sql_table.as_deref(), Some("orders"));
        let ids: Vec<&str> = orders.columns.iter().map(|c| c.id.as_str()).collect();
        // In fused order, the unranked after.
        assert_eq!(
            ids,
            [
                "db.orders.amount",
                "db.orders.status",
                "db.orders.revenue",
                "db.orders.customer_id"
            ]
        );
        assert_eq!(orders.columns[2].kind, "measure");
        assert_eq!(orders.columns[2].sql.as_deref(), Some("amount:sum"));
        assert_eq!(orders.columns[0].data_type, Some("INT"));
        assert_eq!(orders.columns[0].description.as_deref(), Some("the amount"));
        assert_eq!(answer.joins.len(), 1);
    }

    #[test]
    fn a_model_gone_takes_its_joins_with_it() {
        let models = shop();
        let c = catalog_of(&models);
        let memo = JoinMemo::default();
        let joins = Joins::new(&c, &memo);
        let order = fused(&["db.orders", "db.customers"]);
        let size = SchemaSize {
            models: 5,
            columns: 40,
        };
        let picked = pick(&order, &c, &joins, size, None, &[]);
        assert_eq!(picked.models.len(), 2);
        let answer = fill(picked, |_, name| {
            Ok((name == "orders")
                .then(|| full(&models, "db", name))
                .flatten())
        })
        .unwrap();
        assert_eq!(answer.models.len(), 1);
        assert!(answer.joins.is_empty());
        assert_eq!(answer.models[0].columns[0].why, Why::Join);
    }

    #[test]
    fn a_link_table_the_question_never_names_bridges_two_chosen_models() {
        let mut models = vec![
            model("superhero", &["id", "superhero_name", "height_cm"]),
            model("superpower", &["id", "power_name"]),
            model("hero_power", &["hero_id", "power_id"]),
            model("colour", &["id", "colour"]),
        ];
        models.sort_by(|a, b| a.name.cmp(&b.name));
        let c = catalog_of(&models);
        let memo = JoinMemo::default();
        let joins = Joins::new(&c, &memo);
        let order = fused(&["db.superhero.superhero_name", "db.superpower.power_name"]);
        let size = SchemaSize {
            models: 5,
            columns: 40,
        };
        let picked = pick(&order, &c, &joins, size, None, &[]);
        let chosen: Vec<(&str, bool)> = picked
            .models
            .iter()
            .map(|m| (m.id.as_str(), m.bridge))
            .collect();
        assert_eq!(
            chosen,
            [
                ("db.superhero", false),
                ("db.superpower", false),
                ("db.hero_power", true)
            ]
        );
        let pairs: Vec<(&str, &str)> = picked
            .joins
            .iter()
            .map(|p| (p.from.as_str(), p.to.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("db.hero_power.hero_id", "db.superhero.id"),
                ("db.hero_power.power_id", "db.superpower.id")
            ]
        );
        // The bridge shows its keys only.
        let answer = fill(picked, |ds, name| Ok(full(&models, ds, name))).unwrap();
        let bridge = &answer.models[2];
        assert!(bridge.bridge);
        assert!(bridge.columns.iter().all(|c| c.why == Why::Join));
    }
}
