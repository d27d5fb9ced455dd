//! A planned question, stage by stage (docs/spec/planner.md §15): classify, expand, gate, pass A
//! per side, feedback, the dense pool, then per side passes B and D, negatives, rerank and blend.
//! One function a stage, named as the `--explain` laps name them; every stage's decisions and
//! time go into the [`PlanExplain`] that `--explain` returns.

use slayer_index::fulltext::FullText;
use tantivy::Searcher;

use crate::channels::dense::{Dense, DenseSides};
use crate::channels::lexical::{scope_filter, Side};
use crate::channels::ranked::{ChannelOutcome, Ranking};
use crate::corpus::Scope;
use crate::output::warnings::Warnings;
use crate::plan::config::{PlanConfig, RerankProvider};
use crate::plan::explain::{
    Blended, Clock, Counts, Dropped, PlanExplain, SideReport, EXPLAIN_LIST,
};
use crate::plan::gate::{gate, Gated, Proposed, Role, Source};
use crate::plan::negatives::{Negatives, Verdict};
use crate::plan::passes::{self, Candidate, PassA, SideIndex};
use crate::plan::prf::{authored_text, feedback_terms, FeedbackDoc};
use crate::plan::rerank::{anchor_hits, blend};
use crate::plan::terms::Exception;
use crate::plan::words::IndexWords;
use crate::plan::{PlanAsk, PlanSources};
use crate::SearchError;

/// The channel name of a planned ranking in `--explain` contributions.
pub(crate) const PLAN_CHANNEL: &str = "plan";
/// Pass-A docs read for feedback, per doc feedback uses (the rest make up for dropped ones).
const FEEDBACK_READ: usize = 3;
mod expand;
mod scores;

/// The two sides, in the order the planner ranks them.
const SIDES: [Side; 2] = [Side::Memories, Side::Entities];

/// The proposals of every expansion source.
pub(super) struct Expansion {
    pub(super) proposals: Vec<Proposed>,
    /// The plan's own exceptions (the caller's and the LLM's).
    pub(super) exceptions: Vec<Exception>,
    /// Whether the caller or the LLM gave terms (otherwise feedback expands the question).
    pub(super) expanded: bool,
}

/// What the planner gives the pipeline.
pub(crate) struct Planned {
    /// Its explanation.
    pub(crate) explain: PlanExplain,
    /// Memory side and entity side rankings; `None` for a navigational question (the
    /// unplanned pipeline answers, the named entity first).
    pub(crate) rankings: Option<(Ranking, Ranking)>,
    /// The fraction of its final fused score each candidate with a soft negative loses
    /// (`blend.negatives × penalty`): the penalty follows it past the planner's own blend.
    pub(crate) buried: Buried,
}

/// Key → the fraction of its fused score it loses (between 0 and 1).
pub(crate) type Buried = rustc_hash::FxHashMap<String, f64>;

/// Plans one question: classified first (a navigational one is answered by the unplanned
/// pipeline), then ranked per side.
pub(crate) fn plan(
    sources: &PlanSources<'_>,
    ask: &PlanAsk<'_>,
    scope: &Scope<'_, '_>,
    warnings: &mut Warnings,
) -> Result<Planned, SearchError> {
    let config = &sources.planner.config;
    let mut clock = Clock::new();
    let mut explain = PlanExplain {
        df_ratio_band: config.df_ratio_band,
        budgets: config.budgets,
        ..PlanExplain::default()
    };
    let navigational = expand::navigational(sources.corpus, ask.question, scope)?;
    clock.lap("classify");
    if let Some(entity) = navigational {
        explain.navigational = Some(entity);
        explain.latency_ms = clock.laps;
        return Ok(Planned {
            explain,
            rankings: None,
            buried: Buried::default(),
        });
    }
    let (fulltext, searcher) = sources.text.get(sources.conn)?;
    let scoped = scope_filter(&fulltext.fields(), scope.datasource(), scope.admission());
    let run = Run {
        sources,
        config,
        ask,
        scope,
        scoped,
        fulltext,
        searcher,
        words: IndexWords::of(fulltext),
        explain,
        clock,
        warnings,
    };
    run.rank()
}

/// One planned question in flight: what it reads, and what it has found so far.
struct Run<'r, 'a, 's, 'c> {
    sources: &'r PlanSources<'a>,
    config: &'r PlanConfig,
    ask: &'r PlanAsk<'r>,
    scope: &'r Scope<'s, 'c>,
    /// The docs the scope may see, for every count the plan makes (`None`: all).
    scoped: Option<Box<dyn tantivy::query::Query>>,
    fulltext: &'r FullText,
    searcher: &'r Searcher,
    words: IndexWords,
    explain: PlanExplain,
    clock: Clock,
    warnings: &'r mut Warnings,
}

/// What every side's ranking shares: the gated terms, pass A, the negatives, the dense pool
/// and the reranker.
struct Shared<'g> {
    gated: &'g Gated,
    pass_a: &'g [PassA],
    negatives: &'g Negatives,
    dense_pool: Option<&'g DenseSides<'g>>,
    provider: RerankProvider,
}

impl<'r, 'a> Run<'r, 'a, '_, '_> {
    /// Expand, gate, pass A, feedback, the dense pool, then each side.
    fn rank(mut self) -> Result<Planned, SearchError> {
        let Expansion {
            mut proposals,
            exceptions,
            expanded,
        } = self.expand()?;
        self.clock.lap("expand");
        let mut gated = self.gate(&proposals);
        self.clock.lap("gate");
        // Pass A per side, once: feedback reads it and only ever adds synonyms.
        let pass_a = SIDES
            .map(|side| self.index(side).pass_a(&gated))
            .into_iter()
            .collect::<tantivy::Result<Vec<PassA>>>()?;
        self.clock.lap("passes");
        // Feedback only adds synonyms: the negatives and anchors they read are final here.
        let negatives = Negatives::new(self.config, &gated, &exceptions, &mut self.words);
        // Neither the caller nor an LLM expanded the question: feedback from pass A does.
        let prf = self.config.prf;
        if !expanded && prf.docs > 0 && prf.terms > 0 && !gated.anchors.is_empty() {
            self.feedback(&mut proposals, &mut gated, &pass_a, &negatives)?;
            self.clock.lap("prf");
        }
        let provider = self.ask.rerank.unwrap_or(self.config.reranker.provider);
        self.explain.reranker = Some(provider);
        let dense_pool = self.dense_pool(provider)?;
        self.clock.lap("dense");
        let shared = Shared {
            gated: &gated,
            pass_a: &pass_a,
            negatives: &negatives,
            dense_pool: dense_pool.as_ref(),
            provider,
        };
        let mut buried = Buried::default();
        let (memories, memory_report) = self.rank_side(0, &shared, &mut buried)?;
        let (entities, entity_report) = self.rank_side(1, &shared, &mut buried)?;
        self.explain.memories = Some(memory_report);
        self.explain.entities = Some(entity_report);
        self.explain.plan = gated;
        self.explain.exceptions = exceptions;
        self.explain.latency_ms = self.clock.laps;
        Ok(Planned {
            explain: self.explain,
            rankings: Some((memories, entities)),
            buried,
        })
    }

    /// One side's index, as the passes read it.
    fn index(&self, side: Side) -> SideIndex<'_> {
        SideIndex {
            fulltext: self.fulltext,
            searcher: self.searcher,
            side,
            datasource: self.scope.datasource(),
            admission: self.scope.admission(),
            config: self.config,
            name_weight: self.ask.name_weight,
        }
    }

    /// Gating (docs/spec/planner.md §15.3): every proposal checked against the index.
    fn gate(&mut self, proposals: &[Proposed]) -> Gated {
        let (fulltext, searcher) = (self.fulltext, self.searcher);
        let slop = self.config.phrase_slop;
        let scoped = self.scoped.as_deref();
        let mut df = |tokens: &[String]| passes::doc_freq(fulltext, searcher, tokens, slop, scoped);
        gate(proposals, self.config, &mut self.words, &mut df)
    }

    /// Pseudo-relevance feedback: synonyms from the best pass-A docs the negatives keep,
    /// gated again with the rest.
    fn feedback(
        &mut self,
        proposals: &mut Vec<Proposed>,
        gated: &mut Gated,
        pass_a: &[PassA],
        negatives: &Negatives,
    ) -> Result<(), SearchError> {
        let prf = self.config.prf;
        let mut docs: Vec<(String, f32)> = Vec::new();
        // Entities first: ties among feedback terms keep the order they were seen in.
        for at in [1, 0] {
            let top = self
                .index(SIDES[at])
                .top(&pass_a[at], FEEDBACK_READ * prf.docs)?;
            let kept = top
                .into_iter()
                // Docs the negatives drop vote for nothing (a scratch copy's words are not
                // what the question is about).
                .filter(|c| negatives.drops(c, &mut self.words).is_none())
                .take(prf.docs);
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
        let (fulltext, searcher) = (self.fulltext, self.searcher);
        let scoped = self.scoped.as_deref();
        // Under a scope the collection is the scope's: its size and each term's count.
        let total = match scoped {
            None => searcher.num_docs() as f64,
            Some(_) => {
                passes::count_in(searcher, Box::new(tantivy::query::AllQuery), scoped) as f64
            }
        };
        let mut idf = |token: &str| {
            let n = passes::doc_freq(fulltext, searcher, &[token.to_owned()], 0, scoped) as f64;
            (1.0 + (total - n + 0.5) / (n + 0.5)).ln()
        };
        let terms = feedback_terms(
            &feedback,
            prf.terms,
            &|t| anchors.contains(t),
            &mut idf,
            &mut self.words,
        );
        if !terms.is_empty() {
            proposals.extend(terms.into_iter().map(|(w, _)| Proposed {
                text: w,
                role: Role::Synonym,
                source: Source::Prf,
            }));
            self.explain.sources.push(Source::Prf);
            *gated = self.gate(proposals);
        }
        Ok(())
    }

    /// Pass D's pool: the dense channel's rankings, read when the local reranker runs.
    fn dense_pool(&self, provider: RerankProvider) -> Result<Option<DenseSides<'a>>, SearchError> {
        if provider != RerankProvider::Local || self.config.budgets.dense == 0 {
            return Ok(None);
        }
        let dense: &'a Dense = self.sources.dense;
        let conn = self.sources.conn;
        Ok(match dense.rank(conn, self.scope, self.ask.question)? {
            ChannelOutcome::Ran(rankings) => Some(rankings),
            // The reranker says why, once.
            ChannelOutcome::Skipped(_) => None,
        })
    }

    /// One side, after pass A: passes B and D, negatives, rerank and blend.
    fn rank_side(
        &mut self,
        at: usize,
        shared: &Shared<'_>,
        buried: &mut Buried,
    ) -> Result<(Ranking, SideReport), SearchError> {
        let (candidates, mut report) = self.retrieve(at, shared)?;
        self.clock.lap("passes");
        let kept = self.judge(candidates, shared.negatives, &mut report);
        self.clock.lap("negatives");
        let weight = self.config.reranker.blend.negatives;
        for (c, verdict) in &kept {
            let loses = (weight * verdict.penalty).clamp(0.0, 1.0);
            if loses > 0.0 {
                buried.insert(c.id.clone(), loses);
            }
        }
        self.rerank_and_blend(kept, shared, report)
    }

    /// Passes B and D of one side, merged after pass A's candidates.
    fn retrieve(
        &self,
        at: usize,
        shared: &Shared<'_>,
    ) -> Result<(Vec<Candidate>, SideReport), SearchError> {
        let side = SIDES[at];
        let mut retrieved = self
            .index(side)
            .retrieve(shared.gated, &shared.pass_a[at])?;
        let budget = self.config.budgets.dense;
        let pass_d = shared
            .dense_pool
            .map(|(memories, entities)| match side {
                Side::Memories => memories,
                Side::Entities => entities,
            })
            .map(|ranking| {
                // Deep enough to find `budget` rows no earlier pass took.
                let depth = budget + retrieved.candidates.len();
                self.pass_d(&ranking.top(depth), &mut retrieved.candidates, budget)
            })
            .transpose()?;
        let report = SideReport {
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
        Ok((retrieved.candidates, report))
    }

    /// Negatives: hard ones drop a candidate (shown, up to the explain list), soft ones
    /// leave a penalty for the blend.
    fn judge(
        &mut self,
        candidates: Vec<Candidate>,
        negatives: &Negatives,
        report: &mut SideReport,
    ) -> Vec<(Candidate, Verdict)> {
        let mut kept: Vec<(Candidate, Verdict)> = Vec::new();
        for c in candidates {
            let verdict = negatives.judge(&c, &mut self.words);
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
        kept
    }

    /// Rerank the kept candidates, blend with anchor hits and penalties, and order them.
    fn rerank_and_blend(
        &mut self,
        kept: Vec<(Candidate, Verdict)>,
        shared: &Shared<'_>,
        mut report: SideReport,
    ) -> Result<(Ranking, SideReport), SearchError> {
        let candidates: Vec<&Candidate> = kept.iter().map(|(c, _)| c).collect();
        let (scores, used) = self.rerank_scores(shared.provider, &candidates)?;
        report.counts.reranked = if used == RerankProvider::None {
            0
        } else {
            candidates.len()
        };
        self.explain.reranker = Some(used);
        self.clock.lap("rerank");
        let hits: Vec<usize> = candidates
            .iter()
            .map(|c| anchor_hits(c, shared.gated, &mut self.words))
            .collect();
        let penalties: Vec<f64> = kept.iter().map(|(_, v)| v.penalty).collect();
        let finals = blend(&scores, &hits, &penalties, self.config.reranker.blend);
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
        self.clock.lap("blend");
        let ranking = Ranking {
            channel: PLAN_CHANNEL,
            hits: order
                .iter()
                .map(|&i| (kept[i].0.id.clone(), Some(finals[i])))
                .collect(),
        };
        Ok((ranking, report))
    }
}
