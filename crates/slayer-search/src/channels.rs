//! Stage 3, run channels: each channel the request turns on ranks both sides (memories,
//! entities). Channel 1 is BM25 over memory tags plus the named refs, channel 2 the full-text
//! index, channel 3 dense similarity; a channel turned off is neither run nor warned about.

use crate::corpus::Scope;
use crate::deepening::Deepening;
use crate::fuse::{Fusion, Ranking};
use crate::inputs::Inputs;
use crate::lexical::{self, Side, TextRanking};
use crate::ranked::DenseRanking;
use crate::response::{Channel, Request};
use crate::search::Context;
use crate::warnings::Warnings;
use crate::SearchError;

/// What a channel that may not run gives: its result, or why it was skipped (the warning).
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelOutcome<T> {
    /// The channel ran.
    Ran(T),
    /// A precondition failed; the search goes on without the channel.
    Skipped(String),
}

/// Every ranking of one request, per channel and side. A channel that did not run has empty
/// rankings (the text channel: none).
pub struct Rankings<'s> {
    /// Channel 1, memory side: BM25Plus over live tags.
    pub bm25: Ranking,
    /// Channel 1, entity side: the named refs, in input order.
    pub named: Ranking,
    /// Channel 2, memory side (`kind = memory` docs).
    pub text_memories: Option<TextRanking<'s>>,
    /// Channel 2, entity side.
    pub text_entities: Option<TextRanking<'s>>,
    /// Channel 3, memory side.
    pub dense_memories: DenseRanking<'s>,
    /// Channel 3, entity side.
    pub dense_entities: DenseRanking<'s>,
}

impl<'s> Rankings<'s> {
    /// The memory side's fusion, reading the text ranking from `depth`.
    pub fn memories(&self, depth: usize, fusion: Fusion) -> Result<Deepening<'_, 's>, SearchError> {
        Deepening::new(
            &self.bm25,
            self.text_memories.as_ref(),
            &self.dense_memories,
            depth,
            fusion,
        )
    }

    /// The entity side's fusion, reading the text ranking from `depth`.
    pub fn entities(&self, depth: usize, fusion: Fusion) -> Result<Deepening<'_, 's>, SearchError> {
        Deepening::new(
            &self.named,
            self.text_entities.as_ref(),
            &self.dense_entities,
            depth,
            fusion,
        )
    }

    /// Whether the question ranked any entity: model-level evidence reads what it matched,
    /// and named refs alone stay as named.
    pub fn question_ranked_entities(&self) -> bool {
        self.text_entities.as_ref().is_some_and(|t| !t.is_empty())
            || !self.dense_entities.is_empty()
    }
}

fn ranking(channel: &'static str, hits: Vec<(String, Option<f64>)>) -> Ranking {
    Ranking { channel, hits }
}

impl Context<'_> {
    /// Runs the channels the request turns on; `named` is the entity side of channel 1.
    pub(crate) fn run_channels(
        &self,
        req: &Request,
        inputs: &Inputs<'_>,
        named: Vec<String>,
        scope: &Scope<'_, '_>,
        warnings: &mut Warnings,
    ) -> Result<Rankings<'_>, SearchError> {
        let on = |c: Channel| req.channels.contains(&c);
        let mut rankings = Rankings {
            bm25: ranking("bm25", Vec::new()),
            named: ranking("named", Vec::new()),
            text_memories: None,
            text_entities: None,
            dense_memories: DenseRanking::empty(),
            dense_entities: DenseRanking::empty(),
        };
        if on(Channel::Entities) {
            if !inputs.canonical.is_empty() {
                rankings.bm25.hits = bm25(scope, &inputs.canonical)?;
            }
            rankings.named.hits = named.into_iter().map(|n| (n, None)).collect();
        }
        if let Some(q) = inputs.question.filter(|_| on(Channel::Text)) {
            let (fulltext, searcher) = self.text.get()?;
            let max_terms = self.limits.question_terms;
            let terms = lexical::question_terms(fulltext, q, max_terms);
            if terms.dropped > 0 {
                warnings.push(format!(
                    "the question has more than {max_terms} distinct terms; the full-text channel searched the first {max_terms} and left out {} (limits.question_terms in slayer.toml).",
                    terms.dropped
                ));
            }
            let ds = scope.datasource();
            let name_weight = req.tuning.name_weight;
            let admission = scope.admission();
            let side = |side| {
                lexical::rank(
                    fulltext,
                    searcher,
                    &terms.terms,
                    side,
                    ds,
                    admission,
                    name_weight,
                )
            };
            let started = std::time::Instant::now();
            rankings.text_memories = Some(side(Side::Memories)?);
            rankings.text_entities = Some(side(Side::Entities)?);
            self.dense.timings.add("text", started.elapsed());
        }
        if let Some(q) = inputs.question.filter(|_| on(Channel::Dense)) {
            match self.dense.rank(self.conn, scope, q)? {
                ChannelOutcome::Ran((memories, entities)) => {
                    rankings.dense_memories = memories;
                    rankings.dense_entities = entities;
                }
                ChannelOutcome::Skipped(warning) => warnings.push(warning),
            }
            if let Some(w) = self.dense.take_warning() {
                warnings.push(w);
            }
        }
        Ok(rankings)
    }
}

/// Channel 1, memory side: BM25Plus over live tags plus the implicit self-reference, scored
/// on the memories that share a tag with the inputs and the corpus's totals.
fn bm25(
    scope: &Scope<'_, '_>,
    inputs: &[String],
) -> Result<Vec<(String, Option<f64>)>, SearchError> {
    let matching = scope.sharing_a_tag(inputs)?;
    let docs = matching
        .iter()
        .map(|m| scope.live_tags(m))
        .collect::<Result<Vec<_>, _>>()?;
    let totals = scope.tag_corpus()?;
    Ok(
        crate::bm25::rank_matching(&docs, inputs, totals.docs, totals.tags)
            .into_iter()
            .map(|(i, score)| (matching[i].self_ref.clone(), Some(score)))
            .collect(),
    )
}
