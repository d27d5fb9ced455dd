//! What `dbt compile` / `dbt docs generate` left in a project's `target/`: the relation each
//! model builds and its compiled column descriptions (`manifest.json`), each semantic model's
//! compiled relation (`semantic_manifest.json`), the warehouse's column types
//! (`catalog.json`). A file that is not JSON is skipped and named; the YAML still imports.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use slayer_common::records::DataType;

use super::convert::ColumnDocs;
use super::{read_text, reason, spec};
use crate::import::Tally;

/// What `dbt compile` / `dbt docs generate` left in `target/`: the relation each model builds
/// and its compiled column descriptions (manifest.json), the warehouse's column types
/// (catalog.json). Compiled facts win over the YAML's.
pub fn read_target(dir: &Path, docs: &mut ColumnDocs, tally: &mut Tally) {
    let target = dir.join("target");
    let mut json = |name: &str| -> Option<Value> {
        let path = target.join(name);
        if !path.is_file() {
            return None;
        }
        let rel = Path::new("target").join(name);
        let text = match read_text(&path) {
            Ok(text) => text,
            Err(e) => {
                tally.unreadable_file(&rel, reason(e));
                return None;
            }
        };
        match serde_json::from_str(&text) {
            Ok(v) => Some(v),
            Err(e) => {
                tally.unreadable_file(&rel, format!("invalid JSON: {e}; what dbt compiled (relations, column types) is not used"));
                None
            }
        }
    };
    let mut names = HashMap::new();
    if let Some(manifest) = json("manifest.json") {
        names = read_manifest(&manifest, docs);
    }
    if let Some(semantic) = json("semantic_manifest.json") {
        read_semantic_manifest(&semantic, docs);
    }
    if let Some(catalog) = json("catalog.json") {
        read_catalog(&catalog, &names, docs);
    }
}

/// manifest.json: each model's relation and compiled column descriptions; the model name of
/// each node id.
fn read_manifest(manifest: &Value, docs: &mut ColumnDocs) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for (id, node) in spec::entries(manifest, "nodes") {
        if node.get("resource_type").and_then(Value::as_str) != Some("model") {
            continue;
        }
        let Some(name) = node.get("name").and_then(Value::as_str) else {
            continue;
        };
        names.insert(id.clone(), name.to_owned());
        if let Some(relation) = node.get("relation_name").and_then(Value::as_str) {
            docs.relations.insert(name.to_owned(), relation.to_owned());
        }
        for (column, c) in spec::entries(node, "columns") {
            if let Some(d) = c
                .get("description")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
            {
                docs.descriptions
                    .insert((name.to_owned(), column.clone()), d.to_owned());
            }
        }
    }
    names
}

/// semantic_manifest.json: the relation each semantic model was compiled to.
fn read_semantic_manifest(semantic: &Value, docs: &mut ColumnDocs) {
    for sm in spec::items(semantic, "semantic_models") {
        let name = sm.get("name").and_then(Value::as_str);
        let relation = sm
            .get("node_relation")
            .and_then(|r| r.get("relation_name"))
            .and_then(Value::as_str);
        if let (Some(name), Some(relation)) = (name, relation) {
            docs.semantic_relations
                .insert(name.to_owned(), relation.to_owned());
        }
    }
}

/// catalog.json: the warehouse's type of each column, under its name as written and in lower
/// case.
fn read_catalog(catalog: &Value, names: &HashMap<String, String>, docs: &mut ColumnDocs) {
    for (id, node) in spec::entries(catalog, "nodes") {
        let name = names
            .get(id)
            .cloned()
            .or_else(|| id.rsplit('.').next().map(str::to_owned))
            .unwrap_or_default();
        for (column, c) in spec::entries(node, "columns") {
            if let Some(t) = c.get("type").and_then(Value::as_str) {
                docs.types.insert(
                    (name.clone(), column.to_ascii_lowercase()),
                    warehouse_type(t),
                );
                docs.types
                    .insert((name.clone(), column.clone()), warehouse_type(t));
            }
        }
    }
}

/// A warehouse's column type as a SLayer type.
fn warehouse_type(t: &str) -> DataType {
    let t = t.to_ascii_lowercase();
    let base = t.split(['(', ' ']).next().unwrap_or_default();
    match base {
        "int" | "integer" | "bigint" | "smallint" | "tinyint" | "int2" | "int4" | "int8"
        | "int64" | "hugeint" | "ubigint" | "uinteger" => DataType::Int,
        "double" | "float" | "float4" | "float8" | "float64" | "real" | "numeric" | "decimal"
        | "number" | "money" => DataType::Double,
        "bool" | "boolean" => DataType::Boolean,
        "date" => DataType::Date,
        "timestamp" | "timestamptz" | "datetime" | "timestamp_ntz" | "timestamp_tz"
        | "timestamp_ltz" => DataType::Timestamp,
        "text" | "varchar" | "string" | "char" | "character" | "nvarchar" | "bpchar" | "uuid" => {
            DataType::Text
        }
        _ if t.starts_with("timestamp") => DataType::Timestamp,
        _ if t.starts_with("character varying") => DataType::Text,
        _ => DataType::Unknown,
    }
}
