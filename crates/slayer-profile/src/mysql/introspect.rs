//! What a MySQL / MariaDB server holds, read from `information_schema` in three queries
//! whatever the number of tables: tables, columns, and key columns.
//!
//! - Base tables, system-versioned tables and views; sequences are not models.
//! - The URL's database is the default schema, whose tables are named without it; a URL with
//!   no database lists every database the user can see but the system ones, each table named
//!   `database.table`.
//! - Types are normalised to names the shared type mapping reads (docs/spec/profile.md §12.2):
//!   `tinyint(1)` is `BOOLEAN` (how MySQL declares a boolean), `year` a `SMALLINT`, every blob
//!   and binary string `BLOB`, every geometry `GEOMETRY`, `enum(…)` `ENUM` and `set(…)` `SET`.
//! - `sql_table` quotes a name that needs it with backticks, as MySQL's own SQL does.

use std::collections::HashMap;

use super::session::{get, MyConn, MyError};
use crate::ident::Quoting;
use crate::table::{non_empty, ColumnInfo, ForeignKey, TableInfo, TableRef};

/// Databases that are the server's own.
const SYSTEM: &str = "'mysql', 'information_schema', 'performance_schema', 'sys'";

fn relations_sql(one: bool) -> String {
    format!(
        "SELECT TABLE_SCHEMA, TABLE_NAME, TABLE_TYPE, TABLE_COMMENT FROM information_schema.TABLES \
         WHERE TABLE_TYPE IN ('BASE TABLE', 'VIEW', 'SYSTEM VERSIONED') AND {}",
        schema_filter(one, "TABLE_SCHEMA")
    )
}

fn columns_sql(one: bool) -> String {
    format!(
        "SELECT TABLE_SCHEMA, TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COLUMN_COMMENT \
         FROM information_schema.COLUMNS WHERE {} \
         ORDER BY TABLE_SCHEMA, TABLE_NAME, ORDINAL_POSITION",
        schema_filter(one, "TABLE_SCHEMA")
    )
}

/// Key columns from `KEY_COLUMN_USAGE` alone: MariaDB shows `TABLE_CONSTRAINTS` only to a
/// user with more than SELECT on the table. The primary key is the constraint named
/// `PRIMARY` (in MySQL and MariaDB both); a foreign key names the table it references; a
/// unique key is neither, and is not read.
fn keys_sql(one: bool) -> String {
    format!(
        "SELECT TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, COLUMN_NAME, \
                REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, REFERENCED_COLUMN_NAME \
         FROM information_schema.KEY_COLUMN_USAGE \
         WHERE (CONSTRAINT_NAME = 'PRIMARY' OR REFERENCED_TABLE_NAME IS NOT NULL) AND {} \
         ORDER BY TABLE_SCHEMA, TABLE_NAME, CONSTRAINT_NAME = 'PRIMARY' DESC, CONSTRAINT_NAME, \
                  ORDINAL_POSITION",
        schema_filter(one, "TABLE_SCHEMA")
    )
}

fn schema_filter(one: bool, column: &str) -> String {
    if one {
        format!("{column} = ?")
    } else {
        format!("{column} NOT IN ({SYSTEM})")
    }
}

/// Lists every table and view, sorted by schema and name (byte order, as the other engines).
pub fn list_tables(conn: &MyConn) -> Result<Vec<TableInfo>, MyError> {
    let database = conn.database();
    let params: Vec<mysql::Value> = database.map(mysql::Value::from).into_iter().collect();
    let one = database.is_some();
    let table_schema = |schema: &str| (Some(schema) != database).then(|| schema.to_owned());
    let mut tables: Vec<TableInfo> = Vec::new();
    for row in conn.exec(&relations_sql(one), params.clone())? {
        let schema: String = get(&row, 0)?;
        let name: String = get(&row, 1)?;
        let kind: String = get(&row, 2)?;
        let comment: Option<String> = get(&row, 3)?;
        let is_view = kind == "VIEW";
        // A view's comment is the word VIEW (MySQL and MariaDB both), not the author's.
        let comment = comment.filter(|c| !(is_view && c == "VIEW"));
        let table_ref = TableRef::Table {
            schema: table_schema(&schema),
            name: name.clone(),
        };
        let mut t = TableInfo::new(schema, name, table_ref, is_view, non_empty(comment));
        t.quoting = Quoting::Backtick;
        tables.push(t);
    }
    tables.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
    let by_name: HashMap<(String, String), usize> = tables
        .iter()
        .enumerate()
        .map(|(i, t)| ((t.schema.clone(), t.name.clone()), i))
        .collect();
    for row in conn.exec(&columns_sql(one), params.clone())? {
        let key = (get(&row, 0)?, get(&row, 1)?);
        let Some(&i) = by_name.get(&key) else {
            continue;
        };
        let data_type: String = get(&row, 3)?;
        let column_type: String = get(&row, 4)?;
        let comment: Option<String> = get(&row, 5)?;
        tables[i].columns.push(ColumnInfo::new(
            get(&row, 2)?,
            logical_type(&data_type, &column_type),
            non_empty(comment),
        ));
    }
    let mut last: Option<(usize, String)> = None;
    for row in conn.exec(&keys_sql(one), params)? {
        let key = (get(&row, 0)?, get(&row, 1)?);
        let Some(&i) = by_name.get(&key) else {
            continue;
        };
        let constraint: String = get(&row, 2)?;
        let column: String = get(&row, 3)?;
        let t = &mut tables[i];
        if constraint == "PRIMARY" {
            t.primary_key.push(column);
            continue;
        }
        let ref_schema: Option<String> = get(&row, 4)?;
        let (Some(ref_schema), Some(ref_table), Some(ref_column)) = (
            ref_schema,
            get::<Option<String>>(&row, 5)?,
            get::<Option<String>>(&row, 6)?,
        ) else {
            continue;
        };
        // The columns of one constraint come in order, one row each.
        let same = last.as_ref() == Some(&(i, constraint.clone()));
        match t.foreign_keys.last_mut() {
            Some(fk) if same => {
                fk.columns.push(column);
                fk.ref_columns.push(ref_column);
            }
            _ => t.foreign_keys.push(ForeignKey {
                columns: vec![column],
                ref_schema: table_schema(&ref_schema),
                ref_table,
                ref_columns: vec![ref_column],
            }),
        }
        last = Some((i, constraint));
    }
    Ok(tables)
}

/// The type name the shared mapping reads, from `DATA_TYPE` (`tinyint`) and `COLUMN_TYPE`
/// (`tinyint(1) unsigned`).
pub fn logical_type(data_type: &str, column_type: &str) -> String {
    let data_type = data_type.to_ascii_lowercase();
    let column_type = column_type.to_ascii_lowercase();
    match data_type.as_str() {
        "tinyint" if column_type.starts_with("tinyint(1)") => "BOOLEAN".into(),
        "year" => "SMALLINT".into(),
        "enum" => "ENUM".into(),
        "set" => "SET".into(),
        "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => "BLOB".into(),
        "geometry" | "point" | "linestring" | "polygon" | "multipoint" | "multilinestring"
        | "multipolygon" | "geometrycollection" | "geomcollection" => "GEOMETRY".into(),
        _ => column_type,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typemap::map_type;
    use slayer_common::records::DataType;

    #[test]
    fn mysql_types_map_as_the_other_engines_types() {
        for (data, column, want) in [
            ("tinyint", "tinyint(1)", DataType::Boolean),
            ("tinyint", "tinyint(4)", DataType::Int),
            ("int", "int(10) unsigned", DataType::Int),
            ("bigint", "bigint(20)", DataType::Int),
            ("mediumint", "mediumint(9)", DataType::Int),
            ("year", "year(4)", DataType::Int),
            ("decimal", "decimal(10,2)", DataType::Double),
            ("decimal", "decimal(12,0) unsigned", DataType::Int),
            ("double", "double", DataType::Double),
            ("float", "float unsigned", DataType::Double),
            ("varchar", "varchar(40)", DataType::Text),
            ("mediumtext", "mediumtext", DataType::Text),
            ("char", "char(36)", DataType::Text),
            ("enum", "enum('a','b')", DataType::Text),
            ("set", "set('x','y')", DataType::Text),
            ("uuid", "uuid", DataType::Text),
            ("inet6", "inet6", DataType::Text),
            ("date", "date", DataType::Date),
            ("datetime", "datetime(6)", DataType::Timestamp),
            ("timestamp", "timestamp", DataType::Timestamp),
            ("time", "time", DataType::Timestamp),
            ("bit", "bit(1)", DataType::Boolean),
            ("json", "json", DataType::Unknown),
            ("longblob", "longblob", DataType::Unknown),
            ("varbinary", "varbinary(16)", DataType::Unknown),
            ("multipolygon", "multipolygon", DataType::Unknown),
        ] {
            assert_eq!(map_type(&logical_type(data, column)), want, "{column}");
        }
    }
}
