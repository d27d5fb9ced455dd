//! What a DuckDB database holds, read from `duckdb_tables()`, `duckdb_views()`,
//! `duckdb_columns()` and `duckdb_constraints()`; and a CSV / Parquet file described as a table.

use ::duckdb::Connection;

use super::DuckError;
use crate::table::{non_empty, ColumnInfo, ForeignKey, TableInfo, TableRef};

/// Lists the tables and views of the database, sorted by schema and name; a table that cannot
/// be described carries its error.
pub fn list_tables(c: &Connection) -> Result<Vec<TableInfo>, DuckError> {
    let sql = "SELECT schema_name, table_name, comment, false FROM duckdb_tables() \
                 WHERE database_name = current_database() AND NOT internal AND NOT temporary \
               UNION ALL \
               SELECT schema_name, view_name, comment, true FROM duckdb_views() \
                 WHERE database_name = current_database() AND NOT internal AND NOT temporary \
               ORDER BY 1, 2";
    let mut stmt = c.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, bool>(3)?,
        ))
    })?;
    let mut tables = Vec::new();
    for row in rows {
        let (schema, name, comment, is_view) = row?;
        let table_ref = TableRef::Table {
            schema: (schema != "main").then_some(schema.clone()),
            name: name.clone(),
        };
        let mut t = TableInfo::new(schema.clone(), name, table_ref, is_view, non_empty(comment));
        if let Err(e) = describe(c, &schema, &mut t) {
            t.error = Some(e.to_string());
        }
        tables.push(t);
    }
    Ok(tables)
}

fn describe(c: &Connection, schema: &str, t: &mut TableInfo) -> Result<(), DuckError> {
    let mut stmt = c.prepare(
        "SELECT column_name, data_type, comment FROM duckdb_columns() \
             WHERE database_name = current_database() AND schema_name = ? AND table_name = ? \
             ORDER BY column_index",
    )?;
    let rows = stmt.query_map([schema, t.name.as_str()], |r| {
        Ok(ColumnInfo::new(r.get(0)?, r.get(1)?, non_empty(r.get(2)?)))
    })?;
    for row in rows {
        t.columns.push(row?);
    }
    if t.is_view {
        // A view whose tables are gone still lists its columns; reading it shows it is broken.
        c.prepare(&format!("SELECT * FROM {} LIMIT 0", t.table_ref.from_sql()))?;
        return Ok(());
    }
    // One row per key column; the two lists unnest side by side (a primary key has no
    // referenced columns, so those come back NULL).
    let mut stmt = c.prepare(
        "SELECT constraint_index, constraint_type, referenced_table, \
                    generate_subscripts(constraint_column_names, 1) AS pos, \
                    unnest(constraint_column_names), unnest(referenced_column_names) \
             FROM duckdb_constraints() \
             WHERE database_name = current_database() AND schema_name = ? AND table_name = ? \
               AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') \
             ORDER BY constraint_index, pos",
    )?;
    let rows = stmt.query_map([schema, t.name.as_str()], |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, Option<String>>(4)?,
            r.get::<_, Option<String>>(5)?,
        ))
    })?;
    let mut current: Option<i64> = None;
    for row in rows {
        let (index, kind, ref_table, col, ref_col) = row?;
        if kind == "PRIMARY KEY" {
            t.primary_key.extend(col);
            continue;
        }
        let Some(ref_table) = ref_table else { continue };
        if current != Some(index) {
            current = Some(index);
            let ref_schema = match &t.table_ref {
                TableRef::Table { schema, .. } => schema.clone(),
                TableRef::File { .. } => None,
            };
            t.foreign_keys.push(ForeignKey {
                columns: vec![],
                ref_schema,
                ref_table,
                ref_columns: vec![],
            });
        }
        if let Some(fk) = t.foreign_keys.last_mut() {
            fk.columns.extend(col);
            fk.ref_columns.extend(ref_col);
        }
    }
    Ok(())
}

/// Describes a CSV / Parquet file or glob through DuckDB as one table.
pub fn describe_file(c: &Connection, name: String, table_ref: TableRef) -> TableInfo {
    let mut t = TableInfo::new(String::new(), name, table_ref, false, None);
    match file_columns(c, &t.table_ref) {
        Ok(cols) => t.columns = cols,
        Err(e) => t.error = Some(e.to_string()),
    }
    t
}

fn file_columns(c: &Connection, table_ref: &TableRef) -> Result<Vec<ColumnInfo>, DuckError> {
    let sql = format!("DESCRIBE SELECT * FROM {}", table_ref.from_sql());
    let mut stmt = c.prepare(&sql)?;
    let rows = stmt.query_map([], |r| Ok(ColumnInfo::new(r.get(0)?, r.get(1)?, None)))?;
    Ok(rows.collect::<Result<_, _>>()?)
}
