//! Datasources and models, stored as the JSON of their records.

use rusqlite::{params, Connection, OptionalExtension};

use super::{parse_row, to_row, StoreError};
use crate::records::{Datasource, Model};

/// Inserts or replaces a datasource.
pub fn put_datasource(conn: &Connection, ds: &Datasource) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO datasources (name, data) VALUES (?1, ?2)
         ON CONFLICT(name) DO UPDATE SET data = excluded.data",
        params![ds.name, to_row(ds)],
    )?;
    Ok(())
}

/// One datasource by name.
pub fn datasource(conn: &Connection, name: &str) -> Result<Option<Datasource>, StoreError> {
    let data: Option<String> = conn
        .query_row(
            "SELECT data FROM datasources WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()?;
    data.map(|d| parse_row("datasources", name, &d)).transpose()
}

/// All datasources, sorted by name.
pub fn datasources(conn: &Connection) -> Result<Vec<Datasource>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT name, data FROM datasources ORDER BY name")?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (name, data) = row?;
        out.push(parse_row("datasources", &name, &data)?);
    }
    Ok(out)
}

/// Deletes a datasource row; returns whether it existed.
pub fn delete_datasource(conn: &Connection, name: &str) -> Result<bool, StoreError> {
    Ok(conn.execute("DELETE FROM datasources WHERE name = ?1", [name])? > 0)
}

/// Inserts or replaces a model (keyed by datasource + name).
pub fn put_model(conn: &Connection, model: &Model) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO models (data_source, name, data) VALUES (?1, ?2, ?3)
         ON CONFLICT(data_source, name) DO UPDATE SET data = excluded.data",
        params![model.data_source, model.name, to_row(model)],
    )?;
    Ok(())
}

/// One model.
pub fn model(conn: &Connection, datasource: &str, name: &str) -> Result<Option<Model>, StoreError> {
    let data: Option<String> = conn
        .query_row(
            "SELECT data FROM models WHERE data_source = ?1 AND name = ?2",
            [datasource, name],
            |r| r.get(0),
        )
        .optional()?;
    data.map(|d| parse_row("models", &format!("{datasource}.{name}"), &d))
        .transpose()
}

/// The models of one datasource (all when `None`), sorted by (datasource, name).
pub fn models(conn: &Connection, datasource: Option<&str>) -> Result<Vec<Model>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT data_source, name, data FROM models
         WHERE ?1 IS NULL OR data_source = ?1 ORDER BY data_source, name",
    )?;
    let rows = stmt.query_map([datasource], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (ds, name, data) = row?;
        out.push(parse_row("models", &format!("{ds}.{name}"), &data)?);
    }
    Ok(out)
}

/// Deletes one model; returns whether it existed.
pub fn delete_model(conn: &Connection, datasource: &str, name: &str) -> Result<bool, StoreError> {
    Ok(conn.execute(
        "DELETE FROM models WHERE data_source = ?1 AND name = ?2",
        [datasource, name],
    )? > 0)
}

/// Deletes every model of a datasource; returns how many there were.
pub fn delete_models_of(conn: &Connection, datasource: &str) -> Result<usize, StoreError> {
    Ok(conn.execute("DELETE FROM models WHERE data_source = ?1", [datasource])?)
}
