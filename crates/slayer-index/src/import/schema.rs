//! A JSON Schema validator for the keywords the bundled Ossie schemas use (`type`,
//! `properties`, `required`, `additionalProperties`, `items`, `minItems`, `enum`, `const`,
//! `oneOf`, local `$ref`), reporting every violation with its JSON path (`$.semantic_model[0]
//! .datasets[2].source`). A schema using any other keyword is refused by a test, so a newer
//! schema cannot be half-checked in silence.

use serde_json::Value;

/// Keywords that constrain; the rest (`description`, `title`, `examples`, `$id`, …) annotate.
pub const SUPPORTED: [&str; 10] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "enum",
    "const",
    "oneOf",
    "$ref",
];

/// Keywords that only describe.
pub const ANNOTATIONS: [&str; 6] = [
    "$schema",
    "$id",
    "$defs",
    "title",
    "description",
    "examples",
];

/// Every violation of `schema` by `value`, as `<path>: <what>`.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, schema, value, "$", &mut out);
    out
}

fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => r
            .strip_prefix('#')
            .and_then(|p| root.pointer(p))
            .map(|s| resolve(root, s))
            .unwrap_or(schema),
        None => schema,
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn type_matches(expected: &str, v: &Value) -> bool {
    let actual = type_name(v);
    actual == expected || (expected == "number" && actual == "integer")
}

fn check(root: &Value, schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    let schema = resolve(root, schema);
    if let Some(t) = schema.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(t, value),
            Value::Array(ts) => ts
                .iter()
                .filter_map(Value::as_str)
                .any(|t| type_matches(t, value)),
            _ => true,
        };
        if !ok {
            out.push(format!(
                "{path}: expected {}, found {}",
                describe_type(t),
                type_name(value)
            ));
            return;
        }
    }
    if let Some(c) = schema.get("const") {
        if c != value {
            out.push(format!("{path}: must be {c}, found {value}"));
        }
    }
    if let Some(Value::Array(options)) = schema.get("enum") {
        if !options.contains(value) {
            let allowed: Vec<String> = options.iter().map(Value::to_string).collect();
            out.push(format!(
                "{path}: {value} is not one of {}",
                allowed.join(", ")
            ));
        }
    }
    if let Some(Value::Array(options)) = schema.get("oneOf") {
        let passing = options
            .iter()
            .filter(|o| validate_at(root, o, value))
            .count();
        if passing != 1 {
            out.push(format!(
                "{path}: matches {passing} of the {} allowed shapes, not exactly one",
                options.len()
            ));
        }
    }
    match value {
        Value::Object(map) => {
            for key in schema
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !map.contains_key(key) {
                    out.push(format!("{path}: missing required '{key}'"));
                }
            }
            let properties = schema.get("properties").and_then(Value::as_object);
            for (key, v) in map {
                let child = format!("{path}.{key}");
                match properties.and_then(|p| p.get(key)) {
                    Some(s) => check(root, s, v, &child, out),
                    None => match schema.get("additionalProperties") {
                        Some(Value::Bool(false)) => {
                            out.push(format!("{path}: unknown key '{key}'"))
                        }
                        Some(s @ Value::Object(_)) => check(root, s, v, &child, out),
                        _ => {}
                    },
                }
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
                if (items.len() as u64) < min {
                    out.push(format!(
                        "{path}: needs at least {min} item(s), has {}",
                        items.len()
                    ));
                }
            }
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    check(root, s, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

fn validate_at(root: &Value, schema: &Value, value: &Value) -> bool {
    let mut out = Vec::new();
    check(root, schema, value, "$", &mut out);
    out.is_empty()
}

fn describe_type(t: &Value) -> String {
    match t {
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        other => other.as_str().unwrap_or("?").to_owned(),
    }
}

/// Keywords of `schema` this validator does not know (empty for the bundled schemas).
pub fn unknown_keywords(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk(schema, &mut out);
    out.sort();
    out.dedup();
    out
}

fn walk(schema: &Value, out: &mut Vec<String>) {
    let Value::Object(map) = schema else { return };
    for (k, v) in map {
        match k.as_str() {
            "properties" | "$defs" => {
                for s in v.as_object().into_iter().flat_map(|m| m.values()) {
                    walk(s, out);
                }
            }
            "items" | "additionalProperties" => walk(v, out),
            "oneOf" => v
                .as_array()
                .into_iter()
                .flatten()
                .for_each(|s| walk(s, out)),
            k if SUPPORTED.contains(&k) || ANNOTATIONS.contains(&k) => {}
            other => out.push(other.to_owned()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn violations_name_their_path() {
        let schema = json!({
            "type": "object",
            "required": ["version", "items"],
            "additionalProperties": false,
            "properties": {
                "version": {"const": "1"},
                "items": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Item"}}
            },
            "$defs": {"Item": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "kind": {"enum": ["a", "b"]}}}}
        });
        let errors = validate(
            &schema,
            &json!({"version": "2", "items": [{"kind": "c"}, {"name": 3}], "x": 1}),
        );
        assert_eq!(
            errors,
            [
                "$.version: must be \"1\", found \"2\"",
                "$.items[0]: missing required 'name'",
                "$.items[0].kind: \"c\" is not one of \"a\", \"b\"",
                "$.items[1].name: expected string, found integer",
                "$: unknown key 'x'",
            ]
        );
        assert!(validate(&schema, &json!({"version": "1", "items": [{"name": "n"}]})).is_empty());
    }
}
