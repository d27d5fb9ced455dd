//! Gating (docs/spec/planner.md §15.3): every proposed term is normalised, checked against the
//! stoplist, its length and charset bounds, de-duplicated, and (synonyms) its document
//! frequency is held to a band around the anchors'; synonyms are capped. Every drop is a
//! recorded decision with its reason.

use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::plan::config::PlanConfig;
use crate::plan::words::{folded, normalize, IndexWords};

/// What a term does in the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Pass A.
    Anchor,
    /// Pass A, matched with slop.
    Phrase,
    /// Pass B.
    Synonym,
    /// Drops a candidate.
    HardNegative,
    /// Buries a candidate.
    SoftNegative,
}

/// Where a term came from (the seed's provenance).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The request's `injected` terms.
    Caller,
    /// The LLM's answer.
    Llm,
    /// Pseudo-relevance feedback.
    Prf,
    /// The question's own words (anchors when no source gave any; negations like `not test`).
    Query,
    /// The configuration's negatives.
    Config,
}

/// A term proposed to the gate.
#[derive(Debug, Clone)]
pub(crate) struct Proposed {
    /// As written.
    pub text: String,
    /// What it would do.
    pub role: Role,
    /// Who proposed it.
    pub source: Source,
}

/// A term that passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanTerm {
    /// Normalised words, space-separated.
    pub text: String,
    /// What it does.
    pub role: Role,
    /// Who proposed it.
    pub source: Source,
    /// Index terms, in order (more than one: matched as a phrase).
    pub tokens: Vec<String>,
    /// Documents holding it (anchors and synonyms).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub df: Option<u64>,
}

/// One gating decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// As written.
    pub term: String,
    /// The role it was proposed for.
    pub role: Role,
    /// Who proposed it.
    pub source: Source,
    /// Whether it is in the plan.
    pub kept: bool,
    /// Why not (or, when kept, what changed): `empty`, `charset`, `length`, `stoplist`,
    /// `duplicate`, `no_match`, `df_band`, `cap`, `is_anchor` (a negative the anchors name),
    /// `is_negative` (a synonym a negative names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Its document frequency, where one was read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub df: Option<u64>,
}

/// The gated plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Gated {
    /// Pass A terms.
    pub anchors: Vec<PlanTerm>,
    /// Pass A phrases.
    pub phrases: Vec<PlanTerm>,
    /// Pass B terms.
    pub synonyms: Vec<PlanTerm>,
    /// Hard negatives.
    pub hard: Vec<PlanTerm>,
    /// Soft negatives.
    pub soft: Vec<PlanTerm>,
    /// The anchors' document frequency the band is relative to (geometric mean).
    pub df_reference: Option<f64>,
    /// Every decision, in proposal order.
    pub decisions: Vec<Decision>,
}

/// Gates proposals in order (earlier sources win duplicates). `df` gives a term's document
/// frequency in the index (one token: a term lookup; several: a phrase count).
pub(crate) fn gate(
    proposals: &[Proposed],
    config: &PlanConfig,
    words: &mut IndexWords,
    df: &mut dyn FnMut(&[String]) -> u64,
) -> Gated {
    let stop: FxHashSet<String> = config
        .stoplist
        .iter()
        .flat_map(|w| words.terms(w))
        .chain(config.stoplist.iter().map(|w| w.to_lowercase()))
        .collect();
    let mut out = Gated::default();
    let mut seen: FxHashSet<Vec<String>> = FxHashSet::default();
    let mut seen_negative: FxHashSet<(Role, Vec<String>)> = FxHashSet::default();
    let decide = |p: &Proposed, reason: Option<&str>, kept: bool, df: Option<u64>| Decision {
        term: p.text.clone(),
        role: p.role,
        source: p.source,
        kept,
        reason: reason.map(str::to_owned),
        df,
    };
    let mut synonyms: Vec<(PlanTerm, usize)> = Vec::new();
    // Anchors and phrases first, so the band has its reference before any synonym is judged.
    let order = proposals
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p.role, Role::Anchor | Role::Phrase))
        .chain(
            proposals
                .iter()
                .enumerate()
                .filter(|(_, p)| !matches!(p.role, Role::Anchor | Role::Phrase)),
        );
    let mut decisions: Vec<(usize, Decision)> = Vec::new();
    for (at, p) in order {
        let normal = normalize(&p.text);
        let text = normal.join(" ");
        if let Some(reason) = screen(p, &normal, &text, config.term_length) {
            decisions.push((at, decide(p, Some(reason), false, None)));
            continue;
        }
        let tokens: Vec<String> = words
            .terms(&text)
            .into_iter()
            .filter(|t| !stop.contains(t))
            .collect();
        if tokens.is_empty() {
            decisions.push((at, decide(p, Some("stoplist"), false, None)));
            continue;
        }
        let term = |df| PlanTerm {
            text: text.clone(),
            role: p.role,
            source: p.source,
            tokens: tokens.clone(),
            df,
        };
        match p.role {
            Role::HardNegative | Role::SoftNegative => {
                if out.anchors.iter().any(|a| a.tokens == tokens) {
                    decisions.push((at, decide(p, Some("is_anchor"), false, None)));
                } else if !seen_negative.insert((p.role, tokens.clone())) {
                    decisions.push((at, decide(p, Some("duplicate"), false, None)));
                } else {
                    decisions.push((at, decide(p, None, true, None)));
                    let list = if p.role == Role::HardNegative {
                        &mut out.hard
                    } else {
                        &mut out.soft
                    };
                    list.push(term(None));
                }
            }
            Role::Anchor | Role::Phrase | Role::Synonym => {
                if !seen.insert(tokens.clone()) {
                    decisions.push((at, decide(p, Some("duplicate"), false, None)));
                    continue;
                }
                let n = df(&tokens);
                if p.role == Role::Synonym {
                    synonyms.push((term(Some(n)), decisions.len()));
                    decisions.push((at, decide(p, None, true, Some(n))));
                } else {
                    decisions.push((at, decide(p, None, true, Some(n))));
                    let list = if p.role == Role::Anchor {
                        &mut out.anchors
                    } else {
                        &mut out.phrases
                    };
                    list.push(term(Some(n)));
                }
            }
        }
    }
    apply_band(&mut out, synonyms, &mut decisions, config);
    decisions.sort_by_key(|(at, _)| *at);
    out.decisions = decisions.into_iter().map(|(_, d)| d).collect();
    out
}

/// Why a proposal's shape rules it out before the index is asked: empty, outside the charset,
/// too short or too long (a phrase may be twice as long).
fn screen(
    p: &Proposed,
    normal: &[String],
    text: &str,
    [shortest, longest]: [usize; 2],
) -> Option<&'static str> {
    if normal.is_empty() {
        return Some("empty");
    }
    if !folded(&p.text)
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || " _.-/'".contains(c))
    {
        return Some("charset");
    }
    let max = if p.role == Role::Phrase {
        2 * longest
    } else {
        longest
    };
    let n = text.chars().count();
    (n < shortest || n > max).then_some("length")
}

/// The synonyms' band: relative to the anchors' (geometric) mean frequency, over those that
/// occur; a synonym outside it, a negative one, one that matches nothing or one past the cap
/// is dropped (its decision says why).
fn apply_band(
    out: &mut Gated,
    synonyms: Vec<(PlanTerm, usize)>,
    decisions: &mut [(usize, Decision)],
    config: &PlanConfig,
) {
    let occurring: Vec<f64> = out
        .anchors
        .iter()
        .chain(&out.phrases)
        .filter_map(|a| a.df.filter(|&d| d > 0))
        .map(|d| d as f64)
        .collect();
    out.df_reference = (!occurring.is_empty())
        .then(|| (occurring.iter().map(|d| d.ln()).sum::<f64>() / occurring.len() as f64).exp());
    let [low, high] = config.df_ratio_band;
    for (term, slot) in synonyms {
        let n = term.df.unwrap_or(0);
        let negative = out
            .hard
            .iter()
            .chain(&out.soft)
            .any(|t| t.tokens == term.tokens);
        let reason = if negative {
            Some("is_negative")
        } else if n == 0 {
            Some("no_match")
        } else if let Some(reference) = out.df_reference {
            let ratio = n as f64 / reference;
            (ratio < low || ratio > high).then_some("df_band")
        } else {
            None
        };
        let reason = reason.or((out.synonyms.len() >= config.max_synonyms).then_some("cap"));
        if let Some(reason) = reason {
            decisions[slot].1.kept = false;
            decisions[slot].1.reason = Some(reason.to_owned());
        } else {
            out.synonyms.push(term);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str, role: Role) -> Proposed {
        Proposed {
            text: text.into(),
            role,
            source: Source::Caller,
        }
    }

    fn run(proposals: &[Proposed], config: &PlanConfig) -> Gated {
        // A made-up index: df of a token sequence by its first token.
        let mut df = |tokens: &[String]| match tokens[0].as_str() {
            "pii" => 10,
            "email" => 40,
            "phone" => 30,
            "gdpr" => 3,
            "contact" => 200,
            "address" => 25,
            "ghost" => 0,
            _ => 20,
        };
        gate(proposals, config, &mut IndexWords::standalone(), &mut df)
    }

    fn reason_of<'g>(g: &'g Gated, term: &str) -> Option<&'g str> {
        let d = g.decisions.iter().find(|d| d.term == term).unwrap();
        assert_eq!(d.kept, d.reason.is_none(), "{d:?}");
        d.reason.as_deref()
    }

    #[test]
    fn every_drop_reason() {
        let config = PlanConfig {
            max_synonyms: 2,
            ..PlanConfig::default()
        };
        let g = run(
            &[
                p("pii", Role::Anchor),
                p("Email", Role::Anchor),
                p("phone number", Role::Phrase),
                p("--", Role::Synonym),
                p("drop table;", Role::Synonym),
                p("x", Role::Synonym),
                p("averyveryverylongsynonymthatgoesonandon", Role::Synonym),
                p("data", Role::Synonym),
                p("the table", Role::Synonym),
                p("emails", Role::Synonym),
                p("ghost", Role::Synonym),
                p("gdpr", Role::Synonym),
                p("contact", Role::Synonym),
                p("address", Role::Synonym),
                p("PhoneNumber", Role::Synonym),
                p("mobile", Role::Synonym),
                p("pii", Role::SoftNegative),
                p("test", Role::SoftNegative),
                p("tests", Role::SoftNegative),
                p("test", Role::Synonym),
            ],
            &config,
        );
        assert_eq!(reason_of(&g, "pii"), None);
        assert_eq!(reason_of(&g, "--"), Some("empty"));
        assert_eq!(reason_of(&g, "drop table;"), Some("charset"));
        assert_eq!(reason_of(&g, "x"), Some("length"));
        assert_eq!(
            reason_of(&g, "averyveryverylongsynonymthatgoesonandon"),
            Some("length")
        );
        assert_eq!(reason_of(&g, "data"), Some("stoplist"));
        assert_eq!(reason_of(&g, "the table"), Some("stoplist"));
        assert_eq!(
            reason_of(&g, "emails"),
            Some("duplicate"),
            "stems join email"
        );
        assert_eq!(
            reason_of(&g, "PhoneNumber"),
            Some("duplicate"),
            "normalised like the phrase"
        );
        assert_eq!(reason_of(&g, "ghost"), Some("no_match"));
        // Reference: the geometric mean of pii 10, email 40, "phone number" 30 = 22.9; band
        // [6.9, 68.7].
        assert!((g.df_reference.unwrap() - 12000f64.cbrt()).abs() < 1e-9);
        assert_eq!(reason_of(&g, "gdpr"), Some("df_band"), "3 < 0.3 × 22.9");
        assert_eq!(reason_of(&g, "contact"), Some("df_band"), "200 > 3 × 22.9");
        assert_eq!(reason_of(&g, "address"), None);
        assert_eq!(reason_of(&g, "mobile"), None);
        assert_eq!(g.synonyms.len(), 2);
        assert_eq!(reason_of(&g, "pii"), None);
        let soft_pii = g
            .decisions
            .iter()
            .find(|d| d.term == "pii" && d.role == Role::SoftNegative);
        assert_eq!(soft_pii.unwrap().reason.as_deref(), Some("is_anchor"));
        assert_eq!(reason_of(&g, "tests"), Some("duplicate"));
        let test_synonym = g
            .decisions
            .iter()
            .find(|d| d.term == "test" && d.role == Role::Synonym);
        assert_eq!(test_synonym.unwrap().reason.as_deref(), Some("is_negative"));
        assert_eq!(g.soft.len(), 1);
        assert_eq!(g.phrases[0].tokens, ["phone", "number"]);
    }

    #[test]
    fn the_cap_applies_after_the_band() {
        let config = PlanConfig {
            max_synonyms: 1,
            ..PlanConfig::default()
        };
        let g = run(
            &[
                p("pii", Role::Anchor),
                p("contact", Role::Synonym),
                p("mobile", Role::Synonym),
                p("address", Role::Synonym),
            ],
            &config,
        );
        assert_eq!(reason_of(&g, "contact"), Some("df_band"));
        assert_eq!(reason_of(&g, "mobile"), None);
        assert_eq!(reason_of(&g, "address"), Some("cap"));
    }

    #[test]
    fn without_anchors_in_the_index_the_band_is_not_applied() {
        let g = run(
            &[p("ghost", Role::Anchor), p("contact", Role::Synonym)],
            &PlanConfig::default(),
        );
        assert_eq!(g.df_reference, None);
        assert_eq!(reason_of(&g, "contact"), None);
    }
}
