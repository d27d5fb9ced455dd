//! Fusion (docs/spec/fusion.md §8): each ranking that holds a key adds its weighted contribution,
//! summed in ranking order; ties keep the order in which keys were first seen across the
//! rankings. A contribution is reciprocal-rank (`weight / (60 + rank)`) or a normalised score
//! (`weight × raw / best raw of that ranking`).

use crate::channels::ranked::Ranking;
use crate::tuning::{Fusion, Method};

/// How one channel placed a key.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Contribution {
    /// Channel name.
    pub channel: &'static str,
    /// 1-based rank.
    pub rank: usize,
    /// The channel's own score, when it has one.
    pub raw_score: Option<f64>,
    /// What this ranking added to the fused score: `weight / (60 + rank)` (RRF), or
    /// `weight × raw / best raw` (score fusion).
    pub contribution: f64,
}

/// A fused key.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fused {
    /// The key.
    pub key: String,
    /// The fused score, or the raw score when a single ranking with raw scores took part.
    pub score: f64,
    /// Per-channel detail.
    pub contributions: Vec<Contribution>,
}

/// The RRF constant.
pub(crate) const K: f64 = 60.0;

/// The channel name of the share of a fused score a soft negative takes (docs/spec/planner.md
/// §15.6); its `raw_score` is the fraction taken.
pub(crate) const BURIED: &str = "soft negative";

/// Takes a soft negative's fraction of the whole score again after other contributions were
/// added (model evidence): the score becomes the others' sum lowered by the fraction of its
/// size.
pub(crate) fn rebury(f: &mut Fused) {
    let Some(at) = f.contributions.iter().position(|c| c.channel == BURIED) else {
        return;
    };
    let loses = f.contributions[at].raw_score.unwrap_or(0.0);
    let others: f64 = f
        .contributions
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at)
        .map(|(_, c)| c.contribution)
        .sum();
    f.contributions[at].contribution = -loses * others.abs();
    f.score = others - loses * others.abs();
}

impl Fusion {
    /// A ranking's contribution at 0-based position `at` with raw score `raw`.
    fn contribution(&self, ranking: &Partial, at: usize, raw: Option<f64>) -> f64 {
        match self.method {
            Method::Rrf => ranking.weight / (K + (at + 1) as f64),
            Method::Score => match (raw, ranking.best) {
                (Some(raw), Some(best)) if best > 0.0 => ranking.weight * raw / best,
                (Some(_), _) => 0.0,
                (None, _) => ranking.weight,
            },
        }
    }

    /// The most an unread entry of a partly read ranking can add.
    fn unread_bound(&self, ranking: &Partial) -> f64 {
        let next = ranking.top.len();
        match self.method {
            Method::Rrf => ranking.weight / (K + (next + 1) as f64),
            // Scores fall along a ranking: an unread one is at most the last one read.
            Method::Score => match ranking.top.last() {
                Some((_, raw)) => self.contribution(ranking, next - 1, *raw),
                None => ranking.weight,
            },
        }
    }
}

/// What fusion knows of one ranking: its top, its full length, and where some keys beyond
/// the top sit in it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Partial {
    /// Channel name, for `--explain`.
    pub channel: &'static str,
    /// The ranking's first hits, best first.
    pub top: Vec<(String, Option<f64>)>,
    /// How many hits the whole ranking has.
    pub len: usize,
    /// `key → (0-based position, raw score)` for keys beyond `top` that another ranking's top
    /// holds. A key in neither is not in this ranking.
    pub beyond: rustc_hash::FxHashMap<String, (usize, Option<f64>)>,
    /// Whether every hit of the whole ranking has a raw score.
    pub raw_scores: bool,
    /// The channel's weight in this fusion.
    pub weight: f64,
    /// The whole ranking's best raw score (its first hit's), for score fusion.
    pub best: Option<f64>,
}

impl Partial {
    /// A ranking read whole, with its weight.
    pub(crate) fn whole(ranking: &Ranking, weight: f64) -> Partial {
        Partial {
            channel: ranking.channel,
            top: ranking.hits.clone(),
            len: ranking.hits.len(),
            beyond: Default::default(),
            raw_scores: ranking.hits.iter().all(|(_, raw)| raw.is_some()),
            weight,
            best: ranking.hits.first().and_then(|(_, raw)| *raw),
        }
    }
}

/// Fuses rankings of which only the tops are read. Returns the fused keys of every top, in
/// final order, and a bound: every entry scoring above it is exactly where the whole rankings
/// would put it, with its whole score; an entry at or below it may have unseen keys ahead.
///
/// Each key of a top must be in every other ranking's `top` or `beyond` if that ranking has
/// it at all. Ties keep the order in which the whole rankings would first have shown the key:
/// by the first ranking holding it, then its position there.
pub(crate) fn fuse_partial(rankings: &[Partial], fusion: &Fusion) -> (Vec<Fused>, f64) {
    let mut keys: Vec<&str> = Vec::new();
    let mut seen: rustc_hash::FxHashSet<&str> = Default::default();
    for ranking in rankings.iter().filter(|r| r.len > 0) {
        for (key, _) in &ranking.top {
            if seen.insert(key.as_str()) {
                keys.push(key.as_str());
            }
        }
    }
    let fused = fuse_keys(rankings, &keys, fusion);
    // An unseen key sits below every top, so it scores at most one step below each cut-off.
    // One raw-scored ranking is already in final order: its unseen keys all come after.
    let mut partly_read = rankings
        .iter()
        .filter(|r| r.len > 0 && r.top.len() < r.len)
        .peekable();
    let bound = if single_raw(rankings) || partly_read.peek().is_none() {
        f64::NEG_INFINITY
    } else {
        partly_read.map(|r| fusion.unread_bound(r)).sum::<f64>()
    };
    (fused, bound)
}

fn single_raw(rankings: &[Partial]) -> bool {
    let mut active = rankings.iter().filter(|r| r.len > 0);
    matches!((active.next(), active.next()), (Some(only), None) if only.raw_scores)
}

/// The exact fused entries of the given keys (those no ranking holds are left out), in the
/// order the whole fusion would give them. Each key must be in every ranking's `top` or
/// `beyond` that holds it.
pub(crate) fn fuse_keys(rankings: &[Partial], keys: &[&str], fusion: &Fusion) -> Vec<Fused> {
    let active: Vec<&Partial> = rankings.iter().filter(|r| r.len > 0).collect();
    let tops: Vec<rustc_hash::FxHashMap<&str, usize>> = active
        .iter()
        .map(|r| {
            r.top
                .iter()
                .enumerate()
                .map(|(i, (k, _))| (k.as_str(), i))
                .collect()
        })
        .collect();
    let mut order: Vec<(Fused, (usize, usize))> = Vec::with_capacity(keys.len());
    for key in keys {
        let mut fused = Fused {
            key: (*key).to_owned(),
            score: 0.0,
            contributions: vec![],
        };
        let mut first = None;
        for (r, ranking) in active.iter().enumerate() {
            let found = match tops[r].get(key) {
                Some(&i) => Some((i, ranking.top[i].1)),
                None => ranking.beyond.get(*key).copied(),
            };
            let Some((i, raw)) = found else { continue };
            first.get_or_insert((r, i));
            let contribution = fusion.contribution(ranking, i, raw);
            fused.score += contribution;
            fused.contributions.push(Contribution {
                channel: ranking.channel,
                rank: i + 1,
                raw_score: raw,
                contribution,
            });
        }
        if let Some(first) = first {
            order.push((fused, first));
        }
    }
    if single_raw(rankings) {
        for (f, _) in &mut order {
            f.score = f.contributions[0].raw_score.unwrap_or(f.score);
        }
    }
    order.sort_by(|(a, fa), (b, fb)| b.score.total_cmp(&a.score).then(fa.cmp(fb)));
    order.into_iter().map(|(f, _)| f).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::Weights;

    /// Fusion of whole rankings: what `fuse_partial` must agree with above its bound.
    fn fuse(rankings: &[Ranking]) -> Vec<Fused> {
        let partials: Vec<Partial> = rankings.iter().map(|r| Partial::whole(r, 1.0)).collect();
        fuse_partial(&partials, &Fusion::RRF).0
    }

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

    #[test]
    fn a_partial_fusion_agrees_with_the_whole_above_its_bound() {
        // Ranking b is long; only its top 2 are read, and a's keys are located beyond it.
        let a = ranking("a", &["k9", "k1", "x"]);
        let b_keys: Vec<String> = (0..50).map(|i| format!("k{i}")).collect();
        let b = Ranking {
            channel: "b",
            hits: b_keys.iter().map(|k| (k.clone(), Some(1.0))).collect(),
        };
        let whole = fuse(&[a.clone(), b.clone()]);
        let mut part_b = Partial::whole(&b, 1.0);
        part_b.top.truncate(2);
        part_b.beyond.insert("k9".into(), (9, Some(1.0)));
        let (part, bound) = fuse_partial(&[Partial::whole(&a, 1.0), part_b], &Fusion::RRF);
        let final_part: Vec<&Fused> = part.iter().filter(|f| f.score > bound).collect();
        assert!(!final_part.is_empty());
        for (p, w) in final_part.iter().zip(&whole) {
            assert_eq!(*p, w);
        }
    }

    #[test]
    fn score_fusion_normalises_by_each_ranking_s_best_and_weighs_channels() {
        let text = Ranking {
            channel: "fulltext",
            hits: vec![("a".into(), Some(8.0)), ("b".into(), Some(2.0))],
        };
        let dense = Ranking {
            channel: "dense",
            hits: vec![("b".into(), Some(0.5)), ("a".into(), Some(0.25))],
        };
        let fusion = Fusion {
            method: Method::Score,
            weights: Weights {
                dense: 0.5,
                ..Weights::default()
            },
        };
        let partials = [Partial::whole(&text, 1.0), Partial::whole(&dense, 0.5)];
        let (fused, bound) = fuse_partial(&partials, &fusion);
        // a: 8/8 + 0.5 * 0.25/0.5 = 1.25; b: 2/8 + 0.5 * 0.5/0.5 = 0.75.
        assert_eq!(fused[0].key, "a");
        assert!((fused[0].score - 1.25).abs() < 1e-15);
        assert!((fused[1].score - 0.75).abs() < 1e-15);
        assert_eq!(fused[1].contributions[1].contribution, 0.5);
        assert_eq!(bound, f64::NEG_INFINITY, "both read whole");
        // A ranking without raw scores adds its weight; one whose best is not positive, nothing.
        let named = Ranking {
            channel: "named",
            hits: vec![("n".into(), None)],
        };
        let negative = Ranking {
            channel: "dense",
            hits: vec![("n".into(), Some(-0.1))],
        };
        let (fused, _) = fuse_partial(
            &[Partial::whole(&named, 1.0), Partial::whole(&negative, 1.0)],
            &fusion,
        );
        assert_eq!(fused[0].score, 1.0);
    }

    #[test]
    fn a_partial_score_fusion_agrees_with_the_whole_above_its_bound() {
        // Text is long with falling scores; only its top 3 are read, dense's keys located.
        let b_keys: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
        let text = Ranking {
            channel: "fulltext",
            hits: b_keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), Some(40.0 - i as f64)))
                .collect(),
        };
        let dense = Ranking {
            channel: "dense",
            hits: vec![
                ("k30".into(), Some(0.9)),
                ("k1".into(), Some(0.5)),
                ("x".into(), Some(0.4)),
            ],
        };
        let fusion = Fusion {
            method: Method::Score,
            weights: Weights::default(),
        };
        let whole = fuse_partial(
            &[Partial::whole(&text, 1.0), Partial::whole(&dense, 1.0)],
            &fusion,
        )
        .0;
        let mut part_text = Partial::whole(&text, 1.0);
        part_text.top.truncate(3);
        part_text.beyond.insert("k30".into(), (30, Some(10.0)));
        let (part, bound) = fuse_partial(&[part_text, Partial::whole(&dense, 1.0)], &fusion);
        // An unread text hit adds at most 38/40.
        assert!((bound - 38.0 / 40.0).abs() < 1e-15);
        let settled: Vec<&Fused> = part.iter().filter(|f| f.score > bound).collect();
        assert!(settled.len() >= 3, "{part:?}");
        for (p, w) in settled.iter().zip(&whole) {
            assert_eq!(*p, w);
        }
    }

    /// A soft negative lowers a negative score too: by the fraction of its size.
    #[test]
    fn reburying_lowers_negative_scores_too() {
        let mut f = Fused {
            key: "k".into(),
            score: 0.0,
            contributions: vec![
                Contribution {
                    channel: "plan",
                    rank: 1,
                    raw_score: Some(-0.2),
                    contribution: -0.2,
                },
                Contribution {
                    channel: BURIED,
                    rank: 1,
                    raw_score: Some(0.05),
                    contribution: 0.0,
                },
            ],
        };
        rebury(&mut f);
        assert!((f.score - -0.21).abs() < 1e-15, "{f:?}");
        assert!((f.contributions[1].contribution - -0.01).abs() < 1e-15);
    }
}
