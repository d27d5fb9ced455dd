//! Datasources and models, stored as the JSON of their records (as SQLite's `catalog.rs`).

use std::collections::BTreeSet;

use super::memories::{last_of_each, BATCH_ROWS};
use super::{PgResult, Session};
use crate::records::skeleton;
use crate::records::{Datasource, Model};
use crate::store::sqlite::{parse_row, to_row};
use crate::store::StoreError;

pub(super) fn put_datasource(s: &mut Session, ds: &Datasource) -> PgResult<()> {
    s.execute(
        "INSERT INTO datasources (name, data) VALUES ($1, $2)
         ON CONFLICT (name) DO UPDATE SET data = excluded.data",
        &[&ds.name, &to_row("datasource", ds)?],
    )?;
    Ok(())
}

pub(super) fn datasource(s: &mut Session, name: &str) -> PgResult<Option<Datasource>> {
    let row = s.query_opt("SELECT data FROM datasources WHERE name = $1", &[&name])?;
    Ok(row
        .map(|r| parse_row("datasources", name, r.get(0)))
        .transpose()?)
}

pub(super) fn datasources(s: &mut Session) -> PgResult<Vec<Datasource>> {
    let rows = s.query("SELECT name, data FROM datasources ORDER BY name", &[])?;
    let parsed: Result<Vec<_>, StoreError> = rows
        .iter()
        .map(|r| parse_row("datasources", r.get(0), r.get(1)))
        .collect();
    Ok(parsed?)
}

pub(super) fn delete_datasource(s: &mut Session, name: &str) -> PgResult<bool> {
    Ok(s.execute("DELETE FROM datasources WHERE name = $1", &[&name])? > 0)
}

/// Inserts or replaces models and their skeletons, [`BATCH_ROWS`] to a statement (one model is
/// a batch of one).
pub(super) fn put_models(s: &mut Session, models: &[&Model]) -> PgResult<()> {
    for chunk in
        last_of_each(models, |m| (m.data_source.as_str(), m.name.as_str())).chunks(BATCH_ROWS)
    {
        let sources: Vec<&str> = chunk.iter().map(|m| m.data_source.as_str()).collect();
        let names: Vec<&str> = chunk.iter().map(|m| m.name.as_str()).collect();
        let mut data = Vec::with_capacity(chunk.len());
        let mut skeletons = Vec::with_capacity(chunk.len());
        for model in chunk {
            let model: &Model = model;
            data.push(to_row("model", model)?);
            skeletons.push(to_row("model skeleton", &skeleton::Model::from(model))?);
        }
        s.execute(
            "INSERT INTO models (data_source, name, data)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
             ON CONFLICT (data_source, name) DO UPDATE SET data = excluded.data",
            &[&sources, &names, &data],
        )?;
        s.execute(
            "INSERT INTO model_skeletons (data_source, name, skeleton)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
             ON CONFLICT (data_source, name) DO UPDATE SET skeleton = excluded.skeleton",
            &[&sources, &names, &skeletons],
        )?;
    }
    Ok(())
}

fn put_skeleton(s: &mut Session, model: &Model) -> PgResult<()> {
    s.execute(
        "INSERT INTO model_skeletons (data_source, name, skeleton) VALUES ($1, $2, $3)
         ON CONFLICT (data_source, name) DO UPDATE SET skeleton = excluded.skeleton",
        &[
            &model.data_source,
            &model.name,
            &to_row("model skeleton", &skeleton::Model::from(model))?,
        ],
    )?;
    Ok(())
}

pub(super) fn model(s: &mut Session, datasource: &str, name: &str) -> PgResult<Option<Model>> {
    let row = s.query_opt(
        "SELECT data FROM models WHERE data_source = $1 AND name = $2",
        &[&datasource, &name],
    )?;
    Ok(row
        .map(|r| parse_row("models", &format!("{datasource}.{name}"), r.get(0)))
        .transpose()?)
}

pub(super) fn models(s: &mut Session, datasource: Option<&str>) -> PgResult<Vec<Model>> {
    let rows = s.query(
        "SELECT data_source, name, data FROM models
         WHERE $1::text IS NULL OR data_source = $1 ORDER BY data_source, name",
        &[&datasource],
    )?;
    let parsed: Result<Vec<_>, StoreError> = rows
        .iter()
        .map(|r| {
            let key = format!("{}.{}", r.get::<_, &str>(0), r.get::<_, &str>(1));
            parse_row("models", &key, r.get(2))
        })
        .collect();
    Ok(parsed?)
}

/// Rewrites every model's skeleton from its full JSON (a migration, when skeletons gain a field).
pub(super) fn rewrite_skeletons(s: &mut Session) -> PgResult<()> {
    for model in models(s, None)? {
        put_skeleton(s, &model)?;
    }
    Ok(())
}

pub(super) fn delete_model(s: &mut Session, datasource: &str, name: &str) -> PgResult<bool> {
    Ok(s.execute(
        "DELETE FROM models WHERE data_source = $1 AND name = $2",
        &[&datasource, &name],
    )? > 0)
}

pub(super) fn delete_models_of(s: &mut Session, datasource: &str) -> PgResult<usize> {
    Ok(s.execute("DELETE FROM models WHERE data_source = $1", &[&datasource])? as usize)
}

/// Every model as name resolution sees it (its skeleton), by datasource then name.
pub(super) fn model_skeletons(s: &mut Session) -> PgResult<Vec<skeleton::Model>> {
    // Every model has its skeleton (written together since version 1): no fallback to the
    // full JSON as SQLite's older stores need.
    let rows = s.query(
        "SELECT data_source, name, skeleton FROM model_skeletons ORDER BY data_source, name",
        &[],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for r in &rows {
        let key = format!("{}.{}", r.get::<_, &str>(0), r.get::<_, &str>(1));
        out.push(parse_row("models", &key, r.get(2))?);
    }
    Ok(out)
}

pub(super) fn datasource_names(s: &mut Session) -> PgResult<BTreeSet<String>> {
    let rows = s.query(
        "SELECT name FROM datasources UNION SELECT data_source FROM models",
        &[],
    )?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}
