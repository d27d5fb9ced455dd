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

use super::tool_error::ToolError;

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
    /// returned, counted or scores anything). Default: the session's project; a session
    /// started with one refuses any other.
    pub project: Option<String>,
    /// Only this agent's memories and those of every agent. Default: the session's agent; a
    /// session started with one refuses any other.
    pub agent: Option<String>,
    /// Only these memory tiers (default all).
    pub tiers: Option<Vec<TierName>>,
    /// Memories with a lower confidence are skipped (default 0.3).
    pub confidence_floor: Option<f64>,
    /// Also return `schema`: what you need to write SQL for the question. The top models
    /// (tables), each with its most relevant columns (type, description, a few values), the
    /// columns the question or a memory names, and the join pairs between the models
    /// (`from` = `to`). Default false.
    pub schema: Option<bool>,
    /// The schema answer's most models (default 12).
    pub schema_models: Option<usize>,
    /// The schema answer's most columns in all (default 38).
    pub schema_columns: Option<usize>,
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

/// `save_memory`'s arguments. What the memory is about is given one way: `linked_entities`
/// (the original's argument), `entities` or `query`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveMemoryArgs {
    /// The lesson, in plain words: what is true of the data and easy to get wrong, stated so
    /// that it helps a later query (not a transcript of this conversation).
    pub learning: String,
    /// What the note is about: a list of entity references, or a SlayerQuery object (the
    /// memory then becomes an example query, and the query's entities are its tags). Give
    /// this, `entities` or `query`.
    pub linked_entities: Option<LinkedEntities>,
    /// Entity references the note is about (canonical ids such as `shop.orders.amount`, bare
    /// names, `revenue:sum`, `memory:<id>`): a list, or one string split on top-level commas as
    /// `slayer-memory save --entities` splits it. Each must resolve, or nothing is saved.
    pub entities: Option<EntitiesArg>,
    /// A SlayerQuery (an object, or its JSON text) that worked: the memory becomes an example
    /// query, tagged with the entities the query uses.
    pub query: Option<QueryArg>,
    /// The id to save under (a new one is allocated when absent; an existing id is replaced,
    /// only if it is this session's).
    pub id: Option<String>,
    /// A one-line summary (at most 500 characters).
    pub description: Option<String>,
    /// The kind of memory (default `lesson`): `observation` (a raw observation),
    /// `lesson` (a learning), `semantic` (a fact), `procedural` (a how-to), `crystal`,
    /// `insight`, `facet`.
    pub tier: Option<TierName>,
    /// How far it is trusted, 0 to 1 (default 1); search skips memories below its confidence
    /// floor (0.3 unless the search says otherwise).
    pub confidence: Option<f64>,
    /// When what it records happened, if not now: a year, month, day or timestamp (`2023`,
    /// `2023-05`, `2023-05-08`, `2023-05-08T13:56:00Z`); questions with a time rank by it.
    pub event_time: Option<String>,
    /// The conversation it comes from (a name of the caller's choosing), so a search can
    /// return its neighbours beside a hit.
    pub session: Option<String>,
}

/// `entities`: references as a list, or as one comma-separated string.
#[derive(Debug, JsonSchema)]
#[serde(untagged)]
pub enum EntitiesArg {
    /// The references.
    List(Vec<String>),
    /// The references, comma-separated.
    Text(String),
}

impl<'de> Deserialize<'de> for EntitiesArg {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<EntitiesArg, D::Error> {
        match Value::deserialize(d)? {
            Value::String(text) => Ok(EntitiesArg::Text(text)),
            Value::Array(items) => strings("entities", items)
                .map(EntitiesArg::List)
                .map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "entities must be a list of entity references or one comma-separated string; got {}",
                json_type(&other)
            ))),
        }
    }
}

impl EntitiesArg {
    /// The references, a string split as `slayer-memory save --entities` splits it (commas
    /// inside `avg(amount, weight=q)` do not split).
    pub fn into_list(self) -> Vec<String> {
        match self {
            EntitiesArg::List(list) => list,
            EntitiesArg::Text(text) => slayer_memory::aggref::split_args(&text)
                .into_iter()
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

/// A list's items as strings, or the message naming the first that is not one.
fn strings(what: &str, items: Vec<Value>) -> Result<Vec<String>, ToolError> {
    items
        .into_iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(s) => Ok(s),
            other => Err(ToolError::NotAString {
                list: what.to_owned(),
                index: i,
                got: json_type(&other),
            }),
        })
        .collect()
}

/// A tier's name as an argument: parsed by `Tier::parse` where it is used (so the message is
/// the CLI's); its schema lists the names.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct TierName(pub String);

impl JsonSchema for TierName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Tier".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let names: Vec<&str> = slayer_common::records::Tier::ALL
            .iter()
            .map(|t| t.name())
            .collect();
        schemars::Schema::try_from(serde_json::json!({"type": "string", "enum": names}))
            .expect("an object is a schema")
    }
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
            Value::Array(items) => strings("linked_entities", items)
                .map(LinkedEntities::References)
                .map_err(serde::de::Error::custom),
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
    /// The memory's id, as `search` returned it (such as `12` or `sem_3`).
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

/// Every tool, as `tools/list` returns them; `read_only` leaves out the tools that write.
pub fn all(read_only: bool) -> Vec<Tool> {
    let reading = || {
        ToolAnnotations::new()
            .read_only(true)
            .destructive(false)
            .idempotent(true)
            .open_world(false)
    };
    let mut tools = vec![tool::<SearchArgs>(
        SEARCH,
        "Find what the warehouse holds for a question, and what other agents learned about it. \
         Call this first, before writing SQL or a SlayerQuery: it returns the relevant \
         datasources, models, columns, measures and aggregations, example queries that worked, \
         and saved memories (caveats such as units, exclusions, broken columns). Give a \
         natural-language `question`, the entity references you already know (`entities`), a \
         draft SlayerQuery (`query`) to learn what is known about its entities, or any mix; \
         with none, the newest memories come back. Hits are one line each (`compact`); use \
         `show` for an entity's full definition. Returns `results`, the resolved inputs and \
         warnings. About to write SQL? Add `schema: true` for `schema`: the top tables, each \
         with its relevant columns (type, description, sample values), and how they join.",
        reading(),
    )];
    if !read_only {
        tools.push(tool::<SaveMemoryArgs>(
            SAVE_MEMORY,
            "Record a durable lesson about the data for later sessions: a fact or caveat that \
             was hard to find or easy to get wrong (a unit, an exclusion rule, a column that \
             lies, a join to avoid), or a SlayerQuery that answered a question (give it as \
             `query` to save an example query). Link it to the entities it concerns \
             (`entities` or `linked_entities`); every reference must resolve, or nothing is \
             saved. Not for transcripts, plans, one-off results or what `show` already says. \
             Saved in this session's project and agent scope; returns the id and the \
             canonical entities.",
            ToolAnnotations::new()
                .read_only(false)
                .destructive(false)
                .idempotent(false)
                .open_world(false),
        ));
        tools.push(tool::<ForgetMemoryArgs>(
            FORGET_MEMORY,
            "Delete a memory that proved wrong or obsolete (for instance after the data \
             contradicted it), by the id `search` returned; links to it from other memories \
             are removed too. Only memories of this session's scope can be deleted. To correct \
             a memory, save the corrected lesson and forget the old one.",
            ToolAnnotations::new()
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(false),
        ));
    }
    tools.push(tool::<ShowArgs>(
        SHOW,
        "Show the full definition of entities or memories you already know by name or id, \
         typically hits of `search`: a model with its columns, measures and joins; a column \
         with its type and sample values; a measure with its formula, filters and every \
         dimension it can be grouped by; a memory's whole text. Use it before writing a query \
         against an entity, to get exact names and types.",
        reading(),
    ));
    tools.push(tool::<ListDatasourcesArgs>(
        LIST_DATASOURCES,
        "List the datasources (databases) the semantic layer describes, with their \
         descriptions and model counts. Use it to orient yourself or to pick the `datasource` \
         argument of `search`; for anything more specific, `search` is the better start.",
        reading(),
    ));
    tools
}

/// The names of the tools a session offers, for the unknown-tool message.
pub fn names(read_only: bool) -> Vec<&'static str> {
    if read_only {
        vec![SEARCH, SHOW, LIST_DATASOURCES]
    } else {
        vec![SEARCH, SAVE_MEMORY, FORGET_MEMORY, SHOW, LIST_DATASOURCES]
    }
}

/// A tool's arguments, parsed.
pub fn parse<T: serde::de::DeserializeOwned>(
    tool: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<T, ToolError> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|why| ToolError::Arguments {
        tool: tool.to_owned(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_schemas_are_objects_with_the_original_argument_names() {
        let tools = all(false);
        let listed: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(listed, names(false));
        let reading: Vec<String> = all(true).iter().map(|t| t.name.to_string()).collect();
        assert_eq!(reading, names(true));
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
        assert_eq!(required, ["learning"]);
        assert_eq!(save["properties"]["tier"]["enum"][2], "semantic");
        assert!(save["properties"]["confidence"].is_object());
    }

    #[test]
    fn linked_entities_are_references_or_a_query() {
        let refs: SaveMemoryArgs = parse(
            SAVE_MEMORY,
            json_map(r#"{"learning": "x", "linked_entities": ["a"]}"#),
        )
        .unwrap();
        assert!(matches!(refs.linked_entities, Some(LinkedEntities::References(r)) if r == ["a"]));
        let query: SaveMemoryArgs = parse(
            SAVE_MEMORY,
            json_map(r#"{"learning": "x", "linked_entities": {"source_model": "orders"}}"#),
        )
        .unwrap();
        assert!(matches!(
            query.linked_entities,
            Some(LinkedEntities::Query(_))
        ));
        let err = parse::<SaveMemoryArgs>(
            SAVE_MEMORY,
            json_map(r#"{"learning": "x", "linked_entities": "a, b"}"#),
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("linked_entities must be a list of entity references or a SlayerQuery object; got a string"), "{err}");
        let err = parse::<SearchArgs>(SEARCH, json_map(r#"{"questoin": "x"}"#))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("invalid arguments for search: unknown field `questoin`"),
            "{err}"
        );
    }

    fn json_map(text: &str) -> Option<Map<String, Value>> {
        serde_json::from_str(text).unwrap()
    }
}
