//! Reciprocal rank fusion (docs/spec.md §8): k = 60, ranks from 1, contributions summed in
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

/// What fusion knows of one ranking: its top, its full length, and where some keys beyond
/// the top sit in it.
#[derive(Debug, Clone, Default)]
pub struct Partial {
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
}

impl Partial {
    /// A ranking read whole.
    pub fn whole(ranking: &Ranking) -> Partial {
        Partial {
            channel: ranking.channel,
            top: ranking.hits.clone(),
            len: ranking.hits.len(),
            beyond: Default::default(),
            raw_scores: ranking.hits.iter().all(|(_, raw)| raw.is_some()),
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
pub fn fuse_partial(rankings: &[Partial]) -> (Vec<Fused>, f64) {
    let mut keys: Vec<&str> = Vec::new();
    let mut seen: rustc_hash::FxHashSet<&str> = Default::default();
    for ranking in rankings.iter().filter(|r| r.len > 0) {
        for (key, _) in &ranking.top {
            if seen.insert(key.as_str()) {
                keys.push(key.as_str());
            }
        }
    }
    let fused = fuse_keys(rankings, &keys);
    // An unseen key sits below every top, so it scores at most one step below each cut-off.
    // One raw-scored ranking is already in final order: its unseen keys all come after.
    let bound = if single_raw(rankings) {
        f64::NEG_INFINITY
    } else {
        rankings
            .iter()
            .filter(|r| r.len > 0 && r.top.len() < r.len)
            .map(|r| 1.0 / (K + (r.top.len() + 1) as f64))
            .sum::<f64>()
    };
    let bound = if bound == 0.0 {
        f64::NEG_INFINITY
    } else {
        bound
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
pub fn fuse_keys(rankings: &[Partial], keys: &[&str]) -> Vec<Fused> {
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
            let rrf = 1.0 / (K + (i + 1) as f64);
            fused.score += rrf;
            fused.contributions.push(Contribution {
                channel: ranking.channel,
                rank: i + 1,
                raw_score: raw,
                rrf,
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

    /// Fusion of whole rankings: what `fuse_partial` must agree with above its bound.
    fn fuse(rankings: &[Ranking]) -> Vec<Fused> {
        let partials: Vec<Partial> = rankings.iter().map(Partial::whole).collect();
        fuse_partial(&partials).0
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
        let mut part_b = Partial::whole(&b);
        part_b.top.truncate(2);
        part_b.beyond.insert("k9".into(), (9, Some(1.0)));
        let (part, bound) = fuse_partial(&[Partial::whole(&a), part_b]);
        let final_part: Vec<&Fused> = part.iter().filter(|f| f.score > bound).collect();
        assert!(!final_part.is_empty());
        for (p, w) in final_part.iter().zip(&whole) {
            assert_eq!(*p, w);
        }
    }
}
