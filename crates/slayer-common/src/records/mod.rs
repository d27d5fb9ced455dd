//! The JSON-lines record types that flow between the stages.
//!
//! Field names follow the Python original's pydantic models so a SLayer YAML project converts
//! without loss. Fields this crate does not interpret (connection settings, `meta`, future
//! fields) are kept verbatim in `extra` and written back out unchanged.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

mod memory;
pub mod skeleton;
mod texts;

pub use memory::{
    check_event_time, check_timestamp, BadEventTime, BadTimestamp, Memory, Occasion, Standing,
    Tier, UnknownTier,
};
pub use texts::{cut_long, Text};

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

/// A datasource: a warehouse connection plus its description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Datasource {
    /// Unique name; the canonical id of the datasource.
    pub name: String,
    /// Warehouse dialect (`duckdb`, `sqlite`, `postgres`, …).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub source_type: Option<String>,
    /// Rendered into the datasource doc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Connection settings and any other field, kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The column types of the semantic layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "UPPERCASE")]
#[allow(missing_docs)]
pub enum DataType {
    #[default]
    Text,
    Int,
    Double,
    Boolean,
    Date,
    Timestamp,
    Unknown,
}

impl DataType {
    /// The value as the renderer prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            DataType::Text => "TEXT",
            DataType::Int => "INT",
            DataType::Double => "DOUBLE",
            DataType::Boolean => "BOOLEAN",
            DataType::Date => "DATE",
            DataType::Timestamp => "TIMESTAMP",
            DataType::Unknown => "UNKNOWN",
        }
    }

    /// Parses a type name case-insensitively, accepting the original's legacy spellings.
    pub fn parse(s: &str) -> Option<DataType> {
        Some(match s.trim().to_ascii_uppercase().as_str() {
            "TEXT" | "STRING" => DataType::Text,
            "INT" | "INTEGER" => DataType::Int,
            "DOUBLE" | "NUMBER" | "FLOAT" => DataType::Double,
            "BOOLEAN" | "BOOL" => DataType::Boolean,
            "DATE" => DataType::Date,
            "TIMESTAMP" | "TIME" | "DATETIME" => DataType::Timestamp,
            "UNKNOWN" => DataType::Unknown,
            _ => return None,
        })
    }
}

impl<'de> Deserialize<'de> for DataType {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        DataType::parse(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown column type '{s}'; expected one of TEXT, INT, DOUBLE, BOOLEAN, DATE, TIMESTAMP, UNKNOWN"
            ))
        })
    }
}

/// How a number is meant to be displayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum NumberFormatType {
    Percent,
    Currency,
    Integer,
    Float,
}

impl NumberFormatType {
    /// The Python enum member name and value, e.g. (`INTEGER`, `integer`).
    pub fn python_names(self) -> (&'static str, &'static str) {
        match self {
            NumberFormatType::Percent => ("PERCENT", "percent"),
            NumberFormatType::Currency => ("CURRENCY", "currency"),
            NumberFormatType::Integer => ("INTEGER", "integer"),
            NumberFormatType::Float => ("FLOAT", "float"),
        }
    }
}

/// A column's number format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NumberFormat {
    /// Percent, currency, integer or float.
    #[serde(rename = "type")]
    pub format_type: NumberFormatType,
    /// Digits after the decimal point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<i64>,
    /// Currency symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbol: Option<String>,
}

/// A column of a model, with its cached sample values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// Leaf name (no `.` or `:`).
    pub name: String,
    /// SQL expression; the physical column name when introspected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// Semantic type.
    #[serde(default, rename = "type")]
    pub data_type: DataType,
    /// Part of the primary key.
    #[serde(default, skip_serializing_if = "is_false")]
    pub primary_key: bool,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Hidden columns produce no doc and are left out of the model's `Columns:` line.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden: bool,
    /// Rendered with the original's pydantic `str()`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<NumberFormat>,
    /// Rendered, joined with `, `.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_aggregations: Option<Vec<String>>,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<String>,
    /// Legacy / numeric sample text (`min .. max`, or top-20 joined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<String>,
    /// Top-50 categorical values; an empty list is authoritative.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled_values: Option<Vec<String>>,
    /// Exact number of distinct values at profile time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_count: Option<i64>,
    /// The value index (docs/spec/profile.md §12.4): more of a categorical column's short values
    /// than the top 50, most frequent first, so that a question naming a value finds its column.
    /// Never rendered; the full-text index searches it apart.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_index: Option<Vec<String>>,
    /// `meta`, `db_type`, `unique`, `granularity` and anything else, kept verbatim, never rendered.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Column {
    /// A column with nothing but its name (type unknown, no SQL, not a key, shown).
    pub fn named(name: impl Into<String>) -> Column {
        Column {
            name: name.into(),
            sql: None,
            data_type: DataType::Unknown,
            primary_key: false,
            description: None,
            label: None,
            hidden: false,
            format: None,
            allowed_aggregations: None,
            filter: None,
            sampled: None,
            sampled_values: None,
            distinct_count: None,
            value_index: None,
            extra: Default::default(),
        }
    }
}

/// The most values a column's value index holds.
pub const VALUE_INDEX_VALUES: usize = 1000;
/// The longest value (in characters) a value index holds.
pub const VALUE_INDEX_CHARS: usize = 64;

/// A measure defined on a model; only named ones are entities.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    /// Leaf name; unnamed measures are not entities and produce no doc.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The formula (`amount:sum / *:count`).
    pub formula: String,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A parameter of a custom aggregation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AggregationParam {
    /// Parameter name.
    pub name: String,
    /// SQL bound to it.
    pub sql: String,
    /// Kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A custom aggregation defined on a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Aggregation {
    /// Leaf name.
    pub name: String,
    /// SQL template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub formula: Option<String>,
    /// Rendered as `Params: p=sql; …`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub params: Vec<AggregationParam>,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kept verbatim.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A join from a model to another model of the same datasource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Join {
    /// The joined model's name.
    pub target_model: String,
    /// `[source column, target column]` pairs.
    #[serde(default)]
    pub join_pairs: Vec<(String, String)>,
    /// `join_type`, `cardinality`, `name`: kept verbatim, never rendered.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A model of the semantic layer: a table, view or SQL query with its columns and measures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Model name (no `.` or `:`).
    pub name: String,
    /// The datasource the model belongs to.
    pub data_source: String,
    /// Backing table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql_table: Option<String>,
    /// Backing SQL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sql: Option<String>,
    /// Backing query stages; only their names are rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_queries: Option<Vec<Value>>,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Hidden models produce no docs at all.
    #[serde(default, skip_serializing_if = "is_false")]
    pub hidden: bool,
    /// Rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_time_dimension: Option<String>,
    /// Rendered joined with `; `.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
    /// Declared order is render order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<Column>,
    /// Named measures are entities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measures: Vec<Measure>,
    /// Custom aggregations are entities.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aggregations: Vec<Aggregation>,
    /// Joins to other models.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub joins: Vec<Join>,
    /// `meta`, `access_tags` and anything else, kept verbatim, never rendered.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Model {
    /// `<ds>.<model>`.
    pub fn canonical_id(&self) -> String {
        crate::canonical::model_id(&self.data_source, &self.name)
    }

    /// Checks names and leaf uniqueness; the message names the offending field.
    pub fn validate(&self) -> Result<(), ModelError> {
        use crate::canonical::check_entity_name;
        check_entity_name("field 'data_source'", &self.data_source)?;
        check_entity_name("field 'name'", &self.name)?;
        let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        let leaves = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, c)| (format!("columns[{i}].name"), c.name.as_str(), "column"))
            .chain(self.measures.iter().enumerate().filter_map(|(i, m)| {
                m.name
                    .as_deref()
                    .map(|n| (format!("measures[{i}].name"), n, "measure"))
            }))
            .chain(self.aggregations.iter().enumerate().map(|(i, a)| {
                (
                    format!("aggregations[{i}].name"),
                    a.name.as_str(),
                    "aggregation",
                )
            }));
        for (field, name, kind) in leaves {
            check_entity_name(&format!("field '{field}'"), name)?;
            if let Some(first) = seen.insert(name, kind) {
                return Err(ModelError::DuplicateLeaf {
                    field,
                    name: name.to_owned(),
                    first,
                });
            }
        }
        for (i, column) in self.columns.iter().enumerate() {
            if let Some(n) = column.distinct_count.filter(|n| *n < 0) {
                return Err(ModelError::NegativeCount {
                    column: i,
                    count: n,
                });
            }
            let values = column.value_index.as_deref().unwrap_or_default();
            if values.len() > VALUE_INDEX_VALUES {
                return Err(ModelError::TooManyValues {
                    column: i,
                    values: values.len(),
                });
            }
            if let Some(long) = values
                .iter()
                .find(|v| v.chars().count() > VALUE_INDEX_CHARS)
            {
                return Err(ModelError::LongValue {
                    column: i,
                    value: long.clone(),
                });
            }
        }
        Ok(())
    }
}

/// Why a model record is refused: each message names the field at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// A datasource, model or leaf name that cannot be part of a canonical id.
    #[error(transparent)]
    Name(#[from] crate::canonical::NameError),
    /// Two leaves of one name.
    #[error("field '{field}': the name '{name}' is already used by a {first} of this model; canonical ids must be unique, so rename one of them")]
    DuplicateLeaf {
        /// The second leaf's field.
        field: String,
        /// The name.
        name: String,
        /// What the first leaf of that name is (column, measure, aggregation).
        first: &'static str,
    },
    /// A negative `distinct_count`.
    #[error("field 'columns[{column}].distinct_count': {count} is negative; a count is 0 or more")]
    NegativeCount {
        /// The column's position.
        column: usize,
        /// The count.
        count: i64,
    },
    /// A `value_index` of more values than the index keeps.
    #[error("field 'columns[{column}].value_index': {values} values; at most {} (slayer-profile keeps the most frequent)", VALUE_INDEX_VALUES)]
    TooManyValues {
        /// The column's position.
        column: usize,
        /// How many values it has.
        values: usize,
    },
    /// A `value_index` value longer than the index keeps.
    #[error("field 'columns[{column}].value_index': the value {value:?} is longer than {} characters; the index holds short values only", VALUE_INDEX_CHARS)]
    LongValue {
        /// The column's position.
        column: usize,
        /// The value.
        value: String,
    },
}

/// One rendered search document: what the full-text index and the embedder consume.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Doc {
    /// `<ds>`, `<ds>.<model>`, `<ds>.<model>.<leaf>` or `memory:<id>`.
    pub canonical_id: String,
    /// datasource, model, column, measure, aggregation or memory.
    pub doc_kind: String,
    /// The owning datasource; `None` for memories.
    #[serde(default)]
    pub datasource: Option<String>,
    /// The rendered text (indexed and returned as hit text).
    pub text: String,
    /// Lowercase hex SHA-256 of `text`.
    pub content_hash: String,
    /// Text to embed when it differs from `text` (memories: without the tag line).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_text: Option<String>,
}

impl Doc {
    /// The text the embedder hashes and embeds.
    pub fn text_for_embedding(&self) -> &str {
        self.embedding_text.as_deref().unwrap_or(&self.text)
    }
}

/// Lowercase hex SHA-256 of a text.
pub fn content_hash(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_index_is_bounded() {
        let model = |values: Vec<String>| -> Model {
            serde_json::from_value(serde_json::json!({
                "name": "t", "data_source": "d",
                "columns": [{"name": "a", "type": "TEXT", "value_index": values}]
            }))
            .unwrap()
        };
        assert!(model(vec!["Alameda".into(); VALUE_INDEX_VALUES])
            .validate()
            .is_ok());
        let many = model(vec!["x".into(); VALUE_INDEX_VALUES + 1]).validate();
        assert!(many
            .unwrap_err()
            .to_string()
            .contains("columns[0].value_index': 1001 values; at most 1000 (slayer-profile"));
        let long = model(vec!["y".repeat(VALUE_INDEX_CHARS + 1)]).validate();
        assert!(long
            .unwrap_err()
            .to_string()
            .contains("is longer than 64 characters; the index"));
    }

    #[test]
    fn a_negative_distinct_count_is_refused() {
        let model: Model = serde_json::from_value(serde_json::json!({
            "name": "t", "data_source": "d",
            "columns": [{"name": "a", "type": "TEXT", "distinct_count": -1}]
        }))
        .unwrap();
        assert_eq!(
            model.validate().unwrap_err().to_string(),
            "field 'columns[0].distinct_count': -1 is negative; a count is 0 or more"
        );
    }
}
