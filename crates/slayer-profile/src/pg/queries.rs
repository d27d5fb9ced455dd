//! The profiling queries in PostgreSQL's dialect, printing values as the other engines do
//! (docs/spec/profile.md §12.4–12.5): top values as text ordered by count and then by the text's
//! bytes (`COLLATE "C"`, as DuckDB and SQLite order), doubles as `float8`, dates as ISO text, and
//! timestamps as microseconds since the epoch.

use slayer_common::records::DataType;

use super::session::{get, PgConn, PgError};
use crate::query::{
    categorical_text, is_time_of_day, min_max_pairs, ranges_sql, MinMax, RangeColumn,
};
use crate::sample::{self, py_float, timestamp_from_micros};

impl PgConn {
    /// The one number a counting query ([`crate::query::counting`]) returns.
    pub fn count(&self, sql: &str) -> Result<i64, PgError> {
        get(&self.query_one(sql)?, 0)
    }

    /// The top values of `expr` in `from`, cast to text on the server and tie-ordered by that
    /// text's bytes (`COLLATE "C"`), as [`crate::db::Conn::top_values`] orders them.
    pub fn top_values(
        &self,
        from: &str,
        expr: &str,
        data_type: DataType,
    ) -> Result<Vec<(String, i64)>, PgError> {
        let limit = sample::QUERIED_VALUES;
        let sql = format!(
            "SELECT CAST(v AS text), n FROM (SELECT {expr} AS v, COUNT(*) AS n FROM {from} \
             WHERE ({expr}) IS NOT NULL GROUP BY 1) AS counted \
             ORDER BY n DESC, CAST(v AS text) COLLATE \"C\" ASC LIMIT {limit}"
        );
        let mut out = Vec::new();
        for row in self.query(&sql, &[])? {
            out.push((categorical_text(get(&row, 0)?, data_type), get(&row, 1)?));
        }
        Ok(out)
    }

    /// `(min, max)` of each of `columns` (not empty) in one query.
    pub fn ranges(&self, from: &str, columns: &[RangeColumn]) -> Result<Vec<MinMax>, PgError> {
        let sql = ranges_sql(from, columns, |c, f| {
            range_expr(c, &format!("{f}({})", c.expr))
        });
        let row = self.query_one(&sql)?;
        min_max_pairs(columns, |i, c| range_value(&row, i, c))
    }
}

fn is_money(db_type: Option<&str>) -> bool {
    db_type.is_some_and(|t| t.trim().eq_ignore_ascii_case("money"))
}

/// The SQL that turns `MIN(x)` / `MAX(x)` into `float8` (doubles) or text.
fn range_expr(col: &RangeColumn, agg: &str) -> String {
    let db_type = col.db_type.as_deref();
    match col.data_type {
        DataType::Double if is_money(db_type) => format!("CAST(CAST({agg} AS numeric) AS float8)"),
        DataType::Double => format!("CAST({agg} AS float8)"),
        DataType::Date => format!("CAST(CAST({agg} AS date) AS text)"),
        DataType::Timestamp if is_time_of_day(db_type) => format!("CAST({agg} AS text)"),
        // Microseconds since the epoch (UTC for zoned values); infinity stays as its text.
        DataType::Timestamp => format!(
            "CASE WHEN isfinite({agg}) \
             THEN CAST(CAST(EXTRACT(EPOCH FROM {agg}) * 1000000 AS int8) AS text) \
             ELSE CAST({agg} AS text) END"
        ),
        _ => format!("CAST({agg} AS text)"),
    }
}

fn range_value(
    row: &postgres::Row,
    i: usize,
    col: &RangeColumn,
) -> Result<Option<String>, PgError> {
    Ok(match col.data_type {
        DataType::Double => get::<Option<f64>>(row, i)?.map(py_float),
        DataType::Timestamp if !is_time_of_day(col.db_type.as_deref()) => {
            get::<Option<String>>(row, i)?
                .map(|text| text.parse().map_or(text, timestamp_from_micros))
        }
        _ => get(row, i)?,
    })
}
