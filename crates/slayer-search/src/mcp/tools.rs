//! The MCP tools: their argument types (each tool's input schema is derived from its type, so
//! the schema and the parser cannot disagree) and their descriptions.
//!
//! `search`, `save_memory` and `forget_memory` take the Python original's arguments (SLayer
//! 1.4.1's MCP tools), so an agent prompt written for it works unchanged; ours come on top.

use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};
use slayer_search::request::Channel;

/// `search`'s arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// Entity references: canonical ids (`shop.orders.amount`), bare names (`orders.amount`,
    /// `orders`), measure forms (`revenue:sum`), `memory:<id>`. Unresolvable ones are warnings.
    pub entities: Option<Vec<String>>,
    /// A SlayerQuery (an object, or its JSON text); the entities it uses join the inputs.
    pub query: Option<QueryArg>,
    /// A natural-language question.
    pub question: Option<String>,
    /// Only this datasource (its statistics too); an unknown one is an error.
    pub datasource: Option<String>,
    /// The most hits to return (default 10, at least 1). They interleave memories, example
    /// queries and entities by rank, so a smaller cap gives a prefix.
    pub max_results: Option<i64>,
    /// Not supported: slayer keeps no graph. Filter with `datasource` or the question instead.
    pub cypher_filter: Option<String>,
    /// One-line hits (default true): `text` is left empty and `description` summarises the
    /// hit. False returns every hit's full rendered text.
    pub compact: Option<bool>,
    /// Cap of the memories taken into the results (default `max_results`).
    pub max_memories: Option<usize>,
    /// Cap of the example queries (query-bearing memories) taken in (default `max_results`).
    pub max_example_queries: Option<usize>,
    /// Cap of the entities taken in (default `max_results`).
    pub max_entities: Option<usize>,
    /// The ranking channels that run (default all three).
    pub channels: Option<Vec<Channel>>,
    /// Add each channel's rank, raw score and contribution to every hit.
    pub explain: Option<bool>,
    /// `auto` plans the question (expansion, gating, two passes, negatives, rerank); `off`
    /// (default) does not.
    pub plan: Option<slayer_search::plan::PlanMode>,
    /// Your own expansion of the question: `anchors`, `phrases`, `synonyms`,
    /// `negatives: {hard, soft}`, `exceptions: [{negative, allow}]` (with `plan: "auto"`).
    pub injected: Option<slayer_search::plan::terms::Injected>,
    /// Only this project's memories and those of every project (no other project's memory is
    /// returned, counted or scores anything).
    pub project: Option<String>,
    /// Only this agent's memories and those of every agent.
    pub agent: Option<String>,
    /// Only these memory tiers: observation, lesson, semantic, procedural, crystal, insight,
    /// facet (default all).
    pub tiers: Option<Vec<String>>,
    /// Memories with a lower confidence are skipped (default 0.3).
    pub confidence_floor: Option<f64>,
}

/// A SlayerQuery: an object, or a string holding its JSON.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum QueryArg {
    /// The query itself.
    Object(Map<String, Value>),
    /// The query as JSON text.
    Json(String),
}

impl<'de> Deserialize<'de> for QueryArg {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<QueryArg, D::Error> {
        match Value::deserialize(d)? {
            Value::Object(map) => Ok(QueryArg::Object(map)),
            Value::String(text) => Ok(QueryArg::Json(text)),
            other => Err(serde::de::Error::custom(format!(
                "query must be a SlayerQuery object or its JSON text; got {}",
                json_type(&other)
            ))),
        }
    }
}

/// `save_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveMemoryArgs {
    /// The note: what was learned, in plain words.
    pub learning: String,
    /// What the note is about: a list of entity references, or a SlayerQuery object (the
    /// memory then becomes an example query, and the query's entities are its tags).
    pub linked_entities: LinkedEntities,
    /// The id to save under (a new one is allocated when absent; an existing id is replaced).
    pub id: Option<String>,
    /// A one-line summary (at most 500 characters).
    pub description: Option<String>,
}

/// `linked_entities`: references or a query.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum LinkedEntities {
    /// Entity references, resolved strictly: one that does not resolve fails the save.
    References(Vec<String>),
    /// A SlayerQuery object.
    Query(Map<String, Value>),
}

impl<'de> Deserialize<'de> for LinkedEntities {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<LinkedEntities, D::Error> {
        let value = Value::deserialize(d)?;
        match value {
            Value::Object(map) => Ok(LinkedEntities::Query(map)),
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, item)| match item {
                    Value::String(s) => Ok(s),
                    other => Err(serde::de::Error::custom(format!(
                        "linked_entities[{i}] must be a string (an entity reference); got {}",
                        json_type(&other)
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(LinkedEntities::References),
            other => Err(serde::de::Error::custom(format!(
                "linked_entities must be a list of entity references or a SlayerQuery object; got {}",
                json_type(&other)
            ))),
        }
    }
}

/// `forget_memory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetMemoryArgs {
    /// The memory's id, as `search` returned it.
    pub id: String,
}

/// `show`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShowArgs {
    /// Entity references (as `search` takes them) or memory ids (`12` or `memory:12`).
    pub ids: Vec<String>,
}

/// `list_datasources` takes nothing.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDatasourcesArgs {}

/// JSON's name for a value's type, for messages.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The tool names.
pub const SEARCH: &str = "search";
/// See [`SEARCH`].
pub const SAVE_MEMORY: &str = "save_memory";
/// See [`SEARCH`].
pub const FORGET_MEMORY: &str = "forget_memory";
/// See [`SEARCH`].
pub const SHOW: &str = "show";
/// See [`SEARCH`].
pub const LIST_DATASOURCES: &str = "list_datasources";

fn tool<T: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
    annotations: ToolAnnotations,
) -> Tool {
    Tool::new(name, description, schema_for_type::<T>()).with_annotations(annotations)
}

/// Every tool, as `tools/list` returns them.
pub fn all() -> Vec<Tool> {
    let reading = || {
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    vec![
        tool::<SearchArgs>(
            SEARCH,
            "Search the semantic layer (datasources, models, columns, measures, aggregations) and \
             the memories agents saved about it. Give a natural-language `question`, entity \
             references (`entities`), a SlayerQuery (`query`), or any mix; with none, the newest \
             memories come back. Returns `results` (memories, example queries with their query, \
             and entities), the resolved inputs and warnings.",
            reading(),
        ),
        tool::<SaveMemoryArgs>(
            SAVE_MEMORY,
            "Save a learning about the data, linked to the entities it concerns (a list of \
             references) or to a SlayerQuery (then it is an example query). References must \
             resolve; the saved id and the canonical entities come back.",
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(false),
        ),
        tool::<ForgetMemoryArgs>(
            FORGET_MEMORY,
            "Delete a memory by id.",
            ToolAnnotations::new()
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(false),
        ),
        tool::<ShowArgs>(
            SHOW,
            "Show the full rendered text of entities (a model with its columns, measures and \
             joins; a column with its type and sample values) or memories, by reference or id.",
            reading(),
        ),
        tool::<ListDatasourcesArgs>(
            LIST_DATASOURCES,
            "List the datasources with their descriptions and model counts.",
            reading(),
        ),
    ]
}

/// A tool's arguments, parsed; an error is the message for the tool result.
pub fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<T, String> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| format!("invalid arguments for {tool}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_schemas_are_objects_with_the_original_argument_names() {
        let tools = all();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [SEARCH, SAVE_MEMORY, FORGET_MEMORY, SHOW, LIST_DATASOURCES]
        );
        let search = &tools[0].input_schema;
        assert_eq!(search["type"], "object");
        for name in [
            "entities",
            "query",
            "question",
            "datasource",
            "max_results",
            "cypher_filter",
            "compact",
            "max_memories",
            "channels",
            "explain",
        ] {
            assert!(search["properties"].get(name).is_some(), "{name}");
        }
        let save = &tools[1].input_schema;
        let required: Vec<&str> = save["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(required, ["learning", "linked_entities"]);
    }

    #[test]
    fn linked_entities_are_references_or_a_query() {
        let refs: SaveMemoryArgs = parse(
            SAVE_MEMORY,
            json_map(r#"{"learning": "x", "linked_entities": ["a"]}"#),
        )
        .unwrap();
        assert!(matches!(refs.linked_entities, LinkedEntities::References(r) if r == ["a"]));
        let query: SaveMemoryArgs = parse(
            SAVE_MEMORY,
            json_map(r#"{"learning": "x", "linked_entities": {"source_model": "orders"}}"#),
        )
        .unwrap();
        assert!(matches!(query.linked_entities, LinkedEntities::Query(_)));
        let err = parse::<SaveMemoryArgs>(
            SAVE_MEMORY,
            json_map(r#"{"learning": "x", "linked_entities": "a, b"}"#),
        )
        .unwrap_err();
        assert!(err.contains("linked_entities must be a list of entity references or a SlayerQuery object; got a string"), "{err}");
        let err = parse::<SearchArgs>(SEARCH, json_map(r#"{"questoin": "x"}"#)).unwrap_err();
        assert!(
            err.starts_with("invalid arguments for search: unknown field `questoin`"),
            "{err}"
        );
    }

    fn json_map(text: &str) -> Option<Map<String, Value>> {
        serde_json::from_str(text).unwrap()
    }
}
