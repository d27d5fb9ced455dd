//! Splitting an aggregation off an entity reference: `revenue:sum`,
//! `x:weighted_avg(weight=qty)`, `sum(amount)`, `avg(amount, weight=quantity)`, `count(*)`.

/// A reference with its aggregation taken off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggRef {
    /// The entity part: `amount`, `orders.amount`, `*`, `orders.*`.
    pub prefix: String,
    /// The aggregation name, when there was one.
    pub agg: Option<String>,
}

/// Index of the first `:` outside parentheses (and quotes inside them: a quote at the top level
/// is part of a name such as `o'brien`).
fn top_level_colon(s: &str) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') if depth > 0 => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ':') if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// Splits `s` at top-level commas (quotes count only inside parentheses, as in
/// `avg(x, sep=',')`; at the top level they are part of names).
pub fn split_args(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut cur = String::new();
    for c in s.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') if depth > 0 => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(cur.trim().to_owned());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() || !out.is_empty() {
        out.push(cur.trim().to_owned());
    }
    out
}

/// A plain reference: dotted identifiers, `*`, or `<model>.*`.
pub fn is_plain_ref(s: &str) -> bool {
    if s == "*" {
        return true;
    }
    let body = s.strip_suffix(".*").unwrap_or(s);
    !body.is_empty()
        && body.split('.').all(|seg| {
            !seg.is_empty()
                && seg
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
        })
}

/// `name(args)` when the whole text is one call.
pub fn as_call(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let open = s.find('(')?;
    let name = s[..open].trim();
    if name.is_empty()
        || !name.chars().all(|c| c.is_alphanumeric() || c == '_')
        || !s.ends_with(')')
    {
        return None;
    }
    // The parenthesis opened after the name must be the one that closes at the end.
    let inner = &s[open + 1..s.len() - 1];
    let mut depth = 0i32;
    for c in inner.chars() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            _ => {}
        }
    }
    (depth == 0).then_some((name, inner))
}

/// A call that is not the `agg(column)` form (an expression such as `sum(amount - quantity)`),
/// which names no entity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("'{text}' is not a single aggregated column reference; only the `agg(column)` form names an entity.")]
pub struct NotAnAggRef {
    /// The reference as written.
    pub text: String,
}

/// Splits the aggregation off a reference.
pub fn split_agg_ref(text: &str) -> Result<AggRef, NotAnAggRef> {
    if let Some(i) = top_level_colon(text) {
        let agg = text[i + 1..]
            .split('(')
            .next()
            .unwrap_or("")
            .trim()
            .to_owned();
        return Ok(AggRef {
            prefix: text[..i].trim().to_owned(),
            agg: Some(agg),
        });
    }
    if let Some((name, inner)) = as_call(text) {
        let args = split_args(inner);
        let source = args.first().map(String::as_str).unwrap_or("");
        if !is_plain_ref(source) {
            return Err(NotAnAggRef {
                text: text.to_owned(),
            });
        }
        return Ok(AggRef {
            prefix: source.to_owned(),
            agg: Some(name.to_owned()),
        });
    }
    Ok(AggRef {
        prefix: text.to_owned(),
        agg: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> (String, Option<String>) {
        let r = split_agg_ref(s).unwrap();
        (r.prefix, r.agg)
    }

    #[test]
    fn both_forms_split() {
        assert_eq!(
            split("orders.amount:sum"),
            ("orders.amount".into(), Some("sum".into()))
        );
        assert_eq!(
            split("x:weighted_avg(weight=qty)"),
            ("x".into(), Some("weighted_avg".into()))
        );
        assert_eq!(split("sum(amount)"), ("amount".into(), Some("sum".into())));
        assert_eq!(
            split("avg(amount, weight=quantity)"),
            ("amount".into(), Some("avg".into()))
        );
        assert_eq!(split("count(*)"), ("*".into(), Some("count".into())));
        assert_eq!(
            split("count(orders.*)"),
            ("orders.*".into(), Some("count".into()))
        );
        assert_eq!(split("*:count"), ("*".into(), Some("count".into())));
        assert_eq!(split("orders"), ("orders".into(), None));
        assert!(split_agg_ref("sum(amount - quantity)")
            .unwrap_err()
            .to_string()
            .contains("not a single aggregated column reference"));
    }

    #[test]
    fn quotes_at_the_top_level_are_part_of_names() {
        assert_eq!(split("o'brien:sum"), ("o'brien".into(), Some("sum".into())));
        assert_eq!(
            split_args("o'brien, people.name"),
            ["o'brien", "people.name"]
        );
        assert_eq!(split_args("avg(x, sep=','), y"), ["avg(x, sep=',')", "y"]);
        assert_eq!(
            split("schools.charter school (y/n):count"),
            ("schools.charter school (y/n)".into(), Some("count".into()))
        );
    }
}
