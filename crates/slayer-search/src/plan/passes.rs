//! Two budgeted passes over our tantivy index (docs/spec/planner.md §15.4): pass A ORs the anchors,
//! the anchors as one phrase with slop, and the phrases; pass B ORs the synonyms alone. Pass A gets
//! N₁ candidates, pass B N₂ — topped up when A is short, halved when A overflows (more than twice
//! N₁ matches) — and the merge keeps A's order, then B's, without duplicates, up to
//! `max_candidates`.

use serde::Serialize;
use tantivy::query::{BoostQuery, Occur, PhraseQuery, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

use slayer_index::fulltext::FullText;

use crate::channels::lexical::{best_first, matches, naming_fields, Side};
use crate::plan::config::PlanConfig;
use crate::plan::gate::{Gated, PlanTerm};

/// Which pass found a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Pass {
    /// Anchors and phrases.
    A,
    /// Synonyms only.
    B,
    /// The dense channel's best that A and B missed (with the local reranker).
    D,
}

/// A retrieved doc, with what negatives, shaping and the blend read.
#[derive(Debug, Clone)]
pub(crate) struct Candidate {
    /// The doc id (canonical id, or `memory:<id>`).
    pub id: String,
    /// The doc kind.
    pub kind: String,
    /// The rendered doc text.
    pub text: String,
    /// The pass that found it.
    pub pass: Pass,
    /// Its BM25 score in that pass.
    pub score: f32,
}

/// What one pass did, for `--explain`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PassReport {
    /// The query as run, in the seed's notation.
    pub query: String,
    /// Docs that matched.
    pub matched: usize,
    /// The budget in force.
    pub budget: usize,
    /// Candidates taken (pass B: new ones only).
    pub taken: usize,
    /// Why the budget moved: `top_up` (A was short) or `trimmed` (A overflowed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub adjusted: Option<&'static str>,
}

/// Both passes' candidates, merged.
#[derive(Debug, Clone, Default)]
pub(crate) struct Retrieved {
    /// A's then B's, de-duplicated, capped.
    pub candidates: Vec<Candidate>,
    /// Pass A.
    pub pass_a: PassReport,
    /// Pass B.
    pub pass_b: PassReport,
}

/// The anchors joined as one phrase only while that is a phrase a doc can hold.
const MAX_JOINT_ANCHOR_TOKENS: usize = 4;

/// One side of the index (and the datasource) as the passes query it.
pub(crate) struct SideIndex<'a> {
    /// The index.
    pub fulltext: &'a FullText,
    /// Its searcher.
    pub searcher: &'a Searcher,
    /// Memories or entities.
    pub side: Side,
    /// The datasource filter (channel 2's, with the subset's statistics).
    pub datasource: Option<&'a str>,
    /// The memories the request may see (statistics too).
    pub admission: &'a crate::corpus::Admission<'a>,
    /// Budgets, slop, the candidate cap.
    pub config: &'a PlanConfig,
    /// A one-term clause also scores on the entity's name, this much.
    pub name_weight: f32,
}

/// Pass A's matches, best first, and its query as shown. Feedback only adds synonyms, so
/// the same pass A serves pseudo-relevance feedback and retrieval.
pub(crate) struct PassA {
    hits: Vec<(f32, DocAddress)>,
    query: String,
}

impl SideIndex<'_> {
    fn builder(&self) -> Builder<'_> {
        Builder {
            fulltext: self.fulltext,
            side: self.side,
            slop: self.config.phrase_slop,
            name_weight: self.name_weight,
        }
    }

    fn run(&self, clauses: Clauses) -> tantivy::Result<Vec<(f32, DocAddress)>> {
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        Ok(best_first(matches(
            self.fulltext,
            self.searcher,
            clauses,
            self.side,
            self.datasource,
            self.admission,
        )?))
    }

    /// Runs pass A (anchors and phrases).
    pub(crate) fn pass_a(&self, gated: &Gated) -> tantivy::Result<PassA> {
        let (clauses, query) = self.builder().pass_a(gated);
        Ok(PassA {
            hits: self.run(clauses)?,
            query,
        })
    }

    /// Pass A's first `n` docs, best first: what pseudo-relevance feedback reads (after the
    /// negatives have had their say).
    pub(crate) fn top(&self, a: &PassA, n: usize) -> tantivy::Result<Vec<Candidate>> {
        a.hits
            .iter()
            .take(n)
            .map(|&(score, addr)| self.candidate(Pass::A, score, addr))
            .collect()
    }

    /// Runs pass B (synonyms) and merges it with pass A under the budgets.
    pub(crate) fn retrieve(&self, gated: &Gated, a: &PassA) -> tantivy::Result<Retrieved> {
        let (words_b, query_b) = self.builder().pass_b(gated);
        let hits_a = &a.hits;
        let budgets = self.config.budgets;
        let taken_a = hits_a.len().min(budgets.anchors);
        let (budget_b, adjusted) = if hits_a.len() > 2 * budgets.anchors {
            (budgets.synonyms / 2, Some("trimmed"))
        } else if taken_a < budgets.anchors && !words_b.is_empty() {
            (budgets.synonyms + budgets.anchors - taken_a, Some("top_up"))
        } else {
            (budgets.synonyms, None)
        };
        let hits_b = self.run(words_b)?;
        let mut seen: rustc_hash::FxHashSet<DocAddress> = Default::default();
        let mut merged: Vec<(Pass, f32, DocAddress)> = Vec::new();
        for &(score, addr) in &hits_a[..taken_a] {
            seen.insert(addr);
            merged.push((Pass::A, score, addr));
        }
        let mut taken_b = 0;
        for &(score, addr) in &hits_b {
            if taken_b == budget_b {
                break;
            }
            if seen.insert(addr) {
                merged.push((Pass::B, score, addr));
                taken_b += 1;
            }
        }
        merged.truncate(self.config.max_candidates);
        let candidates = merged
            .into_iter()
            .map(|(pass, score, addr)| self.candidate(pass, score, addr))
            .collect::<tantivy::Result<Vec<_>>>()?;
        Ok(Retrieved {
            candidates,
            pass_a: PassReport {
                query: a.query.clone(),
                matched: hits_a.len(),
                budget: budgets.anchors,
                taken: taken_a,
                adjusted: None,
            },
            pass_b: PassReport {
                query: query_b,
                matched: hits_b.len(),
                budget: budget_b,
                taken: taken_b,
                adjusted: adjusted.filter(|_| !hits_b.is_empty() || adjusted == Some("trimmed")),
            },
        })
    }

    fn candidate(&self, pass: Pass, score: f32, addr: DocAddress) -> tantivy::Result<Candidate> {
        let f = self.fulltext.fields();
        let doc: TantivyDocument = self.searcher.doc(addr)?;
        let text = |field| {
            doc.get_first(field)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        Ok(Candidate {
            id: text(f.id),
            kind: text(f.kind),
            text: text(f.text),
            pass,
            score,
        })
    }
}

struct Builder<'f> {
    fulltext: &'f FullText,
    side: Side,
    slop: u32,
    name_weight: f32,
}

type Clauses = Vec<(Occur, Box<dyn Query>)>;

impl Builder<'_> {
    fn pass_a(&self, gated: &Gated) -> (Clauses, String) {
        let mut clauses = Clauses::new();
        let mut shown = Vec::new();
        let joint: Vec<String> = gated
            .anchors
            .iter()
            .flat_map(|a| a.tokens.clone())
            .collect();
        if gated.anchors.len() >= 2 && joint.len() <= MAX_JOINT_ANCHOR_TOKENS {
            clauses.push((Occur::Should, self.phrase(&joint)));
            shown.push(format!("\"{}\"~{}", joint.join(" "), self.slop));
        }
        for term in gated.anchors.iter().chain(&gated.phrases) {
            self.add(term, &mut clauses, &mut shown);
        }
        (clauses, shown.join(" OR "))
    }

    fn pass_b(&self, gated: &Gated) -> (Clauses, String) {
        let mut clauses = Clauses::new();
        let mut shown = Vec::new();
        for term in &gated.synonyms {
            self.add(term, &mut clauses, &mut shown);
        }
        (clauses, shown.join(" OR "))
    }

    fn add(&self, term: &PlanTerm, clauses: &mut Clauses, shown: &mut Vec<String>) {
        let f = self.fulltext.fields();
        if let [token] = term.tokens.as_slice() {
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(
                    Term::from_field_text(f.text, token),
                    IndexRecordOption::WithFreqs,
                )),
            ));
            // As channel 2 does: a word in the fields that name an entity (its own name, a
            // measure's plain words) counts again, weighted.
            if self.side == Side::Entities {
                for (field, weight) in naming_fields(&f, self.name_weight) {
                    if weight > 0.0 {
                        let on_field = TermQuery::new(
                            Term::from_field_text(field, token),
                            IndexRecordOption::WithFreqs,
                        );
                        clauses.push((
                            Occur::Should,
                            Box::new(BoostQuery::new(Box::new(on_field), weight)),
                        ));
                    }
                }
            }
            shown.push(token.clone());
        } else {
            clauses.push((Occur::Should, self.phrase(&term.tokens)));
            shown.push(format!("\"{}\"~{}", term.tokens.join(" "), self.slop));
        }
    }

    fn phrase(&self, tokens: &[String]) -> Box<dyn Query> {
        let field = self.fulltext.fields().text;
        let terms: Vec<Term> = tokens
            .iter()
            .map(|t| Term::from_field_text(field, t))
            .collect();
        let mut q = PhraseQuery::new(terms);
        q.set_slop(self.slop);
        Box::new(q)
    }
}

/// A pass-A candidate with this id, kind and text (the tests of the later stages).
#[cfg(test)]
pub(crate) fn test_candidate(id: &str, kind: &str, text: &str) -> Candidate {
    Candidate {
        id: id.into(),
        kind: kind.into(),
        text: text.into(),
        pass: Pass::A,
        score: 1.0,
    }
}

/// Documents of the whole index holding a term (one token) or a phrase (several, in order
/// within the slop): the frequency gating compares.
pub(crate) fn doc_freq(
    fulltext: &FullText,
    searcher: &Searcher,
    tokens: &[String],
    slop: u32,
    scope: Option<&dyn tantivy::query::Query>,
) -> u64 {
    let field = fulltext.fields().text;
    let query: Box<dyn tantivy::query::Query> = match tokens {
        [] => return 0,
        // Unscoped, a term's count is the index's own statistic.
        [one] if scope.is_none() => {
            return searcher
                .doc_freq(&Term::from_field_text(field, one))
                .unwrap_or(0)
        }
        [one] => Box::new(tantivy::query::TermQuery::new(
            Term::from_field_text(field, one),
            IndexRecordOption::Basic,
        )),
        many => {
            let mut q = PhraseQuery::new(
                many.iter()
                    .map(|t| Term::from_field_text(field, t))
                    .collect(),
            );
            q.set_slop(slop);
            Box::new(q)
        }
    };
    count_in(searcher, query, scope)
}

/// The docs in `scope` (`None`: every doc) that `query` matches: what a scoped request may
/// count (docs/spec/planner.md §15.3: no statistic counts what the scope cannot see).
pub(crate) fn count_in(
    searcher: &Searcher,
    query: Box<dyn tantivy::query::Query>,
    scope: Option<&dyn tantivy::query::Query>,
) -> u64 {
    let query: Box<dyn tantivy::query::Query> = match scope {
        None => query,
        Some(scope) => Box::new(tantivy::query::BooleanQuery::new(vec![
            (tantivy::query::Occur::Must, query),
            (tantivy::query::Occur::Must, scope.box_clone()),
        ])),
    };
    searcher
        .search(&query, &tantivy::collector::Count)
        .map(|n| n as u64)
        .unwrap_or(0)
}
