//! One connection to a source, whichever the engine: DuckDB ([`crate::duckdb`]), SQLite
//! ([`crate::sqlite`]), PostgreSQL ([`crate::pg`]) or MySQL / MariaDB ([`crate::mysql`]). Every call goes to the engine's folder,
//! which speaks its dialect.
//!
//! Queries name tables and columns only through [`crate::ident`]; the values that come back
//! are printed by [`crate::sample`] so every engine gives the same text.

use std::path::PathBuf;

use slayer_common::records::DataType;

use crate::budget::Budget;
use crate::duckdb::{self, DuckError};
use crate::mysql::{MyConn, MyError, MySource};
use crate::pg::{PgConn, PgError, PgSource};
use crate::query::{counting, Estimate, MinMax, RangeColumn, RowSample, TopValues};
use crate::sqlite::{self, LiteError};
use crate::table::{TableInfo, TableRef};

/// How to open more connections to the same source (one per worker).
#[derive(Debug, Clone)]
pub enum Opener {
    /// A DuckDB database file, opened read-only.
    DuckDbFile(PathBuf),
    /// An in-memory DuckDB reading CSV / Parquet files.
    DuckDbMemory,
    /// A SQLite file, opened read-only.
    Sqlite(PathBuf),
    /// A PostgreSQL server, read in read-only transactions.
    Postgres(Box<PgSource>),
    /// A MySQL / MariaDB server, read in a read-only session.
    Mysql(Box<MySource>),
}

/// A live connection.
pub enum Conn {
    /// DuckDB.
    Duck(::duckdb::Connection),
    /// SQLite.
    Lite(rusqlite::Connection),
    /// PostgreSQL.
    Pg(Box<PgConn>),
    /// MySQL / MariaDB.
    My(Box<MyConn>),
}

/// Why an engine failed, in its own words (one line for a query).
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// DuckDB.
    #[error(transparent)]
    Duck(#[from] DuckError),
    /// SQLite.
    #[error(transparent)]
    Lite(#[from] LiteError),
    /// PostgreSQL.
    #[error(transparent)]
    Pg(#[from] PgError),
    /// MySQL / MariaDB.
    #[error(transparent)]
    My(#[from] MyError),
}

impl Opener {
    /// Opens a connection under `budget` (DuckDB only: SQLite keeps its small page cache, and a
    /// server's memory is the server's).
    pub fn open(&self, budget: &Budget) -> Result<Conn, DbError> {
        Ok(match self {
            Opener::DuckDbFile(path) => Conn::Duck(duckdb::open_file(path, budget)?),
            Opener::DuckDbMemory => Conn::Duck(duckdb::open_memory(budget)?),
            Opener::Sqlite(path) => Conn::Lite(sqlite::open(path)?),
            Opener::Postgres(source) => Conn::Pg(Box::new(source.connect()?)),
            Opener::Mysql(source) => Conn::My(Box::new(source.connect()?)),
        })
    }
}

impl Conn {
    /// Another connection to the same source: a DuckDB clone shares the database; the other
    /// engines open a connection of their own.
    pub fn another(&self, opener: &Opener, budget: &Budget) -> Result<Conn, DbError> {
        match self {
            Conn::Duck(c) => Ok(Conn::Duck(duckdb::try_clone(c)?)),
            Conn::Lite(_) | Conn::Pg(_) | Conn::My(_) => opener.open(budget),
        }
    }

    /// Ends a server connection's open transaction once a piece of work is done.
    pub fn finish(&self) {
        if let Conn::Pg(c) = self {
            c.finish();
        }
    }

    /// Lists the tables and views of a database, sorted by schema and name.
    pub fn list_tables(&self) -> Result<Vec<TableInfo>, DbError> {
        Ok(match self {
            Conn::Duck(c) => duckdb::introspect::list_tables(c)?,
            Conn::Lite(c) => sqlite::introspect::list_tables(c)?,
            Conn::Pg(c) => crate::pg::introspect::list_tables(c)?,
            Conn::My(c) => crate::mysql::introspect::list_tables(c)?,
        })
    }

    /// Describes a CSV / Parquet file or glob as one table (read through DuckDB).
    pub fn describe_file(&self, name: String, table_ref: TableRef) -> TableInfo {
        match self {
            Conn::Duck(c) => duckdb::introspect::describe_file(c, name, table_ref),
            Conn::Lite(_) | Conn::Pg(_) | Conn::My(_) => {
                let mut t = TableInfo::new(String::new(), name, table_ref, false, None);
                t.error = Some("files are read through DuckDB".to_owned());
                t
            }
        }
    }

    /// `SELECT count(*)`: does the table answer at all?
    pub fn probe(&self, from: &str) -> Result<i64, DbError> {
        self.count(&counting(from, None))
    }

    /// Up to [`crate::sample::QUERIED_VALUES`] `(value, count)` pairs by frequency, NULLs
    /// dropped, ties by the value's text; counted in `sample` of the rows when one is given
    /// (only DuckDB is given one: [`Conn::estimate`] is what asks for it). MySQL counts the
    /// distinct values in the same scan; the other engines leave that to
    /// [`Conn::count_distinct`].
    pub fn top_values(
        &self,
        from: &str,
        expr: &str,
        data_type: DataType,
        sample: Option<RowSample>,
    ) -> Result<TopValues, DbError> {
        Ok(match self {
            Conn::Duck(c) => TopValues::uncounted(duckdb::queries::top_values(
                c, from, expr, data_type, sample,
            )?),
            Conn::Lite(c) => {
                TopValues::uncounted(sqlite::queries::top_values(c, from, expr, data_type)?)
            }
            Conn::Pg(c) => TopValues::uncounted(c.top_values(from, expr, data_type)?),
            Conn::My(c) => c.top_values(from, expr, data_type)?,
        })
    }

    /// The exact number of distinct non-NULL values.
    pub fn count_distinct(&self, from: &str, expr: &str) -> Result<i64, DbError> {
        self.count(&counting(from, Some(expr)))
    }

    /// The rows of `from` and an estimate of each of `exprs`' distinct values, in one scan of
    /// bounded memory, when `from` has more than `past_rows` rows; `None` on a table no bigger
    /// than that (after a `COUNT(*)` only) or where the engine has no sketch to estimate with
    /// (SQLite, PostgreSQL, MySQL; no query at all), and then the columns are counted exactly.
    pub fn estimate(
        &self,
        from: &str,
        exprs: &[&str],
        past_rows: i64,
    ) -> Result<Option<Estimate>, DbError> {
        Ok(match self {
            Conn::Duck(c) => duckdb::queries::estimate(c, from, exprs, past_rows)?,
            Conn::Lite(_) | Conn::Pg(_) | Conn::My(_) => None,
        })
    }

    fn count(&self, sql: &str) -> Result<i64, DbError> {
        Ok(match self {
            Conn::Duck(c) => duckdb::queries::count(c, sql)?,
            Conn::Lite(c) => sqlite::queries::count(c, sql)?,
            Conn::Pg(c) => c.count(sql)?,
            Conn::My(c) => c.count(sql)?,
        })
    }

    /// `(min, max)` of each column, in one query.
    pub fn ranges(&self, from: &str, columns: &[RangeColumn]) -> Result<Vec<MinMax>, DbError> {
        if columns.is_empty() {
            return Ok(Vec::new());
        }
        Ok(match self {
            Conn::Duck(c) => duckdb::queries::ranges(c, from, columns)?,
            Conn::Lite(c) => sqlite::queries::ranges(c, from, columns)?,
            Conn::Pg(c) => c.ranges(from, columns)?,
            Conn::My(c) => c.ranges(from, columns)?,
        })
    }
}
