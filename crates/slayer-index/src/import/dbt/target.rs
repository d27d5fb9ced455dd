//! What `dbt compile` / `dbt docs generate` left in a project's `target/`: the relation each
//! model builds and its compiled column descriptions (`manifest.json`), each semantic model's
//! compiled relation (`semantic_manifest.json`), the warehouse's column types
//! (`catalog.json`). A file that is not JSON is skipped and named; the YAML still imports.

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use slayer_common::records::DataType;

use super::convert::ColumnDocs;
use crate::import::Tally;

/// What `dbt compile` / `dbt docs generate` left in `target/`: the relation each model builds
/// and its compiled column descriptions (manifest.json), the warehouse's column types
/// (catalog.json). Compiled facts win over the YAML's. Each file is streamed into the few
/// fields read (everything else is skipped as it is parsed, never held), so a manifest of any
/// size or shape costs the memory of what is kept; JSON nested past serde_json's recursion
/// limit is refused, named.
pub fn read_target(dir: &Path, docs: &mut ColumnDocs, tally: &mut Tally) {
    let target = dir.join("target");
    let mut names = HashMap::new();
    if let Some(manifest) = json::<Manifest>(&target, "manifest.json", tally) {
        names = read_manifest(manifest, docs);
    }
    if let Some(semantic) = json::<SemanticManifest>(&target, "semantic_manifest.json", tally) {
        read_semantic_manifest(semantic, docs);
    }
    if let Some(catalog) = json::<Catalog>(&target, "catalog.json", tally) {
        read_catalog(catalog, &names, docs);
    }
}

/// `target/<name>` read into `T`, or `None` (named in `tally` when it is there but unreadable).
fn json<T: serde::de::DeserializeOwned>(target: &Path, name: &str, tally: &mut Tally) -> Option<T> {
    let path = target.join(name);
    if !path.is_file() {
        return None;
    }
    let rel = Path::new("target").join(name);
    let file = match std::fs::File::open(&path) {
        Ok(f) => f,
        Err(e) => {
            tally.unreadable_file(&rel, format!("cannot read: {e}"));
            return None;
        }
    };
    match serde_json::from_reader(std::io::BufReader::with_capacity(1 << 16, file)) {
        Ok(v) => Some(v),
        Err(e) => {
            tally.unreadable_file(
                &rel,
                format!(
                    "invalid JSON: {e}; what dbt compiled (relations, column types) is not used"
                ),
            );
            None
        }
    }
}

/// The fields of `manifest.json` read; the rest is skipped while parsing.
#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    nodes: HashMap<String, ManifestNode>,
}

#[derive(Deserialize)]
struct ManifestNode {
    #[serde(default)]
    resource_type: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    relation_name: Option<String>,
    #[serde(default)]
    columns: HashMap<String, Described>,
}

#[derive(Deserialize)]
struct Described {
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct SemanticManifest {
    #[serde(default)]
    semantic_models: Vec<SemanticEntry>,
}

#[derive(Deserialize)]
struct SemanticEntry {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    node_relation: Option<NodeRelation>,
}

#[derive(Deserialize)]
struct NodeRelation {
    #[serde(default)]
    relation_name: Option<String>,
}

#[derive(Deserialize)]
struct Catalog {
    #[serde(default)]
    nodes: HashMap<String, CatalogNode>,
}

#[derive(Deserialize)]
struct CatalogNode {
    #[serde(default)]
    columns: HashMap<String, Typed>,
}

#[derive(Deserialize)]
struct Typed {
    #[serde(default, rename = "type")]
    data_type: Option<String>,
}

/// manifest.json: each model's relation and compiled column descriptions; the model name of
/// each node id.
fn read_manifest(manifest: Manifest, docs: &mut ColumnDocs) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for (id, node) in manifest.nodes {
        if node.resource_type.as_deref() != Some("model") {
            continue;
        }
        let Some(name) = node.name else {
            continue;
        };
        if let Some(relation) = node.relation_name {
            docs.relations.insert(name.clone(), relation);
        }
        for (column, c) in node.columns {
            if let Some(d) = c.description.filter(|d| !d.is_empty()) {
                docs.descriptions.insert((name.clone(), column), d);
            }
        }
        names.insert(id, name);
    }
    names
}

/// semantic_manifest.json: the relation each semantic model was compiled to.
fn read_semantic_manifest(semantic: SemanticManifest, docs: &mut ColumnDocs) {
    for sm in semantic.semantic_models {
        let relation = sm.node_relation.and_then(|r| r.relation_name);
        if let (Some(name), Some(relation)) = (sm.name, relation) {
            docs.semantic_relations.insert(name, relation);
        }
    }
}

/// catalog.json: the warehouse's type of each column, under its name as written and in lower
/// case.
fn read_catalog(catalog: Catalog, names: &HashMap<String, String>, docs: &mut ColumnDocs) {
    for (id, node) in catalog.nodes {
        let name = names
            .get(&id)
            .cloned()
            .or_else(|| id.rsplit('.').next().map(str::to_owned))
            .unwrap_or_default();
        for (column, c) in node.columns {
            if let Some(t) = c.data_type {
                docs.types.insert(
                    (name.clone(), column.to_ascii_lowercase()),
                    warehouse_type(&t),
                );
                docs.types
                    .insert((name.clone(), column), warehouse_type(&t));
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
