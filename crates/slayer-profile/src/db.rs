//! One connection to a source, DuckDB, SQLite or PostgreSQL ([`crate::pg`]), and the profiling
//! queries run through it.
//!
//! Queries name tables and columns only through [`crate::ident`]; the values that come back
//! are printed by [`crate::sample`] so both engines give the same text.

use std::path::{Path, PathBuf};

use slayer_common::records::DataType;

use crate::pg::{PgConn, PgSource};
use crate::sample::{self, py_bool, py_float, timestamp_from_micros};

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
}

/// A live connection.
pub enum Conn {
    /// DuckDB.
    Duck(duckdb::Connection),
    /// SQLite.
    Lite(rusqlite::Connection),
    /// PostgreSQL.
    Pg(Box<PgConn>),
}

/// The printed `(min, max)` of a column; `None` for NULL.
pub type MinMax = (Option<String>, Option<String>);

/// One numeric or temporal column of a batched `min .. max` query.
#[derive(Debug, Clone)]
pub struct RangeColumn {
    /// The column's SQL (a quoted identifier, or the model's own expression).
    pub expr: String,
    /// Semantic type: INT, DOUBLE, DATE or TIMESTAMP.
    pub data_type: DataType,
    /// The database's type name when known (TIME and zoned timestamps print differently).
    pub db_type: Option<String>,
}

impl Opener {
    /// Opens a connection; `threads` bounds DuckDB's own parallelism per connection.
    pub fn open(&self, threads: usize) -> Result<Conn, String> {
        match self {
            Opener::DuckDbFile(path) => {
                let config = duck_config(threads, true)?;
                duckdb::Connection::open_with_flags(path, config)
                    .map_err(|e| e.to_string())
                    .and_then(utc_session)
                    .map(Conn::Duck)
            }
            Opener::DuckDbMemory => {
                let config = duck_config(threads, false)?;
                duckdb::Connection::open_in_memory_with_flags(config)
                    .map_err(|e| e.to_string())
                    .and_then(utc_session)
                    .map(Conn::Duck)
            }
            Opener::Sqlite(path) => open_sqlite(path).map(Conn::Lite),
            Opener::Postgres(source) => source.connect().map(|c| Conn::Pg(Box::new(c))),
        }
    }
}

fn duck_config(threads: usize, read_only: bool) -> Result<duckdb::Config, String> {
    let mut config = duckdb::Config::default()
        .threads(threads.max(1) as i64)
        .and_then(|c| c.enable_autoload_extension(false))
        .map_err(|e| e.to_string())?;
    if read_only {
        config = config
            .access_mode(duckdb::AccessMode::ReadOnly)
            .map_err(|e| e.to_string())?;
    }
    Ok(config)
}

/// Pins the database's time zone to UTC where the ICU extension is linked (the prebuilt
/// library has it, a `bundled-duckdb` build does not), so zoned values convert as they do
/// without ICU whatever `TZ` or `/etc/localtime` say. Global, so the workers' clones share it.
fn utc_session(conn: duckdb::Connection) -> Result<duckdb::Connection, String> {
    let has_time_zone: bool = conn
        .query_row(
            "SELECT count(*) > 0 FROM duckdb_settings() WHERE name = 'TimeZone'",
            [],
            |r| r.get(0),
        )
        .map_err(|e| e.to_string())?;
    if has_time_zone {
        conn.execute_batch("SET GLOBAL TimeZone = 'UTC'; SET GLOBAL Calendar = 'gregorian'")
            .map_err(|e| e.to_string())?;
    }
    Ok(conn)
}

fn open_sqlite(path: &Path) -> Result<rusqlite::Connection, String> {
    use rusqlite::OpenFlags;
    let conn = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| e.to_string())?;
    conn.busy_timeout(std::time::Duration::from_secs(30))
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

fn first_line(e: impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or("").to_owned()
}

impl Conn {
    /// Ends a server connection's open transaction once a piece of work is done.
    pub fn finish(&self) {
        if let Conn::Pg(c) = self {
            c.finish();
        }
    }

    /// `SELECT count(*)`: does the table answer at all?
    pub fn probe(&self, from: &str) -> Result<i64, String> {
        let sql = format!("SELECT COUNT(*) FROM {from}");
        match self {
            Conn::Duck(c) => c.query_row(&sql, [], |r| r.get(0)).map_err(first_line),
            Conn::Lite(c) => c.query_row(&sql, [], |r| r.get(0)).map_err(first_line),
            Conn::Pg(c) => c.probe(from),
        }
    }

    /// Up to 51 `(value, count)` pairs by frequency, NULLs dropped, ties by the value's text.
    pub fn top_values(
        &self,
        from: &str,
        expr: &str,
        data_type: DataType,
    ) -> Result<Vec<(String, i64)>, String> {
        let limit = sample::TOP_VALUES + 1;
        match self {
            Conn::Pg(c) => c.top_values(from, expr, data_type),
            Conn::Duck(c) => {
                let sql = format!(
                    "SELECT CAST(v AS VARCHAR) AS t, n FROM (SELECT {expr} AS v, COUNT(*) AS n FROM {from} WHERE ({expr}) IS NOT NULL GROUP BY 1) ORDER BY n DESC, t ASC LIMIT {limit}"
                );
                let mut stmt = c.prepare(&sql).map_err(first_line)?;
                let rows = stmt
                    .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
                    .map_err(first_line)?;
                let mut out = Vec::new();
                for row in rows {
                    let (text, n) = row.map_err(first_line)?;
                    out.push((categorical_text(text, data_type), n));
                }
                Ok(out)
            }
            Conn::Lite(c) => {
                let sql = format!(
                    "SELECT {expr} AS v, COUNT(*) AS n FROM {from} WHERE ({expr}) IS NOT NULL GROUP BY 1 ORDER BY n DESC, CAST(v AS TEXT) ASC LIMIT {limit}"
                );
                let mut stmt = c.prepare(&sql).map_err(first_line)?;
                let rows = stmt
                    .query_map([], |r| {
                        Ok((r.get::<_, rusqlite::types::Value>(0)?, r.get::<_, i64>(1)?))
                    })
                    .map_err(first_line)?;
                let mut out = Vec::new();
                for row in rows {
                    let (value, n) = row.map_err(first_line)?;
                    if let Some(text) = sqlite_text(value, data_type) {
                        out.push((text, n));
                    }
                }
                Ok(out)
            }
        }
    }

    /// The exact number of distinct non-NULL values.
    pub fn count_distinct(&self, from: &str, expr: &str) -> Result<i64, String> {
        let sql = format!("SELECT COUNT(DISTINCT {expr}) FROM {from}");
        match self {
            Conn::Duck(c) => c.query_row(&sql, [], |r| r.get(0)).map_err(first_line),
            Conn::Lite(c) => c.query_row(&sql, [], |r| r.get(0)).map_err(first_line),
            Conn::Pg(c) => c.count_distinct(from, expr),
        }
    }

    /// `(min, max)` of each column, in one query.
    pub fn ranges(&self, from: &str, columns: &[RangeColumn]) -> Result<Vec<MinMax>, String> {
        if columns.is_empty() {
            return Ok(Vec::new());
        }
        match self {
            Conn::Pg(c) => c.ranges(from, columns),
            Conn::Duck(c) => {
                let select: Vec<String> = columns
                    .iter()
                    .flat_map(|col| {
                        ["MIN", "MAX"].map(|f| duck_range_expr(col, &format!("{f}({})", col.expr)))
                    })
                    .collect();
                let sql = format!("SELECT {} FROM {from}", select.join(", "));
                c.query_row(&sql, [], |r| {
                    let mut out = Vec::with_capacity(columns.len());
                    for (i, col) in columns.iter().enumerate() {
                        out.push((
                            duck_range_value(r, 2 * i, col)?,
                            duck_range_value(r, 2 * i + 1, col)?,
                        ));
                    }
                    Ok(out)
                })
                .map_err(first_line)
            }
            Conn::Lite(c) => {
                let select: Vec<String> = columns
                    .iter()
                    .flat_map(|col| [format!("MIN({})", col.expr), format!("MAX({})", col.expr)])
                    .collect();
                let sql = format!("SELECT {} FROM {from}", select.join(", "));
                c.query_row(&sql, [], |r| {
                    let mut out = Vec::with_capacity(columns.len());
                    for (i, col) in columns.iter().enumerate() {
                        let lo = sqlite_text(r.get(2 * i)?, col.data_type);
                        let hi = sqlite_text(r.get(2 * i + 1)?, col.data_type);
                        out.push((lo, hi));
                    }
                    Ok(out)
                })
                .map_err(first_line)
            }
        }
    }
}

/// A time of day (`TIME`, `time with time zone`) rather than a point in time.
pub(crate) fn is_time_of_day(db_type: Option<&str>) -> bool {
    db_type.is_some_and(|t| {
        t.trim().to_ascii_uppercase().starts_with("TIME")
            && !t.to_ascii_uppercase().starts_with("TIMESTAMP")
    })
}

fn is_zoned(db_type: Option<&str>) -> bool {
    db_type.is_some_and(|t| {
        let u = t.to_ascii_uppercase();
        u.contains("WITH TIME ZONE") || u == "TIMESTAMPTZ"
    })
}

/// The SQL that turns `MIN(x)` / `MAX(x)` into something printed the common way.
fn duck_range_expr(col: &RangeColumn, agg: &str) -> String {
    let db_type = col.db_type.as_deref();
    match col.data_type {
        DataType::Double => format!("CAST({agg} AS DOUBLE)"),
        DataType::Date => format!("CAST(CAST({agg} AS DATE) AS VARCHAR)"),
        DataType::Timestamp if is_time_of_day(db_type) => format!("CAST({agg} AS VARCHAR)"),
        DataType::Timestamp if is_zoned(db_type) => format!("epoch_us({agg})"),
        DataType::Timestamp => format!("epoch_us(CAST({agg} AS TIMESTAMP))"),
        _ => format!("CAST({agg} AS VARCHAR)"),
    }
}

fn duck_range_value(
    r: &duckdb::Row<'_>,
    i: usize,
    col: &RangeColumn,
) -> duckdb::Result<Option<String>> {
    Ok(match col.data_type {
        DataType::Double => r.get::<_, Option<f64>>(i)?.map(py_float),
        DataType::Timestamp if !is_time_of_day(col.db_type.as_deref()) => {
            r.get::<_, Option<i64>>(i)?.map(timestamp_from_micros)
        }
        _ => r.get::<_, Option<String>>(i)?,
    })
}

/// A categorical value the engine printed as text (`true`/`false` for booleans), the common way.
pub(crate) fn categorical_text(text: String, data_type: DataType) -> String {
    match (data_type, text.as_str()) {
        (DataType::Boolean, "true") => py_bool(true),
        (DataType::Boolean, "false") => py_bool(false),
        _ => text,
    }
}

/// A SQLite value as text by the column's semantic type; `None` for NULL.
fn sqlite_text(value: rusqlite::types::Value, data_type: DataType) -> Option<String> {
    use rusqlite::types::Value;
    Some(match value {
        Value::Null => return None,
        Value::Integer(i) => match data_type {
            DataType::Boolean if i == 0 || i == 1 => py_bool(i == 1),
            DataType::Double => py_float(i as f64),
            _ => i.to_string(),
        },
        Value::Real(x) => py_float(x),
        Value::Text(t) => match data_type {
            DataType::Date => sample::normalize_temporal_text(&t, true),
            DataType::Timestamp => sample::normalize_temporal_text(&t, false),
            DataType::Boolean => match t.to_ascii_lowercase().as_str() {
                "true" | "t" | "1" => py_bool(true),
                "false" | "f" | "0" => py_bool(false),
                _ => t,
            },
            _ => t,
        },
        Value::Blob(b) => format!("<{} bytes>", b.len()),
    })
}
