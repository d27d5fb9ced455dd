//! What a source holds, whatever the engine: its tables and views, their columns, keys and
//! comments, and the names records give them. Every engine's introspection fills these; the
//! naming, catalog building, profiling and refresh read them.

use crate::ident::{display_ident_as, quote_ident, quote_literal, Quoting};

/// The name an object gets in the records, decided by [`crate::names::assign_names`].
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct EntityName {
    /// The name written in the records.
    pub name: String,
    /// Why it differs from the name asked for, when it does (the rename warning's reason).
    pub renamed: Option<String>,
}

impl EntityName {
    /// The object's own name, before [`crate::names::assign_names`] has looked at it.
    pub fn own(name: &str) -> EntityName {
        EntityName {
            name: name.to_owned(),
            renamed: None,
        }
    }
}

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

    /// The model's `sql_table`: how a person would write the table in a query (names quoted
    /// as standard SQL quotes them).
    pub fn sql_table(&self) -> String {
        self.sql_table_as(Quoting::Double)
    }

    /// [`TableRef::sql_table`], names quoted the source's way.
    pub fn sql_table_as(&self, quoting: Quoting) -> String {
        match self {
            TableRef::Table {
                schema: Some(s),
                name,
            } => format!(
                "{}.{}",
                display_ident_as(s, quoting),
                display_ident_as(name, quoting)
            ),
            TableRef::Table { schema: None, name } => display_ident_as(name, quoting),
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
    /// How the source's SQL quotes names (`sql_table` is written that way).
    pub quoting: Quoting,
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
            quoting: Quoting::Double,
        }
    }

    /// The model's `sql_table`, quoted the source's way.
    pub fn sql_table(&self) -> String {
        self.table_ref.sql_table_as(self.quoting)
    }

    /// Whether a hand-written `sql_table` names this table: as [`TableRef::matches_sql_table`],
    /// or written the source's way.
    pub fn matches_sql_table(&self, sql_table: &str) -> bool {
        let wanted = sql_table.trim();
        self.table_ref.matches_sql_table(wanted)
            || (self.quoting != Quoting::Double && wanted == self.sql_table())
    }
}

/// A comment, unless blank.
pub fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.trim().is_empty())
}
