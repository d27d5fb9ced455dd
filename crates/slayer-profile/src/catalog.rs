//! Introspected tables → catalog records.

use std::collections::HashMap;

use serde_json::{Map, Value};
use slayer_common::canonical::check_entity_name;
use slayer_common::records::{Column, Datasource, Join, Model};

use crate::ident::entity_name;
use crate::introspect::TableInfo;
use crate::profile::{column_expr, is_profilable, ProfileColumn, TableJob};
use crate::typemap::{default_format, map_type};

/// The datasource record.
pub fn datasource(name: &str, source_type: &str, database: Option<&str>) -> Datasource {
    let mut extra = Map::new();
    if let Some(db) = database {
        extra.insert("database".into(), Value::String(db.to_owned()));
    }
    Datasource {
        name: name.to_owned(),
        source_type: Some(source_type.to_owned()),
        description: None,
        extra,
    }
}

/// Model names for tables: the sanitised table name, or `<schema>_<name>` when two schemas
/// hold tables of the same name.
pub fn model_names(tables: &[TableInfo]) -> Vec<String> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for t in tables {
        *count.entry(entity_name(&t.name)).or_default() += 1;
    }
    tables
        .iter()
        .map(|t| {
            let base = entity_name(&t.name);
            match &t.table_ref {
                crate::introspect::TableRef::Table {
                    schema: Some(s), ..
                } if count[&base] > 1 => entity_name(&format!("{s}_{}", t.name)),
                _ => base,
            }
        })
        .collect()
}

/// A model record for one table, plus warnings about columns that cannot be entities.
/// `names` maps table names to the model names of the other tables (for joins).
pub fn model(
    datasource: &str,
    model_name: &str,
    t: &TableInfo,
    names: &HashMap<&str, &str>,
) -> (Model, Vec<String>) {
    let mut warnings = Vec::new();
    let mut columns = Vec::new();
    for c in &t.columns {
        let name = if c.name == "_count" {
            "count_col".to_owned()
        } else {
            c.name.clone()
        };
        if let Err(e) = check_entity_name("column", &name) {
            warnings.push(format!(
                "{datasource}.{model_name}: column {:?} skipped: {e}",
                c.name
            ));
            continue;
        }
        let data_type = map_type(&c.db_type);
        columns.push(Column {
            name,
            sql: Some(c.name.clone()),
            data_type,
            primary_key: t.primary_key.contains(&c.name),
            description: c.comment.clone(),
            label: None,
            hidden: false,
            format: default_format(data_type),
            allowed_aggregations: None,
            filter: None,
            sampled: None,
            sampled_values: None,
            distinct_count: None,
            extra: Map::new(),
        });
    }
    let joins = t
        .foreign_keys
        .iter()
        .filter_map(|fk| {
            let target = names.get(fk.ref_table.as_str())?;
            Some(Join {
                target_model: (*target).to_owned(),
                join_pairs: fk
                    .columns
                    .iter()
                    .cloned()
                    .zip(fk.ref_columns.iter().cloned())
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
        name: model_name.to_owned(),
        data_source: datasource.to_owned(),
        sql_table: Some(t.table_ref.sql_table()),
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
