//! Datasources and models, stored as the JSON of their records.

use rusqlite::{params, Connection, OptionalExtension};

use super::{parse_row, to_row, StoreError};
use crate::records::{skeleton, Datasource, Model};

/// Inserts or replaces a datasource.
pub fn put_datasource(conn: &Connection, ds: &Datasource) -> Result<(), StoreError> {
    conn.execute(
        "INSERT INTO datasources (name, data) VALUES (?1, ?2)
         ON CONFLICT(name) DO UPDATE SET data = excluded.data",
        params![ds.name, to_row("datasource", ds)?],
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
        params![model.data_source, model.name, to_row("model", model)?],
    )?;
    put_skeleton(conn, model)
}

fn put_skeleton(conn: &Connection, model: &Model) -> Result<(), StoreError> {
    conn.execute(
        "INSERT OR REPLACE INTO model_skeletons (data_source, name, skeleton)
         VALUES (?1, ?2, ?3)",
        params![
            model.data_source,
            model.name,
            to_row("model skeleton", &skeleton::Model::from(model))?
        ],
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

/// Rewrites every model's skeleton from its full JSON (a migration, when skeletons gain a field).
pub(crate) fn rewrite_skeletons(conn: &Connection) -> Result<(), StoreError> {
    for model in models(conn, None)? {
        put_skeleton(conn, &model)?;
    }
    Ok(())
}

/// Every model as name resolution sees it (its [`skeleton::Model`]), sorted by (datasource,
/// name). Several times cheaper than [`models`].
pub fn model_skeletons(conn: &Connection) -> Result<Vec<skeleton::Model>, StoreError> {
    // A model written before skeletons were kept parses from its full JSON instead.
    let mut stmt = conn.prepare_cached(
        "SELECT data_source, name, skeleton FROM model_skeletons
         UNION ALL
         SELECT data_source, name, data FROM models m WHERE NOT EXISTS (
             SELECT 1 FROM model_skeletons s
             WHERE s.data_source = m.data_source AND s.name = m.name)
         ORDER BY 1, 2",
    )?;
    let mut rows = stmt.query([])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let data = row.get_ref(2)?.as_str().map_err(rusqlite::Error::from)?;
        let skeleton = serde_json::from_str(data).map_err(|e| StoreError::CorruptRow {
            table: "models",
            key: format!(
                "{}.{}",
                row.get::<_, String>(0).unwrap_or_default(),
                row.get::<_, String>(1).unwrap_or_default()
            ),
            cause: e.to_string(),
        })?;
        out.push(skeleton);
    }
    Ok(out)
}

/// Every datasource name: the stored datasources and those models name.
pub fn datasource_names(
    conn: &Connection,
) -> Result<std::collections::BTreeSet<String>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT name FROM datasources UNION SELECT data_source FROM models")?;
    let names = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{OpenMode, SqliteStore as Store};

    #[test]
    fn skeletons_keep_what_resolution_reads_and_old_rows_fall_back() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let model: Model = serde_json::from_value(serde_json::json!({
            "name": "orders", "data_source": "db", "hidden": true, "description": "long text",
            "columns": [{"name": "id", "type": "INT", "primary_key": true},
                        {"name": "secret", "hidden": true, "sampled_values": ["a", "b"]}],
            "measures": [{"formula": "amount:sum"}, {"name": "revenue", "formula": "amount:sum"}],
            "aggregations": [{"name": "wavg", "formula": "x"}],
            "joins": [{"target_model": "customers", "join_pairs": [["cid", "id"]]},
                      {"target_model": "customers", "name": "buyer", "join_pairs": [["bid", "id"]]}]
        }))
        .unwrap();
        let tx = store.write().unwrap();
        put_model(&tx, &model).unwrap();
        tx.commit().unwrap();
        let skeleton = skeleton::Model::from(&model);
        let from_column = model_skeletons(store.conn()).unwrap();
        assert_eq!(from_column, std::slice::from_ref(&skeleton));
        assert_eq!(skeleton.joins[1].name.as_deref(), Some("buyer"));
        assert_eq!(skeleton.measures[0].name, None);
        // A model written before skeletons were kept falls back to its full JSON.
        store
            .conn()
            .execute("DELETE FROM model_skeletons", [])
            .unwrap();
        let from_data = model_skeletons(store.conn()).unwrap();
        assert_eq!(from_data, std::slice::from_ref(&skeleton));
        // A skeleton written before version 11 (no pairs, no keys) is rewritten by the
        // migration to 11.
        store
            .conn()
            .execute(
                "INSERT INTO model_skeletons VALUES ('db', 'orders', ?1)",
                [r#"{"name":"orders","data_source":"db","hidden":true,"columns":[{"name":"id"}]}"#],
            )
            .unwrap();
        assert_ne!(
            model_skeletons(store.conn()).unwrap(),
            std::slice::from_ref(&skeleton)
        );
        store
            .conn()
            .pragma_update(None, "user_version", 10)
            .unwrap();
        drop(store);
        let store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        assert_eq!(model_skeletons(store.conn()).unwrap(), [skeleton]);
        let mut store = store;
        // A deleted model takes its skeleton with it.
        let tx = store.write().unwrap();
        put_model(&tx, &model).unwrap();
        delete_model(&tx, "db", "orders").unwrap();
        tx.commit().unwrap();
        assert!(model_skeletons(store.conn()).unwrap().is_empty());
    }
}
