//! Who may see a cube or view: `public` / `shown` and `access_policy` (docs/spec/importers.md
//! §17.6). SLayer has no roles or security context, so a policy is never applied as a filter; it is
//! kept whole in `meta.access_policy` and described in the model's description (so search
//! shows and finds it), and members a policy hides from every role are hidden. A visibility
//! the import cannot decide (Jinja, a function of the security context) makes the model
//! hidden, never silently public.

use serde_json::{json, Value};
use slayer_common::records::Model;

use super::Definition;
use crate::import::{strings, Fate, Tally};

/// Whether a `public` / `shown` value hides its object: `false`, or a value only Cube can
/// decide at run time (a template, a function) — with the reason in that case.
pub fn hides(v: &Value) -> (bool, Option<String>) {
    for key in ["public", "shown"] {
        match v.get(key) {
            None | Some(Value::Bool(true)) => {}
            Some(Value::Bool(false)) => return (true, None),
            Some(Value::String(s)) if s.trim() == "true" => {}
            Some(Value::String(s)) if s.trim() == "false" => return (true, None),
            Some(other) => {
                let shown = match other {
                    Value::String(s) => s.clone(),
                    x => x.to_string(),
                };
                return (true, Some(format!("its {key} flag ('{shown}') is decided by Cube at query time (the security context); imported hidden, never silently public")));
            }
        }
    }
    (false, None)
}

/// The model's access policy: kept in `meta.access_policy`, described, and members hidden
/// from every role hidden; each policy entry counted as an `access_policy`.
pub fn apply(d: &Definition, m: &mut Model, tally: &mut Tally) {
    let Some(policies) = d.body.get("access_policy") else {
        return;
    };
    let entries: Vec<&Value> = match policies {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    };
    let mut sentences = Vec::new();
    let mut hidden_for_all: Vec<String> = Vec::new();
    for (i, p) in entries.iter().enumerate() {
        let role = p
            .get("role")
            .or_else(|| p.get("group"))
            .and_then(Value::as_str)
            .unwrap_or("*");
        let object = format!("access policy '{}' #{} (role '{role}')", d.name, i + 1);
        let mut parts = Vec::new();
        let mut problems = Vec::new();
        if let Some(ml) = p.get("member_level") {
            let (includes, excludes) = (strings(ml, "includes"), strings(ml, "excludes"));
            if !excludes.is_empty() {
                parts.push(format!("members hidden: {}", excludes.join(", ")));
                if role == "*" {
                    hidden_for_all.extend(excludes);
                }
            }
            if !includes.is_empty() && includes != ["*"] {
                parts.push(format!("members visible: {}", includes.join(", ")));
            }
        }
        if let Some(rl) = p.get("row_level") {
            let filters = rl
                .get("filters")
                .and_then(Value::as_array)
                .map(|fs| fs.iter().map(row_filter).collect::<Vec<_>>())
                .unwrap_or_default();
            if rl.get("allow_all").and_then(Value::as_bool) == Some(true) {
                parts.push("all rows".into());
            } else if !filters.is_empty() {
                parts.push(format!("rows where {}", filters.join(" and ")));
            }
            problems.push((Fate::Lossy, "its row-level filter depends on the security context, which SLayer does not have; kept in meta.access_policy and described, not applied".into()));
        }
        if let Some(c) = p.get("conditions") {
            parts.push(format!("when {c}"));
        }
        if parts.is_empty() {
            parts.push("no restriction".into());
        }
        sentences.push(format!("role '{role}': {}", parts.join("; ")));
        tally.object("access_policy", &object, &d.at, problems);
    }
    let mut hidden_now = Vec::new();
    for c in &mut m.columns {
        if hidden_for_all.contains(&c.name) && !c.hidden {
            c.hidden = true;
            hidden_now.push(c.name.clone());
        }
    }
    let described = format!("Access policy: {}.", sentences.join(". "));
    m.description = Some(match m.description.take() {
        Some(d) if !d.is_empty() => format!("{} {described}", d.trim_end()),
        _ => described,
    });
    let meta = m.extra.entry("meta").or_insert_with(|| json!({}));
    if let Value::Object(meta) = meta {
        meta.insert("access_policy".into(), policies.clone());
        if !hidden_now.is_empty() {
            meta.insert("hidden_by_access_policy".into(), json!(hidden_now));
        }
    }
}

/// One row-level filter as words: `country equals {securityContext.country}`.
fn row_filter(f: &Value) -> String {
    if let Some(any) = f.get("or").or_else(|| f.get("and")) {
        let op = if f.get("or").is_some() {
            " or "
        } else {
            " and "
        };
        let inner: Vec<String> = any
            .as_array()
            .into_iter()
            .flatten()
            .map(row_filter)
            .collect();
        return format!("({})", inner.join(op));
    }
    let member = f.get("member").and_then(Value::as_str).unwrap_or("?");
    let op = f.get("operator").and_then(Value::as_str).unwrap_or("?");
    let values: Vec<String> = f
        .get("values")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            x => x.to_string(),
        })
        .collect();
    if values.is_empty() {
        format!("{member} {op}")
    } else {
        format!("{member} {op} {}", values.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_visibility_only_cube_can_decide_hides() {
        assert_eq!(hides(&json!({})), (false, None));
        assert_eq!(hides(&json!({"public": false})), (true, None));
        assert_eq!(hides(&json!({"shown": true})), (false, None));
        let (hidden, why) = hides(&json!({"public": "{{ COMPILE_CONTEXT.role == 'admin' }}"}));
        assert!(hidden);
        assert!(why.unwrap().contains("never silently public"));
    }

    #[test]
    fn row_filters_read_as_words() {
        let f = json!({"or": [
            {"member": "country", "operator": "equals", "values": ["{ securityContext.country }"]},
            {"member": "is_public", "operator": "set"}
        ]});
        assert_eq!(
            row_filter(&f),
            "(country equals { securityContext.country } or is_public set)"
        );
    }
}
