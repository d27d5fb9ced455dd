//! Profiling one table: a batched `min .. max` query for numeric and temporal columns, a
//! top-values query per categorical column, and the fault rules that keep one bad column or
//! table from stopping the rest.

use slayer_common::records::{Column, DataType, Model};

use crate::db::Conn;
use crate::ident::quote_ident;
use crate::query::RangeColumn;
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

/// Profiles one table on `conn`.
pub fn profile_table(conn: &Conn, job: &TableJob) -> TableProfile {
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
    for c in job.columns.iter().filter(|c| is_categorical(c.data_type)) {
        let result = conn
            .top_values(&job.from, &c.expr, c.data_type)
            .and_then(|top| sample::categorical(top, || conn.count_distinct(&job.from, &c.expr)));
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
