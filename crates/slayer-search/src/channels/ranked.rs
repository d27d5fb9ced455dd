//! The dense channel's ranking as fusion reads it: held whole (the planner's rankings, a store
//! of mixed dimensions), or the scores of a sidecar scan, ranked only as deep as it is read
//! (`bucketed`), any key's place found by its row.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use slayer_embed::vectors::{Scored, Sidecar};

use crate::channels::bucketed::Bucketed;
use crate::channels::rank_keys::index_of;

/// One channel's ranking: keys best first, with the channel's raw scores.
#[derive(Debug, Clone)]
pub struct Ranking {
    /// Channel name, for `--explain`.
    pub channel: &'static str,
    /// `(key, raw score)`, best first. Raw scores are `None` where a channel has none.
    pub hits: Vec<(String, Option<f64>)>,
}

/// What a channel that may not run gives: its result, or why it was skipped (the warning).
#[derive(Debug, Clone, PartialEq)]
pub enum ChannelOutcome<T> {
    /// The channel ran.
    Ran(T),
    /// A precondition failed; the search goes on without the channel.
    Skipped(String),
}

/// One side's dense ranking.
pub enum DenseRanking<'d> {
    /// Held whole, best first.
    Listed(Ranking),
    /// A sidecar scan's scores.
    Scanned(Scanned<'d>),
}

/// Scores of the rows one side kept: best score first, equal scores in canonical id order,
/// as a stable sort of the whole would give.
pub struct Scanned<'d> {
    sidecar: &'d Sidecar,
    /// `(score, row)` in row order.
    by_row: Scored,
    /// The ranking (of indexes in `by_row`), sorted as deep as it is read; made on the first
    /// read.
    ranked: OnceLock<Bucketed>,
}

impl<'d> Scanned<'d> {
    /// A side's scores from `sidecar` (a scan gives them in row order; others are sorted).
    pub fn new(sidecar: &'d Sidecar, mut by_row: Scored) -> Scanned<'d> {
        if !by_row.is_sorted_by_key(|(_, row)| *row) {
            by_row.sort_unstable_by_key(|(_, row)| *row);
        }
        Scanned {
            sidecar,
            by_row,
            ranked: OnceLock::new(),
        }
    }

    fn ranked(&self) -> &Bucketed {
        self.ranked.get_or_init(|| Bucketed::new(&self.by_row))
    }

    /// Row order is canonical id order within the base; rows written since (the journal's)
    /// follow it, so a run of equal scores is put in the sidecar's order. Runs are rare and
    /// short: scores are continuous.
    fn tie(&self, a: usize, b: usize) -> std::cmp::Ordering {
        self.sidecar.order(&self.by_row[a], &self.by_row[b])
    }
}

impl<'d> DenseRanking<'d> {
    /// The ranking split into `groups` rankings by each key's group, each in the same order
    /// with the same scores: the tiers' shares of a ranking.
    pub fn split(&self, groups: usize, group_of: impl Fn(&str) -> usize) -> Vec<DenseRanking<'d>> {
        match self {
            DenseRanking::Listed(r) => {
                let mut hits: Vec<Vec<(String, Option<f64>)>> = vec![Vec::new(); groups];
                for hit in &r.hits {
                    hits[group_of(&hit.0)].push(hit.clone());
                }
                hits.into_iter()
                    .map(|hits| {
                        DenseRanking::Listed(Ranking {
                            channel: r.channel,
                            hits,
                        })
                    })
                    .collect()
            }
            DenseRanking::Scanned(s) => {
                let mut by_row: Vec<Scored> = vec![Vec::new(); groups];
                for entry in &s.by_row {
                    by_row[group_of(s.sidecar.id(entry.1))].push(*entry);
                }
                by_row
                    .into_iter()
                    .map(|rows| DenseRanking::Scanned(Scanned::new(s.sidecar, rows)))
                    .collect()
            }
        }
    }

    /// Buckets a scan's scores ahead of the first read (see
    /// [`crate::channels::text_ranking::TextRanking::prepare`]).
    pub fn prepare(&self) {
        if let DenseRanking::Scanned(s) = self {
            s.ranked();
        }
    }

    /// An empty ranking.
    pub fn empty() -> Self {
        DenseRanking::Listed(Ranking {
            channel: "dense",
            hits: Vec::new(),
        })
    }

    /// The channel name fusion reports.
    pub fn channel(&self) -> &'static str {
        match self {
            DenseRanking::Listed(r) => r.channel,
            DenseRanking::Scanned(_) => "dense",
        }
    }

    /// How many keys it ranks.
    pub fn len(&self) -> usize {
        match self {
            DenseRanking::Listed(r) => r.hits.len(),
            DenseRanking::Scanned(s) => s.by_row.len(),
        }
    }

    /// Whether it ranks nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its first `depth` hits, best first.
    pub fn top(&self, depth: usize) -> Vec<(String, Option<f64>)> {
        self.range(0, depth)
    }

    /// Its hits from 0-based place `start` to `end` (cut to its length), best first.
    pub fn range(&self, start: usize, end: usize) -> Vec<(String, Option<f64>)> {
        let end = end.min(self.len());
        let start = start.min(end);
        match self {
            DenseRanking::Listed(r) => r.hits[start..end].to_vec(),
            DenseRanking::Scanned(s) => s
                .ranked()
                .range(start, end, Some(&|a, b| s.tie(a, b)))
                .iter()
                .map(|k| {
                    let (score, row) = s.by_row[index_of(*k)];
                    (s.sidecar.id(row).to_owned(), Some(f64::from(score)))
                })
                .collect(),
        }
    }

    /// Its best raw score.
    pub fn best(&self) -> Option<f64> {
        match self {
            DenseRanking::Listed(r) => r.hits.first().and_then(|(_, raw)| *raw),
            DenseRanking::Scanned(s) if s.ranked.get().is_some() => {
                s.ranked().best().map(f64::from)
            }
            DenseRanking::Scanned(s) => s
                .by_row
                .iter()
                .map(|(score, _)| *score)
                .max_by(f32::total_cmp)
                .map(f64::from),
        }
    }

    /// Where each of `keys` sits (0-based) and its raw score; keys it does not rank are left
    /// out.
    pub fn places<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> FxHashMap<String, (usize, Option<f64>)> {
        match self {
            DenseRanking::Listed(r) => {
                let wanted: rustc_hash::FxHashSet<&str> = keys.into_iter().collect();
                r.hits
                    .iter()
                    .enumerate()
                    .filter(|(_, (k, _))| wanted.contains(k.as_str()))
                    .map(|(i, (k, raw))| (k.clone(), (i, *raw)))
                    .collect()
            }
            DenseRanking::Scanned(s) => s.places_of(keys),
        }
    }
}

impl Scanned<'_> {
    fn places_of<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> FxHashMap<String, (usize, Option<f64>)> {
        let mut out = FxHashMap::default();
        for key in keys {
            let Some(row) = self.sidecar.row_of(key) else {
                continue;
            };
            let Ok(i) = self.by_row.binary_search_by_key(&row, |(_, r)| *r) else {
                continue;
            };
            let score = self.by_row[i].0;
            let place = self.ranked().place(i, score, Some(&|a, b| self.tie(a, b)));
            out.insert(key.to_owned(), (place, Some(f64::from(self.by_row[i].0))));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fusion::deepening::Deepening;
    use crate::fusion::fuse::Fused;
    use crate::tuning::{Fusion, Method, Weights};
    use slayer_common::store::{docs, OpenMode, Store, StoreWrite};

    /// 600 entity rows whose vectors repeat in runs (so scores tie), under one model.
    fn sidecar(dir: &std::path::Path) -> Sidecar {
        sidecar_followed(dir, 0)
    }

    /// [`sidecar`], with every `rewritten`th row written again (the same vector) after the
    /// sidecar was built, so those rows follow the base out of id order (0: none).
    fn sidecar_followed(dir: &std::path::Path, rewritten: usize) -> Sidecar {
        let mut store = Store::open(&dir.join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let vector = |i: usize| {
            let j = (i / 3) as f32;
            [j.sin(), j.cos(), (j * 0.37).sin(), 0.5]
        };
        let tx = store.write().unwrap();
        for i in 0..600 {
            let id = format!("db.m{:03}", (i * 37) % 600);
            let stored = docs::StoredDoc::placeholder(&id, "model", Some("db"));
            tx.upsert_doc(&stored).unwrap();
            tx.put_embedding(&id, "local/test", "r", "h", &vector(i), "t")
                .unwrap();
        }
        tx.commit().unwrap();
        let built = Sidecar::open(&store, &store.vectors_dir(), "local/test", "r")
            .unwrap()
            .unwrap();
        if rewritten == 0 {
            return built;
        }
        let tx = store.write().unwrap();
        for i in (0..600).step_by(rewritten) {
            let id = format!("db.m{:03}", (i * 37) % 600);
            tx.put_embedding(&id, "local/test", "r", "h2", &vector(i), "t")
                .unwrap();
        }
        tx.commit().unwrap();
        let followed = Sidecar::open(&store, &store.vectors_dir(), "local/test", "r")
            .unwrap()
            .unwrap();
        assert!(!followed.rebuilt && followed.journaled() > 0);
        followed
    }

    /// The same scores sorted whole: what a lazy read must agree with.
    fn whole(sidecar: &Sidecar, scores: &Scored) -> Ranking {
        let mut sorted = scores.clone();
        sorted.sort_by(|a, b| sidecar.order(a, b));
        Ranking {
            channel: "dense",
            hits: sorted
                .iter()
                .map(|(s, r)| (sidecar.id(*r).to_owned(), Some(f64::from(*s))))
                .collect(),
        }
    }

    #[test]
    fn a_scan_read_in_steps_is_the_whole_sort() {
        for rewritten in [0, 7] {
            let dir = tempfile::tempdir().unwrap();
            read_in_steps(&sidecar_followed(dir.path(), rewritten));
        }
    }

    fn read_in_steps(sidecar: &Sidecar) {
        let (_, entities) = sidecar.scan(&[0.6, 0.0, 0.8, 0.0], None, None);
        let listed = DenseRanking::Listed(whole(sidecar, &entities));
        let scanned = DenseRanking::Scanned(Scanned::new(sidecar, entities));
        assert_eq!(scanned.len(), 600);
        assert_eq!(scanned.best(), listed.best());
        let keys: Vec<String> = (0..600).map(|i| format!("db.m{i:03}")).collect();
        // Places first (nothing sorted yet), then tops in growing steps, then places again.
        let some: Vec<&str> = keys.iter().step_by(7).map(String::as_str).collect();
        assert_eq!(scanned.places(some.iter().copied()), listed.places(some));
        for depth in [1, 2, 5, 64, 65, 256, 600, 700] {
            assert_eq!(scanned.top(depth), listed.top(depth), "depth {depth}");
        }
        let all = keys.iter().map(String::as_str);
        assert_eq!(scanned.places(all.clone()), listed.places(all));
        assert!(scanned.places(["db.nope"]).is_empty());
    }

    /// Bounded fusion over a scanned dense ranking gives the prefix of whole fusion for every
    /// cap, for both fusion methods.
    #[test]
    fn capped_fusion_over_a_scan_equals_a_prefix_of_the_whole_read() {
        let dir = tempfile::tempdir().unwrap();
        let sidecar = sidecar(dir.path());
        let (_, entities) = sidecar.scan(&[0.0, 0.6, 0.0, 0.8], None, None);
        let whole_dense = whole(&sidecar, &entities);
        let scanned = DenseRanking::Scanned(Scanned::new(&sidecar, entities));
        let channel1 = Ranking {
            channel: "named",
            hits: (0..40)
                .map(|i| (format!("db.m{:03}", (i * 113 + 7) % 650), None))
                .collect(),
        };
        for method in [Method::Rrf, Method::Score] {
            let fusion = Fusion {
                method,
                weights: Weights {
                    dense: 0.5,
                    ..Weights::ONE
                },
            };
            let listed = DenseRanking::Listed(whole_dense.clone());
            for cap in [1, 3, 10, 50, 200, 600, 640] {
                let fill = |dense: &DenseRanking| -> Vec<Fused> {
                    let mut d = Deepening::new(&channel1, None, dense, 4, fusion).unwrap();
                    d.fill(|settled| {
                        let taken: Vec<Fused> = settled.into_iter().take(cap).collect();
                        let full = taken.len() == cap;
                        Ok((taken, full))
                    })
                    .unwrap()
                };
                let mut whole_read =
                    Deepening::new(&channel1, None, &listed, 100_000, fusion).unwrap();
                let everything = whole_read.fill(|settled| Ok((settled, true))).unwrap();
                let want = &everything[..cap.min(everything.len())];
                assert_eq!(fill(&scanned), want, "{method:?} cap {cap}");
            }
        }
    }
}
