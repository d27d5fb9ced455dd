//! Reciprocal rank fusion (reference §2.10): k = 60, ranks from 1, contributions summed in
//! ranking order; ties keep the order in which keys were first seen across the rankings.

/// One channel's ranking: keys best first, with the channel's raw scores.
#[derive(Debug, Clone)]
pub struct Ranking {
    /// Channel name, for `--explain`.
    pub channel: &'static str,
    /// `(key, raw score)`, best first. Raw scores are `None` where a channel has none.
    pub hits: Vec<(String, Option<f64>)>,
}

/// How one channel placed a key.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Contribution {
    /// Channel name.
    pub channel: &'static str,
    /// 1-based rank.
    pub rank: usize,
    /// The channel's own score, when it has one.
    pub raw_score: Option<f64>,
    /// `1 / (60 + rank)`.
    pub rrf: f64,
}

/// A fused key.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused {
    /// The key.
    pub key: String,
    /// RRF score, or the raw score when a single ranking with raw scores took part.
    pub score: f64,
    /// Per-channel detail.
    pub contributions: Vec<Contribution>,
}

/// The RRF constant.
pub const K: f64 = 60.0;

/// Fuses rankings. Empty rankings take no part. When exactly one ranking takes part and it has
/// raw scores, scores are that channel's raw scores (the seed's "single-channel raw").
pub fn fuse(rankings: &[Ranking]) -> Vec<Fused> {
    let active: Vec<&Ranking> = rankings.iter().filter(|r| !r.hits.is_empty()).collect();
    let mut order: Vec<Fused> = Vec::new();
    let mut index: rustc_hash::FxHashMap<&str, usize> = rustc_hash::FxHashMap::default();
    for ranking in &active {
        for (i, (key, raw)) in ranking.hits.iter().enumerate() {
            let rrf = 1.0 / (K + (i + 1) as f64);
            let slot = *index.entry(key.as_str()).or_insert_with(|| {
                order.push(Fused {
                    key: key.clone(),
                    score: 0.0,
                    contributions: vec![],
                });
                order.len() - 1
            });
            let fused = &mut order[slot];
            fused.score += rrf;
            fused.contributions.push(Contribution {
                channel: ranking.channel,
                rank: i + 1,
                raw_score: *raw,
                rrf,
            });
        }
    }
    if let [only] = active[..] {
        if only.hits.iter().all(|(_, raw)| raw.is_some()) {
            for f in &mut order {
                f.score = f.contributions[0].raw_score.unwrap_or(f.score);
            }
        }
    }
    // A stable sort: equal scores keep first-insertion order.
    order.sort_by(|a, b| b.score.total_cmp(&a.score));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranking(channel: &'static str, keys: &[&str]) -> Ranking {
        Ranking {
            channel,
            hits: keys.iter().map(|k| (k.to_string(), Some(1.0))).collect(),
        }
    }

    #[test]
    fn ties_keep_first_insertion_order() {
        let fused = fuse(&[ranking("a", &["x", "y"]), ranking("b", &["y", "z", "x"])]);
        let keys: Vec<&str> = fused.iter().map(|f| f.key.as_str()).collect();
        // y: 1/62 + 1/61; x: 1/61 + 1/63; z: 1/62.
        assert_eq!(keys, ["y", "x", "z"]);
        let tie = fuse(&[ranking("a", &["p"]), ranking("b", &["q"])]);
        assert_eq!(
            tie.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(),
            ["p", "q"]
        );
        assert!((tie[0].score - 1.0 / 61.0).abs() < 1e-15);
    }

    #[test]
    fn a_single_ranking_keeps_its_raw_scores() {
        let fused = fuse(&[
            Ranking {
                channel: "bm25",
                hits: vec![("m".into(), Some(2.5))],
            },
            ranking("t", &[]),
        ]);
        assert_eq!(fused[0].score, 2.5);
    }
}
