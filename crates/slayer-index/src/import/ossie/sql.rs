//! An Ossie metric's SQL as a SLayer formula: each aggregate over a column (`SUM(store_sales
//! .ss_ext_sales_price)`, `COUNT(DISTINCT customer.c_customer_sk)`, `PERCENTILE_CONT(0.5) WITHIN
//! GROUP (ORDER BY x)`) becomes the SLayer aggregation of that column from the metric's model
//! (`sum(store_sales.ss_ext_sales_price)`, `count_distinct(c_customer_sk)`, `median(x)`), an
//! aggregate over an expression aggregates a hidden column holding it, and the arithmetic and
//! scalar functions around them are kept. The metric goes on the dataset that joins every other
//! dataset it reads directly (the first it names on a tie).

use serde_json::{json, Value};
use slayer_common::records::Model;

use super::tokens::{closing, text_of, tokens, Token, TokenError};
use super::{described, expression};
use crate::import::{column, measure, At, Fate, Tally};

/// Why a metric's SQL has no SLayer formula (the SQL is then kept as the formula's text).
#[derive(Debug, thiserror::Error)]
enum SqlError {
    #[error(transparent)]
    Tokens(#[from] TokenError),
    #[error("{0}(DISTINCT …) has no SLayer form")]
    Distinct(String),
    #[error("{0} without WITHIN GROUP (ORDER BY …)")]
    NoWithinGroup(String),
    #[error("{0}'s WITHIN GROUP needs ORDER BY")]
    NoOrderBy(String),
    #[error("the window function {0}(…) OVER (…) has no SLayer form")]
    Window(String),
    #[error("{0} outside an aggregate has no SLayer form")]
    KeywordOutside(String),
    #[error("the column '{0}' is read outside an aggregate")]
    ColumnOutside(String),
    #[error("a string outside an aggregate has no SLayer form")]
    StringOutside,
    #[error("'{0}' is a field of several datasets; qualify it as <dataset>.{0}")]
    Ambiguous(String),
    #[error("'{0}' reads more than one dataset inside one aggregate")]
    SeveralDatasets(String),
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

impl Aggregate {
    fn new(function: &str, operand: String) -> Aggregate {
        Aggregate {
            function: function.into(),
            extra: String::new(),
            operand,
        }
    }
}

/// The formula with `{0}`, `{1}`… where the aggregates go, and the aggregates.
fn parse(t: &[Token]) -> Result<(String, Vec<Aggregate>), SqlError> {
    let mut out = String::new();
    let mut aggregates = Vec::new();
    let mut i = 0;
    while i < t.len() {
        match &t[i] {
            Token::Word(w) if t.get(i + 1) == Some(&Token::Open) => {
                let end = closing(t, i + 1)?;
                let inner = &t[i + 2..end - 1];
                let upper = w.to_ascii_uppercase();
                let (aggregate, next) = aggregate_of(&upper, inner, t, end)?;
                if matches!(t.get(next), Some(Token::Word(o)) if o.eq_ignore_ascii_case("over")) {
                    return Err(SqlError::Window(upper));
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
                return Err(SqlError::KeywordOutside(w.to_ascii_uppercase()));
            }
            Token::Word(w) => return Err(SqlError::ColumnOutside(w.clone())),
            Token::Text(_) => return Err(SqlError::StringOutside),
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

/// The call `upper(inner)` ending before token `end` as an aggregate (`None` when it is
/// another function), and the token index after it (past `WITHIN GROUP (…)` for a
/// percentile).
fn aggregate_of(
    upper: &str,
    inner: &[Token],
    t: &[Token],
    end: usize,
) -> Result<(Option<Aggregate>, usize), SqlError> {
    let simple = match upper {
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
    if let Some(f) = simple {
        if matches!(inner.first(), Some(Token::Word(d)) if d.eq_ignore_ascii_case("distinct")) {
            return Err(SqlError::Distinct(upper.to_owned()));
        }
        return Ok((Some(Aggregate::new(f, text_of(inner))), end));
    }
    if upper == "COUNT" {
        let a = match inner {
            [Token::Star] | [] => Aggregate::new("count", "*".into()),
            [Token::Word(d), rest @ ..] if d.eq_ignore_ascii_case("distinct") => {
                Aggregate::new("count_distinct", text_of(rest))
            }
            rest => Aggregate::new("count", text_of(rest)),
        };
        return Ok((Some(a), end));
    }
    if upper == "PERCENTILE_CONT" || upper == "PERCENTILE_DISC" {
        let (a, next) = percentile(upper, inner, t, end)?;
        return Ok((Some(a), next));
    }
    Ok((None, end))
}

/// `PERCENTILE_CONT(p) WITHIN GROUP (ORDER BY x)`: the median at 0.5, else a percentile.
fn percentile(
    upper: &str,
    inner: &[Token],
    t: &[Token],
    end: usize,
) -> Result<(Aggregate, usize), SqlError> {
    let p = text_of(inner);
    let within = matches!((t.get(end), t.get(end + 1)), (Some(Token::Word(a)), Some(Token::Word(b))) if a.eq_ignore_ascii_case("within") && b.eq_ignore_ascii_case("group"));
    if !within || t.get(end + 2) != Some(&Token::Open) {
        return Err(SqlError::NoWithinGroup(upper.to_owned()));
    }
    let group_end = closing(t, end + 2)?;
    let group = &t[end + 3..group_end - 1];
    let operand = match group {
        [Token::Word(o), Token::Word(b), rest @ ..]
            if o.eq_ignore_ascii_case("order") && b.eq_ignore_ascii_case("by") =>
        {
            text_of(rest)
        }
        _ => return Err(SqlError::NoOrderBy(upper.to_owned())),
    };
    let a = if p == "0.5" {
        Aggregate::new("median", operand)
    } else {
        Aggregate {
            function: "percentile".into(),
            extra: format!(", p={p}"),
            operand,
        }
    };
    Ok((a, group_end))
}

/// The datasets an operand reads: `dataset.column` names one; a bare column the dataset having
/// a field of that name (when exactly one does).
fn owners(operand: &str, models: &[Model]) -> Result<Vec<usize>, SqlError> {
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
                    _ => return Err(SqlError::Ambiguous(w)),
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
    match translate(&sql, models) {
        Ok(translated) => {
            let anchor = anchor(&translated.read, models, &mut problems);
            let formula = translated.formula(&name, anchor, models);
            place(models, anchor, &name, formula, m, &mut problems);
        }
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
        }
    }
    tally.object("metric", &object, at, problems);
}

/// A metric's SQL parsed: the template, its aggregates, and the dataset each aggregate other
/// than `count(*)` reads (when it names one).
struct Translated {
    template: String,
    aggregates: Vec<Aggregate>,
    read: Vec<Option<usize>>,
}

fn translate(sql: &str, models: &[Model]) -> Result<Translated, SqlError> {
    let (template, aggregates) = parse(&tokens(sql)?)?;
    let mut read = Vec::new();
    for a in &aggregates {
        if a.operand == "*" {
            continue;
        }
        let o = owners(&a.operand, models)?;
        if o.len() > 1 {
            return Err(SqlError::SeveralDatasets(a.operand.clone()));
        }
        read.push(o.first().copied());
    }
    Ok(Translated {
        template,
        aggregates,
        read,
    })
}

/// The dataset the metric goes on: the one it reads that joins all the others it reads, else
/// the first it reads, else the first that no dataset joins.
fn anchor(read: &[Option<usize>], models: &[Model], problems: &mut Vec<(Fate, String)>) -> usize {
    let referenced: Vec<usize> = {
        let mut r: Vec<usize> = read.iter().flatten().copied().collect();
        r.dedup();
        r
    };
    referenced
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
        .unwrap_or(0)
}

impl Translated {
    /// The formula on dataset `anchor`: each aggregate over its column (a hidden column of
    /// its dataset when it aggregates an expression), through the join when on another.
    fn formula(self, metric: &str, anchor: usize, models: &mut [Model]) -> String {
        let mut formula = self.template;
        let mut reads = self.read.into_iter();
        for (k, a) in self.aggregates.iter().enumerate() {
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
                        let hidden = format!("_{metric}_{k}");
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
        formula
    }
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

    fn formula(sql: &str) -> Result<(String, Vec<String>), SqlError> {
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
            .to_string()
            .contains("window"));
        assert!(formula("CASE WHEN SUM(x) > 0 THEN 1 END")
            .unwrap_err()
            .to_string()
            .contains("CASE"));
        assert!(formula("price")
            .unwrap_err()
            .to_string()
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
