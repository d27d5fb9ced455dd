//! The offline expansion: deterministic pseudo-relevance feedback in the manner of RM3. The
//! top pass-A docs vote for their terms, each doc by its share of the feedback docs' BM25
//! score and each term by its share of the doc's length, times the term's IDF so words every
//! doc holds do not win; the best terms that are not anchors become synonyms (then gated like
//! any other). Also the question's own negations (`not test`, `without staging`).

use rustc_hash::FxHashMap;

use crate::plan::words::{normalize, IndexWords};

/// A feedback doc: its text and its pass-A score.
pub(crate) struct FeedbackDoc<'d> {
    /// The doc text.
    pub text: &'d str,
    /// Its BM25 score.
    pub score: f32,
}

/// The `n` best feedback terms, as `(surface word, weight)`, best first (ties: first seen).
/// `exclude` holds index terms that must not come back (the anchors); `idf` gives a term's
/// inverse document frequency in the index.
pub(crate) fn feedback_terms(
    docs: &[FeedbackDoc<'_>],
    n: usize,
    exclude: &dyn Fn(&str) -> bool,
    idf: &mut dyn FnMut(&str) -> f64,
    words: &mut IndexWords,
) -> Vec<(String, f64)> {
    let total: f64 = docs.iter().map(|d| f64::from(d.score.max(0.0))).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut weight: FxHashMap<String, (f64, usize, String)> = FxHashMap::default();
    let mut order = 0;
    for doc in docs {
        let tokens = words.with_surface(doc.text);
        if tokens.is_empty() {
            continue;
        }
        let share = f64::from(doc.score.max(0.0)) / total;
        let per_token = share / tokens.len() as f64;
        for (token, surface) in tokens {
            if token.len() < 3 || token.chars().all(|c| c.is_ascii_digit()) || exclude(&token) {
                continue;
            }
            let entry = weight.entry(token).or_insert_with(|| {
                order += 1;
                (0.0, order, surface.to_lowercase())
            });
            entry.0 += per_token;
        }
    }
    let mut scored: Vec<(String, f64, usize)> = weight
        .into_iter()
        .map(|(token, (w, seen, surface))| {
            let idf = idf(&token);
            (surface, w * idf, seen)
        })
        .filter(|(_, w, _)| *w > 0.0)
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    scored.truncate(n);
    scored.into_iter().map(|(s, w, _)| (s, w)).collect()
}

/// What of a rendered doc is the author's words, not the renderer's: each line without its
/// label (`Description: `), the lines that only carry types and SQL plumbing dropped, list
/// markers (`(column)`) removed. Feedback from the labels would propose `description` and
/// `text` for every question.
pub(crate) fn authored_text(doc: &str) -> String {
    const PLUMBING: &[&str] = &[
        "Type",
        "sql_table",
        "SQL",
        "SQL block",
        "Format",
        "Primary key",
        "Distinct count",
        "Allowed aggregations",
        "Params",
    ];
    const MARKERS: &[&str] = &[" (column)", " (measure)", " (aggregation)", " (model)"];
    let mut out = String::with_capacity(doc.len());
    for line in doc.lines() {
        let (label, value) = line.split_once(": ").unwrap_or(("", line));
        if PLUMBING.contains(&label) {
            continue;
        }
        let mut value = value.to_owned();
        for marker in MARKERS {
            value = value.replace(marker, "");
        }
        out.push_str(&value);
        out.push('\n');
    }
    out
}

/// Words that negate the word after them in a question.
const NEGATIONS: &[&str] = &[
    "not",
    "no",
    "without",
    "excluding",
    "except",
    "exclude",
    "non",
    "never",
];

/// The question's words split into the ones it asks for and the ones it negates: `find pii
/// tables, not test` → (`find pii tables`, [`test`]). Stopwords after a negation are skipped
/// (`not the test ones` negates `test`).
pub(crate) fn split_negations(
    question: &str,
    words: &mut IndexWords,
) -> (Vec<String>, Vec<String>) {
    let mut wanted = Vec::new();
    let mut negated = Vec::new();
    let mut negating = false;
    for word in normalize(question) {
        if NEGATIONS.contains(&word.as_str()) {
            negating = true;
            continue;
        }
        if negating && !words.terms(&word).is_empty() {
            negated.push(word);
            negating = false;
        } else if !negating {
            wanted.push(word);
        }
    }
    (wanted, negated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feedback_terms_weigh_by_doc_score_length_share_and_idf() {
        let mut words = IndexWords::standalone();
        let docs = [
            FeedbackDoc {
                text: "refund amount refund reason",
                score: 3.0,
            },
            FeedbackDoc {
                text: "refund customer region",
                score: 1.0,
            },
        ];
        let idf = |t: &str| if t == "custom" { 2.0 } else { 1.0 };
        let terms = feedback_terms(&docs, 3, &|t| t == "amount", &mut { idf }, &mut words);
        // refund: 0.75·2/4 + 0.25·1/3 = 0.4583; reason: 0.75/4 = 0.1875; customer: 0.25/3·2 = 0.1667.
        let names: Vec<&str> = terms.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(names, ["refund", "reason", "customer"]);
        assert!((terms[0].1 - (0.75 * 2.0 / 4.0 + 0.25 / 3.0)).abs() < 1e-9);
    }

    #[test]
    fn the_renderers_labels_are_not_feedback() {
        let doc = "Column: shop.orders.status\nType: TEXT\nDescription: paid or refunded.\nSample values: [\"paid\"]";
        assert_eq!(
            authored_text(doc),
            "shop.orders.status\npaid or refunded.\n[\"paid\"]\n"
        );
        let model = "Model: shop.orders\nsql_table: orders\nColumns: id (column), status (column)";
        assert_eq!(authored_text(model), "shop.orders\nid, status\n");
    }

    #[test]
    fn nothing_scored_gives_nothing() {
        let mut words = IndexWords::standalone();
        let docs = [FeedbackDoc {
            text: "refund",
            score: 0.0,
        }];
        assert!(feedback_terms(&docs, 3, &|_| false, &mut |_| 1.0, &mut words).is_empty());
    }

    #[test]
    fn negations_are_split_off() {
        let mut words = IndexWords::standalone();
        let (wanted, negated) = split_negations(
            "find pii tables with emails and phone numbers, not test",
            &mut words,
        );
        assert_eq!(negated, ["test"]);
        assert!(wanted.contains(&"pii".to_owned()) && !wanted.contains(&"test".to_owned()));
        let (_, negated) = split_negations("orders without the staging ones", &mut words);
        assert_eq!(negated, ["staging"]);
    }
}
