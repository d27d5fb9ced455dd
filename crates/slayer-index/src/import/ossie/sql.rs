//! An Ossie metric's SQL as a SLayer formula: each aggregate over a column (`SUM(store_sales
//! .ss_ext_sales_price)`, `COUNT(DISTINCT customer.c_customer_sk)`, `PERCENTILE_CONT(0.5) WITHIN
//! GROUP (ORDER BY x)`) becomes the SLayer aggregation of that column from the metric's model
//! (`sum(store_sales.ss_ext_sales_price)`, `count_distinct(c_customer_sk)`, `median(x)`), an
//! aggregate over an expression aggregates a hidden column holding it, and the arithmetic and
//! scalar functions around them are kept. The metric goes on the dataset that joins every other
//! dataset it reads directly (the first it names on a tie).

use serde_json::{json, Value};
use slayer_common::records::Model;

use super::{described, expression};
use crate::import::{column, measure, At, Fate, Tally};

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Number(String),
    Text(String),
    Open,
    Close,
    Comma,
    Star,
    Op(String),
}

fn tokens(sql: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = sql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == '_' || c == '"' {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || matches!(chars[i], '_' | '.' | '"'))
            {
                i += 1;
            }
            out.push(Token::Word(
                chars[start..i].iter().collect::<String>().replace('"', ""),
            ));
        } else if c.is_ascii_digit() {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            out.push(Token::Number(chars[start..i].iter().collect()));
        } else if c == '\'' {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push(Token::Text(
                chars[start..i.min(chars.len())].iter().collect(),
            ));
        } else {
            i += 1;
            out.push(match c {
                '(' => Token::Open,
                ')' => Token::Close,
                ',' => Token::Comma,
                '*' => Token::Star,
                '+' | '-' | '/' | '%' => Token::Op(c.to_string()),
                '<' | '>' | '=' | '!' => {
                    let mut op = c.to_string();
                    if i < chars.len() && matches!(chars[i], '=' | '>') {
                        op.push(chars[i]);
                        i += 1;
                    }
                    Token::Op(op)
                }
                other => return Err(format!("'{other}' is not SQL this importer reads")),
            });
        }
    }
    Ok(out)
}

/// The token index just past the parenthesis closing the one at `open`.
fn closing(t: &[Token], open: usize) -> Result<usize, String> {
    let mut depth = 0;
    for (i, tok) in t.iter().enumerate().skip(open) {
        match tok {
            Token::Open => depth += 1,
            Token::Close => {
                depth -= 1;
                if depth == 0 {
                    return Ok(i + 1);
                }
            }
            _ => {}
        }
    }
    Err("unbalanced parentheses".into())
}

fn text_of(t: &[Token]) -> String {
    let mut out = String::new();
    for tok in t {
        let piece = match tok {
            Token::Word(w) | Token::Number(w) | Token::Text(w) | Token::Op(w) => w.clone(),
            Token::Open => "(".into(),
            Token::Close => ")".into(),
            Token::Comma => ",".into(),
            Token::Star => "*".into(),
        };
        let glue = matches!(tok, Token::Close | Token::Comma | Token::Open)
            || out.ends_with('(')
            || out.is_empty();
        if !glue {
            out.push(' ');
        }
        out.push_str(&piece);
    }
    out
}

/// One aggregate the metric reads: its SLayer function (with any extra argument) and what it
/// aggregates.
#[derive(Debug)]
struct Aggregate {
    function: String,
    extra: String,
    /// `*`, a column (`dataset.column` or `column`), or an expression.
    operand: String,
}

/// The formula with `{0}`, `{1}`… where the aggregates go, and the aggregates.
fn parse(t: &[Token]) -> Result<(String, Vec<Aggregate>), String> {
    let mut out = String::new();
    let mut aggregates = Vec::new();
    let mut i = 0;
    while i < t.len() {
        match &t[i] {
            Token::Word(w) if t.get(i + 1) == Some(&Token::Open) => {
                let end = closing(t, i + 1)?;
                let inner = &t[i + 2..end - 1];
                let upper = w.to_ascii_uppercase();
                let simple = match upper.as_str() {
                    "SUM" => Some("sum"),
                    "AVG" => Some("avg"),
                    "MIN" => Some("min"),
                    "MAX" => Some("max"),
                    "MEDIAN" => Some("median"),
                    "STDDEV" | "STDDEV_SAMP" => Some("stddev_samp"),
                    "STDDEV_POP" => Some("stddev_pop"),
                    "VARIANCE" | "VAR_SAMP" => Some("var_samp"),
                    "VAR_POP" => Some("var_pop"),
                    _ => None,
                };
                let mut next = end;
                let aggregate = if let Some(f) = simple {
                    if matches!(inner.first(), Some(Token::Word(d)) if d.eq_ignore_ascii_case("distinct"))
                    {
                        return Err(format!("{upper}(DISTINCT …) has no SLayer form"));
                    }
                    Some(Aggregate {
                        function: f.into(),
                        extra: String::new(),
                        operand: text_of(inner),
                    })
                } else if upper == "COUNT" {
                    Some(match inner {
                        [Token::Star] | [] => Aggregate {
                            function: "count".into(),
                            extra: String::new(),
                            operand: "*".into(),
                        },
                        [Token::Word(d), rest @ ..] if d.eq_ignore_ascii_case("distinct") => {
                            Aggregate {
                                function: "count_distinct".into(),
                                extra: String::new(),
                                operand: text_of(rest),
                            }
                        }
                        rest => Aggregate {
                            function: "count".into(),
                            extra: String::new(),
                            operand: text_of(rest),
                        },
                    })
                } else if upper == "PERCENTILE_CONT" || upper == "PERCENTILE_DISC" {
                    // PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY x)
                    let p = text_of(inner);
                    let within = matches!((t.get(end), t.get(end + 1)), (Some(Token::Word(a)), Some(Token::Word(b))) if a.eq_ignore_ascii_case("within") && b.eq_ignore_ascii_case("group"));
                    if !within || t.get(end + 2) != Some(&Token::Open) {
                        return Err(format!("{upper} without WITHIN GROUP (ORDER BY …)"));
                    }
                    let group_end = closing(t, end + 2)?;
                    let group = &t[end + 3..group_end - 1];
                    let operand = match group {
                        [Token::Word(o), Token::Word(b), rest @ ..]
                            if o.eq_ignore_ascii_case("order") && b.eq_ignore_ascii_case("by") =>
                        {
                            text_of(rest)
                        }
                        _ => return Err(format!("{upper}'s WITHIN GROUP needs ORDER BY")),
                    };
                    next = group_end;
                    Some(if p == "0.5" {
                        Aggregate {
                            function: "median".into(),
                            extra: String::new(),
                            operand,
                        }
                    } else {
                        Aggregate {
                            function: "percentile".into(),
                            extra: format!(", p={p}"),
                            operand,
                        }
                    })
                } else {
                    None
                };
                if matches!(t.get(next), Some(Token::Word(o)) if o.eq_ignore_ascii_case("over")) {
                    return Err(format!(
                        "the window function {upper}(…) OVER (…) has no SLayer form"
                    ));
                }
                match aggregate {
                    Some(a) => {
                        out.push_str(&format!("{{{}}}", aggregates.len()));
                        aggregates.push(a);
                    }
                    None => {
                        let (inner_text, inner_aggs) = parse(inner)?;
                        let offset = aggregates.len();
                        let mut shifted = inner_text;
                        for k in (0..inner_aggs.len()).rev() {
                            shifted = shifted
                                .replace(&format!("{{{k}}}"), &format!("{{{}}}", k + offset));
                        }
                        out.push_str(&format!("{}({shifted})", w.to_ascii_lowercase()));
                        aggregates.extend(inner_aggs);
                    }
                }
                i = next;
                continue;
            }
            Token::Word(w)
                if ["case", "when", "over", "select"]
                    .contains(&w.to_ascii_lowercase().as_str()) =>
            {
                return Err(format!(
                    "{} outside an aggregate has no SLayer form",
                    w.to_ascii_uppercase()
                ));
            }
            Token::Word(w) => return Err(format!("the column '{w}' is read outside an aggregate")),
            Token::Text(_) => return Err("a string outside an aggregate has no SLayer form".into()),
            Token::Open => out.push('('),
            Token::Close => out.push(')'),
            Token::Comma => out.push_str(", "),
            Token::Star => out.push_str(" * "),
            Token::Op(o) => out.push_str(&format!(" {o} ")),
            Token::Number(n) => out.push_str(n),
        }
        i += 1;
    }
    Ok((
        out.replace("  ", " ").replace("( ", "(").replace(" )", ")"),
        aggregates,
    ))
}

/// The datasets an operand reads: `dataset.column` names one; a bare column the dataset having
/// a field of that name (when exactly one does).
fn owners(operand: &str, models: &[Model]) -> Result<Vec<usize>, String> {
    let mut found = Vec::new();
    for tok in tokens(operand)? {
        let Token::Word(w) = tok else { continue };
        let owner = match w.split_once('.') {
            Some((d, _)) => models.iter().position(|m| m.name == d),
            None => {
                let having: Vec<usize> = models
                    .iter()
                    .enumerate()
                    .filter(|(_, m)| m.columns.iter().any(|c| c.name == w))
                    .map(|(i, _)| i)
                    .collect();
                match having.len() {
                    0 => None,
                    1 => Some(having[0]),
                    _ => {
                        return Err(format!(
                            "'{w}' is a field of several datasets; qualify it as <dataset>.{w}"
                        ))
                    }
                }
            }
        };
        if let Some(o) = owner {
            if !found.contains(&o) {
                found.push(o);
            }
        }
    }
    Ok(found)
}

fn joined(a: &Model, b: &Model) -> bool {
    a.joins.iter().any(|j| j.target_model == b.name)
        || b.joins.iter().any(|j| j.target_model == a.name)
}

/// Adds the metric `m` as a named measure and records it.
pub fn metric(m: &Value, models: &mut [Model], dialect: &str, at: &At, tally: &mut Tally) {
    let name = m["name"].as_str().unwrap_or_default().to_owned();
    let object = format!("metric '{name}'");
    let mut problems = Vec::new();
    let Some((_, sql)) = expression(m, dialect) else {
        tally.object(
            "metric",
            &object,
            at,
            vec![(
                Fate::Skipped,
                "no SQL expression (only other dialects)".into(),
            )],
        );
        return;
    };
    let translated = tokens(&sql)
        .and_then(|t| parse(&t))
        .and_then(|(template, aggregates)| {
            let mut read = Vec::new();
            for a in &aggregates {
                if a.operand == "*" {
                    continue;
                }
                let o = owners(&a.operand, models)?;
                if o.len() > 1 {
                    return Err(format!(
                        "'{}' reads more than one dataset inside one aggregate",
                        a.operand
                    ));
                }
                read.push(o.first().copied());
            }
            Ok((template, aggregates, read))
        });
    let (template, aggregates, read) = match translated {
        Ok(x) => x,
        Err(why) => {
            // Still findable: the SQL as the formula's text, on the first dataset it names.
            let home = owners(&sql, models)
                .ok()
                .and_then(|o| o.first().copied())
                .unwrap_or(0);
            problems.push((
                Fate::Lossy,
                format!("{why}; the SQL is kept as the formula's text, which SLayer cannot run"),
            ));
            place(models, home, &name, sql.clone(), m, &mut problems);
            tally.object("metric", &object, at, problems);
            return;
        }
    };
    let referenced: Vec<usize> = {
        let mut r: Vec<usize> = read.iter().flatten().copied().collect();
        r.dedup();
        r
    };
    let anchor = referenced
        .iter()
        .copied()
        .find(|&a| referenced.iter().all(|&b| a == b || joined(&models[a], &models[b])))
        .or_else(|| {
            if !referenced.is_empty() {
                problems.push((Fate::Lossy, "no dataset it reads joins all the others directly; it is put on the first, and reads the rest through paths SLayer cannot follow yet".into()));
            }
            referenced.first().copied()
        })
        .or_else(|| (0..models.len()).find(|&i| !models.iter().any(|m| m.joins.iter().any(|j| j.target_model == models[i].name))))
        .unwrap_or(0);
    let mut formula = template;
    let mut reads = read.into_iter();
    for (k, a) in aggregates.iter().enumerate() {
        let owner = if a.operand == "*" {
            None
        } else {
            reads.next().flatten()
        };
        let operand = match owner {
            None if a.operand == "*" => "*".to_owned(),
            None => a.operand.clone(),
            Some(o) => {
                let local = strip_qualifier(&a.operand, &models[o].name);
                let column = if crate::import::is_identifier(&local)
                    && models[o].columns.iter().any(|c| c.name == local)
                {
                    local
                } else {
                    let hidden = format!("_{name}_{k}");
                    let mut c = column(&hidden);
                    c.sql = Some(local);
                    c.hidden = true;
                    models[o].columns.push(c);
                    hidden
                };
                if o == anchor {
                    column
                } else {
                    format!("{}.{column}", models[o].name)
                }
            }
        };
        formula = formula.replace(
            &format!("{{{k}}}"),
            &format!("{}({operand}{})", a.function, a.extra),
        );
    }
    place(models, anchor, &name, formula, m, &mut problems);
    tally.object("metric", &object, at, problems);
}

fn strip_qualifier(operand: &str, dataset: &str) -> String {
    let prefix = format!("{dataset}.");
    let mut out = String::new();
    let mut rest = operand;
    while let Some(i) = rest.find(&prefix) {
        let before_ok = rest[..i]
            .chars()
            .last()
            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_' && c != '.');
        out.push_str(&rest[..i]);
        if !before_ok {
            out.push_str(&prefix);
        }
        rest = &rest[i + prefix.len()..];
    }
    out.push_str(rest);
    out
}

fn place(
    models: &mut [Model],
    home: usize,
    name: &str,
    formula: String,
    m: &Value,
    problems: &mut Vec<(Fate, String)>,
) {
    let Some(target) = models.get_mut(home) else {
        problems.push((Fate::Skipped, "there is no dataset to put it on".into()));
        return;
    };
    let mut leaf = name.to_owned();
    if target.columns.iter().any(|c| c.name == leaf)
        || target
            .measures
            .iter()
            .any(|x| x.name.as_deref() == Some(&leaf))
    {
        leaf = format!("{name}_metric");
        problems.push((
            Fate::Lossy,
            format!(
                "dataset '{}' already has a field named '{name}'; imported as '{leaf}'",
                target.name
            ),
        ));
    }
    let mut me = measure(&leaf, formula);
    me.description = described(m);
    if let Some(ext) = m["custom_extensions"].as_array() {
        me.extra
            .insert("meta".into(), json!({"custom_extensions": ext}));
    }
    target.measures.push(me);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn formula(sql: &str) -> Result<(String, Vec<String>), String> {
        let (template, aggregates) = parse(&tokens(sql)?)?;
        Ok((
            template,
            aggregates
                .iter()
                .map(|a| format!("{}({}{})", a.function, a.operand, a.extra))
                .collect(),
        ))
    }

    #[test]
    fn aggregates_become_slayer_aggregations() {
        assert_eq!(
            formula("SUM(store_sales.ss_ext_sales_price) / COUNT(DISTINCT customer.c_customer_sk)")
                .unwrap(),
            (
                "{0} / {1}".to_owned(),
                vec![
                    "sum(store_sales.ss_ext_sales_price)".to_owned(),
                    "count_distinct(customer.c_customer_sk)".to_owned()
                ]
            )
        );
        assert_eq!(
            formula("SUM(a.x) / NULLIF(SUM(b.y), 0)").unwrap().0,
            "{0} / nullif({1}, 0)"
        );
        assert_eq!(formula("COUNT(*)").unwrap().1, ["count(*)"]);
        assert_eq!(
            formula("PERCENTILE_CONT(0.9) WITHIN GROUP (ORDER BY t.price)")
                .unwrap()
                .1,
            ["percentile(t.price, p=0.9)"]
        );
        assert_eq!(
            formula("PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY price)")
                .unwrap()
                .1,
            ["median(price)"]
        );
        assert_eq!(
            formula("SUM(price * quantity)").unwrap().1,
            ["sum(price * quantity)"]
        );
        assert!(formula("SUM(x) OVER (PARTITION BY y)")
            .unwrap_err()
            .contains("window"));
        assert!(formula("CASE WHEN SUM(x) > 0 THEN 1 END")
            .unwrap_err()
            .contains("CASE"));
        assert!(formula("price")
            .unwrap_err()
            .contains("outside an aggregate"));
        assert!(formula("SUM(DISTINCT x)").is_err());
    }

    #[test]
    fn qualifiers_are_stripped_only_where_they_qualify() {
        assert_eq!(
            strip_qualifier("t.price * t.qty + xt.a", "t"),
            "price * qty + xt.a"
        );
    }
}
