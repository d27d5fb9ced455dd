//! Small pieces of the formulas the metrics are written as: ANDed filters, the model most
//! inputs live on, inputs replaced by their formulas, literals.

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

pub fn and(a: Option<&str>, b: Option<&str>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(format!("({a}) AND ({b})")),
        (Some(x), None) | (None, Some(x)) => Some(x.to_owned()),
        (None, None) => None,
    }
}

pub fn most_common(models: &[usize]) -> usize {
    let mut best = (0, models.first().copied().unwrap_or(0));
    for &m in models {
        let n = models.iter().filter(|x| **x == m).count();
        if n > best.0 {
            best = (n, m);
        }
    }
    best.1
}

/// `expr` with each input name replaced by its formula, whole identifiers only.
pub fn substitute(expr: &str, refs: &HashMap<String, String>) -> String {
    static WORD: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"[A-Za-z_][A-Za-z0-9_]*").expect("valid regex"));
    WORD.replace_all(expr, |c: &regex::Captures| {
        refs.get(&c[0]).cloned().unwrap_or_else(|| c[0].to_owned())
    })
    .into_owned()
}

pub fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => format!("'{}'", s.replace('\'', "''")),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inputs_are_replaced_as_whole_words() {
        let refs: HashMap<String, String> = [
            ("revenue".to_owned(), "sum(revenue_col)".to_owned()),
            ("cost".to_owned(), "order_cost".to_owned()),
        ]
        .into();
        assert_eq!(
            substitute("revenue - cost + revenue_growth", &refs),
            "sum(revenue_col) - order_cost + revenue_growth"
        );
    }
}
