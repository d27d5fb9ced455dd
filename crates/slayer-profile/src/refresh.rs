//! Refresh mode: fill the sample fields of existing model records and keep every other byte of
//! them (field order, unknown fields, descriptions, measures) as it was.

use std::io::BufRead;

use serde_json::Value;
use slayer_common::jsonl::{parse_record, read_lines, Record};
use slayer_common::records::Model;

use crate::error::ProfileError;
use crate::profile::TableJob;
use crate::sample::ColumnSamples;
use crate::table::{TableInfo, TableRef};

/// One input line: the record as given, and the model parsed from it when it is one.
#[derive(Debug)]
pub struct InputLine {
    /// 1-based line number.
    pub line: usize,
    /// The record exactly as read.
    pub value: Value,
    /// The parsed model, for `kind: model` lines.
    pub model: Option<Model>,
}

/// Reads records; every bad line is reported, nothing is profiled when there is one.
pub fn read_input(reader: impl BufRead) -> Result<Vec<InputLine>, ProfileError> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for line in read_lines(reader) {
        let (no, text) = line?;
        let model = match parse_record(no, &text) {
            Ok(Record::Model(m)) => Some(m),
            Ok(_) => None,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        // Parsed again untyped so the record goes back out exactly as it came in.
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        out.push(InputLine {
            line: no,
            value,
            model,
        });
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(ProfileError::Input(errors.join("\n")))
    }
}

/// What to do with one model: profile it against a table, or pass it through and why.
pub enum Plan<'a> {
    /// Profile against this table.
    Profile(&'a TableInfo, TableJob),
    /// SQL- or query-backed: passed through unchanged (not a warning).
    SqlBacked,
    /// Its table is not in the source: passed through unchanged, with a warning.
    Missing(String),
}

/// Finds the table behind a model.
pub fn plan<'a>(model: &Model, tables: &'a [TableInfo], source_name: &str) -> Plan<'a> {
    let Some(sql_table) = model.sql_table.as_deref() else {
        return Plan::SqlBacked;
    };
    // A CSV / Parquet table is also known by its model name (the file stem), as in a folder
    // profiled as a warehouse.
    let found = tables.iter().find(|t| {
        t.matches_sql_table(sql_table)
            || (matches!(t.table_ref, TableRef::File { .. }) && t.name == sql_table)
    });
    match found {
        Some(t) => Plan::Profile(t, crate::catalog::job(model, t)),
        None => Plan::Missing(format!(
            "{}: table {sql_table} not found in {source_name}; its samples are left as they were",
            model.canonical_id()
        )),
    }
}

/// The types the warehouse states for the columns a record leaves `UNKNOWN` (an importer's
/// records: a dbt or Cube project says no types), written into both the parsed model and the
/// record, so those columns are profiled too. A column is matched by its SQL when that is a
/// plain column name, else by its name; how many were typed.
pub fn fill_types(model: &mut Model, value: &mut Value, table: &TableInfo) -> usize {
    let mut typed = 0;
    for (i, c) in model.columns.iter_mut().enumerate() {
        if c.data_type != slayer_common::records::DataType::Unknown {
            continue;
        }
        let physical = c.sql.as_deref().unwrap_or(&c.name);
        let Some(found) = table.columns.iter().find(|p| p.name == physical) else {
            continue;
        };
        let data_type = crate::typemap::map_type(&found.db_type);
        if data_type == slayer_common::records::DataType::Unknown {
            continue;
        }
        c.data_type = data_type;
        if let Some(col) = value
            .get_mut("columns")
            .and_then(|cols| cols.get_mut(i))
            .and_then(Value::as_object_mut)
        {
            col.insert("type".into(), Value::String(data_type.as_str().to_owned()));
        }
        typed += 1;
    }
    typed
}

/// Writes samples into a record's `columns[i]`, leaving every other field where it was.
pub fn patch(value: &mut Value, samples: &[(usize, ColumnSamples)]) {
    let Some(columns) = value.get_mut("columns").and_then(Value::as_array_mut) else {
        return;
    };
    for (i, s) in samples {
        let Some(col) = columns.get_mut(*i).and_then(Value::as_object_mut) else {
            continue;
        };
        col.insert("sampled".into(), Value::String(s.sampled.clone()));
        match &s.sampled_values {
            Some(v) => {
                col.insert("sampled_values".into(), Value::from(v.clone()));
            }
            None => {
                col.shift_remove("sampled_values");
            }
        }
        match s.distinct_count {
            Some(n) => {
                col.insert("distinct_count".into(), Value::from(n));
            }
            None => {
                col.shift_remove("distinct_count");
            }
        }
        match &s.value_index {
            Some(v) => {
                col.insert("value_index".into(), Value::from(v.clone()));
            }
            None => {
                col.shift_remove("value_index");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patch_keeps_field_order_and_unknown_fields() {
        let mut v: Value = serde_json::from_str(
            r#"{"kind":"model","name":"o","columns":[{"name":"a","zz":1,"sampled":"old","type":"INT","distinct_count":3}]}"#,
        )
        .unwrap();
        patch(
            &mut v,
            &[(0, crate::sample::range(Some("1".into()), Some("9".into())))],
        );
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"kind":"model","name":"o","columns":[{"name":"a","zz":1,"sampled":"1 .. 9","type":"INT"}]}"#
        );
    }
}
