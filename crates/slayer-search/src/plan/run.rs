//! A planned question, stage by stage (seed 002 §Pseudocode): classify, expand, gate, pass A
//! and pass B per side, negatives, rerank, blend. Every stage's decisions and time go into the
//! [`PlanExplain`] that `--explain` returns.

use slayer_common::records::content_hash;
use slayer_common::store::{settings, OpenMode, Store};

use crate::channels::ChannelOutcome;
use crate::corpus::Scope;
use crate::fuse::Ranking;
use crate::lexical::Side;
use crate::plan::config::RerankProvider;
use crate::plan::explain::{
    Blended, Clock, Counts, Dropped, LlmReport, PlanExplain, SideReport, EXPLAIN_LIST,
};
use crate::plan::gate::{gate, Proposed, Role, Source};
use crate::plan::http_rerank::{self, RerankSettings};
use crate::plan::llm;
use crate::plan::negatives::{Negatives, Verdict};
use crate::plan::passes::{self, Candidate, Pass, PassA, PassReport, SideIndex};
use crate::plan::prf::{authored_text, feedback_terms, split_negations, FeedbackDoc};
use crate::plan::rerank::{anchor_hits, blend, retrieval_scores, shape, with_retrieval};
use crate::plan::terms::{Exception, Injected};
use crate::plan::words::IndexWords;
use crate::response::Request;
use crate::search::Context;
use crate::warnings::Warnings;
use crate::SearchError;

/// The channel name of a planned ranking in `--explain` contributions.
pub const PLAN_CHANNEL: &str = "plan";
/// Pass-A docs read for feedback, per doc feedback uses (the rest make up for dropped ones).
const FEEDBACK_READ: usize = 3;

/// The proposals of every expansion source.
struct Expansion {
    proposals: Vec<Proposed>,
    /// The plan's own exceptions (the caller's and the LLM's).
    exceptions: Vec<Exception>,
    /// Whether the caller or the LLM gave terms (otherwise feedback expands the question).
    expanded: bool,
}

/// What the planner gives the pipeline.
pub struct Planned {
    /// Its explanation.
    pub explain: PlanExplain,
    /// Memory side and entity side rankings; `None` for a navigational question (the
    /// unplanned pipeline answers, the named entity first).
    pub rankings: Option<(Ranking, Ranking)>,
}

impl Context<'_> {
    /// Plans one question.
    pub(crate) fn plan(
        &self,
        req: &Request,
        question: &str,
        scope: &Scope<'_, '_>,
        warnings: &mut Warnings,
    ) -> Result<Planned, SearchError> {
        let config = &self.planner.config;
        let mut clock = Clock::new();
        let mut explain = PlanExplain {
            df_ratio_band: config.df_ratio_band,
            budgets: config.budgets,
            ..PlanExplain::default()
        };
        if let Some(entity) = self.navigational(question, scope)? {
            explain.navigational = Some(entity);
            clock.lap("classify");
            explain.latency_ms = clock.laps;
            return Ok(Planned {
                explain,
                rankings: None,
            });
        }
        clock.lap("classify");
        let (fulltext, searcher) = self.text.get()?;
        let mut words = IndexWords::of(fulltext);

        let Expansion {
            mut proposals,
            exceptions,
            expanded,
        } = self.expand(req, question, &mut words, &mut explain, warnings)?;
        clock.lap("expand");

        let slop = config.phrase_slop;
        let mut df = |tokens: &[String]| passes::doc_freq(fulltext, searcher, tokens, slop);
        let mut gated = gate(&proposals, config, &mut words, &mut df);
        clock.lap("gate");

        let sides = [Side::Memories, Side::Entities];
        let index = |side| SideIndex {
            fulltext,
            searcher,
            side,
            datasource: scope.datasource(),
            admission: scope.admission(),
            config,
            name_weight: req.tuning.name_weight,
        };
        // Pass A per side, once: feedback reads it and only ever adds synonyms.
        let pass_a = sides
            .map(|side| index(side).pass_a(&gated))
            .into_iter()
            .collect::<tantivy::Result<Vec<PassA>>>()?;
        clock.lap("passes");

        // Feedback only adds synonyms: the negatives and anchors they read are final here.
        let negatives = Negatives::new(config, &gated, &exceptions, &mut words);

        // Neither the caller nor an LLM expanded the question: feedback from pass A does.
        if !expanded && config.prf.docs > 0 && config.prf.terms > 0 && !gated.anchors.is_empty() {
            let mut docs: Vec<(String, f32)> = Vec::new();
            // Entities first: ties among feedback terms keep the order they were seen in.
            for at in [1, 0] {
                let top = index(sides[at]).top(&pass_a[at], FEEDBACK_READ * config.prf.docs)?;
                let kept = top
                    .into_iter()
                    // Docs the negatives drop vote for nothing (a scratch copy's words are
                    // not what the question is about).
                    .filter(|c| negatives.drops(c, &mut words).is_none())
                    .take(config.prf.docs);
                docs.extend(kept.map(|c| (authored_text(&c.text), c.score)));
            }
            let feedback: Vec<FeedbackDoc<'_>> = docs
                .iter()
                .map(|(text, score)| FeedbackDoc {
                    text,
                    score: *score,
                })
                .collect();
            let anchors: rustc_hash::FxHashSet<String> = gated
                .anchors
                .iter()
                .flat_map(|a| a.tokens.clone())
                .collect();
            let total = searcher.num_docs() as f64;
            let field = fulltext.fields().text;
            let mut idf = |token: &str| {
                let n = searcher
                    .doc_freq(&tantivy::Term::from_field_text(field, token))
                    .unwrap_or(0) as f64;
                (1.0 + (total - n + 0.5) / (n + 0.5)).ln()
            };
            let terms = feedback_terms(
                &feedback,
                config.prf.terms,
                &|t| anchors.contains(t),
                &mut idf,
                &mut words,
            );
            if !terms.is_empty() {
                proposals.extend(terms.into_iter().map(|(w, _)| Proposed {
                    text: w,
                    role: Role::Synonym,
                    source: Source::Prf,
                }));
                explain.sources.push(Source::Prf);
                gated = gate(&proposals, config, &mut words, &mut df);
            }
            clock.lap("prf");
        }
        let provider = req.rerank.unwrap_or(config.reranker.provider);
        explain.reranker = Some(provider);

        // Pass D's pool: the dense channel's rankings, read when the local reranker runs.
        let dense_pool = if provider == RerankProvider::Local && config.budgets.dense > 0 {
            match self.dense.rank(self.conn, scope, question)? {
                ChannelOutcome::Ran(rankings) => Some(rankings),
                // The reranker says why, once.
                ChannelOutcome::Skipped(_) => None,
            }
        } else {
            None
        };
        clock.lap("dense");
        let mut rank_side = |at: usize| -> Result<(Ranking, SideReport), SearchError> {
            let side = sides[at];
            let mut retrieved = index(side).retrieve(&gated, &pass_a[at])?;
            let pass_d = dense_pool
                .as_ref()
                .map(|(memories, entities)| match side {
                    Side::Memories => memories,
                    Side::Entities => entities,
                })
                .map(|ranking| {
                    // Deep enough to find `budget` rows no earlier pass took.
                    let depth = config.budgets.dense + retrieved.candidates.len();
                    self.pass_d(
                        &ranking.top(depth),
                        &mut retrieved.candidates,
                        config.budgets.dense,
                    )
                })
                .transpose()?;
            clock.lap("passes");
            let mut report = SideReport {
                counts: Counts {
                    pass_a: retrieved.pass_a.taken,
                    pass_b: retrieved.pass_b.taken,
                    pass_d: pass_d.as_ref().map_or(0, |d| d.taken),
                    merged: retrieved.candidates.len(),
                    ..Counts::default()
                },
                pass_a: retrieved.pass_a,
                pass_b: retrieved.pass_b,
                pass_d,
                ..SideReport::default()
            };
            let mut kept: Vec<(Candidate, Verdict)> = Vec::new();
            for c in retrieved.candidates {
                let verdict = negatives.judge(&c, &mut words);
                match &verdict.dropped_by {
                    Some(by) => report.dropped.push(Dropped {
                        id: c.id.clone(),
                        by: by.clone(),
                    }),
                    None => kept.push((c, verdict)),
                }
            }
            report.counts.after_negatives = kept.len();
            report.dropped.truncate(EXPLAIN_LIST);
            clock.lap("negatives");
            let candidates: Vec<&Candidate> = kept.iter().map(|(c, _)| c).collect();
            let (scores, used) = self.rerank_scores(provider, question, &candidates, warnings)?;
            report.counts.reranked = if used == RerankProvider::None {
                0
            } else {
                candidates.len()
            };
            explain.reranker = Some(used);
            clock.lap("rerank");
            let hits: Vec<usize> = candidates
                .iter()
                .map(|c| anchor_hits(c, &gated, &mut words))
                .collect();
            let penalties: Vec<f64> = kept.iter().map(|(_, v)| v.penalty).collect();
            let finals = blend(&scores, &hits, &penalties, config.reranker.blend);
            let mut order: Vec<usize> = (0..kept.len()).collect();
            order.sort_by(|&a, &b| finals[b].total_cmp(&finals[a]).then(a.cmp(&b)));
            report.top = order
                .iter()
                .take(EXPLAIN_LIST)
                .map(|&i| Blended {
                    id: kept[i].0.id.clone(),
                    pass: kept[i].0.pass,
                    rerank: scores[i],
                    anchor_hits: hits[i],
                    soft: kept[i].1.soft.clone(),
                    penalty: kept[i].1.penalty,
                    score: finals[i],
                })
                .collect();
            clock.lap("blend");
            let ranking = Ranking {
                channel: PLAN_CHANNEL,
                hits: order
                    .iter()
                    .map(|&i| (kept[i].0.id.clone(), Some(finals[i])))
                    .collect(),
            };
            Ok((ranking, report))
        };
        let (memories, memory_report) = rank_side(0)?;
        let (entities, entity_report) = rank_side(1)?;
        explain.memories = Some(memory_report);
        explain.entities = Some(entity_report);
        explain.plan = gated;
        explain.exceptions = exceptions;
        explain.latency_ms = clock.laps;
        Ok(Planned {
            explain,
            rankings: Some((memories, entities)),
        })
    }

    /// Expansion (docs/spec.md §15.2): the caller's terms, the LLM's, the question's own words
    /// and negations, the configured soft terms, in merge order.
    fn expand(
        &self,
        req: &Request,
        question: &str,
        words: &mut IndexWords,
        explain: &mut PlanExplain,
        warnings: &mut Warnings,
    ) -> Result<Expansion, SearchError> {
        let config = &self.planner.config;
        let mut proposals: Vec<Proposed> = Vec::new();
        let mut exceptions: Vec<Exception> = Vec::new();
        let mut push = |terms: &Injected, source: Source, proposals: &mut Vec<Proposed>| {
            let roles = [
                (&terms.anchors, Role::Anchor),
                (&terms.phrases, Role::Phrase),
                (&terms.synonyms, Role::Synonym),
                (&terms.negatives.hard, Role::HardNegative),
                (&terms.negatives.soft, Role::SoftNegative),
            ];
            for (list, role) in roles {
                proposals.extend(list.iter().map(|t| Proposed {
                    text: t.clone(),
                    role,
                    source,
                }));
            }
            exceptions.extend(terms.all_exceptions().cloned());
        };
        if let Some(injected) = req.injected.as_ref().filter(|i| !i.is_empty()) {
            push(injected, Source::Caller, &mut proposals);
            explain.sources.push(Source::Caller);
        }
        if let Some(answer) = self.llm_terms(question, explain, warnings)? {
            push(&answer, Source::Llm, &mut proposals);
            explain.sources.push(Source::Llm);
        }
        let expanded = !explain.sources.is_empty();
        let (wanted, negated) = split_negations(question, words);
        if !proposals
            .iter()
            .any(|p| matches!(p.role, Role::Anchor | Role::Phrase))
        {
            proposals.extend(wanted.into_iter().map(|w| Proposed {
                text: w,
                role: Role::Anchor,
                source: Source::Query,
            }));
            explain.sources.push(Source::Query);
        }
        proposals.extend(negated.into_iter().map(|w| Proposed {
            text: w,
            role: Role::SoftNegative,
            source: Source::Query,
        }));
        proposals.extend(config.negatives.soft_terms.iter().map(|w| Proposed {
            text: w.clone(),
            role: Role::SoftNegative,
            source: Source::Config,
        }));
        Ok(Expansion {
            proposals,
            exceptions,
            expanded,
        })
    }

    /// Pass D: up to `budget` docs of the dense ranking that the candidates lack, appended.
    fn pass_d(
        &self,
        ranking: &[(String, Option<f64>)],
        candidates: &mut Vec<Candidate>,
        budget: usize,
    ) -> Result<PassReport, SearchError> {
        let present: rustc_hash::FxHashSet<String> =
            candidates.iter().map(|c| c.id.clone()).collect();
        let mut taken = 0;
        for (id, cosine) in ranking {
            if taken == budget {
                break;
            }
            if present.contains(id) {
                continue;
            }
            let Some(stored) = slayer_common::store::docs::get(self.conn, id)? else {
                continue;
            };
            candidates.push(Candidate {
                id: id.clone(),
                kind: stored.doc.doc_kind,
                text: stored.doc.text,
                pass: Pass::D,
                score: cosine.unwrap_or(0.0) as f32,
            });
            taken += 1;
        }
        Ok(PassReport {
            query: "dense top".into(),
            matched: ranking.len(),
            budget,
            taken,
            adjusted: None,
        })
    }

    /// A question that is an entity's name or dotted path (no spaces; quotes and a trailing
    /// `?` aside) and resolves to exactly one entity under the datasource.
    fn navigational(
        &self,
        question: &str,
        scope: &Scope<'_, '_>,
    ) -> Result<Option<String>, SearchError> {
        let Some(name) = crate::model_evidence::bare_name(question) else {
            return Ok(None);
        };
        let catalog = self.corpus.catalog()?;
        let lookup: &dyn slayer_memory::resolve::Lookup = &self.corpus;
        let Ok(resolution) = catalog.resolve(&name, None, lookup) else {
            return Ok(None);
        };
        Ok(match resolution.canonical_forms.as_slice() {
            [one] if !one.starts_with("memory:") && scope.keeps_doc(one)? => Some(one.clone()),
            _ => None,
        })
    }

    /// The LLM's terms: from the store's cache, or asked and cached. `None` when no LLM is
    /// configured or it failed (a warning).
    fn llm_terms(
        &self,
        question: &str,
        explain: &mut PlanExplain,
        warnings: &mut Warnings,
    ) -> Result<Option<Injected>, SearchError> {
        let settings = match &self.planner.llm {
            Ok(None) => return Ok(None),
            Ok(Some(s)) => s,
            Err(why) => {
                warnings.push(why.to_string());
                return Ok(None);
            }
        };
        let datasources: Vec<String> = self.corpus.datasources.iter().cloned().collect();
        let key = format!(
            "planner.llm:{}:{}",
            settings.model,
            content_hash(&format!("{question}\u{0}{}", datasources.join("\u{0}")))
        );
        let mut report = LlmReport {
            model: settings.model.clone(),
            cached: false,
            failed: false,
        };
        if let Some(cached) = settings::get(self.conn, &key)? {
            if let Ok(terms) = serde_json::from_str::<Injected>(&cached) {
                report.cached = true;
                explain.llm = Some(report);
                return Ok(Some(terms));
            }
        }
        let stoplist = &self.planner.config.stoplist;
        let answer = match llm::expand(settings, question, &datasources, stoplist) {
            Ok(answer) => answer,
            Err(why) => {
                warnings.push(why.to_string());
                report.failed = true;
                explain.llm = Some(report);
                return Ok(None);
            }
        };
        for w in answer.warnings {
            warnings.push(w);
        }
        // A read-only store is searched all the same; the answer is then asked again next time.
        if let Ok(store) = Store::open(self.text.store(), OpenMode::MustExist) {
            if let Ok(text) = serde_json::to_string(&answer.terms) {
                let _ = settings::set(store.conn(), &key, &text);
            }
        }
        explain.llm = Some(report);
        Ok(Some(answer.terms))
    }

    /// The reranker's score of each candidate, and the reranker that gave them (`none` when
    /// the asked one failed: a warning). `none` is the retrieval's own score; `local` fuses
    /// the embedding model's cosine with it (a bi-encoder reads the question and the doc
    /// apart, so unlike the seed's cross-encoder it is no better judge than the retrieval it
    /// would override: measured in docs/quality.md); `http` is the endpoint's score as is.
    fn rerank_scores(
        &self,
        provider: RerankProvider,
        question: &str,
        candidates: &[&Candidate],
        warnings: &mut Warnings,
    ) -> Result<(Vec<f64>, RerankProvider), SearchError> {
        let retrieval_order = || retrieval_scores(candidates);
        if candidates.is_empty() {
            return Ok((Vec::new(), provider));
        }
        match provider {
            RerankProvider::None => Ok((retrieval_order(), provider)),
            RerankProvider::Local => {
                let ids: Vec<&str> = candidates.iter().map(|c| c.id.as_str()).collect();
                match self.dense.similarities(self.conn, question, &ids)? {
                    Ok(scores) => {
                        let missing = scores.iter().filter(|s| s.is_none()).count();
                        if missing == scores.len() {
                            warnings.push(format!(
                                "planner: local rerank skipped: none of the {} candidates has an embedding row; run `slayer-embed refresh`.",
                                scores.len()
                            ));
                            return Ok((retrieval_order(), RerankProvider::None));
                        }
                        let floor = scores
                            .iter()
                            .flatten()
                            .copied()
                            .fold(f64::INFINITY, f64::min);
                        if missing > 0 {
                            warnings.push(format!(
                                "planner: {missing} of {} candidates have no embedding row and rank as the least similar; run `slayer-embed refresh`.",
                                scores.len()
                            ));
                        }
                        let cosines: Vec<f64> =
                            scores.into_iter().map(|s| s.unwrap_or(floor)).collect();
                        Ok((with_retrieval(&cosines, &retrieval_order()), provider))
                    }
                    Err(warning) => {
                        warnings.push(warning.to_string());
                        Ok((retrieval_order(), RerankProvider::None))
                    }
                }
            }
            RerankProvider::Http => {
                let r = &self.planner.config.reranker;
                let settings = RerankSettings {
                    url: r.url.clone().unwrap_or_default(),
                    model: r.model.clone(),
                    api: r.api,
                    api_key: std::env::var(&r.api_key_env).ok().filter(|k| !k.is_empty()),
                    timeout: std::time::Duration::from_secs_f64(r.timeout_s),
                    max_retries: r.retries,
                    backoff: std::time::Duration::from_millis(200),
                };
                let mut blocks = Vec::with_capacity(candidates.len());
                for c in candidates {
                    let mut describe = |col: &str| {
                        slayer_common::store::docs::get(self.conn, &format!("{}.{col}", c.id))
                            .ok()
                            .flatten()
                            .and_then(|d| {
                                d.doc.text.lines().find_map(|l| {
                                    l.strip_prefix("Description: ").map(str::to_owned)
                                })
                            })
                    };
                    blocks.push(shape(c, &mut describe));
                }
                match http_rerank::rerank(&settings, question, &blocks) {
                    Ok(scores) => Ok((scores, provider)),
                    Err(warning) => {
                        warnings.push(warning.to_string());
                        Ok((retrieval_order(), RerankProvider::None))
                    }
                }
            }
        }
    }
}
