//! The profiling queries in MySQL's dialect, printing values as the other engines do
//! (docs/spec/profile.md §12.4–12.5).
//!
//! - Text is grouped and counted by its bytes (in utf8mb4), not by the column's collation: a
//!   case- or accent-insensitive collation, or one that pads trailing spaces, would merge
//!   values the other engines keep apart. Ties are ordered by those bytes, as `COLLATE "C"`.
//! - Booleans (`tinyint(1)`, `bit(1)`) count as numbers and print `True` / `False`.
//! - Zero dates (`0000-00-00`, or a zero month or day) are no date: a range leaves them out
//!   (asked again, for that column only, when the minimum is one).
//! - Doubles come back as `DOUBLE`; dates, timestamps (in UTC, the session's zone) and times of
//!   day as MySQL's text, which is already the printed form but for its trailing zeros.

use slayer_common::records::DataType;

use super::session::{get, MyConn, MyError};
use crate::query::{
    categorical_text, is_time_of_day, min_max_pairs, ranges_sql, MinMax, RangeColumn, TopValues,
};
use crate::sample::{self, normalize_temporal_text, py_float};

/// `expr` as the utf8mb4 bytes it is grouped and compared by.
fn as_bytes(expr: &str) -> String {
    format!("CAST(CONVERT({expr} USING utf8mb4) AS BINARY)")
}

impl MyConn {
    /// The one number a counting query ([`crate::query::counting`]) returns.
    pub fn count(&self, sql: &str) -> Result<i64, MyError> {
        get(&self.query_one(sql)?, 0)
    }

    /// The top values of `expr` in `from`, as [`crate::db::Conn::top_values`] orders them, and
    /// how many distinct values there are, told apart by their bytes: the same scan counts the
    /// groups (a window over them), so a column past the top values is not scanned again.
    pub fn top_values(
        &self,
        from: &str,
        expr: &str,
        data_type: DataType,
    ) -> Result<TopValues, MyError> {
        let limit = sample::QUERIED_VALUES;
        let (grouped, printed) = if data_type == DataType::Boolean {
            (format!("({expr}) + 0"), "CAST(v AS CHAR)".to_owned())
        } else {
            (as_bytes(expr), "CONVERT(v USING utf8mb4)".to_owned())
        };
        let sql = format!(
            "SELECT {printed}, n, COUNT(*) OVER () FROM (SELECT {grouped} AS v, COUNT(*) AS n \
             FROM {from} WHERE ({expr}) IS NOT NULL GROUP BY v) AS counted \
             ORDER BY n DESC, v ASC LIMIT {limit}"
        );
        let mut counted = Vec::new();
        let mut groups = 0;
        for row in self.query(&sql)? {
            let text: String = get(&row, 0)?;
            let text = match (data_type, text.as_str()) {
                (DataType::Boolean, "1") => "true".to_owned(),
                (DataType::Boolean, "0") => "false".to_owned(),
                _ => text,
            };
            counted.push((categorical_text(text, data_type), get(&row, 1)?));
            groups = get(&row, 2)?;
        }
        Ok(TopValues {
            counted,
            distinct: Some(groups),
        })
    }

    /// `(min, max)` of each of `columns` (not empty) in one query; a date column whose
    /// minimum is a zero date (or one with a zero month or day) is asked again without them.
    pub fn ranges(&self, from: &str, columns: &[RangeColumn]) -> Result<Vec<MinMax>, MyError> {
        let mut out = self.ranges_of(from, columns, false)?;
        for (i, c) in columns.iter().enumerate() {
            let zero = |v: &Option<String>| v.as_deref().is_some_and(is_zero_date);
            if is_dated(c) && (zero(&out[i].0) || zero(&out[i].1)) {
                let mut again = self.ranges_of(from, std::slice::from_ref(c), true)?;
                out[i] = again.pop().unwrap_or((None, None));
            }
        }
        Ok(out)
    }

    fn ranges_of(
        &self,
        from: &str,
        columns: &[RangeColumn],
        without_zero_dates: bool,
    ) -> Result<Vec<MinMax>, MyError> {
        let sql = ranges_sql(from, columns, |c, f| range_expr(c, f, without_zero_dates));
        let row = self.query_one(&sql)?;
        min_max_pairs(columns, |i, c| range_value(&row, i, c))
    }
}

/// A calendar date or a point in time (not a time of day).
fn is_dated(col: &RangeColumn) -> bool {
    match col.data_type {
        DataType::Date => true,
        DataType::Timestamp => !is_time_of_day(col.db_type.as_deref()),
        _ => false,
    }
}

/// `0000-00-00`, or a date with a zero month or day, as MySQL prints them.
fn is_zero_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() >= 10 && (&b[5..7] == b"00" || &b[8..10] == b"00")
}

/// `MIN(x)` / `MAX(x)` as a double or as text.
fn range_expr(col: &RangeColumn, agg: &str, without_zero_dates: bool) -> String {
    let x = &col.expr;
    match col.data_type {
        DataType::Double => format!("({agg}({x}) + 0E0)"),
        _ if is_dated(col) && without_zero_dates => format!(
            "CAST({agg}(CASE WHEN MONTH({x}) = 0 OR DAYOFMONTH({x}) = 0 THEN NULL ELSE {x} END) \
             AS CHAR)"
        ),
        _ => format!("CAST({agg}({x}) AS CHAR)"),
    }
}

fn range_value(row: &mysql::Row, i: usize, col: &RangeColumn) -> Result<Option<String>, MyError> {
    Ok(match col.data_type {
        DataType::Double => get::<Option<f64>>(row, i)?.map(py_float),
        _ if is_dated(col) => get::<Option<String>>(row, i)?
            .map(|text| normalize_temporal_text(&text, col.data_type == DataType::Date)),
        _ => get(row, i)?,
    })
}
