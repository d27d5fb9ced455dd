//! Introspected tables → catalog records.

use std::collections::HashMap;

use serde_json::{Map, Value};
use slayer_common::records::{Column, Datasource, Join, Model};

use crate::profile::{column_expr, is_profilable, ProfileColumn, TableJob};
use crate::table::{TableInfo, TableRef};
use crate::typemap::{default_format, map_type};

/// The datasource record, with the source's connection fields (never a password).
pub fn datasource(name: &str, source_type: &str, connection: &[(&str, Value)]) -> Datasource {
    let mut extra = Map::new();
    for (key, value) in connection {
        extra.insert((*key).to_owned(), value.clone());
    }
    Datasource {
        name: name.to_owned(),
        source_type: Some(source_type.to_owned()),
        description: None,
        extra,
    }
}

/// The tables joins may point at, by schema (`None`: the default one) and name.
pub type JoinTargets<'a> = HashMap<(Option<&'a str>, &'a str), &'a TableInfo>;

/// Join targets among `tables` (the emitted ones: a join to a model that is not loaded would
/// dangle).
pub fn join_targets<'a>(tables: &[&'a TableInfo]) -> JoinTargets<'a> {
    tables
        .iter()
        .filter_map(|t| match &t.table_ref {
            TableRef::Table { schema, name } => Some(((schema.as_deref(), name.as_str()), *t)),
            TableRef::File { .. } => None,
        })
        .collect()
}

/// The leaf name of a physical column of `t` (join pairs name leaves, not SQL).
fn leaf<'a>(t: &'a TableInfo, physical: &'a str) -> &'a str {
    t.columns
        .iter()
        .find(|c| c.name == physical)
        .map_or(physical, |c| c.leaf.name.as_str())
}

/// One warning per object of `t` that had to be renamed (see [`crate::names`]).
fn rename_warnings(datasource: &str, t: &TableInfo) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(why) = &t.model.renamed {
        let what = match &t.table_ref {
            TableRef::File { path, .. } => format!("file {path:?}"),
            TableRef::Table { schema, .. } => {
                let kind = if t.is_view { "view" } else { "table" };
                match schema {
                    Some(s) => format!("{kind} {:?} of schema {s:?}", t.name),
                    None => format!("{kind} {:?}", t.name),
                }
            }
        };
        warnings.push(format!(
            "{datasource}: {what} becomes model {:?} ({why})",
            t.model.name
        ));
    }
    for c in &t.columns {
        if let Some(why) = &c.leaf.renamed {
            warnings.push(format!(
                "{datasource}.{}: column {:?} becomes {:?} ({why})",
                t.model.name, c.name, c.leaf.name
            ));
        }
    }
    warnings
}

/// The model record for one table, named by [`crate::names::assign_names`], plus one warning
/// per renamed object. Joins come from foreign keys to tables in `targets`.
pub fn model(datasource: &str, t: &TableInfo, targets: &JoinTargets<'_>) -> (Model, Vec<String>) {
    let columns = t
        .columns
        .iter()
        .map(|c| {
            let data_type = map_type(&c.db_type);
            Column {
                sql: Some(c.name.clone()),
                data_type,
                primary_key: t.primary_key.contains(&c.name),
                description: c.comment.clone(),
                format: default_format(data_type),
                ..Column::named(c.leaf.name.clone())
            }
        })
        .collect();
    let joins = t
        .foreign_keys
        .iter()
        .filter_map(|fk| {
            let target = targets.get(&(fk.ref_schema.as_deref(), fk.ref_table.as_str()))?;
            Some(Join {
                target_model: target.model.name.clone(),
                join_pairs: fk
                    .columns
                    .iter()
                    .zip(&fk.ref_columns)
                    .map(|(from, to)| (leaf(t, from).to_owned(), leaf(target, to).to_owned()))
                    .collect(),
                extra: Map::new(),
            })
        })
        .collect();
    let mut extra = Map::new();
    extra.insert(
        "source_kind".into(),
        Value::String(if t.is_view { "view" } else { "table" }.into()),
    );
    let model = Model {
        name: t.model.name.clone(),
        data_source: datasource.to_owned(),
        sql_table: Some(t.sql_table()),
        sql: None,
        source_queries: None,
        description: t.comment.clone(),
        hidden: false,
        default_time_dimension: None,
        filters: vec![],
        columns,
        measures: vec![],
        aggregations: vec![],
        joins,
        extra,
    };
    let mut model = model;
    let mut warnings = rename_warnings(datasource, t);
    // A comment is free text of any size in the database; the store takes a bounded one.
    let limit = slayer_common::limits::Limits::default().description_bytes;
    for (field, len) in slayer_common::records::cut_long(model.texts_mut(), limit) {
        warnings.push(format!(
            "{datasource}.{}: the {field} (its comment in the database) is {len} bytes, cut to its first {limit} (limits.description_bytes)",
            model.name
        ));
    }
    (model, warnings)
}

/// The profiling job for a model read from `t`.
pub fn job(model: &Model, t: &TableInfo) -> TableJob {
    let physical: Vec<String> = t.columns.iter().map(|c| c.name.clone()).collect();
    let columns = model
        .columns
        .iter()
        .enumerate()
        .filter(|(_, c)| is_profilable(model, c))
        .map(|(index, c)| {
            let sql = c.sql.as_deref().unwrap_or(&c.name);
            ProfileColumn {
                index,
                name: c.name.clone(),
                expr: column_expr(c, &physical),
                data_type: c.data_type,
                db_type: t
                    .columns
                    .iter()
                    .find(|p| p.name == sql)
                    .map(|p| p.db_type.clone()),
            }
        })
        .collect();
    TableJob {
        label: model.canonical_id(),
        from: format!(
            "{} AS {}",
            t.table_ref.from_sql(),
            crate::ident::quote_ident(&model.name)
        ),
        columns,
    }
}
