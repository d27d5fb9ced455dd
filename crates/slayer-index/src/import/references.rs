//! Every reference an importer writes, checked against the models it made (docs/spec/importers.md
//! §17.1): a name in a measure's formula is a column or measure of its model, a dotted path
//! follows the model's joins hop by hop to a model that has the last name, a path in a filter
//! does the same, and a join pairs columns both models have. What does not resolve is named
//! on its object as a loss; nothing is dropped. A formula reading a column outside any
//! aggregation (Cube's `type: number` over a raw column) is named too.

use std::collections::{HashMap, HashSet};

use slayer_common::records::Model;

use super::Tally;

/// Functions that aggregate the rows they are given: a column inside one is read properly.
const AGGREGATIONS: [&str; 16] = [
    "sum",
    "avg",
    "count",
    "count_distinct",
    "count_distinct_approx",
    "min",
    "max",
    "median",
    "percentile",
    "first",
    "last",
    "stddev",
    "variance",
    "any_value",
    "array_agg",
    "string_agg",
];

/// Words a formula or filter uses that name nothing of the model.
const KEYWORDS: [&str; 33] = [
    "and",
    "or",
    "not",
    "null",
    "is",
    "in",
    "as",
    "case",
    "when",
    "then",
    "else",
    "end",
    "true",
    "false",
    "distinct",
    "like",
    "ilike",
    "between",
    "interval",
    "cast",
    "over",
    "partition",
    "by",
    "order",
    "asc",
    "desc",
    "filter",
    "where",
    "date",
    "timestamp",
    "day",
    "month",
    "year",
];

/// One name a text refers to.
#[derive(Debug, PartialEq)]
struct Reference {
    /// `a`, or `a.b.c`.
    path: String,
    /// Whether some enclosing call aggregates.
    aggregated: bool,
}

/// The names `text` refers to: identifiers and dotted paths outside string literals, less
/// function names, keyword arguments (`window=`), numbers and SQL keywords.
fn references(text: &str, aggregations: &HashSet<String>) -> Vec<Reference> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    // One entry per open parenthesis: whether that call aggregates.
    let mut calls: Vec<bool> = Vec::new();
    let mut after_as = false;
    let mut i = 0;
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
        if c == '(' {
            calls.push(false);
            i += 1;
            continue;
        }
        if c == ')' {
            calls.pop();
            i += 1;
            continue;
        }
        if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            continue;
        }
        if !(c.is_ascii_alphabetic() || c == '_') {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len()
            && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.')
        {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        if word.ends_with('.') && chars.get(i) == Some(&'*') {
            // `count(orders.*)`: every row of a joined model, not a name to look up.
            i += 1;
            continue;
        }
        let word = word.trim_end_matches('.').to_owned();
        let mut j = i;
        while j < chars.len() && chars[j] == ' ' {
            j += 1;
        }
        let next = chars.get(j).copied();
        let lower = word.to_ascii_lowercase();
        if next == Some('(') {
            calls.push(aggregations.contains(&lower));
            i = j + 1;
            after_as = false;
            continue;
        }
        let kwarg = next == Some('=') && chars.get(j + 1) != Some(&'=') && !calls.is_empty();
        let cast_type = std::mem::replace(&mut after_as, lower == "as");
        if kwarg || cast_type || KEYWORDS.contains(&lower.as_str()) {
            continue;
        }
        out.push(Reference {
            path: word,
            aggregated: calls.iter().any(|a| *a),
        });
    }
    out
}

fn has_column(m: &Model, name: &str) -> bool {
    m.columns.iter().any(|c| c.name == name)
}

fn has_measure(m: &Model, name: &str) -> bool {
    m.measures.iter().any(|x| x.name.as_deref() == Some(name))
}

/// Why `path` does not resolve from `from`, if it does not.
fn unresolved(
    models: &HashMap<&str, &Model>,
    from: &Model,
    path: &str,
    bare_ok: bool,
) -> Option<String> {
    let mut hops: Vec<&str> = path.split('.').collect();
    let last = hops.pop()?;
    if hops.is_empty() {
        if bare_ok || has_column(from, last) || has_measure(from, last) {
            return None;
        }
        return Some(format!(
            "names '{last}', which model '{}' does not have",
            from.name
        ));
    }
    let mut here = from;
    for hop in hops {
        if !here.joins.iter().any(|j| j.target_model == hop) {
            return Some(format!(
                "names '{path}', but model '{}' has no join to '{hop}'",
                here.name
            ));
        }
        here = models.get(hop)?;
    }
    if has_column(here, last) || has_measure(here, last) {
        None
    } else {
        Some(format!(
            "names '{path}', but model '{}' has no '{last}'",
            here.name
        ))
    }
}

/// The object `tally` recorded for model `m` (a semantic model, cube, view or dataset).
pub fn object_of(tally: &Tally, m: &Model) -> String {
    tally
        .known(&[
            format!("semantic model '{}'", m.name),
            format!("cube '{}'", m.name),
            format!("view '{}'", m.name),
            format!("dataset '{}'", m.name),
            format!("model '{}'", m.name),
        ])
        .unwrap_or_else(|| format!("model '{}'", m.name))
}

/// Checks every model's formulas, filters and joins, recording each loss on its object.
pub fn check(models: &[Model], tally: &mut Tally) {
    let by_name: HashMap<&str, &Model> = models.iter().map(|m| (m.name.as_str(), m)).collect();
    for m in models {
        let mut aggregations: HashSet<String> =
            AGGREGATIONS.iter().map(|s| (*s).to_owned()).collect();
        aggregations.extend(m.aggregations.iter().map(|a| a.name.to_ascii_lowercase()));
        let model_object = object_of(tally, m);
        for x in &m.measures {
            let name = x.name.clone().unwrap_or_default();
            // A measure not recorded on its own (a view's, copied from its cube) is named on
            // its model.
            let (object, prefix) = match tally.known(&[
                format!("measure '{}.{name}'", m.name),
                format!("metric '{name}'"),
                format!("metric '{}.{name}'", m.name),
            ]) {
                Some(object) => (object, String::new()),
                None => (model_object.clone(), format!("measure '{name}': ")),
            };
            let mut seen = HashSet::new();
            for r in references(&x.formula, &aggregations) {
                if !seen.insert(r.path.clone()) {
                    continue;
                }
                if let Some(why) = unresolved(&by_name, m, &r.path, false) {
                    tally.late_loss(
                        &object,
                        format!("{prefix}its formula '{}' {why}", x.formula),
                    );
                } else if !r.aggregated
                    && !r.path.contains('.')
                    && has_column(m, &r.path)
                    && !has_measure(m, &r.path)
                {
                    tally.late_loss(&object, format!("{prefix}its formula '{}' reads column '{}' outside any aggregation; SLayer formulas aggregate columns (e.g. sum({})), so it cannot run as written", x.formula, r.path, r.path));
                }
            }
        }
        let filters = m
            .columns
            .iter()
            .filter_map(|c| {
                c.filter
                    .as_ref()
                    .map(|f| (format!("column '{}'", c.name), f))
            })
            .chain(m.filters.iter().map(|f| ("the model".to_owned(), f)));
        for (owner, filter) in filters {
            for r in references(filter, &aggregations) {
                if !r.path.contains('.') {
                    continue; // a bare name may be a warehouse column the model does not list
                }
                if let Some(why) = unresolved(&by_name, m, &r.path, true) {
                    tally.late_loss(
                        &model_object,
                        format!("the filter of {owner} ('{filter}') {why}"),
                    );
                }
            }
        }
        for j in &m.joins {
            let Some(target) = by_name.get(j.target_model.as_str()) else {
                tally.late_loss(
                    &model_object,
                    format!(
                        "its join to '{}' names no model of the project",
                        j.target_model
                    ),
                );
                continue;
            };
            for (mine, theirs) in &j.join_pairs {
                if !has_column(m, mine) {
                    tally.late_loss(
                        &model_object,
                        format!(
                            "its join to '{}' pairs '{mine}', which model '{}' does not have",
                            target.name, m.name
                        ),
                    );
                }
                if !has_column(target, theirs) {
                    tally.late_loss(
                        &model_object,
                        format!(
                            "its join to '{}' pairs '{theirs}', which model '{}' does not have",
                            target.name, target.name
                        ),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::{column, measure, model, At};
    use slayer_common::records::Join;

    fn aggs() -> HashSet<String> {
        AGGREGATIONS.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn references_leave_out_functions_literals_and_arguments() {
        let refs = references(
            "sum(amount, window='7d') / nullif(count(customers.id), 0) + total * 2 - CAST(x AS DOUBLE) + 'a b' + count(orders.*)",
            &aggs(),
        );
        let paths: Vec<(&str, bool)> = refs
            .iter()
            .map(|r| (r.path.as_str(), r.aggregated))
            .collect();
        assert_eq!(
            paths,
            [
                ("amount", true),
                ("customers.id", true),
                ("total", false),
                ("x", false)
            ]
        );
    }

    #[test]
    fn unresolved_references_are_named_on_their_object() {
        let mut orders = model("orders", "ds");
        orders.columns = vec![column("amount"), column("customer_id")];
        orders.measures = vec![
            measure("revenue", "sum(amount)".into()),
            measure("bad", "sum(missing) + customers.nope".into()),
            measure("raw", "amount".into()),
        ];
        let mut filtered = column("eu_amount");
        filtered.filter = Some("regions.name = 'EU'".into());
        orders.columns.push(filtered);
        orders.joins = vec![Join {
            target_model: "customers".into(),
            join_pairs: vec![("customer_id".into(), "id".into())],
            extra: Default::default(),
        }];
        let mut customers = model("customers", "ds");
        customers.columns = vec![column("id")];
        let mut tally = Tally::default();
        let at = At::default();
        for name in ["revenue", "bad", "raw"] {
            tally.object("measure", &format!("measure 'orders.{name}'"), &at, vec![]);
        }
        tally.object("cube", "cube 'orders'", &at, vec![]);
        check(&[orders, customers], &mut tally);
        let messages: Vec<String> = tally.issues.iter().map(|i| i.to_string()).collect();
        assert_eq!(messages.len(), 4, "{messages:#?}");
        assert!(messages[0].contains("measure 'orders.bad'") && messages[0].contains("'missing'"));
        assert!(messages[1].contains("has no 'nope'"));
        assert!(messages[2].contains("outside any aggregation"));
        assert!(
            messages[3].contains("cube 'orders'") && messages[3].contains("no join to 'regions'")
        );
        assert_eq!(tally.kinds["measure"].lossy, 2);
        assert_eq!(tally.kinds["measure"].mapped, 1);
    }
}
