//! What a measure's formula computes, read through what it names (docs/spec/fusion.md §8.9):
//! importers write a count as a sum of ones (dbt `agg: sum, expr: 1`, Cube `type: count` with
//! a filter become `sum(order_count_col)` over a column whose SQL is `1`) and a measure as
//! another measure's name (`orders` = `order_count`). Read at face value, "how many orders"
//! would find no count there. This module says how to see through both; the corpus reads the
//! formulas and the models' columns.

/// The id of the measure a formula names when the whole formula is one bare name of another
/// measure of its model (`order_count` on `shop.orders` → `shop.orders.order_count`).
pub(crate) fn sibling(model_id: &str, formula: &str) -> Option<String> {
    let name = formula.trim();
    let bare = !name.is_empty()
        && name.chars().all(|c| c.is_alphanumeric() || c == '_')
        && !name.chars().all(|c| c.is_ascii_digit());
    bare.then(|| format!("{model_id}.{name}"))
}

/// Each `sum(name)` of a bare name in a formula: the byte range of the whole call and the name
/// as spelled (ids are case-sensitive). `sum` is a whole word (`cumsum(x)` is not one) in any
/// case, and spaces may pad the name.
pub(crate) fn summed(formula: &str) -> Vec<(std::ops::Range<usize>, &str)> {
    // ASCII lowering keeps every byte where it was, so ranges found in it hold in `formula`.
    let lower = formula.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(found) = lower[from..].find("sum(") {
        let at = from + found;
        from = at + 4;
        let before = lower[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let Some(end) = formula[from..].find(')') else {
            break;
        };
        let name = formula[from..from + end].trim();
        if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
            out.push((at..from + end + 1, name));
        }
    }
    out
}

/// Whether summing a column of this SQL counts rows: the SQL is `1`, or a `CASE … END` whose
/// every result is 0, 1 or NULL (a flag; `TRUE`/`FALSE` too, which a nested condition yields).
pub(crate) fn counts_rows(sql: &str) -> bool {
    let lower = sql.to_lowercase();
    let trimmed = lower
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    if trimmed == "1" {
        return true;
    }
    // A sign stays on its number (`-1` is not a flag); anything else splits.
    let words: Vec<&str> = trimmed
        .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '-')))
        .filter(|w| !w.is_empty())
        .collect();
    if words.first() != Some(&"case") || words.last() != Some(&"end") {
        return false;
    }
    let mut results = 0;
    for (at, word) in words.iter().enumerate() {
        if !matches!(*word, "then" | "else") {
            continue;
        }
        // The result is one flag literal, and the branch ends right after it.
        let flag = words
            .get(at + 1)
            .is_some_and(|r| matches!(*r, "0" | "1" | "null" | "true" | "false"));
        let ends = words
            .get(at + 2)
            .is_some_and(|n| matches!(*n, "when" | "else" | "end"));
        if !(flag && ends) {
            return false;
        }
        results += 1;
    }
    results > 0
}

/// The formula with each `sum(name)` whose name `counts` written `count(name)`: what it
/// computes.
pub(crate) fn as_counted(formula: &str, counts: impl Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(formula.len());
    let mut done = 0;
    for (range, name) in summed(formula) {
        if counts(name) {
            out.push_str(&formula[done..range.start]);
            out.push_str("count(");
            out.push_str(name);
            out.push(')');
            done = range.end;
        }
    }
    out.push_str(&formula[done..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_is_a_sibling_measure() {
        assert_eq!(
            sibling("shop.orders", "order_count").as_deref(),
            Some("shop.orders.order_count")
        );
        assert_eq!(sibling("shop.orders", "sum(x)"), None);
        assert_eq!(sibling("shop.orders", "1"), None);
        assert_eq!(sibling("shop.orders", " "), None);
    }

    #[test]
    fn sums_are_read_by_their_bare_names() {
        let formula = "SUM(a_Col) / nullif(sum( b ), 0) + cumsum(c) + sum(x * y)";
        let names: Vec<&str> = summed(formula).into_iter().map(|(_, n)| n).collect();
        assert_eq!(names, ["a_Col", "b"]);
        assert_eq!(&formula[summed(formula)[1].0.clone()], "sum( b )");
        assert!(summed("count(*)").is_empty());
    }

    #[test]
    fn ones_and_flags_count_rows() {
        assert!(counts_rows("1"));
        assert!(counts_rows(" (1) "));
        assert!(counts_rows(
            "CASE\n    WHEN status = 1 AND active = 1 THEN 1\n    ELSE 0\n  END"
        ));
        assert!(counts_rows(
            "CASE WHEN (CASE WHEN t = 'q' THEN TRUE ELSE FALSE END) THEN 1 ELSE 0 END"
        ));
        assert!(counts_rows("case when refunded then 1 end"));
        assert!(!counts_rows("amount"));
        assert!(!counts_rows("CASE WHEN t = 'q' THEN amount ELSE 0 END"));
        assert!(!counts_rows("CASE WHEN a THEN 1 * amount ELSE 0 END"));
        assert!(!counts_rows("CASE WHEN a THEN 1 ELSE 0 END * amount"));
        assert!(!counts_rows("CASE WHEN a THEN -1 ELSE 1 END"));
        assert!(!counts_rows("10"));
    }

    /// What the corpus reads, on a real store: through a sibling's name and a sum of ones.
    #[test]
    fn the_corpus_reads_counts_through_sums_of_ones_and_siblings() {
        use crate::corpus::Corpus;
        use slayer_common::records::Model;
        use slayer_common::store::{OpenMode, Store, StoreWrite};
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let model: Model = serde_json::from_value(serde_json::json!({
            "name": "orders", "data_source": "shop", "sql_table": "orders",
            "columns": [
                {"name": "order_count_col", "sql": "1"},
                {"name": "amount"},
                {"name": "large_col", "sql": "CASE WHEN amount > 20 THEN 1 ELSE 0 END"}
            ],
            "measures": [
                {"name": "order_count", "formula": "sum(order_count_col)"},
                {"name": "orders", "formula": "order_count"},
                {"name": "revenue", "formula": "sum(amount)"},
                {"name": "large_orders", "formula": "sum(large_col)"},
                {"name": "aov", "formula": "revenue / orders"}
            ]
        }))
        .unwrap();
        let tx = store.write().unwrap();
        tx.put_model(&model).unwrap();
        for doc in slayer_index::render::model_docs(&model) {
            tx.upsert_doc(&doc).unwrap();
        }
        tx.commit().unwrap();
        let corpus = Corpus::load(store.reader()).unwrap();
        let ids = [
            "order_count",
            "orders",
            "revenue",
            "large_orders",
            "aov",
            "gone",
        ]
        .map(|m| format!("shop.orders.{m}"));
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        assert_eq!(
            corpus.measure_formulas(&ids).unwrap(),
            [
                "count(order_count_col)",
                "count(order_count_col)",
                "sum(amount)",
                "count(large_col)",
                "revenue / orders",
                ""
            ]
        );
    }

    #[test]
    fn counted_sums_read_as_counts() {
        let ones = |name: &str| name == "n_col";
        assert_eq!(as_counted("sum(n_col)", ones), "count(n_col)");
        assert_eq!(
            as_counted("Sum( n_col ) / sum(amount) + cumsum(n_col)", ones),
            "count(n_col) / sum(amount) + cumsum(n_col)"
        );
        assert_eq!(as_counted("sum(amount)", ones), "sum(amount)");
    }
}
