//! Stage 3, run channels: each channel the request turns on ranks both sides (memories,
//! entities). Channel 1 is BM25 over memory tags plus the named refs, channel 2 the full-text
//! index, channel 3 dense similarity; a channel turned off is neither run nor warned about.

pub(crate) mod beside;
pub(crate) mod bm25;
pub(crate) mod bucketed;
pub(crate) mod dense;
pub(crate) mod doc_ids;
pub(crate) mod exhaustive;
pub(crate) mod lexical;
pub(crate) mod rank_keys;
pub(crate) mod ranked;
pub(crate) mod text_ranking;

use slayer_common::limits::Limits;
use slayer_common::store::StoreRead;

use crate::channels::beside::Source;
use crate::corpus::Scope;
use crate::inputs::Inputs;
use crate::output::warnings::Warnings;
use crate::request::{Channel, Request};
use crate::timings::Timings;
use crate::SearchError;
use dense::Dense;
use lexical::{TextIndex, TextRanking};
use ranked::{ChannelOutcome, DenseRanking, Ranking};

/// Every ranking of one request, per channel and side. A channel that did not run has empty
/// rankings (the text channel: none).
pub(crate) struct Rankings<'s> {
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

impl Rankings<'_> {
    /// Whether the question ranked any entity: model-level evidence reads what it matched,
    /// and named refs alone stay as named.
    pub(crate) fn question_ranked_entities(&self) -> bool {
        self.text_entities.as_ref().is_some_and(|t| !t.is_empty())
            || !self.dense_entities.is_empty()
    }
}

fn ranking(channel: &'static str, hits: Vec<(String, Option<f64>)>) -> Ranking {
    Ranking { channel, hits }
}

/// What the channels read besides the request: the store, the full-text index, the dense
/// channel, the limits and the stage clock.
pub(crate) struct ChannelSources<'c> {
    /// The store connection (channel 3 reads embedding rows through it).
    pub conn: &'c dyn StoreRead,
    /// Channel 2's index.
    pub text: &'c TextIndex,
    /// Channel 3.
    pub dense: &'c Dense,
    /// `question_terms` caps channel 2's terms.
    pub limits: &'c Limits,
    /// Where channel 2's time goes.
    pub timings: &'c Timings,
}

/// Stage 4: runs the channels the request turns on; `named` is the entity side of channel 1.
pub(crate) fn run<'c>(
    sources: &ChannelSources<'c>,
    req: &Request,
    inputs: &Inputs<'_>,
    named: Vec<String>,
    scope: &Scope<'_, '_>,
    warnings: &mut Warnings,
) -> Result<Rankings<'c>, SearchError> {
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
        let (fulltext, searcher) = sources.text.get(sources.conn)?;
        let max_terms = sources.limits.question_terms;
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
        let doc_ids = sources.text.doc_ids(searcher)?;
        let sides = || {
            lexical::rank_sides(fulltext, searcher, &terms.terms, ds, admission, name_weight).map(
                |(memories, entities)| {
                    (
                        memories.with_doc_ids(doc_ids.clone()),
                        entities.with_doc_ids(doc_ids.clone()),
                    )
                },
            )
        };
        let text_channel = || {
            let started = std::time::Instant::now();
            let ranked = sides();
            sources.timings.add("text", started.elapsed());
            ranked
        };
        // The question is embedded for channel 3 on another thread meanwhile (the model loaded
        // there first on a process's first question): the text channel runs on one core.
        let pending = on(Channel::Dense)
            .then(|| sources.dense.pending_question(q))
            .flatten();
        // The sidecar is scanned as soon as the question is embedded, while the text channel
        // runs here; this thread takes up parts of the scan when it is done.
        let early = match pending {
            Some(_) => sources.dense.early_scan(sources.conn, scope)?,
            None => None,
        };
        // A model not loaded yet is loaded beside only where the channel will scan: a store
        // without vectors, or one the channel would skip, never loads it.
        let pending = pending.filter(|p| matches!(p, Source::Loaded(_)) || early.is_some());
        let ranked = match pending {
            Some(source) => {
                let scan =
                    |embedding: &Result<Vec<f32>, _>| early.as_ref().and_then(|e| e.run(embedding));
                let asking = sources.dense.asking();
                let beside = beside::embed_beside(source, asking, q, scan, || {
                    let ranked = text_channel();
                    // Bucket the matches meanwhile, as fusion would first thing.
                    if let Ok((memories, entities)) = &ranked {
                        memories.prepare();
                        entities.prepare();
                    }
                    ranked
                });
                if let Some(loaded) = beside.loaded {
                    sources.dense.adopt_embedder(loaded);
                }
                if let Some((embedding, took)) = beside.embedded {
                    sources.dense.remember_question(q, embedding, took);
                }
                // Channel 3 runs next and takes it (not after a failed text channel).
                if let (Ok(_), Some((scanned, took))) = (&beside.worked, beside.after.flatten()) {
                    sources.dense.scanned_early(q, scanned, took);
                }
                beside.worked
            }
            None => text_channel(),
        };
        let (memories, entities) = ranked?;
        rankings.text_memories = Some(memories);
        rankings.text_entities = Some(entities);
    }
    if let Some(q) = inputs.question.filter(|_| on(Channel::Dense)) {
        match sources.dense.rank(sources.conn, scope, q)? {
            ChannelOutcome::Ran((memories, entities)) => {
                rankings.dense_memories = memories;
                rankings.dense_entities = entities;
            }
            ChannelOutcome::Skipped(warning) => warnings.push(warning),
        }
        if let Some(w) = sources.dense.take_warning() {
            warnings.push(w);
        }
    }
    Ok(rankings)
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
    Ok(bm25::rank_matching(&docs, inputs, totals.docs, totals.tags)
        .into_iter()
        .map(|(i, score)| (matching[i].self_ref.clone(), Some(score)))
        .collect())
}
