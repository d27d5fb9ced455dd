//! What a source holds: its tables and views, their columns, keys and comments.

use crate::db::Conn;
use crate::ident::{quote_ident, quote_literal};
use crate::names::EntityName;

/// Where a model's rows come from, in a form that can be quoted safely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableRef {
    /// A table or view; `schema` is `None` in the default schema.
    Table {
        /// Schema, when not the default one.
        schema: Option<String>,
        /// Table or view name.
        name: String,
    },
    /// A CSV or Parquet file or glob, read by DuckDB.
    File {
        /// The path or glob as given.
        path: String,
        /// Parquet rather than CSV.
        parquet: bool,
    },
}

impl TableRef {
    /// The `FROM` clause item, every name quoted.
    pub fn from_sql(&self) -> String {
        match self {
            TableRef::Table {
                schema: Some(s),
                name,
            } => format!("{}.{}", quote_ident(s), quote_ident(name)),
            TableRef::Table { schema: None, name } => quote_ident(name),
            TableRef::File {
                path,
                parquet: true,
            } => format!("read_parquet({})", quote_literal(path)),
            TableRef::File {
                path,
                parquet: false,
            } => format!("read_csv_auto({})", quote_literal(path)),
        }
    }

    /// The model's `sql_table`: how a person would write the table in a query.
    pub fn sql_table(&self) -> String {
        use crate::ident::display_ident;
        match self {
            TableRef::Table {
                schema: Some(s),
                name,
            } => format!("{}.{}", display_ident(s), display_ident(name)),
            TableRef::Table { schema: None, name } => display_ident(name),
            TableRef::File { path, .. } => quote_literal(path),
        }
    }

    /// Whether a hand-written `sql_table` names this table (quoted or not, schema or not).
    pub fn matches_sql_table(&self, sql_table: &str) -> bool {
        let wanted = sql_table.trim();
        if wanted == self.sql_table() {
            return true;
        }
        match self {
            TableRef::Table { schema, name } => {
                wanted == name
                    || wanted == quote_ident(name)
                    || schema
                        .as_ref()
                        .is_some_and(|s| wanted == format!("{s}.{name}"))
                    || (schema.is_none()
                        && ["main", "public"].iter().any(|default| {
                            wanted == format!("{default}.{name}")
                                || wanted == format!("{default}.{}", quote_ident(name))
                        }))
            }
            TableRef::File { path, .. } => wanted == path,
        }
    }
}

/// One column as the source declares it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnInfo {
    /// Physical name.
    pub name: String,
    /// Declared type.
    pub db_type: String,
    /// Column comment.
    pub comment: Option<String>,
    /// Its leaf name in the model, set by [`crate::names::assign_names`].
    pub leaf: EntityName,
}

impl ColumnInfo {
    /// A column, named as the source spells it.
    pub fn new(name: String, db_type: String, comment: Option<String>) -> ColumnInfo {
        ColumnInfo {
            leaf: EntityName::own(&name),
            name,
            db_type,
            comment,
        }
    }
}

/// A foreign key: `columns` of this table reference `ref_columns` of `ref_table`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    /// Referencing columns.
    pub columns: Vec<String>,
    /// The referenced table's schema, as [`TableRef::Table`] writes it (`None`: the default one).
    pub ref_schema: Option<String>,
    /// Referenced table.
    pub ref_table: String,
    /// Referenced columns.
    pub ref_columns: Vec<String>,
}

/// A table or view of the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableInfo {
    /// Name as the source spells it.
    pub name: String,
    /// Its schema as the source spells it (`main` in DuckDB and SQLite, `public` in
    /// PostgreSQL; empty for files).
    pub schema: String,
    /// Its model name, set by [`crate::names::assign_names`].
    pub model: EntityName,
    /// How to read it.
    pub table_ref: TableRef,
    /// A view rather than a table.
    pub is_view: bool,
    /// Table comment.
    pub comment: Option<String>,
    /// Columns in declared order.
    pub columns: Vec<ColumnInfo>,
    /// Primary-key columns.
    pub primary_key: Vec<String>,
    /// Foreign keys, one per constraint.
    pub foreign_keys: Vec<ForeignKey>,
    /// Why the table could not be described; it is then skipped with a warning.
    pub error: Option<String>,
}

impl TableInfo {
    /// A table with no columns or keys yet.
    pub fn new(
        schema: String,
        name: String,
        table_ref: TableRef,
        is_view: bool,
        comment: Option<String>,
    ) -> TableInfo {
        TableInfo {
            model: EntityName::own(&name),
            name,
            schema,
            table_ref,
            is_view,
            comment,
            columns: Vec::new(),
            primary_key: Vec::new(),
            foreign_keys: Vec::new(),
            error: None,
        }
    }
}

fn first_line(e: impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or("").to_owned()
}

/// A comment, unless blank.
pub fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}

/// Lists the tables and views of a database, sorted by schema and name.
pub fn list_tables(conn: &Conn) -> Result<Vec<TableInfo>, String> {
    match conn {
        Conn::Duck(c) => duck_tables(c),
        Conn::Lite(c) => lite_tables(c),
        Conn::Pg(c) => crate::pg::introspect::list_tables(c),
    }
}

fn duck_tables(c: &duckdb::Connection) -> Result<Vec<TableInfo>, String> {
    let sql = "SELECT schema_name, table_name, comment, false FROM duckdb_tables() \
                 WHERE database_name = current_database() AND NOT internal AND NOT temporary \
               UNION ALL \
               SELECT schema_name, view_name, comment, true FROM duckdb_views() \
                 WHERE database_name = current_database() AND NOT internal AND NOT temporary \
               ORDER BY 1, 2";
    let mut stmt = c.prepare(sql).map_err(first_line)?;
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, bool>(3)?,
            ))
        })
        .map_err(first_line)?;
    let mut tables = Vec::new();
    for row in rows {
        let (schema, name, comment, is_view) = row.map_err(first_line)?;
        let table_ref = TableRef::Table {
            schema: (schema != "main").then_some(schema.clone()),
            name: name.clone(),
        };
        let mut t = TableInfo::new(schema.clone(), name, table_ref, is_view, non_empty(comment));
        if let Err(e) = duck_describe(c, &schema, &mut t) {
            t.error = Some(e);
        }
        tables.push(t);
    }
    Ok(tables)
}

fn duck_describe(c: &duckdb::Connection, schema: &str, t: &mut TableInfo) -> Result<(), String> {
    let mut stmt = c
        .prepare(
            "SELECT column_name, data_type, comment FROM duckdb_columns() \
             WHERE database_name = current_database() AND schema_name = ? AND table_name = ? \
             ORDER BY column_index",
        )
        .map_err(first_line)?;
    let rows = stmt
        .query_map([schema, t.name.as_str()], |r| {
            Ok(ColumnInfo::new(r.get(0)?, r.get(1)?, non_empty(r.get(2)?)))
        })
        .map_err(first_line)?;
    for row in rows {
        t.columns.push(row.map_err(first_line)?);
    }
    if t.is_view {
        // A view whose tables are gone still lists its columns; reading it shows it is broken.
        c.prepare(&format!("SELECT * FROM {} LIMIT 0", t.table_ref.from_sql()))
            .map_err(first_line)?;
        return Ok(());
    }
    // One row per key column; the two lists unnest side by side (a primary key has no
    // referenced columns, so those come back NULL).
    let mut stmt = c
        .prepare(
            "SELECT constraint_index, constraint_type, referenced_table, \
                    generate_subscripts(constraint_column_names, 1) AS pos, \
                    unnest(constraint_column_names), unnest(referenced_column_names) \
             FROM duckdb_constraints() \
             WHERE database_name = current_database() AND schema_name = ? AND table_name = ? \
               AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY') \
             ORDER BY constraint_index, pos",
        )
        .map_err(first_line)?;
    let rows = stmt
        .query_map([schema, t.name.as_str()], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, Option<String>>(5)?,
            ))
        })
        .map_err(first_line)?;
    let mut current: Option<i64> = None;
    for row in rows {
        let (index, kind, ref_table, col, ref_col) = row.map_err(first_line)?;
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

fn lite_tables(c: &rusqlite::Connection) -> Result<Vec<TableInfo>, String> {
    let mut stmt = c
        .prepare(
            "SELECT name, type = 'view' FROM sqlite_schema \
             WHERE type IN ('table', 'view') AND substr(name, 1, 7) <> 'sqlite_' ORDER BY name",
        )
        .map_err(first_line)?;
    let names: Vec<(String, bool)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .map_err(first_line)?
        .collect::<Result<_, _>>()
        .map_err(first_line)?;
    let mut tables = Vec::new();
    for (name, is_view) in names {
        let table_ref = TableRef::Table {
            schema: None,
            name: name.clone(),
        };
        let mut t = TableInfo::new("main".into(), name, table_ref, is_view, None);
        if let Err(e) = lite_describe(c, &mut t) {
            t.error = Some(e);
        }
        tables.push(t);
    }
    Ok(tables)
}

fn lite_describe(c: &rusqlite::Connection, t: &mut TableInfo) -> Result<(), String> {
    let mut stmt = c
        .prepare("SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid")
        .map_err(first_line)?;
    let rows: Vec<(String, String, i64)> = stmt
        .query_map([&t.name], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .map_err(first_line)?
        .collect::<Result<_, _>>()
        .map_err(first_line)?;
    if rows.is_empty() {
        // pragma_table_info is silent about a view it cannot expand; preparing a read is not.
        c.prepare(&format!("SELECT * FROM {} LIMIT 0", t.table_ref.from_sql()))
            .map_err(first_line)?;
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
        c.prepare(&format!("SELECT * FROM {} LIMIT 0", t.table_ref.from_sql()))
            .map_err(first_line)?;
        return Ok(());
    }
    let mut stmt = c
        .prepare("SELECT id, \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?) ORDER BY id, seq")
        .map_err(first_line)?;
    let rows: Vec<(i64, String, String, Option<String>)> = stmt
        .query_map([&t.name], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })
        .map_err(first_line)?
        .collect::<Result<_, _>>()
        .map_err(first_line)?;
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
            fk.ref_columns = lite_primary_key(c, &fk.ref_table)?;
        }
    }
    t.foreign_keys = fks;
    Ok(())
}

fn lite_primary_key(c: &rusqlite::Connection, table: &str) -> Result<Vec<String>, String> {
    let mut stmt = c
        .prepare("SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk")
        .map_err(first_line)?;
    let names = stmt
        .query_map([table], |r| r.get(0))
        .map_err(first_line)?
        .collect::<Result<_, _>>()
        .map_err(first_line)?;
    Ok(names)
}

/// Describes a CSV / Parquet file or glob through DuckDB as one table.
pub fn describe_file(conn: &Conn, name: String, table_ref: TableRef) -> TableInfo {
    let mut t = TableInfo::new(String::new(), name, table_ref, false, None);
    let Conn::Duck(c) = conn else {
        t.error = Some("files are read through DuckDB".to_owned());
        return t;
    };
    let result = (|| -> Result<Vec<ColumnInfo>, String> {
        let sql = format!("DESCRIBE SELECT * FROM {}", t.table_ref.from_sql());
        let mut stmt = c.prepare(&sql).map_err(first_line)?;
        let rows = stmt
            .query_map([], |r| Ok(ColumnInfo::new(r.get(0)?, r.get(1)?, None)))
            .map_err(first_line)?;
        rows.collect::<Result<_, _>>().map_err(first_line)
    })();
    match result {
        Ok(cols) => t.columns = cols,
        Err(e) => t.error = Some(e),
    }
    t
}
