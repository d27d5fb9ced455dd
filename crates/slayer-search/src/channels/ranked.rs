//! The dense channel's ranking as fusion reads it: held whole (the planner's rankings, a store
//! of mixed dimensions), or the scores of a sidecar scan sorted only as deep as fusion reads,
//! with the place of any other key found by counting, not by sorting everything.

use std::cell::RefCell;

use rustc_hash::FxHashMap;
use slayer_embed::vectors::{Scored, Sidecar};

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

/// Scores of the rows one side kept, ranked lazily: best score first, equal scores in row
/// (canonical id) order, as a stable sort of the whole would give.
pub struct Scanned<'d> {
    sidecar: &'d Sidecar,
    /// `(score, row)` in row order.
    by_row: Scored,
    /// The same entries, its first `sorted` in final order, the rest partitioned below them.
    order: RefCell<Vec<(f32, u32)>>,
    sorted: RefCell<usize>,
    /// Places already counted: key → (0-based position, score).
    places: RefCell<FxHashMap<String, Option<(usize, f64)>>>,
    /// Counting passes made: past the first, the whole is sorted once and places are read.
    passes: std::cell::Cell<u32>,
    /// Row → 0-based position (`u32::MAX`: not ranked here), once the whole is sorted.
    positions: std::cell::OnceCell<Vec<u32>>,
}

impl<'d> Scanned<'d> {
    /// A side's scores (in row order) from `sidecar`.
    pub fn new(sidecar: &'d Sidecar, by_row: Scored) -> Scanned<'d> {
        Scanned {
            sidecar,
            order: RefCell::new(by_row.clone()),
            by_row,
            sorted: RefCell::new(0),
            places: RefCell::default(),
            passes: Default::default(),
            positions: Default::default(),
        }
    }

    /// Sorts the first `depth` entries into final order (selecting them first, so the rest
    /// is never sorted).
    fn sort_to(&self, depth: usize) {
        let depth = depth.min(self.by_row.len());
        if *self.sorted.borrow() >= depth {
            return;
        }
        let mut order = self.order.borrow_mut();
        if depth < order.len() {
            order.select_nth_unstable_by(depth - 1, |a, b| self.sidecar.order(a, b));
        }
        order[..depth].sort_unstable_by(|a, b| self.sidecar.order(a, b));
        *self.sorted.borrow_mut() = depth;
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
        match self {
            DenseRanking::Listed(r) => r.hits[..depth.min(r.hits.len())].to_vec(),
            DenseRanking::Scanned(s) => {
                s.sort_to(depth);
                let order = s.order.borrow();
                order[..depth.min(order.len())]
                    .iter()
                    .map(|(score, row)| (s.sidecar.id(*row).to_owned(), Some(f64::from(*score))))
                    .collect()
            }
        }
    }

    /// Its best raw score.
    pub fn best(&self) -> Option<f64> {
        self.top(1).first().and_then(|(_, raw)| *raw)
    }

    /// Where each of `keys` sits (0-based) and its raw score; keys it does not rank are left
    /// out. Places past the sorted top are counted in one pass over the scores.
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
            DenseRanking::Scanned(s) => s.places(keys),
        }
    }
}

/// A score as an integer that orders as `f32::total_cmp` does.
pub(crate) fn score_key(score: f32) -> u32 {
    let bits = score.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | (1 << 31)
    }
}

/// The score a [`score_key`] was made from.
pub(crate) fn score_of_key(key: u32) -> f32 {
    f32::from_bits(if key >> 31 == 1 {
        key & !(1 << 31)
    } else {
        !key
    })
}

impl Scanned<'_> {
    fn places<'k>(
        &self,
        keys: impl IntoIterator<Item = &'k str>,
    ) -> FxHashMap<String, (usize, Option<f64>)> {
        let keys: Vec<&str> = keys.into_iter().collect();
        let mut places = self.places.borrow_mut();
        // Keys not placed yet that this side ranks: (entry, key).
        let mut targets: Vec<((f32, u32), &str)> = Vec::new();
        for key in &keys {
            if places.contains_key(*key) {
                continue;
            }
            let entry = self.sidecar.row_of(key).and_then(|row| {
                self.by_row
                    .binary_search_by_key(&row, |e| e.1)
                    .ok()
                    .map(|at| self.by_row[at])
            });
            match entry {
                Some(entry) => targets.push((entry, key)),
                None => {
                    places.insert((*key).to_owned(), None);
                }
            }
        }
        if !targets.is_empty() && self.passes.get() > 0 {
            // Fusion asks again and again as it reads deeper: one sort of the whole costs
            // less than a counting pass per question.
            let positions = self.positions.get_or_init(|| {
                self.sort_to(self.by_row.len());
                let order = self.order.borrow();
                let mut positions = vec![u32::MAX; self.sidecar.len()];
                for (at, (_, row)) in order.iter().enumerate() {
                    if let Some(slot) = positions.get_mut(*row as usize) {
                        *slot = at as u32;
                    }
                }
                positions
            });
            for (entry, key) in &targets {
                let at = positions
                    .get(entry.1 as usize)
                    .filter(|at| **at != u32::MAX);
                places.insert(
                    (*key).to_owned(),
                    at.map(|at| (*at as usize, f64::from(entry.0))),
                );
            }
            targets.clear();
        }
        if !targets.is_empty() {
            self.passes.set(self.passes.get() + 1);
            let before = |a: &(f32, u32), b: &(f32, u32)| self.sidecar.order(a, b);
            targets.sort_unstable_by(|a, b| before(&a.0, &b.0));
            // ahead[i]: entries ranked before target i but not before target i-1.
            let mut ahead = vec![0usize; targets.len()];
            let last = targets[targets.len() - 1].0;
            // Scores as integers in the order `total_cmp` gives them: one integer compare per
            // entry, the full order (ties by id) only where scores are equal.
            let target_keys: Vec<u32> = targets.iter().map(|(t, _)| score_key(t.0)).collect();
            let last_key = score_key(last.0);
            for entry in &self.by_row {
                let key = score_key(entry.0);
                if key < last_key
                    || (key == last_key && before(entry, &last) != std::cmp::Ordering::Less)
                {
                    continue;
                }
                // The first target this entry is ranked before: past those of higher score
                // and those of equal score ranked before it (or it).
                let mut i = target_keys.partition_point(|t| *t > key);
                while i < targets.len()
                    && target_keys[i] == key
                    && before(&targets[i].0, entry) != std::cmp::Ordering::Greater
                {
                    i += 1;
                }
                if i < ahead.len() {
                    ahead[i] += 1;
                }
            }
            let mut position = 0;
            for (i, (entry, key)) in targets.iter().enumerate() {
                position += ahead[i];
                places.insert((*key).to_owned(), Some((position, f64::from(entry.0))));
            }
        }
        keys.iter()
            .filter_map(|k| {
                places
                    .get(*k)
                    .copied()
                    .flatten()
                    .map(|(at, raw)| ((*k).to_owned(), (at, Some(raw))))
            })
            .collect()
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
    fn score_keys_order_as_total_cmp_and_give_the_score_back() {
        let scores = [
            f32::NEG_INFINITY,
            -3.5,
            -1e-30,
            -0.0,
            0.0,
            1e-30,
            0.25,
            7.0,
            f32::INFINITY,
        ];
        for a in scores {
            assert_eq!(score_of_key(score_key(a)).to_bits(), a.to_bits());
            for b in scores {
                assert_eq!(score_key(a).cmp(&score_key(b)), a.total_cmp(&b), "{a} {b}");
            }
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
