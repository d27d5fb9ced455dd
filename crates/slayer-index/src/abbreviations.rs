//! The abbreviations of business reporting spelled out. A catalog names a measure `churnedMrr`
//! or `avg_order_qty`; an analyst asks for "recurring revenue lost to cancellations" or "average
//! order quantity". The entity's name field (full text) and the words its measure is embedded
//! by carry the spelled-out form beside the name, so either phrasing finds it
//! (docs/spec/render.md §2.5, docs/spec/channels.md §6.2).
//!
//! The list is the standard vocabulary of SaaS, e-commerce, marketing and finance reporting
//! and the short forms column names use; a word is spelled out only when the whole word is
//! the abbreviation (`mrr`, not `mrrs` nor `smrr`).

/// `(abbreviation, spelled out)`, sorted by abbreviation for a binary search.
const SPELLED: &[(&str, &str)] = &[
    ("acv", "annual contract value"),
    ("addr", "address"),
    ("aht", "average handle time"),
    ("amer", "americas"),
    ("amt", "amount"),
    ("aov", "average order value"),
    ("apac", "asia pacific"),
    ("arpa", "average revenue per account"),
    ("arppu", "average revenue per paying user"),
    ("arpu", "average revenue per user"),
    ("arr", "annual recurring revenue"),
    ("asp", "average selling price"),
    ("atv", "average transaction value"),
    ("avg", "average"),
    ("cac", "customer acquisition cost"),
    ("cltv", "customer lifetime value"),
    ("clv", "customer lifetime value"),
    ("cnt", "count"),
    ("cogs", "cost of goods sold"),
    ("cpa", "cost per acquisition"),
    ("cpc", "cost per click"),
    ("cpm", "cost per thousand impressions"),
    ("csat", "customer satisfaction score"),
    ("ctr", "click through rate"),
    ("cust", "customer"),
    ("cvr", "conversion rate"),
    ("dau", "daily active users"),
    ("dept", "department"),
    (
        "ebitda",
        "earnings before interest taxes depreciation amortization",
    ),
    ("emea", "europe middle east africa"),
    ("emp", "employee"),
    ("gmv", "gross merchandise value"),
    ("grr", "gross revenue retention"),
    ("kpi", "key performance indicator"),
    ("latam", "latin america"),
    ("ltv", "lifetime value"),
    ("mau", "monthly active users"),
    ("mgr", "manager"),
    ("mom", "month over month"),
    ("mrr", "monthly recurring revenue"),
    ("mtd", "month to date"),
    ("mttr", "mean time to resolve"),
    ("na", "north america"),
    ("nps", "net promoter score"),
    ("nrr", "net revenue retention"),
    ("num", "number"),
    ("pct", "percent"),
    ("qoq", "quarter over quarter"),
    ("qtd", "quarter to date"),
    ("qty", "quantity"),
    ("roas", "return on ad spend"),
    ("roi", "return on investment"),
    ("tcv", "total contract value"),
    ("txn", "transaction"),
    ("usd", "us dollars"),
    ("wau", "weekly active users"),
    ("wow", "week over week"),
    ("yoy", "year over year"),
    ("ytd", "year to date"),
];

/// The spelled-out form of one lowercase word, when it is a known abbreviation.
pub fn spelled(word: &str) -> Option<&'static str> {
    look_up(SPELLED, word)
}

/// The spelled-out forms of the abbreviations among `words` (a name or label as lowercase
/// words, `render::words`: `churned mrr`), space-separated; empty when there is none.
pub fn spelled_in(words: &str) -> String {
    each_found(words, spelled)
}

/// The entry of `word` in a table of `(word, words)` sorted by its first column.
pub(crate) fn look_up(table: &[(&str, &'static str)], word: &str) -> Option<&'static str> {
    table
        .binary_search_by(|(key, _)| (*key).cmp(word))
        .ok()
        .map(|i| table[i].1)
}

/// What `find` gives for each of the space-separated `words`, each once, space-separated;
/// empty when it gives nothing.
pub(crate) fn each_found(words: &str, find: impl Fn(&str) -> Option<&'static str>) -> String {
    let mut out: Vec<&str> = Vec::new();
    for word in words.split(' ') {
        if let Some(found) = find(word) {
            if !out.contains(&found) {
                out.push(found);
            }
        }
    }
    out.join(" ")
}

/// Lowercase `words` with each abbreviation spelled out, the short form after it in
/// parentheses, as an encoder reads it best: `churned mrr` → `churned monthly recurring
/// revenue (mrr)`.
pub fn with_spelled(words: &str) -> String {
    words
        .split(' ')
        .map(|word| match spelled(word) {
            Some(long) => format!("{long} ({word})"),
            None => word.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_and_lowercase() {
        assert!(SPELLED.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(SPELLED.iter().all(|(s, _)| *s == s.to_lowercase()));
    }

    #[test]
    fn whole_words_only_are_spelled_out() {
        assert_eq!(spelled_in("churned mrr"), "monthly recurring revenue");
        assert_eq!(
            spelled_in("avg order qty mrr"),
            "average quantity monthly recurring revenue"
        );
        assert_eq!(spelled_in("mrrs smrr revenue"), "");
        assert_eq!(
            with_spelled("churned mrr"),
            "churned monthly recurring revenue (mrr)"
        );
    }
}
