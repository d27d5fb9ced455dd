//! Entities referenced by an inline SlayerQuery (docs/spec/resolution.md §3.8): its source model
//! first, then every reference in dimensions, time dimensions, measure formulas, filters and order.

use serde_json::Value;

use crate::aggref::{is_plain_ref, split_args};
use crate::resolve::{Catalog, Lookup, Resolution, ResolveError};

/// Functions that transform an aggregated value; their first argument is walked.
const TRANSFORMS: &[&str] = &[
    "cumsum",
    "cumulative_sum",
    "lag",
    "lead",
    "change",
    "change_pct",
    "time_shift",
    "rank",
    "percent_of_total",
    "rolling_avg",
    "rolling_sum",
    "moving_avg",
    "running_total",
    "ratio",
];

/// Words a filter uses that are not references.
const FILTER_WORDS: &[&str] = &[
    "and",
    "or",
    "not",
    "is",
    "null",
    "in",
    "like",
    "between",
    "true",
    "false",
    "case",
    "when",
    "then",
    "else",
    "end",
    "exists",
    "coalesce",
    "nullif",
    "cast",
    "ln",
    "log",
    "log2",
    "log10",
    "exp",
    "sqrt",
    "pow",
    "power",
    "abs",
    "round",
    "floor",
    "ceil",
    "ceiling",
    "current_date",
    "current_timestamp",
    "now",
];

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '.'
}

/// Calls nested deeper than this are not walked into: the formula's rest is one token. Requests
/// are refused long before (`limits.formula_depth`, docs/spec/limits.md §16); this bounds the work
/// on anything that reaches here unchecked.
const MAX_WALK_DEPTH: usize = 64;

/// Reference tokens of a formula: `amount:sum` for an aggregation over a column, `*:count` for a
/// row count, bare refs as they are, operands of expression sources; transforms are walked into.
pub fn formula_tokens(formula: &str, out: &mut Vec<String>) {
    tokens_at(formula, out, 0);
}

fn tokens_at(formula: &str, out: &mut Vec<String>, depth: usize) {
    if depth > MAX_WALK_DEPTH {
        out.push(formula.trim().to_owned());
        return;
    }
    let chars: Vec<char> = formula.chars().collect();
    let mut i = 0;
    let before = out.len();
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' || c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != c {
                i += 1;
            }
            i += 1;
            continue;
        }
        if c.is_alphabetic() || c == '_' || (c == '*' && is_star_operand(&chars, i)) {
            let start = i;
            if c == '*' {
                i += 1;
            } else {
                while i < chars.len()
                    && (is_ident_char(chars[i])
                        || (chars[i] == '*' && i > start && chars[i - 1] == '.'))
                {
                    i += 1;
                }
            }
            let token: String = chars[start..i].iter().collect();
            let mut j = i;
            while j < chars.len() && chars[j] == ' ' {
                j += 1;
            }
            if j < chars.len() && chars[j] == '(' {
                let Some(close) = matching_paren(&chars, j) else {
                    out.truncate(before);
                    out.push(formula.trim().to_owned());
                    return;
                };
                let inner: String = chars[j + 1..close].iter().collect();
                call_tokens(&token, &inner, out, depth + 1);
                i = close + 1;
                continue;
            }
            if j < chars.len() && chars[j] == ':' {
                let mut k = j + 1;
                while k < chars.len() && (chars[k].is_alphanumeric() || chars[k] == '_') {
                    k += 1;
                }
                let agg: String = chars[j + 1..k].iter().collect();
                if k < chars.len() && chars[k] == '(' {
                    k = matching_paren(&chars, k).map_or(chars.len(), |c| c + 1);
                }
                out.push(format!("{token}:{agg}"));
                i = k;
                continue;
            }
            out.push(token);
            continue;
        }
        i += 1;
    }
}

/// A `*` that stands for "all rows" rather than multiplication: before `:`, or alone as an
/// argument (`count(*)`).
fn is_star_operand(chars: &[char], i: usize) -> bool {
    let next = chars[i + 1..].iter().find(|c| **c != ' ');
    let prev = chars[..i].iter().rev().find(|c| **c != ' ');
    next == Some(&':')
        || (matches!(prev, Some('(') | Some(',')) && matches!(next, Some(')') | Some(',')))
}

fn matching_paren(chars: &[char], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (k, c) in chars.iter().enumerate().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn call_tokens(name: &str, inner: &str, out: &mut Vec<String>, depth: usize) {
    let args = split_args(inner);
    let first = args.first().map(String::as_str).unwrap_or("");
    if TRANSFORMS.contains(&name.to_ascii_lowercase().as_str()) {
        tokens_at(first, out, depth);
    } else if is_plain_ref(first) {
        out.push(format!("{first}:{name}"));
    } else {
        tokens_at(first, out, depth);
    }
}

/// Reference tokens of a filter, scanned as text.
pub fn filter_tokens(filter: &str, out: &mut Vec<String>) {
    let chars: Vec<char> = filter.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' | '"' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    i += 1;
                }
                i += 1;
            }
            '{' => {
                while i < chars.len() && chars[i] != '}' {
                    i += 1;
                }
                i += 1;
            }
            ':' => {
                // `:agg` and `:agg(...)` suffixes are not references.
                i += 1;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                if i < chars.len() && chars[i] == '(' {
                    i = matching_paren(&chars, i).map_or(chars.len(), |c| c + 1);
                }
            }
            c if c.is_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                let token: String = chars[start..i].iter().collect();
                let token = token.trim_end_matches('.');
                let next = chars[i..].iter().find(|c| **c != ' ');
                if next != Some(&'(')
                    && !FILTER_WORDS.contains(&token.to_ascii_lowercase().as_str())
                {
                    out.push(token.to_owned());
                }
            }
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
}

fn as_ref(item: &Value) -> Option<String> {
    match item {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o
            .get("name")
            .or_else(|| o.get("column"))
            .or_else(|| o.get("dimension"))
            .and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Object(inner) => {
                    inner.get("name").and_then(Value::as_str).map(str::to_owned)
                }
                _ => None,
            }),
        _ => None,
    }
}

fn list<'a>(query: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    query
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// Extracts and strictly resolves the entities of a query; de-duplicated, first seen first.
pub fn query_entities(
    query: &Value,
    catalog: &Catalog,
    lookup: &dyn Lookup,
) -> Result<Resolution, ResolveError> {
    let source_name = match query.get("source_model") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Object(o)) => match o
            .get("name")
            .or_else(|| o.get("source_name"))
            .and_then(Value::as_str)
        {
            Some(n) => n.to_owned(),
            None => {
                return Err("Could not derive a model name from query.source_model."
                    .to_owned()
                    .into())
            }
        },
        _ => {
            return Err("Could not derive a model name from query.source_model."
                .to_owned()
                .into())
        }
    };
    // The source model is looked up as a model, never through the general resolver: a model
    // named like its datasource (`orders` in `orders`) is still the model.
    let source = catalog
        .model_named(&source_name)?
        .ok_or_else(|| format!("Source model not found: '{source_name}'."))?;
    let mut own_names: Vec<String> = Vec::new();
    let mut tokens: Vec<String> = Vec::new();
    for d in list(query, "dimensions") {
        match d
            .get("formula")
            .or_else(|| d.get("sql"))
            .and_then(Value::as_str)
        {
            Some(f) => {
                own_names.extend(d.get("name").and_then(Value::as_str).map(str::to_owned));
                formula_tokens(f, &mut tokens);
            }
            None => tokens.extend(as_ref(d)),
        }
    }
    for t in list(query, "time_dimensions") {
        tokens.extend(as_ref(t));
    }
    for m in list(query, "measures") {
        own_names.extend(m.get("name").and_then(Value::as_str).map(str::to_owned));
        match m {
            Value::String(f) => formula_tokens(f, &mut tokens),
            _ => {
                if let Some(f) = m.get("formula").and_then(Value::as_str) {
                    formula_tokens(f, &mut tokens);
                }
            }
        }
    }
    for f in list(query, "filters") {
        if let Some(text) = f.as_str() {
            filter_tokens(text, &mut tokens);
        }
    }
    for o in list(query, "order") {
        tokens.extend(as_ref(o));
    }
    let mut res = Resolution {
        canonical_forms: vec![source.canonical_id()],
        warnings: vec![],
    };
    for token in tokens {
        let bare = token.split(':').next().unwrap_or(&token);
        if own_names.iter().any(|n| n == bare) {
            continue;
        }
        let r = catalog.resolve(&token, Some(source), lookup)?;
        for id in r.canonical_forms {
            if !res.canonical_forms.contains(&id) {
                res.canonical_forms.push(id);
            }
        }
        for w in r.warnings {
            if !res.warnings.contains(&w) {
                res.warnings.push(w);
            }
        }
    }
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(f: &str) -> Vec<String> {
        let mut out = Vec::new();
        formula_tokens(f, &mut out);
        out
    }

    #[test]
    fn formulas_yield_aggregated_refs() {
        assert_eq!(tokens("sum(amount) / count(*)"), ["amount:sum", "*:count"]);
        assert_eq!(tokens("cumsum(sum(quantity))"), ["quantity:sum"]);
        assert_eq!(tokens("amount:sum / *:count"), ["amount:sum", "*:count"]);
        assert_eq!(tokens("sum(amount - quantity)"), ["amount", "quantity"]);
        assert_eq!(tokens("x:weighted_avg(weight=qty) * 2"), ["x:weighted_avg"]);
        assert_eq!(tokens("count(orders.*)"), ["orders.*:count"]);
    }

    #[test]
    fn a_formula_nested_past_the_walk_depth_costs_its_length_times_the_depth() {
        let deep = format!("{}amount{}", "cumsum(".repeat(50_000), ")".repeat(50_000));
        let out = tokens(&deep);
        assert_eq!(out.len(), 1);
        assert!(out[0].starts_with("cumsum(cumsum("), "{}", &out[0][..40]);
        let shallow = format!("{}amount{}", "cumsum(".repeat(10), ")".repeat(10));
        assert_eq!(tokens(&shallow), ["amount"]);
    }

    #[test]
    fn filters_are_scanned_as_text() {
        let mut out = Vec::new();
        filter_tokens("status = 'paid' and amount > {min_amt}", &mut out);
        filter_tokens(
            "coalesce(quantity, 0) > 1 AND revenue:sum > 10 and customers.region IS NOT NULL",
            &mut out,
        );
        assert_eq!(
            out,
            [
                "status",
                "amount",
                "quantity",
                "revenue",
                "customers.region"
            ]
        );
    }
}
