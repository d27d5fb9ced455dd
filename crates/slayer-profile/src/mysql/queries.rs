//! The profiling queries in MySQL's dialect, printing values as the other engines do
//! (docs/spec/profile.md §12.4–12.5).
//!
//! - Text is grouped and counted by its bytes (in utf8mb4), not by the column's collation: a
//!   case- or accent-insensitive collation, or one that pads trailing spaces, would merge
//!   values the other engines keep apart. Ties are ordered by those bytes, as `COLLATE "C"`.
//! - Booleans (`tinyint(1)`, `bit(1)`) count as numbers and print `True` / `False`.
//! - Zero dates (`0000-00-00`, or a zero month or day) are no date: a range leaves them out.
//! - Doubles come back as `DOUBLE`, dates as ISO text, timestamps as microseconds since the
//!   epoch (the session is in UTC), times of day as their text.

use slayer_common::records::DataType;

use super::session::{get, MyConn, MyError};
use crate::query::{categorical_text, is_time_of_day, MinMax, RangeColumn};
use crate::sample::{self, py_float, timestamp_from_micros};

/// `expr` as the utf8mb4 bytes it is grouped and compared by.
fn as_bytes(expr: &str) -> String {
    format!("CAST(CONVERT({expr} USING utf8mb4) AS BINARY)")
}

impl MyConn {
    /// The one number a counting query ([`crate::query::counting`]) returns.
    pub fn count(&self, sql: &str) -> Result<i64, MyError> {
        get(&self.query_one(sql)?, 0)
    }

    /// The distinct non-NULL values of `expr`, told apart by their bytes (as
    /// [`MyConn::top_values`] groups them).
    pub fn count_distinct(&self, from: &str, expr: &str) -> Result<i64, MyError> {
        self.count(&format!(
            "SELECT COUNT(DISTINCT {}) FROM {from}",
            as_bytes(expr)
        ))
    }

    /// The top values of `expr` in `from`, as [`crate::db::Conn::top_values`] orders them.
    pub fn top_values(
        &self,
        from: &str,
        expr: &str,
        data_type: DataType,
    ) -> Result<Vec<(String, i64)>, MyError> {
        let limit = sample::QUERIED_VALUES;
        let (grouped, printed) = if data_type == DataType::Boolean {
            (format!("({expr}) + 0"), "CAST(v AS CHAR)".to_owned())
        } else {
            (as_bytes(expr), "CONVERT(v USING utf8mb4)".to_owned())
        };
        let sql = format!(
            "SELECT {printed}, n FROM (SELECT {grouped} AS v, COUNT(*) AS n FROM {from} \
             WHERE ({expr}) IS NOT NULL GROUP BY v) AS counted \
             ORDER BY n DESC, v ASC LIMIT {limit}"
        );
        let mut out = Vec::new();
        for row in self.query(&sql)? {
            let text: String = get(&row, 0)?;
            let text = match (data_type, text.as_str()) {
                (DataType::Boolean, "1") => "true".to_owned(),
                (DataType::Boolean, "0") => "false".to_owned(),
                _ => text,
            };
            out.push((categorical_text(text, data_type), get(&row, 1)?));
        }
        Ok(out)
    }

    /// `(min, max)` of each of `columns` (not empty) in one query.
    pub fn ranges(&self, from: &str, columns: &[RangeColumn]) -> Result<Vec<MinMax>, MyError> {
        let select: Vec<String> = columns
            .iter()
            .flat_map(|c| ["MIN", "MAX"].map(|f| range_expr(c, f)))
            .collect();
        let row = self.query_one(&format!("SELECT {} FROM {from}", select.join(", ")))?;
        let mut out = Vec::with_capacity(columns.len());
        for (i, c) in columns.iter().enumerate() {
            out.push((
                range_value(&row, 2 * i, c)?,
                range_value(&row, 2 * i + 1, c)?,
            ));
        }
        Ok(out)
    }
}

/// `MIN(x)` / `MAX(x)` as a double or as text.
fn range_expr(col: &RangeColumn, agg: &str) -> String {
    let x = &col.expr;
    // A zero date, or one with a zero month or day, is no date.
    let dated = format!("CASE WHEN MONTH({x}) = 0 OR DAYOFMONTH({x}) = 0 THEN NULL ELSE {x} END");
    match col.data_type {
        DataType::Double => format!("({agg}({x}) + 0E0)"),
        DataType::Date => format!("CAST({agg}({dated}) AS CHAR)"),
        DataType::Timestamp if is_time_of_day(col.db_type.as_deref()) => {
            format!("CAST({agg}({x}) AS CHAR)")
        }
        DataType::Timestamp => format!(
            "CAST(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', {agg}({dated})) AS CHAR)"
        ),
        _ => format!("CAST({agg}({x}) AS CHAR)"),
    }
}

fn range_value(row: &mysql::Row, i: usize, col: &RangeColumn) -> Result<Option<String>, MyError> {
    Ok(match col.data_type {
        DataType::Double => get::<Option<f64>>(row, i)?.map(py_float),
        DataType::Timestamp if !is_time_of_day(col.db_type.as_deref()) => {
            get::<Option<String>>(row, i)?
                .map(|text| text.parse().map_or(text, timestamp_from_micros))
        }
        _ => get(row, i)?,
    })
}
