//! Supersession among the first memories (docs/spec/search.md §9.14): two memories of the same
//! subject (the same entity tags, not none) that say nearly the same thing of it in different
//! words disagree, and the newer one (by its event time, or when it was saved for one without)
//! is what holds. It takes the better of the two scores and ranks first; the older
//! is kept, marked `superseded_by` the newer, and drops a tier: its score is multiplied by
//! [`SUPERSEDED_FACTOR`]. Pure: tags, texts and times come from the caller.

use std::collections::BTreeSet;

/// The channel name of what supersession moved in a fused score (`--explain`): on the newer
/// memory, what it gained (its `raw_score` the older's score); on the older, what it lost
/// (its `raw_score` the factor).
pub(crate) const SUPERSEDED: &str = "superseded";

/// What a superseded memory's score is multiplied by.
pub(crate) const SUPERSEDED_FACTOR: f64 = 0.5;

/// Two texts say "nearly the same thing" of their subject when at least this share of the
/// shorter one's words (of three letters or more, the subject's own names left out) are in the
/// other.
const SAME_SUBJECT_OVERLAP: f64 = 0.5;

/// A returned memory as the rule reads it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate<'a> {
    /// Its stored tags, sorted.
    pub tags: &'a [String],
    /// Its text.
    pub text: &'a str,
    /// When it happened (its event time), else when it was saved: compared as text, both ISO
    /// 8601.
    pub when: &'a str,
}

/// For each candidate (in ranked order), the index of the candidate that supersedes it, if
/// any: the newest of its same-subject rivals that is newer than it.
pub(crate) fn superseded_by(candidates: &[Candidate<'_>]) -> Vec<Option<usize>> {
    let words: Vec<BTreeSet<String>> = candidates
        .iter()
        .map(|c| content_words(c.text, c.tags))
        .collect();
    let mut by = vec![None; candidates.len()];
    for (i, older) in candidates.iter().enumerate() {
        if older.tags.is_empty() {
            continue;
        }
        for (j, newer) in candidates.iter().enumerate() {
            let same_subject = i != j
                && newer.tags == older.tags
                && newer.when > older.when
                && newer.text != older.text
                && overlap(&words[i], &words[j]) >= SAME_SUBJECT_OVERLAP;
            let newest = by[i].is_none_or(|k: usize| newer.when > candidates[k].when);
            if same_subject && newest {
                by[i] = Some(j);
            }
        }
    }
    by
}

/// What a memory's own text says of its subject: its words (the rendered tag line left out),
/// lowercased, of three letters or more, without the names of its tags' parts (`shop`,
/// `orders`, `amount` for `shop.orders.amount`), which every note on it shares.
fn content_words(text: &str, tags: &[String]) -> BTreeSet<String> {
    let names: BTreeSet<String> = tags
        .iter()
        .flat_map(|t| t.split(['.', '_', ':']))
        .map(str::to_lowercase)
        .collect();
    text.lines()
        .filter(|line| !line.starts_with("Tagged entities:"))
        .flat_map(|line| line.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| w.chars().count() >= 3)
        .map(str::to_lowercase)
        .filter(|w| !names.contains(w) && !names.contains(w.trim_end_matches('s')))
        .collect()
}

/// The share of the shorter set's words that the other holds.
fn overlap(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    match a.len().min(b.len()) {
        0 => 0.0,
        n => a.intersection(b).count() as f64 / n as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(list: &[&str]) -> Vec<String> {
        list.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn the_newer_of_two_notes_on_one_column_supersedes_the_older() {
        let amount = tags(&["shop.orders.amount"]);
        let other = tags(&["shop.orders.status"]);
        let candidates = [
            Candidate {
                tags: &amount,
                text: "orders.amount is stored in cents\nTagged entities: shop.orders.amount",
                when: "2023-01-05T00:00:00Z",
            },
            Candidate {
                tags: &other,
                text: "status 'void' means cancelled",
                when: "2024-01-01T00:00:00Z",
            },
            Candidate {
                tags: &amount,
                text: "orders.amount is stored in dollars since the May migration",
                when: "2023-06-01",
            },
        ];
        assert_eq!(superseded_by(&candidates), [Some(2), None, None]);
    }

    #[test]
    fn different_facts_untagged_notes_and_equal_times_stand() {
        let amount = tags(&["shop.orders.amount"]);
        let orders = tags(&["mydb.orders"]);
        // Only the subject's own names are shared: two facts, not two versions of one.
        let two_facts = [
            Candidate {
                tags: &orders,
                text: "orders amount is stored in cents",
                when: "2023",
            },
            Candidate {
                tags: &orders,
                text: "orders amount excludes tax",
                when: "2024",
            },
        ];
        assert_eq!(superseded_by(&two_facts), [None, None]);
        let none: Vec<String> = vec![];
        let candidates = [
            Candidate {
                tags: &amount,
                text: "amount is stored in cents",
                when: "2023-01-05",
            },
            Candidate {
                tags: &amount,
                text: "refunds arrive as negative rows a week later",
                when: "2023-06-01",
            },
            Candidate {
                tags: &none,
                text: "amount is stored in cents",
                when: "2021-01-01",
            },
            Candidate {
                tags: &none,
                text: "amount is stored in dollars",
                when: "2022-01-01",
            },
        ];
        assert_eq!(superseded_by(&candidates), [None, None, None, None]);
    }

    #[test]
    fn the_newest_rival_is_named() {
        let t = tags(&["shop.orders"]);
        let note = |text, when| Candidate {
            tags: &t,
            text,
            when,
        };
        let candidates = [
            note("orders are loaded nightly at 2am", "2021"),
            note("orders are loaded hourly now", "2023"),
            note("orders are loaded nightly at 4am", "2022"),
        ];
        assert_eq!(superseded_by(&candidates), [Some(1), None, Some(1)]);
    }
}
