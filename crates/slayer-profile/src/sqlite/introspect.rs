//! What a SQLite database holds, read from `sqlite_schema`, `pragma_table_info` and
//! `pragma_foreign_key_list`.

use rusqlite::Connection;

use super::LiteError;
use crate::table::{ColumnInfo, ForeignKey, TableInfo, TableRef};

/// Lists the tables and views of the database, sorted by name; a table that cannot be described
/// carries its error.
pub fn list_tables(c: &Connection) -> Result<Vec<TableInfo>, LiteError> {
    let mut stmt = c.prepare(
        "SELECT name, type = 'view' FROM sqlite_schema \
             WHERE type IN ('table', 'view') AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name",
    )?;
    let names: Vec<(String, bool)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut tables = Vec::new();
    for (name, is_view) in names {
        let table_ref = TableRef::Table {
            schema: None,
            name: name.clone(),
        };
        let mut t = TableInfo::new("main".into(), name, table_ref, is_view, None);
        if let Err(e) = describe(c, &mut t) {
            t.error = Some(e.to_string());
        }
        tables.push(t);
    }
    Ok(tables)
}

fn describe(c: &Connection, t: &mut TableInfo) -> Result<(), LiteError> {
    let mut stmt = c.prepare("SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid")?;
    let rows: Vec<(String, String, i64)> = stmt
        .query_map([&t.name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<_, _>>()?;
    if rows.is_empty() {
        // pragma_table_info is silent about a view it cannot expand; preparing a read is not.
        c.prepare(&format!("SELECT * FROM {} LIMIT 0", t.table_ref.from_sql()))?;
    }
    let mut pk: Vec<(i64, String)> = Vec::new();
    for (name, db_type, pk_pos) in rows {
        if pk_pos > 0 {
            pk.push((pk_pos, name.clone()));
        }
        t.columns.push(ColumnInfo::new(name, db_type, None));
    }
    pk.sort();
    t.primary_key = pk.into_iter().map(|(_, n)| n).collect();
    if t.is_view {
        c.prepare(&format!("SELECT * FROM {} LIMIT 0", t.table_ref.from_sql()))?;
        return Ok(());
    }
    let mut stmt = c.prepare(
        "SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq",
    )?;
    let rows: Vec<(i64, String, String, Option<String>)> = stmt
        .query_map([&t.name], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<_, _>>()?;
    let mut current: Option<(i64, ForeignKey)> = None;
    let mut fks = Vec::new();
    for (id, ref_table, from, to) in rows {
        if current.as_ref().is_none_or(|(cid, _)| *cid != id) {
            if let Some((_, fk)) = current.take() {
                fks.push(fk);
            }
            current = Some((
                id,
                ForeignKey {
                    columns: vec![],
                    ref_schema: None,
                    ref_table: ref_table.clone(),
                    ref_columns: vec![],
                },
            ));
        }
        if let Some((_, fk)) = current.as_mut() {
            fk.columns.push(from);
            fk.ref_columns.extend(to);
        }
    }
    fks.extend(current.map(|(_, fk)| fk));
    for fk in &mut fks {
        if fk.ref_columns.is_empty() {
            // `REFERENCES parent` without columns means the parent's primary key.
            fk.ref_columns = primary_key(c, &fk.ref_table)?;
        }
    }
    t.foreign_keys = fks;
    Ok(())
}

fn primary_key(c: &Connection, table: &str) -> Result<Vec<String>, LiteError> {
    let mut stmt = c.prepare("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk")?;
    let names = stmt
        .query_map([table], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    Ok(names)
}
