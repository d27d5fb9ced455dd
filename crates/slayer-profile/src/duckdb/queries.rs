//! The profiling queries in DuckDB's dialect: values cast to text for top values, doubles and
//! dates cast before printing, timestamps as microseconds since the epoch (docs/spec/profile.md
//! §12.4–12.5).

use ::duckdb::{Connection, Row};
use slayer_common::records::DataType;

use super::DuckError;
use crate::query::{
    categorical_text, is_time_of_day, min_max_pairs, ranges_sql, Estimate, MinMax, RangeColumn,
    RowSample,
};
use crate::sample::{self, py_float, timestamp_from_micros};

/// The one number a counting query ([`crate::query::counting`]) returns.
pub fn count(c: &Connection, sql: &str) -> Result<i64, DuckError> {
    Ok(c.query_row(sql, [], |r| r.get(0))?)
}

/// The top values of `expr` in `from`, cast to text by DuckDB (the tie order compares that
/// text), as [`crate::db::Conn::top_values`] orders them; with `sample`, counted in a sample
/// of the rows drawn as the scan reads them, so the groups held are at most the sample's rows.
pub fn top_values(
    c: &Connection,
    from: &str,
    expr: &str,
    data_type: DataType,
    sample: Option<RowSample>,
) -> Result<Vec<(String, i64)>, DuckError> {
    let limit = sample::QUERIED_VALUES;
    let sampled = match sample {
        Some(s) => format!(
            " TABLESAMPLE {:.6} PERCENT (bernoulli, {})",
            s.percent,
            RowSample::SEED
        ),
        None => String::new(),
    };
    let sql = format!(
        "SELECT CAST(v AS VARCHAR) AS t, n FROM (SELECT {expr} AS v, COUNT(*) AS n FROM {from}{sampled} WHERE ({expr}) IS NOT NULL GROUP BY 1) ORDER BY n DESC, t ASC LIMIT {limit}"
    );
    let mut stmt = c.prepare(&sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
    let mut out = Vec::new();
    for row in rows {
        let (text, n) = row?;
        out.push((categorical_text(text, data_type), n));
    }
    Ok(out)
}

/// `approx_count_distinct` (HyperLogLog: a few KiB a column, a few percent off) of each of
/// `exprs` in one scan, when `from` has more than `past_rows` rows. The `COUNT(*)` before it is
/// what DuckDB keeps for its tables and Parquet files keep in their footers, so a small table
/// costs no scan.
pub fn estimate(
    c: &Connection,
    from: &str,
    exprs: &[&str],
    past_rows: i64,
) -> Result<Option<Estimate>, DuckError> {
    let rows = count(c, &crate::query::counting(from, None))?;
    if rows <= past_rows {
        return Ok(None);
    }
    let select: Vec<String> = exprs
        .iter()
        .map(|e| format!("approx_count_distinct({e})"))
        .collect();
    let sql = format!("SELECT {} FROM {from}", select.join(", "));
    let distinct = c.query_row(&sql, [], |r| {
        (0..exprs.len())
            .map(|i| r.get::<_, i64>(i))
            .collect::<Result<Vec<_>, _>>()
    })?;
    Ok(Some(Estimate { rows, distinct }))
}

/// `(min, max)` of each of `columns` (not empty) in one query.
pub fn ranges(
    c: &Connection,
    from: &str,
    columns: &[RangeColumn],
) -> Result<Vec<MinMax>, DuckError> {
    let sql = ranges_sql(from, columns, |col, f| {
        range_expr(col, &format!("{f}({})", col.expr))
    });
    let ranges = c.query_row(&sql, [], |r| {
        min_max_pairs(columns, |i, col| range_value(r, i, col))
    })?;
    Ok(ranges)
}

fn is_zoned(db_type: Option<&str>) -> bool {
    db_type.is_some_and(|t| {
        let u = t.to_ascii_uppercase();
        u.contains("WITH TIME ZONE") || u == "TIMESTAMPTZ"
    })
}

/// The SQL that turns `MIN(x)` / `MAX(x)` into something printed the common way.
fn range_expr(col: &RangeColumn, agg: &str) -> String {
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

fn range_value(r: &Row<'_>, i: usize, col: &RangeColumn) -> ::duckdb::Result<Option<String>> {
    Ok(match col.data_type {
        DataType::Double => r.get::<_, Option<f64>>(i)?.map(py_float),
        DataType::Timestamp if !is_time_of_day(col.db_type.as_deref()) => {
            r.get::<_, Option<i64>>(i)?.map(timestamp_from_micros)
        }
        _ => r.get::<_, Option<String>>(i)?,
    })
}
