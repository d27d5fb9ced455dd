//! Channel 1: BM25Plus over canonical entity tags (docs/spec/channels.md §5), exactly as
//! `rank_bm25`.

use std::collections::{HashMap, HashSet};

/// k1, b, δ of the original.
const K1: f64 = 1.5;
const B: f64 = 0.75;
const DELTA: f64 = 1.0;

/// Ranks docs (each a list of tags, duplicates ignored) against the query tags. Only docs
/// sharing at least one tag are returned, by score descending; ties keep input order. The
/// search scores only the docs that share a tag ([`rank_matching`]); this is its reference.
#[cfg(test)]
pub(crate) fn rank<S: AsRef<str>>(docs: &[Vec<S>], query: &[String]) -> Vec<(usize, f64)> {
    let sets = tag_sets(docs);
    let n = sets.len();
    let total: usize = sets.iter().map(Vec::len).sum();
    rank_sets(&sets, query, n, total)
}

/// As [`rank`], for the docs that share a tag with the query (every such doc of the corpus,
/// in corpus order), with the corpus's size and total tag count given: the rest of the corpus
/// only ever enters BM25 through those two numbers.
pub(crate) fn rank_matching<S: AsRef<str>>(
    matching: &[Vec<S>],
    query: &[String],
    corpus_docs: usize,
    corpus_tags: usize,
) -> Vec<(usize, f64)> {
    rank_sets(&tag_sets(matching), query, corpus_docs, corpus_tags)
}

/// Docs hold a handful of tags: sorted, de-duplicated vectors beat hash sets here.
fn tag_sets<S: AsRef<str>>(docs: &[Vec<S>]) -> Vec<Vec<&str>> {
    docs.iter()
        .map(|d| {
            let mut v: Vec<&str> = d.iter().map(AsRef::as_ref).collect();
            v.sort_unstable();
            v.dedup();
            v
        })
        .collect()
}

fn rank_sets(sets: &[Vec<&str>], query: &[String], n: usize, total: usize) -> Vec<(usize, f64)> {
    if n == 0 || query.is_empty() {
        return Vec::new();
    }
    let avgdl = total as f64 / n as f64;
    let n = n as f64;
    let mut seen = HashSet::new();
    let terms: Vec<&str> = query
        .iter()
        .map(String::as_str)
        .filter(|t| seen.insert(*t))
        .collect();
    let mut df: HashMap<&str, f64> = terms.iter().map(|t| (*t, 0.0)).collect();
    for s in sets {
        for t in s {
            if let Some(d) = df.get_mut(t) {
                *d += 1.0;
            }
        }
    }
    let mut out: Vec<(usize, f64)> = Vec::new();
    for (i, doc) in sets.iter().enumerate() {
        if !terms.iter().any(|t| doc.binary_search(t).is_ok()) {
            continue;
        }
        let dl = doc.len() as f64;
        let mut score = 0.0;
        for t in &terms {
            let freq = df[t];
            if freq == 0.0 {
                continue;
            }
            let idf = ((n + 1.0) / freq).ln();
            let tf = if doc.binary_search(t).is_ok() {
                1.0
            } else {
                0.0
            };
            score += idf * (DELTA + tf * (K1 + 1.0) / (K1 * (1.0 - B + B * dl / avgdl) + tf));
        }
        out.push((i, score));
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn docs(d: &[&[&str]]) -> Vec<Vec<String>> {
        d.iter()
            .map(|x| x.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    fn q(t: &[&str]) -> Vec<String> {
        t.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_reference_goldens() {
        let r = rank(&docs(&[&["x", "y"], &["x"], &["z"]]), &q(&["x"]));
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].0, 1);
        assert!((r[0].1 - 1.4741580882331233).abs() < 1e-12, "{}", r[0].1);
        assert!((r[1].1 - 1.2589816136701046).abs() < 1e-12, "{}", r[1].1);
        let d = docs(&[
            &["memory:1", "db.o.amount", "db.o.qty"],
            &[
                "memory:2",
                "db.o.amount",
                "db.x.c0",
                "db.x.c1",
                "db.x.c2",
                "db.x.c3",
                "db.x.c4",
            ],
            &["memory:3", "db.o"],
        ]);
        let r = rank(&d, &q(&["db.o.amount", "db.o"]));
        let want = [
            (2, 3.868208459253888),
            (0, 2.860452449353014),
            (1, 2.5976824243414773),
        ];
        for ((i, s), (wi, ws)) in r.iter().zip(want) {
            assert_eq!(*i, wi);
            assert!((s - ws).abs() < 1e-12, "{s} vs {ws}");
        }
    }

    #[test]
    fn ranking_the_matching_docs_with_corpus_totals_equals_ranking_the_corpus() {
        let corpus = docs(&[&["a", "b"], &["c"], &["a"], &["d", "e", "f"], &["b", "a"]]);
        let query = q(&["a", "b"]);
        let whole = rank(&corpus, &query);
        let matching: Vec<Vec<String>> = [0, 2, 4].iter().map(|&i| corpus[i].clone()).collect();
        let part = rank_matching(&matching, &query, 5, 9);
        let back: Vec<(usize, f64)> = part.iter().map(|&(i, s)| ([0, 2, 4][i], s)).collect();
        assert_eq!(whole, back);
    }
}
