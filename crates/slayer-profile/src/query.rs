//! What the profiling queries ask of every engine, and the helpers that make the engines print
//! the answers alike (docs/spec/profile.md §12.4–12.5). Each engine's folder runs them in its
//! dialect.

use slayer_common::records::DataType;

use crate::sample::py_bool;

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

/// What a top-values query returns: up to [`crate::sample::QUERIED_VALUES`] `(value, count)`
/// pairs, and the number of distinct values when the engine counted them in the same scan
/// (`None`: a `COUNT(DISTINCT …)` is asked only when the pairs do not tell it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopValues {
    /// `(value, count)`, most frequent first.
    pub counted: Vec<(String, i64)>,
    /// Every distinct non-NULL value of the column, when the query counted them.
    pub distinct: Option<i64>,
}

impl TopValues {
    /// Pairs from a query that did not count the distinct values.
    pub fn uncounted(counted: Vec<(String, i64)>) -> TopValues {
        TopValues {
            counted,
            distinct: None,
        }
    }
}

/// What one bounded scan tells of a table before its categorical columns are grouped: its rows,
/// and an estimate (a HyperLogLog sketch) of each column's distinct values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    /// Rows in the table.
    pub rows: i64,
    /// Estimated distinct non-NULL values, one per column asked about, in order.
    pub distinct: Vec<i64>,
}

/// A Bernoulli sample of a table's rows pushed into a query's scan, with a fixed seed so a
/// profile is the same on every run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowSample {
    /// The share of rows kept, in percent (above 0, below 100).
    pub percent: f64,
}

impl RowSample {
    /// The seed of every sample, so two runs over the same data agree.
    pub const SEED: u32 = 42;
}

/// One row holding each column's minimum and maximum: `SELECT MIN(a), MAX(a), MIN(b), … FROM
/// from`, `aggregate(column, "MIN" | "MAX")` writing each in the engine's dialect.
pub(crate) fn ranges_sql(
    from: &str,
    columns: &[RangeColumn],
    aggregate: impl Fn(&RangeColumn, &str) -> String,
) -> String {
    let select: Vec<String> = columns
        .iter()
        .flat_map(|c| ["MIN", "MAX"].map(|f| aggregate(c, f)))
        .collect();
    format!("SELECT {} FROM {from}", select.join(", "))
}

/// Each column's `(min, max)` from the row of [`ranges_sql`], `value(position, column)` reading
/// one of them.
pub(crate) fn min_max_pairs<E>(
    columns: &[RangeColumn],
    mut value: impl FnMut(usize, &RangeColumn) -> Result<Option<String>, E>,
) -> Result<Vec<MinMax>, E> {
    let mut out = Vec::with_capacity(columns.len());
    for (i, c) in columns.iter().enumerate() {
        out.push((value(2 * i, c)?, value(2 * i + 1, c)?));
    }
    Ok(out)
}

/// The two counting queries, which every dialect writes alike: `SELECT count(*)` of `from`
/// (does the table answer at all?), or the distinct non-NULL values of `expr` in it.
pub(crate) fn counting(from: &str, distinct: Option<&str>) -> String {
    match distinct {
        None => format!("SELECT COUNT(*) FROM {from}"),
        Some(expr) => format!("SELECT COUNT(DISTINCT {expr}) FROM {from}"),
    }
}

/// A time of day (`TIME`, `time with time zone`) rather than a point in time.
pub(crate) fn is_time_of_day(db_type: Option<&str>) -> bool {
    db_type.is_some_and(|t| {
        t.trim().to_ascii_uppercase().starts_with("TIME")
            && !t.to_ascii_uppercase().starts_with("TIMESTAMP")
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

/// The first line of a driver's message: DuckDB and SQLite follow it with context (a caret
/// under the SQL, candidate names) that a one-line warning leaves out.
pub(crate) fn first_line(e: &impl std::fmt::Display) -> String {
    e.to_string().lines().next().unwrap_or("").to_owned()
}
