//! Which bundled schema an Ossie document is validated against (its `version`, or for a
//! document without one the newest it follows), and what of a document to leave out when a
//! violation sits inside one dataset, field, metric or relationship.

use std::sync::LazyLock;

use serde_json::Value;

use crate::import::schema;

const SCHEMA_0_2: &str = include_str!("osi-schema-0.2.0.dev0.json");
const SCHEMA_0_1: &str = include_str!("osi-schema-0.1.1.json");

/// The schema a document's `version` names, and whether the version was known.
pub fn schema_for(version: Option<&str>) -> (&'static Value, bool) {
    static V0_1: LazyLock<Value> =
        LazyLock::new(|| serde_json::from_str(SCHEMA_0_1).expect("the bundled schema is JSON"));
    static V0_2: LazyLock<Value> =
        LazyLock::new(|| serde_json::from_str(SCHEMA_0_2).expect("the bundled schema is JSON"));
    match version {
        Some("0.1.1" | "0.1.0" | "1.0") => (&V0_1, true),
        Some("0.2.0.dev0") => (&V0_2, true),
        _ => (&V0_2, false),
    }
}

/// The newest bundled schema a document without a `version` follows (the newest when none).
pub fn newest_followed(value: &Value) -> &'static str {
    for v in ["0.2.0.dev0", "0.1.1"] {
        let mut copy = value.clone();
        if let Value::Object(m) = &mut copy {
            m.insert("version".into(), Value::String(v.to_owned()));
        }
        if schema::validate(schema_for(Some(v)).0, &copy).is_empty() {
            return v;
        }
    }
    "0.2.0.dev0"
}

/// Collections whose items can be left out alone, innermost first, with their kind.
const PRUNABLE: [(&str, &str); 4] = [
    ("fields", "field"),
    ("metrics", "metric"),
    ("relationships", "relationship"),
    ("datasets", "dataset"),
];

/// Leaves out the object each violation sits in (`$.semantic_model[0].datasets[3]…`); `None`
/// when one sits outside every such object.
pub fn prune(value: &mut Value, errors: &[String]) -> Option<Vec<(&'static str, String, String)>> {
    let mut targets: Vec<(String, usize, &'static str, String)> = Vec::new();
    for e in errors {
        let (path, what) = e.split_once(": ").unwrap_or((e.as_str(), ""));
        let (start, key, kind) = PRUNABLE
            .iter()
            .filter_map(|(key, kind)| path.rfind(&format!(".{key}[")).map(|i| (i, *key, *kind)))
            .max_by_key(|(i, _, _)| *i)?;
        let rest = &path[start + key.len() + 2..];
        let index: usize = rest[..rest.find(']')?].parse().ok()?;
        let parent = path[..start]
            .trim_start_matches('$')
            .replace('[', ".")
            .replace(']', "")
            .split('.')
            .filter(|p| !p.is_empty())
            .map(|p| format!("/{p}"))
            .collect::<String>()
            + "/"
            + key;
        if !targets.iter().any(|t| t.0 == parent && t.1 == index) {
            targets.push((parent, index, kind, format!("{path}: {what}")));
        }
    }
    // Highest index first, so earlier indexes stay valid.
    targets.sort_by_key(|t| std::cmp::Reverse(t.1));
    let mut out = Vec::new();
    for (parent, index, kind, why) in targets {
        let Some(Value::Array(items)) = value.pointer_mut(&parent) else {
            return None;
        };
        if index >= items.len() {
            continue;
        }
        let removed = items.remove(index);
        let parent_name = removed["name"].as_str().unwrap_or("?").to_owned();
        out.push((
            kind,
            format!("{kind} '{parent_name}'"),
            format!("it breaks the schema ({why}); left out"),
        ));
    }
    Some(out)
}
