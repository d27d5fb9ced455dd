//! Negatives (docs/spec/planner.md §15.5): hard ones drop a candidate — the configured name/path
//! patterns on each segment of an entity's id, and hard terms in its name and path (a memory's
//! text) — soft ones bury it with a penalty per distinct term, capped. An exception phrase
//! around a match (`ab test` around `test`) means the match does not count; a pattern whose
//! matched word is one of the plan's anchors is not applied (the question asked for it).

use regex::Regex;
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;

use crate::plan::config::PlanConfig;
use crate::plan::gate::{Gated, PlanTerm};
use crate::plan::passes::Candidate;
use crate::plan::terms::Exception;
use crate::plan::words::{occurs_at, IndexWords, Positioned};

/// The negatives of one plan, compiled.
pub(crate) struct Negatives {
    patterns: Vec<Regex>,
    hard: Vec<Vec<Positioned>>,
    soft: Vec<(String, Vec<Positioned>)>,
    /// Per negative's first token: the allow phrases that protect it.
    exceptions: FxHashMap<String, Vec<Vec<Positioned>>>,
    anchors: FxHashSet<String>,
    per_term: f64,
    cap: f64,
}

/// What the negatives made of one candidate.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub(crate) struct Verdict {
    /// The hard pattern or term that dropped it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dropped_by: Option<String>,
    /// Soft terms matched outside any exception.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub soft: Vec<String>,
    /// Negatives whose every match an exception covered.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    /// `min(cap, per_term × soft terms)`.
    pub penalty: f64,
}

fn sequence(tokens: &[String]) -> Vec<Positioned> {
    tokens
        .iter()
        .enumerate()
        .map(|(position, text)| Positioned {
            text: text.clone(),
            position,
        })
        .collect()
}

impl Negatives {
    /// The configuration's patterns and exceptions with the plan's negatives and exceptions.
    /// Patterns were checked when the configuration was read.
    pub(crate) fn new(
        config: &PlanConfig,
        gated: &Gated,
        plan_exceptions: &[Exception],
        words: &mut IndexWords,
    ) -> Negatives {
        let mut exceptions: FxHashMap<String, Vec<Vec<Positioned>>> = FxHashMap::default();
        for e in config.negatives.exceptions.iter().chain(plan_exceptions) {
            let Some(negative) = words.terms(&e.negative).into_iter().next() else {
                continue;
            };
            for allow in &e.allow {
                let phrase = words.positioned(allow);
                if phrase.iter().any(|t| t.text == negative) {
                    exceptions.entry(negative.clone()).or_default().push(phrase);
                }
            }
        }
        let hard = gated
            .hard
            .iter()
            .map(|t: &PlanTerm| sequence(&t.tokens))
            .collect();
        let soft = gated
            .soft
            .iter()
            .map(|t| (t.text.clone(), sequence(&t.tokens)))
            .collect();
        Negatives {
            patterns: config
                .negatives
                .hard_patterns
                .iter()
                .filter_map(|p| Regex::new(p).ok())
                .collect(),
            hard,
            soft,
            exceptions,
            anchors: gated
                .anchors
                .iter()
                .flat_map(|a| a.tokens.clone())
                .collect(),
            per_term: config.negatives.soft_penalty_per_term,
            cap: config.negatives.soft_penalty_cap,
        }
    }

    /// Judges one candidate.
    pub(crate) fn judge(&self, c: &Candidate, words: &mut IndexWords) -> Verdict {
        let mut verdict = self.hard_verdict(c, words);
        if verdict.dropped_by.is_some() {
            return verdict;
        }
        let all = words.positioned(&format!("{}\n{}", c.id, c.text));
        let all_at: FxHashMap<usize, &str> =
            all.iter().map(|t| (t.position, t.text.as_str())).collect();
        for (text, term) in &self.soft {
            match self.matches(&all, &all_at, term) {
                Matched::Yes => verdict.soft.push(text.clone()),
                Matched::OnlyProtected => verdict.protected.push(text.clone()),
                Matched::No => {}
            }
        }
        verdict.penalty = (self.per_term * verdict.soft.len() as f64).min(self.cap);
        verdict
    }

    /// What drops a candidate, if anything: the hard patterns and terms alone.
    pub(crate) fn drops(&self, c: &Candidate, words: &mut IndexWords) -> Option<String> {
        self.hard_verdict(c, words).dropped_by
    }

    fn hard_verdict(&self, c: &Candidate, words: &mut IndexWords) -> Verdict {
        let mut verdict = Verdict::default();
        let is_memory = c.kind == "memory";
        if !is_memory {
            for segment in c.id.split('.') {
                let lower = segment.to_lowercase();
                for pattern in &self.patterns {
                    let Some(m) = pattern.find(&lower) else {
                        continue;
                    };
                    let word = m.as_str().trim_matches(|ch| ch == '_' || ch == '-');
                    if words.terms(word).iter().any(|t| self.anchors.contains(t)) {
                        continue;
                    }
                    verdict.dropped_by =
                        Some(format!("pattern {} on {segment:?}", pattern.as_str()));
                    return verdict;
                }
            }
        }
        if self.hard.is_empty() {
            return verdict;
        }
        // Hard terms read the name and path (a memory has neither: its text).
        let named = words.positioned(if is_memory { &c.text } else { &c.id });
        let named_at: FxHashMap<usize, &str> = named
            .iter()
            .map(|t| (t.position, t.text.as_str()))
            .collect();
        for term in &self.hard {
            match self.matches(&named, &named_at, term) {
                Matched::Yes => {
                    let shown: Vec<&str> = term.iter().map(|t| t.text.as_str()).collect();
                    verdict.dropped_by = Some(format!("hard term {:?}", shown.join(" ")));
                    return verdict;
                }
                Matched::OnlyProtected => verdict.protected.push(term[0].text.clone()),
                Matched::No => {}
            }
        }
        verdict
    }

    fn matches(
        &self,
        hay: &[Positioned],
        at: &FxHashMap<usize, &str>,
        term: &[Positioned],
    ) -> Matched {
        let mut found = false;
        for t in hay.iter().filter(|t| t.text == term[0].text) {
            if !occurs_at(at, term, 0, t.position) {
                continue;
            }
            found = true;
            let protected = self.exceptions.get(&term[0].text).is_some_and(|phrases| {
                phrases.iter().any(|phrase| {
                    let anchor = phrase
                        .iter()
                        .position(|p| p.text == term[0].text)
                        .unwrap_or(0);
                    occurs_at(at, phrase, anchor, t.position)
                })
            });
            if !protected {
                return Matched::Yes;
            }
        }
        if found {
            Matched::OnlyProtected
        } else {
            Matched::No
        }
    }
}

enum Matched {
    Yes,
    OnlyProtected,
    No,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::gate::{gate, Proposed, Role, Source};
    use crate::plan::passes::test_candidate as candidate;

    fn negatives(proposals: &[(&str, Role)], exceptions: &[Exception]) -> (Negatives, IndexWords) {
        let config = PlanConfig::default();
        let mut words = IndexWords::standalone();
        let proposals: Vec<Proposed> = proposals
            .iter()
            .map(|(t, r)| Proposed {
                text: t.to_string(),
                role: *r,
                source: Source::Caller,
            })
            .collect();
        let gated = gate(&proposals, &config, &mut words, &mut |_| 5);
        (
            Negatives::new(&config, &gated, exceptions, &mut words),
            words,
        )
    }

    #[test]
    fn the_default_pattern_drops_scratch_names_but_not_an_anchor() {
        let (n, mut w) = negatives(&[("orders", Role::Anchor)], &[]);
        let v = n.judge(
            &candidate("shop.orders_tmp", "model", "Model: shop.orders_tmp"),
            &mut w,
        );
        assert!(v.dropped_by.unwrap().contains("orders_tmp"));
        let v = n.judge(
            &candidate("staging.orders", "model", "Model: staging.orders"),
            &mut w,
        );
        assert!(v.dropped_by.is_some(), "a datasource segment counts too");
        assert!(n
            .judge(&candidate("shop.temperature", "column", "x"), &mut w)
            .dropped_by
            .is_none());
        let (n, mut w) = negatives(&[("staging", Role::Anchor)], &[]);
        let v = n.judge(
            &candidate("shop.staging_orders", "model", "Model: shop.staging_orders"),
            &mut w,
        );
        assert_eq!(v.dropped_by, None, "the question asked for staging");
    }

    #[test]
    fn hard_terms_read_names_of_entities_and_text_of_memories() {
        let (n, mut w) = negatives(&[("sandbox", Role::HardNegative)], &[]);
        let v = n.judge(
            &candidate(
                "shop.orders",
                "model",
                "Description: copied from the sandbox",
            ),
            &mut w,
        );
        assert_eq!(
            v.dropped_by, None,
            "an entity's description is not its name"
        );
        let v = n.judge(&candidate("shop.sandboxOrders", "model", ""), &mut w);
        assert!(v.dropped_by.is_some());
        let v = n.judge(
            &candidate("memory:1", "memory", "ran it in the sandbox first"),
            &mut w,
        );
        assert!(v.dropped_by.is_some());
    }

    #[test]
    fn soft_terms_penalise_per_term_up_to_the_cap_and_exceptions_protect() {
        let (n, mut w) = negatives(
            &[("dev", Role::SoftNegative), ("test", Role::SoftNegative)],
            &[],
        );
        let v = n.judge(
            &candidate("shop.orders", "model", "Description: test orders from dev"),
            &mut w,
        );
        assert_eq!(v.soft, ["dev", "test"]);
        assert_eq!(v.penalty, 1.0);
        let v = n.judge(
            &candidate("shop.ab", "model", "Description: results of the A/B test"),
            &mut w,
        );
        assert_eq!(v.soft, Vec::<String>::new());
        assert_eq!(v.protected, ["test"]);
        assert_eq!(v.penalty, 0.0);
        let v = n.judge(
            &candidate(
                "shop.ab",
                "model",
                "Description: an ab test, and a plain test",
            ),
            &mut w,
        );
        assert_eq!(v.soft, ["test"], "one match outside the exception counts");
        assert_eq!(v.penalty, 0.5);
        let v = n.judge(
            &candidate("shop.users.test_id", "column", "Column: shop.users.test_id"),
            &mut w,
        );
        assert_eq!(v.penalty, 0.0, "test_id is a configured exception");
    }

    #[test]
    fn a_plans_own_exceptions_join_the_configured_ones() {
        let e = Exception {
            negative: "dev".into(),
            allow: vec!["dev ops".into()],
        };
        let (n, mut w) = negatives(&[("dev", Role::SoftNegative)], std::slice::from_ref(&e));
        let v = n.judge(
            &candidate("shop.x", "model", "Description: dev ops spend"),
            &mut w,
        );
        assert_eq!(v.protected, ["dev"]);
        assert_eq!(v.penalty, 0.0);
    }
}
