//! Ranking memories by tier (docs/spec/search.md §9.11): each tier's share of every channel
//! is fused on its own and brings at most `cap` candidates; the candidates of all tiers are
//! merged by their fused score × their tier's factor ([`TierConfig::factor`]: weight, boost,
//! strength, confidence).
//!
//! A tier's share keeps the scores the whole channel gave it (the statistics are the request's
//! scope's, shared by its tiers) and score fusion normalises it by the whole channel's best, so
//! one tier's scores compare with another's. A scope whose memories are all plain lessons
//! never comes here: its ranking is the one fusion of [`crate::fusion::buckets`].

use rustc_hash::FxHashMap;
use slayer_common::canonical::{memory_id_of, memory_ref};
use slayer_common::records::{Standing, Tier};

use crate::channels::lexical::TextRanking;
use crate::channels::ranked::Ranking;
use crate::channels::Rankings;
use crate::corpus::Scope;
use crate::fusion::deepening::{Deepening, FIRST_DEPTH};
use crate::fusion::fuse::{Contribution, Fused};
use crate::plan::run::Buried;
use crate::scoping::TierConfig;
use crate::tuning::Fusion;
use crate::SearchError;
use tantivy::DocAddress;

/// Every tier's candidates, merged: best first; equal scores by tier order, then by place in
/// the tier.
pub(crate) fn fuse_by_tier(
    rankings: &Rankings<'_>,
    scope: &Scope<'_, '_>,
    fusion: Fusion,
    config: &TierConfig,
    buried: &Buried,
) -> Result<Vec<Fused>, SearchError> {
    let marked = scope.marked()?;
    let group = |key: &str| -> usize {
        memory_id_of(key)
            .and_then(|id| marked.get(id))
            .map_or(Tier::Lesson, |s| s.tier) as usize
    };
    let groups = Tier::ALL.len();
    let bm25 = split_ranking(&rankings.bm25, groups, group);
    let text: Vec<Option<TextRanking<'_>>> = match &rankings.text_memories {
        Some(text) => {
            let lesson = Tier::Lesson as usize;
            let others = marked.values().filter(|s| s.tier != Tier::Lesson).count();
            let shares = if others < text.len() {
                // Few memories of other tiers: find where they sit.
                let keys: Vec<String> = marked
                    .iter()
                    .filter(|(_, s)| s.tier != Tier::Lesson)
                    .map(|(id, _)| memory_ref(id))
                    .collect();
                let placed: FxHashMap<DocAddress, usize> = text
                    .addresses(keys.iter().map(String::as_str))?
                    .into_iter()
                    .map(|(key, at)| (at, group(&key)))
                    .collect();
                text.split(groups, |at| placed.get(&at).copied().unwrap_or(lesson))
            } else {
                // Many: read every hit's id once (a fast field) instead.
                let by_address: FxHashMap<DocAddress, usize> = text
                    .ids()?
                    .into_iter()
                    .map(|(at, key)| (at, group(&key)))
                    .collect();
                text.split(groups, |at| by_address.get(&at).copied().unwrap_or(lesson))
            };
            shares.into_iter().map(Some).collect()
        }
        None => (0..groups).map(|_| None).collect(),
    };
    let dense = rankings.dense_memories.split(groups, group);
    let bests = [
        rankings.bm25.hits.first().and_then(|(_, raw)| *raw),
        rankings
            .text_memories
            .as_ref()
            .filter(|t| !t.is_empty())
            .and_then(|t| t.best()),
        rankings.dense_memories.best(),
    ];
    let mut merged: Vec<(f64, usize, usize, Fused)> = Vec::new();
    for (tier, ((bm25, text), dense)) in bm25.iter().zip(&text).zip(&dense).enumerate() {
        let empty = bm25.hits.is_empty() && dense.is_empty();
        if empty && text.as_ref().is_none_or(|t| t.is_empty()) {
            continue;
        }
        let mut share = Deepening::new(bm25, text.as_ref(), dense, FIRST_DEPTH, fusion)?
            .normalised_by(bests)
            .burying(buried);
        let top = share.fill(|settled| {
            let top: Vec<Fused> = settled.into_iter().take(config.cap).collect();
            let full = top.len() >= config.cap;
            Ok((top, full))
        })?;
        for (place, mut fused) in top.into_iter().enumerate() {
            let standing = memory_id_of(&fused.key)
                .and_then(|id| marked.get(id))
                .cloned()
                .unwrap_or_else(Standing::default);
            let factor = config.factor(&standing);
            let weighed = fused.score * factor;
            fused.contributions.push(Contribution {
                channel: "tier",
                rank: place + 1,
                raw_score: Some(factor),
                contribution: weighed - fused.score,
            });
            fused.score = weighed;
            merged.push((weighed, tier, place, fused));
        }
    }
    merged.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    Ok(merged.into_iter().map(|(_, _, _, f)| f).collect())
}

fn split_ranking(ranking: &Ranking, groups: usize, group: impl Fn(&str) -> usize) -> Vec<Ranking> {
    let mut out: Vec<Ranking> = (0..groups)
        .map(|_| Ranking {
            channel: ranking.channel,
            hits: Vec::new(),
        })
        .collect();
    for hit in &ranking.hits {
        out[group(&hit.0)].hits.push(hit.clone());
    }
    out
}
