//! The profiling queries in SQLite's dialect: values come back as SQLite stored them and are
//! printed here by the column's semantic type (docs/spec/profile.md §12.4–12.5).

use rusqlite::types::Value;
use rusqlite::Connection;
use slayer_common::records::DataType;

use super::LiteError;
use crate::query::{min_max_pairs, ranges_sql, MinMax, RangeColumn};
use crate::sample::{self, py_bool, py_float};

/// The one number a counting query ([`crate::query::counting`]) returns.
pub fn count(c: &Connection, sql: &str) -> Result<i64, LiteError> {
    Ok(c.query_row(sql, [], |r| r.get(0))?)
}

/// The top values of `expr` in `from` as SQLite stored them, printed here by the column's
/// type, in the order of [`crate::db::Conn::top_values`].
pub fn top_values(
    c: &Connection,
    from: &str,
    expr: &str,
    data_type: DataType,
) -> Result<Vec<(String, i64)>, LiteError> {
    let limit = sample::QUERIED_VALUES;
    let sql = format!(
        "SELECT {expr} AS v, COUNT(*) AS n FROM {from} WHERE ({expr}) IS NOT NULL GROUP BY 1 ORDER BY n DESC, CAST(v AS TEXT) ASC LIMIT {limit}"
    );
    let mut stmt = c.prepare(&sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, Value>(0)?, r.get::<_, i64>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (value, n) = row?;
        if let Some(text) = value_text(value, data_type) {
            out.push((text, n));
        }
    }
    Ok(out)
}

/// `(min, max)` of each of `columns` (not empty) in one query.
pub fn ranges(
    c: &Connection,
    from: &str,
    columns: &[RangeColumn],
) -> Result<Vec<MinMax>, LiteError> {
    let sql = ranges_sql(from, columns, |col, f| format!("{f}({})", col.expr));
    let ranges = c.query_row(&sql, [], |r| {
        min_max_pairs(columns, |i, col| Ok(value_text(r.get(i)?, col.data_type)))
    })?;
    Ok(ranges)
}

/// A SQLite value as text by the column's semantic type; `None` for NULL.
fn value_text(value: Value, data_type: DataType) -> Option<String> {
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
