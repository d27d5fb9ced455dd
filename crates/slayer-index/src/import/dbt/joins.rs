//! The joins between the models of a dbt project (docs/spec/importers.md §17.2): a foreign entity
//! joins its model to the one owning the entity, models sharing a primary entity join one to one,
//! and `relationships` tests join what no entity does.

use std::collections::BTreeMap;

use serde_json::{json, Map};
use slayer_common::records::{Join, Model};

use super::convert::{key_column, Built, ColumnDocs};
use super::spec::{EntityKind, SemanticModel};
use crate::import::{column, Fate, Tally};

/// Foreign entities become joins to the model owning the entity; models sharing a primary
/// entity join one to one, from the one whose name sorts first.
pub fn join(semantic_models: &[SemanticModel], built: &mut Built, tally: &mut Tally) {
    built.joined = vec![Vec::new(); semantic_models.len()];
    for (i, sm) in semantic_models.iter().enumerate() {
        join_foreign(i, sm, built, tally);
    }
    join_peers(semantic_models, built);
}

/// The foreign entities of semantic model `i` as joins to their owners.
fn join_foreign(i: usize, sm: &SemanticModel, built: &mut Built, tally: &mut Tally) {
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
        if key.is_empty() {
            tally.object("entity", &object, &e.at, vec![(Fate::Lossy, format!("'{owner}' declares '{}' as its primary_entity, with no key column, so no join is made", e.name))]);
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

/// Peers: the same primary (or unique) entity on two models joins them one to one.
fn join_peers(semantic_models: &[SemanticModel], built: &mut Built) {
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

/// `relationships` tests (`to: ref('customers')`, `field: id`) join the semantic models of the
/// two dbt models, where no entity already does.
pub fn join_tested(semantic_models: &[SemanticModel], docs: &ColumnDocs, built: &mut Built) {
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
