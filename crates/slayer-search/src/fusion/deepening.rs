//! Fusion that reads the text and dense rankings only as deep as the buckets need.
//!
//! Channel 1's ranking is read whole (it is small). The text ranking (every full-text match)
//! and the dense ranking (every stored row, already scored in memory) are read to a depth; the
//! keys of each read top are located in the other rankings, so every fused entry above the
//! bound is final. Locating a key in the text ranking is an index lookup, in the dense ranking
//! a hash lookup: neither grows with the rankings' length.

use rustc_hash::{FxHashMap, FxHashSet};

use crate::channels::lexical::TextRanking;
use crate::channels::ranked::{DenseRanking, Ranking};
use crate::channels::Rankings;
use crate::fusion::fuse::{fuse_keys, fuse_partial, Contribution, Fused, Partial, BURIED};
use crate::plan::run::Buried;
use crate::tuning::Fusion;
use crate::SearchError;

/// How deep the text and dense rankings are read at first, and how much deeper each time
/// fusion cannot yet vouch for enough entries.
pub(crate) const FIRST_DEPTH: usize = 64;
/// The growth factor of the depth.
pub(crate) const DEEPER: usize = 2;
/// How long both rankings must be before they are ranked on two cores at once.
const PARALLEL_PREPARE: usize = 16_384;

/// One side's three rankings, the text and dense ones read only as deep as the buckets need.
/// Fusion order (and so tie order) is channel 1 (BM25 for memories, the named refs for
/// entities), text, dense.
pub(crate) struct Deepening<'t, 's> {
    channel1: Partial,
    text: Option<&'t TextRanking<'s>>,
    dense: &'t DenseRanking<'s>,
    /// Where keys of channel 1 and of the dense top sit in the text ranking.
    located: FxHashMap<String, (usize, f64)>,
    /// The keys already looked up in the text ranking (found or not).
    asked: FxHashSet<String>,
    /// Where keys of channel 1 and of the text top sit in the dense ranking, and the keys
    /// already looked up there.
    placed: FxHashMap<String, (usize, Option<f64>)>,
    placed_asked: FxHashSet<String>,
    depth: usize,
    /// The dense and text rankings' tops read so far (to `depth`): a deeper read decodes only
    /// the ids it adds.
    dense_top: Vec<(String, Option<f64>)>,
    text_top: Vec<(String, Option<f64>)>,
    fusion: Fusion,
    /// Score fusion's best raw score per ranking (channel 1, text, dense), when it is not the
    /// ranking's own: a tier's share of a ranking is normalised by the whole ranking's best,
    /// so tiers' scores stay comparable.
    bests: Option<[Option<f64>; 3]>,
    /// Keys a soft negative buries: the fraction of its fused score each loses.
    buried: Option<&'t Buried>,
}

impl<'t, 's> Deepening<'t, 's> {
    /// The memory side's fusion of a request's rankings, reading the text ranking from
    /// `depth`.
    pub(crate) fn memories(
        rankings: &'t Rankings<'s>,
        depth: usize,
        fusion: Fusion,
    ) -> Result<Self, SearchError> {
        Deepening::new(
            &rankings.bm25,
            rankings.text_memories.as_ref(),
            &rankings.dense_memories,
            depth,
            fusion,
        )
    }

    /// The entity side's fusion, reading the text ranking from `depth`.
    pub(crate) fn entities(
        rankings: &'t Rankings<'s>,
        depth: usize,
        fusion: Fusion,
    ) -> Result<Self, SearchError> {
        Deepening::new(
            &rankings.named,
            rankings.text_entities.as_ref(),
            &rankings.dense_entities,
            depth,
            fusion,
        )
    }

    /// Starts at `depth`. `text` is `None` when the text channel did not run.
    pub(crate) fn new(
        channel1: &Ranking,
        text: Option<&'t TextRanking<'s>>,
        dense: &'t DenseRanking<'s>,
        depth: usize,
        fusion: Fusion,
    ) -> Result<Self, SearchError> {
        // Both long rankings are bucketed by score on their first read: on two cores at once
        // when both are long (handing work to the pool and waiting for it costs more than
        // bucketing a few thousand scores, and a served search bucketed the text matches
        // already).
        match text {
            Some(text)
                if !text.is_prepared() && text.len().min(dense.len()) >= PARALLEL_PREPARE =>
            {
                rayon::join(|| text.prepare(), || dense.prepare());
            }
            Some(text) => {
                text.prepare();
                dense.prepare();
            }
            None => {}
        }
        let mut d = Deepening {
            channel1: Partial::whole(channel1, fusion.weights.entities),
            text,
            dense,
            located: Default::default(),
            asked: Default::default(),
            placed: Default::default(),
            placed_asked: Default::default(),
            depth,
            dense_top: Vec::new(),
            text_top: Vec::new(),
            fusion,
            bests: None,
            buried: None,
        };
        d.read_to_depth()?;
        d.locate_if_needed()?;
        d.place_in_dense();
        Ok(d)
    }

    /// Normalises score fusion by these best raw scores (channel 1, text, dense) instead of
    /// each ranking's own.
    pub(crate) fn normalised_by(mut self, bests: [Option<f64>; 3]) -> Self {
        if let Some(c1) = bests[0] {
            self.channel1.best = Some(c1);
        }
        self.bests = Some(bests);
        self
    }

    /// Lowers the fused score of each key `buried` names by its fraction (a soft negative's
    /// penalty, docs/spec/planner.md §15), so it falls below comparable clean keys in the final
    /// list and not only in the planner's pass. Scores only fall, so every unread key's bound
    /// holds.
    pub(crate) fn burying(mut self, buried: &'t Buried) -> Self {
        self.buried = Some(buried).filter(|b| !b.is_empty());
        self
    }

    /// `fused` with the buried keys' scores lowered, in order again (a stable sort keeps the
    /// order of equal scores).
    fn bury(&self, mut fused: Vec<Fused>) -> Vec<Fused> {
        let Some(buried) = self.buried else {
            return fused;
        };
        let mut moved = false;
        for f in &mut fused {
            if let Some(&loses) = buried.get(&f.key) {
                // The share is of the contributions' sum (what model evidence adds to); the
                // score may be a single ranking's raw score, lowered by the same fraction.
                // Lowered by the fraction of its size, so a negative score falls too.
                let sum: f64 = f.contributions.iter().map(|c| c.contribution).sum();
                f.contributions.push(Contribution {
                    channel: BURIED,
                    rank: 1,
                    raw_score: Some(loses),
                    contribution: -loses * sum.abs(),
                });
                f.score -= loses * f.score.abs();
                moved = true;
            }
        }
        if moved {
            fused.sort_by(|a, b| b.score.total_cmp(&a.score));
        }
        fused
    }

    fn best(&self, ranking: usize, own: Option<f64>) -> Option<f64> {
        self.bests.and_then(|b| b[ranking]).or(own)
    }

    /// Extends the read tops to `depth`.
    fn read_to_depth(&mut self) -> Result<(), SearchError> {
        let read = self.dense_top.len();
        if read < self.depth {
            self.dense_top.extend(self.dense.range(read, self.depth));
        }
        if let Some(text) = self.text {
            let read = self.text_top.len();
            if read < self.depth {
                self.text_top.extend(text.range(read, self.depth)?);
            }
        }
        Ok(())
    }

    /// Looks up, in the text ranking, the keys of channel 1 and of the dense top not looked
    /// up yet; only while the text ranking is longer than its read top.
    fn locate_if_needed(&mut self) -> Result<(), SearchError> {
        let Some(text) = self.text else {
            return Ok(());
        };
        if text.len() <= self.depth {
            return Ok(());
        }
        let new: Vec<&str> = self
            .channel1
            .top
            .iter()
            .chain(&self.dense_top)
            .map(|(k, _)| k.as_str())
            .filter(|k| !self.asked.contains(*k))
            .collect();
        if new.is_empty() {
            return Ok(());
        }
        self.located.extend(text.locate(new.iter().copied())?);
        self.asked.extend(new.into_iter().map(str::to_owned));
        Ok(())
    }

    /// Looks up, in the dense ranking, the keys of channel 1 and of the text top not looked up
    /// yet; only while the dense ranking is longer than its read top.
    fn place_in_dense(&mut self) {
        if self.dense.len() <= self.dense_top.len() {
            return;
        }
        let new: Vec<&str> = self
            .channel1
            .top
            .iter()
            .chain(&self.text_top)
            .map(|(k, _)| k.as_str())
            .filter(|k| !self.placed_asked.contains(*k))
            .collect();
        if new.is_empty() {
            return;
        }
        self.placed.extend(self.dense.places(new.iter().copied()));
        self.placed_asked.extend(new.into_iter().map(str::to_owned));
    }

    /// The dense ranking as fusion sees it: its top, and the placed keys that sit beyond it.
    fn dense_partial(
        &self,
        top: Vec<(String, Option<f64>)>,
        mut beyond: FxHashMap<String, (usize, Option<f64>)>,
    ) -> Partial {
        beyond.retain(|_, (at, _)| *at >= top.len());
        Partial {
            channel: self.dense.channel(),
            top,
            len: self.dense.len(),
            beyond,
            raw_scores: true,
            weight: self.fusion.weights.dense,
            best: self.best(2, self.dense.best()),
        }
    }

    fn text_partial(&self, top: Vec<(String, Option<f64>)>, text: &TextRanking) -> Partial {
        let beyond = self
            .located
            .iter()
            .filter(|(_, &(at, _))| at >= top.len())
            .map(|(k, &(at, score))| (k.clone(), (at, Some(score))))
            .collect();
        Partial {
            channel: "fulltext",
            top,
            len: text.len(),
            beyond,
            raw_scores: true,
            weight: self.fusion.weights.text,
            best: self.best(1, text.best()),
        }
    }

    /// The fused entries whose place and score no unread hit can change, and whether the
    /// text and dense rankings have been read whole.
    pub(crate) fn settled(&self) -> Result<(Vec<Fused>, bool), SearchError> {
        let dense_top = self.dense_top.clone();
        let mut read_whole = dense_top.len() == self.dense.len();
        let text_top = self.text.map(|text| (self.text_top.clone(), text));
        let beyond = if self.dense.len() > dense_top.len() {
            self.placed
                .iter()
                .filter(|(_, (at, _))| *at >= dense_top.len())
                .map(|(k, v)| (k.clone(), *v))
                .collect()
        } else {
            Default::default()
        };
        let dense = self.dense_partial(dense_top, beyond);
        let mut rankings = vec![self.channel1.clone()];
        if let Some((top, text)) = text_top {
            read_whole &= top.len() == text.len();
            rankings.push(self.text_partial(top, text));
        }
        rankings.push(dense);
        let (fused, mut bound) = fuse_partial(&rankings, &self.fusion);
        if self.buried.is_some() && bound == f64::NEG_INFINITY {
            // One raw-scored ranking is in final order, so its unread keys come after every
            // read one; but a buried read key fell, and may now fall below an unread one,
            // which scores at most the last raw score read.
            bound = rankings
                .iter()
                .filter(|r| r.len > 0 && r.top.len() < r.len)
                .map(|r| match r.top.last() {
                    Some((_, raw)) => raw.unwrap_or(f64::INFINITY),
                    None => f64::INFINITY,
                })
                .fold(f64::NEG_INFINITY, f64::max);
        }
        let settled = self
            .bury(fused)
            .into_iter()
            .take_while(|f| f.score > bound)
            .collect();
        Ok((settled, read_whole))
    }

    /// The exact fused entries of these keys (those no ranking holds are left out), in order.
    pub(crate) fn exact(&self, keys: &[&str]) -> Result<Vec<Fused>, SearchError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut rankings = vec![self.channel1.clone()];
        if let Some(text) = self.text {
            let beyond = text
                .locate(keys.iter().copied())?
                .into_iter()
                .map(|(k, (at, score))| (k, (at, Some(score))))
                .collect();
            rankings.push(Partial {
                channel: "fulltext",
                top: Vec::new(),
                len: text.len(),
                beyond,
                raw_scores: true,
                weight: self.fusion.weights.text,
                best: self.best(1, text.best()),
            });
        }
        rankings.push(self.dense_partial(Vec::new(), self.dense.places(keys.iter().copied())));
        Ok(self.bury(fuse_keys(&rankings, keys, &self.fusion)))
    }

    /// Bounded fusion for a bucket stage: `fill` turns the settled entries into buckets and
    /// says whether they are full; until they are, and while there is more to read, the text
    /// and dense rankings are read deeper and the buckets refilled. Both sides fill through this.
    pub(crate) fn fill<T>(
        &mut self,
        mut fill: impl FnMut(Vec<Fused>) -> Result<(T, bool), SearchError>,
    ) -> Result<T, SearchError> {
        loop {
            let (settled, read_whole) = self.settled()?;
            let (filled, full) = fill(settled)?;
            if full || read_whole || !self.deepen()? {
                return Ok(filled);
            }
        }
    }

    /// Reads deeper; `false` when there is nothing more to read.
    pub(crate) fn deepen(&mut self) -> Result<bool, SearchError> {
        let text_len = self.text.map_or(0, TextRanking::len);
        if self.depth >= text_len.max(self.dense.len()) {
            return Ok(false);
        }
        self.depth = self.depth.saturating_mul(DEEPER);
        self.read_to_depth()?;
        self.locate_if_needed()?;
        self.place_in_dense();
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tuning::{Method, Weights};

    fn ranking(channel: &'static str, hits: Vec<(String, f64)>) -> Ranking {
        Ranking {
            channel,
            hits: hits.into_iter().map(|(k, s)| (k, Some(s))).collect(),
        }
    }

    /// Both rankings fused whole: what a read in steps must give prefixes of.
    fn whole_fusion(channel1: &Ranking, dense: &Ranking, fusion: &Fusion) -> Vec<Fused> {
        let rankings = [
            Partial::whole(channel1, fusion.weights.entities),
            Partial::whole(dense, fusion.weights.dense),
        ];
        let keys: Vec<&str> = channel1
            .hits
            .iter()
            .chain(&dense.hits)
            .map(|(k, _)| k.as_str())
            .collect();
        let mut seen = FxHashSet::default();
        let keys: Vec<&str> = keys.into_iter().filter(|k| seen.insert(*k)).collect();
        fuse_keys(&rankings, &keys, fusion)
    }

    /// Fills a bucket of `cap` from `d`, reading deeper until it is full.
    fn settled_to(d: &mut Deepening<'_, '_>, cap: usize) -> Vec<Fused> {
        d.fill(|settled| {
            let taken: Vec<Fused> = settled.into_iter().take(cap).collect();
            let full = taken.len() == cap;
            Ok((taken, full))
        })
        .unwrap()
    }

    /// Whatever the cap, bounded fusion over a long dense ranking gives the prefix of whole
    /// fusion, scores and contributions included, for both fusion methods.
    #[test]
    fn a_dense_ranking_read_in_steps_gives_prefixes_of_the_whole_fusion() {
        // Dense: 500 keys, scores falling with ties in runs of three; channel 1: 40 keys
        // scattered through it, some of them absent from dense.
        let dense = ranking(
            "dense",
            (0..500)
                .map(|i| (format!("k{}", (i * 37) % 500), 1.0 - (i / 3) as f64 / 200.0))
                .collect(),
        );
        let channel1 = ranking(
            "bm25",
            (0..40)
                .map(|i| (format!("k{}", (i * 113 + 7) % 620), 5.0 - i as f64 / 10.0))
                .collect(),
        );
        for method in [Method::Rrf, Method::Score] {
            let fusion = Fusion {
                method,
                weights: Weights {
                    entities: 1.0,
                    text: 1.0,
                    dense: 0.5,
                },
            };
            let whole = whole_fusion(&channel1, &dense, &fusion);
            for cap in [1, 3, 10, 50, 200, 531, 600] {
                let listed = DenseRanking::Listed(dense.clone());
                let mut d = Deepening::new(&channel1, None, &listed, 4, fusion).unwrap();
                let got = settled_to(&mut d, cap);
                let want = &whole[..cap.min(whole.len())];
                assert_eq!(got, want, "{method:?} cap {cap}");
                let exact = d.exact(&[want.last().unwrap().key.as_str()]).unwrap();
                assert_eq!(exact[0], *want.last().unwrap(), "{method:?} exact");
            }
        }
    }

    /// Buried keys lose their fraction and fall in the order; read in steps, the settled
    /// entries are still the prefix of the whole buried fusion.
    #[test]
    fn buried_keys_fall_and_reads_in_steps_still_give_prefixes() {
        let dense = ranking(
            "dense",
            (0..300)
                .map(|i| (format!("k{i}"), 1.0 - i as f64 / 400.0))
                .collect(),
        );
        let channel1 = ranking(
            "bm25",
            (0..30)
                .map(|i| (format!("k{}", i * 7), 3.0 - i as f64 / 10.0))
                .collect(),
        );
        let buried: Buried = (0..300)
            .step_by(3)
            .map(|i| (format!("k{i}"), 0.5))
            .collect();
        let fusion = Fusion::RRF;
        let whole = {
            let mut fused = whole_fusion(&channel1, &dense, &fusion);
            for f in &mut fused {
                if let Some(loses) = buried.get(&f.key) {
                    f.score *= 1.0 - loses;
                }
            }
            fused.sort_by(|a, b| b.score.total_cmp(&a.score));
            fused
        };
        // k0 leads both rankings; buried by half, k7 (clean, in both) passes it.
        assert_eq!(whole[0].key, "k7");
        for cap in [1, 2, 5, 40, 300] {
            let listed = DenseRanking::Listed(dense.clone());
            let mut d = Deepening::new(&channel1, None, &listed, 4, fusion)
                .unwrap()
                .burying(&buried);
            let got = settled_to(&mut d, cap);
            let keys = |f: &[Fused]| f.iter().map(|f| f.key.clone()).collect::<Vec<_>>();
            assert_eq!(
                keys(&got),
                keys(&whole[..cap.min(whole.len())]),
                "cap {cap}"
            );
            for (g, w) in got.iter().zip(&whole) {
                assert!((g.score - w.score).abs() < 1e-15);
                let parts: f64 = g.contributions.iter().map(|c| c.contribution).sum();
                assert!((parts - g.score).abs() < 1e-15, "{g:?}");
            }
        }
    }

    /// One raw-scored ranking alone is in final order, but a buried read key may fall below
    /// unread ones: read in steps, the settled entries still give the prefix of the whole.
    #[test]
    fn burying_a_single_raw_ranking_still_gives_prefixes() {
        let dense = ranking(
            "dense",
            (0..300)
                .map(|i| (format!("k{i}"), 1.0 - i as f64 / 1000.0))
                .collect(),
        );
        let channel1 = ranking("bm25", Vec::new());
        let buried: Buried = (0..300)
            .step_by(3)
            .map(|i| (format!("k{i}"), 0.5))
            .collect();
        let mut whole: Vec<(String, f64)> = dense
            .hits
            .iter()
            .map(|(k, raw)| {
                let raw = raw.unwrap();
                let lowered = buried.get(k).map_or(raw, |l| raw - l * raw.abs());
                (k.clone(), lowered)
            })
            .collect();
        whole.sort_by(|a, b| b.1.total_cmp(&a.1));
        // Buried by half, k0 falls below every clean key: a read in steps must not settle it
        // before the unread ones.
        assert_ne!(whole[0].0, "k0");
        for cap in [1, 3, 5, 30, 100, 300] {
            let listed = DenseRanking::Listed(dense.clone());
            let mut d = Deepening::new(&channel1, None, &listed, 4, Fusion::RRF)
                .unwrap()
                .burying(&buried);
            let got = settled_to(&mut d, cap);
            let got: Vec<(String, f64)> = got.into_iter().map(|f| (f.key, f.score)).collect();
            assert_eq!(got, whole[..cap], "cap {cap}");
        }
    }
}
