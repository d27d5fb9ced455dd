//! Profiling one table: a batched `min .. max` query for numeric and temporal columns, a
//! top-values query per categorical column, and the fault rules that keep one bad column or
//! table from stopping the rest.
//!
//! Memory: the range query holds two values a column whatever the rows; a top-values query
//! holds one group per distinct value. So on DuckDB one sketch query first estimates each
//! categorical column's distinct values, and a column with more of them than [`Limits`] lets
//! the memory limit hold is grouped over a row sample of that many rows, its distinct count
//! left the estimate ([`sample::categorical_estimated`]). Every other column is counted exactly,
//! as on a small table.

use slayer_common::records::{Column, DataType, Model};

use crate::db::Conn;
use crate::ident::quote_ident;
use crate::query::{RangeColumn, RowSample};
use crate::sample::{self, ColumnSamples};

/// A column to profile: where it sits in the model and how to read it.
#[derive(Debug, Clone)]
pub struct ProfileColumn {
    /// Index into the model's `columns`.
    pub index: usize,
    /// Name, for messages.
    pub name: String,
    /// SQL for the value.
    pub expr: String,
    /// Semantic type.
    pub data_type: DataType,
    /// Database type, when the column is a physical one.
    pub db_type: Option<String>,
}

/// The work for one table.
#[derive(Debug, Clone)]
pub struct TableJob {
    /// `<ds>.<model>`, for messages.
    pub label: String,
    /// The `FROM` item, quoted.
    pub from: String,
    /// Columns to profile.
    pub columns: Vec<ProfileColumn>,
}

/// What profiling one table produced.
#[derive(Debug, Default)]
pub struct TableProfile {
    /// Samples by column index.
    pub samples: Vec<(usize, ColumnSamples)>,
    /// Column failures (`<ds>.<model>.<col>: <cause>`).
    pub warnings: Vec<String>,
    /// The whole table failed (`<ds>.<model>: profiling unavailable: <cause>`).
    pub failure: Option<String>,
}

/// How many groups a top-values query may hold: past them a column is grouped over a sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Distinct values a column may have and still be grouped over all its rows.
    pub exact_groups: i64,
}

impl Limits {
    /// What a group of a `GROUP BY` of text may take in DuckDB: 10⁷ distinct 15-character
    /// values took 78 to 88 bytes each in `COUNT(DISTINCT)` and `GROUP BY`
    /// (docs/performance/profile-memory.md); three times that leaves room for longer values,
    /// the hash table's doubling and the scan's buffers.
    pub const BYTES_PER_GROUP: u64 = 256;

    /// The limits under a DuckDB memory limit of `bytes` (at 256 MiB, 1,048,576 groups); never
    /// fewer groups than a top-values query returns, so a sample still fills the value index.
    pub fn for_memory(bytes: u64) -> Limits {
        let groups = (bytes / Self::BYTES_PER_GROUP).max(sample::QUERIED_VALUES as u64 * 10);
        Limits {
            exact_groups: i64::try_from(groups).unwrap_or(i64::MAX),
        }
    }

    /// The sample a column of `rows` rows and about `distinct` distinct values needs: none when
    /// its values fit, or when the whole table is no bigger than a sample.
    fn sample_for(&self, rows: i64, distinct: i64) -> Option<(RowSample, i64)> {
        if distinct <= self.exact_groups || rows <= self.exact_groups {
            return None;
        }
        let percent = 100.0 * self.exact_groups as f64 / rows as f64;
        Some((RowSample { percent }, distinct))
    }
}

impl Default for Limits {
    /// No sampling: every column counted exactly.
    fn default() -> Limits {
        Limits {
            exact_groups: i64::MAX,
        }
    }
}

/// Whether a column gets profiled: visible, not the model's sole primary key, not UNKNOWN.
pub fn is_profilable(model: &Model, column: &Column) -> bool {
    let pk_count = model.columns.iter().filter(|c| c.primary_key).count();
    let identifier = column.primary_key && pk_count == 1;
    !column.hidden && !identifier && column.data_type != DataType::Unknown
}

/// Categorical columns get top values; the others a range.
pub fn is_categorical(data_type: DataType) -> bool {
    matches!(data_type, DataType::Text | DataType::Boolean)
}

/// The expression for a column: its physical name quoted, or the model's own SQL expression
/// when it is not a plain column of the table (SQL the model's author wrote for this source).
pub fn column_expr(column: &Column, physical: &[String]) -> String {
    let sql = column.sql.as_deref().unwrap_or(&column.name);
    if physical.iter().any(|p| p == sql) || column.sql.is_none() {
        quote_ident(sql)
    } else {
        format!("({sql})")
    }
}

/// Profiles one table on `conn`, within `limits`.
pub fn profile_table(conn: &Conn, job: &TableJob, limits: Limits) -> TableProfile {
    let mut out = TableProfile::default();
    let mut probed = false;
    let mut probe = |out: &mut TableProfile| -> bool {
        if probed {
            return out.failure.is_none();
        }
        probed = true;
        match conn.probe(&job.from) {
            Ok(_) => true,
            Err(e) => {
                out.failure = Some(format!("{}: profiling unavailable: {e}", job.label));
                false
            }
        }
    };
    let ranged: Vec<&ProfileColumn> = job
        .columns
        .iter()
        .filter(|c| !is_categorical(c.data_type))
        .collect();
    let range_col = |c: &ProfileColumn| RangeColumn {
        expr: c.expr.clone(),
        data_type: c.data_type,
        db_type: c.db_type.clone(),
    };
    if !ranged.is_empty() {
        let batch: Vec<RangeColumn> = ranged.iter().map(|c| range_col(c)).collect();
        match conn.ranges(&job.from, &batch) {
            Ok(values) => {
                for (c, (lo, hi)) in ranged.iter().zip(values) {
                    out.samples.push((c.index, sample::range(lo, hi)));
                }
            }
            Err(_) => {
                if !probe(&mut out) {
                    return out;
                }
                // The table answers, so one column broke the batch: find it, keep the rest.
                for c in &ranged {
                    match conn.ranges(&job.from, &[range_col(c)]) {
                        Ok(mut v) => {
                            let (lo, hi) = v.pop().unwrap_or((None, None));
                            out.samples.push((c.index, sample::range(lo, hi)));
                        }
                        Err(e) => out.warnings.push(format!("{}.{}: {e}", job.label, c.name)),
                    }
                }
            }
        }
    }
    let categorical: Vec<&ProfileColumn> = job
        .columns
        .iter()
        .filter(|c| is_categorical(c.data_type))
        .collect();
    let samples = plan_samples(conn, job, &categorical, limits);
    for (k, c) in categorical.iter().enumerate() {
        let result = match samples[k] {
            Some((sample, distinct)) => conn
                .top_values(&job.from, &c.expr, c.data_type, Some(sample))
                .map(|top| sample::categorical_estimated(top.counted, distinct)),
            None => conn
                .top_values(&job.from, &c.expr, c.data_type, None)
                .and_then(|top| {
                    sample::categorical(top.counted, || match top.distinct {
                        Some(n) => Ok(n),
                        None => conn.count_distinct(&job.from, &c.expr),
                    })
                }),
        };
        match result {
            Ok(s) => out.samples.push((c.index, s)),
            Err(e) => {
                if !probe(&mut out) {
                    out.samples.clear();
                    out.warnings.clear();
                    return out;
                }
                out.warnings.push(format!("{}.{}: {e}", job.label, c.name));
            }
        }
    }
    out.samples.sort_by_key(|(i, _)| *i);
    out
}

/// The row sample (and estimated distinct values) of each of `categorical`, for those that need
/// one: no query at all without limits or on an engine without sketches, one `COUNT(*)` on a
/// table no bigger than a sample, and one sketch query past that.
fn plan_samples(
    conn: &Conn,
    job: &TableJob,
    categorical: &[&ProfileColumn],
    limits: Limits,
) -> Vec<Option<(RowSample, i64)>> {
    let mut plan = vec![None; categorical.len()];
    if limits == Limits::default() {
        return plan;
    }
    // Two values at most: nothing to estimate.
    let wide: Vec<usize> = (0..categorical.len())
        .filter(|&k| categorical[k].data_type != DataType::Boolean)
        .collect();
    let exprs: Vec<&str> = wide.iter().map(|&k| categorical[k].expr.as_str()).collect();
    if exprs.is_empty() {
        return plan;
    }
    let past = limits.exact_groups;
    let estimates: Vec<Option<(i64, i64)>> = match conn.estimate(&job.from, &exprs, past) {
        Ok(None) => return plan,
        Ok(Some(e)) => e.distinct.iter().map(|&d| Some((e.rows, d))).collect(),
        // One column can break the batch (a bad expression, a tight memory limit): estimate
        // them one by one. A column whose sketch fails is left to the exact queries, and the
        // fault rules report their failure.
        Err(_) => exprs
            .iter()
            .map(|&expr| match conn.estimate(&job.from, &[expr], past) {
                Ok(Some(e)) => e.distinct.first().map(|&d| (e.rows, d)),
                _ => None,
            })
            .collect(),
    };
    for (&k, estimate) in wide.iter().zip(estimates) {
        plan[k] = estimate.and_then(|(rows, distinct)| limits.sample_for(rows, distinct));
    }
    plan
}

/// Writes samples into a model's columns (`None` fields are removed, as the original does).
pub fn apply(model: &mut Model, samples: Vec<(usize, ColumnSamples)>) {
    for (i, s) in samples {
        if let Some(col) = model.columns.get_mut(i) {
            col.sampled = Some(s.sampled);
            col.sampled_values = s.sampled_values;
            col.distinct_count = s.distinct_count;
            col.value_index = s.value_index;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_column_past_the_limit_of_a_table_past_it_is_sampled() {
        let limits = Limits::for_memory(256 << 20);
        assert_eq!(limits.exact_groups, 1 << 20);
        assert_eq!(limits.sample_for(10_000_000, 50_000), None);
        assert_eq!(limits.sample_for(1 << 20, 2_000_000), None);
        let (sample, distinct) = limits.sample_for(10_000_000, 9_681_120).unwrap();
        assert_eq!(distinct, 9_681_120);
        assert!((sample.percent - 10.48576).abs() < 1e-9, "{sample:?}");
        // However small the limit, a sample still holds more values than a query fetches.
        assert!(Limits::for_memory(1).exact_groups > sample::QUERIED_VALUES as i64);
        assert_eq!(Limits::default().sample_for(i64::MAX, i64::MAX), None);
    }
}
