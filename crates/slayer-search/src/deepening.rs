//! Fusion that reads the text ranking only as deep as the buckets need.
//!
//! The other channels' rankings are read whole (they are small or already in memory); the
//! text ranking (every full-text match) is read to a depth, and the whole rankings' keys
//! beyond it are located in it, so every fused entry above the bound is final.

use crate::fuse::{fuse_keys, fuse_partial, Fused, Fusion, Partial, Ranking};
use crate::lexical::TextRanking;
use crate::SearchError;

/// How deep the text rankings are read at first, and how much deeper each time fusion cannot
/// yet vouch for enough entries.
pub const FIRST_DEPTH: usize = 64;
/// The growth factor of the depth.
pub const DEEPER: usize = 4;

/// One side's three rankings, the text one read only as deep as the buckets need. Fusion
/// order (and so tie order) is channel 1 (BM25 for memories, the named refs for entities),
/// text, dense.
pub struct Deepening<'t, 's> {
    channel1: Partial,
    text: Option<&'t TextRanking<'s>>,
    dense: Partial,
    /// Where the whole rankings' keys sit in the text ranking.
    located: rustc_hash::FxHashMap<String, usize>,
    depth: usize,
    fusion: Fusion,
}

impl<'t, 's> Deepening<'t, 's> {
    /// Starts at `depth`. `text` is `None` when the text channel did not run.
    pub fn new(
        channel1: &Ranking,
        text: Option<&'t TextRanking<'s>>,
        dense: &Ranking,
        depth: usize,
        fusion: Fusion,
    ) -> Result<Self, SearchError> {
        let mut d = Deepening {
            channel1: Partial::whole(channel1, fusion.weights.entities),
            text,
            dense: Partial::whole(dense, fusion.weights.dense),
            located: Default::default(),
            depth,
            fusion,
        };
        d.locate_if_needed()?;
        Ok(d)
    }

    fn locate_if_needed(&mut self) -> Result<(), SearchError> {
        let Some(text) = self.text else {
            return Ok(());
        };
        let has_keys = !self.channel1.top.is_empty() || !self.dense.top.is_empty();
        if self.located.is_empty() && has_keys && text.len() > self.depth {
            let keys = self.channel1.top.iter().chain(&self.dense.top);
            self.located = text.locate(keys.map(|(k, _)| k.as_str()))?;
        }
        Ok(())
    }

    fn text_partial(&self, top: Vec<(String, Option<f64>)>, text: &TextRanking) -> Partial {
        let beyond = self
            .located
            .iter()
            .filter(|(_, &at)| at >= top.len())
            .map(|(k, &at)| (k.clone(), (at, Some(text.score(at)))))
            .collect();
        Partial {
            channel: "fulltext",
            top,
            len: text.len(),
            beyond,
            raw_scores: true,
            weight: self.fusion.weights.text,
            best: (!text.is_empty()).then(|| text.score(0)),
        }
    }

    /// The fused entries whose place and score no unread hit can change, and whether the
    /// text ranking has been read whole.
    pub fn settled(&self) -> Result<(Vec<Fused>, bool), SearchError> {
        let mut rankings = vec![self.channel1.clone()];
        let mut read_whole = true;
        if let Some(text) = self.text {
            let top = text.top(self.depth)?;
            read_whole = top.len() == text.len();
            rankings.push(self.text_partial(top, text));
        }
        rankings.push(self.dense.clone());
        let (fused, bound) = fuse_partial(&rankings, &self.fusion);
        let settled = fused.into_iter().take_while(|f| f.score > bound).collect();
        Ok((settled, read_whole))
    }

    /// The exact fused entries of these keys (those no ranking holds are left out), in order.
    pub fn exact(&self, keys: &[&str]) -> Result<Vec<Fused>, SearchError> {
        let mut rankings = vec![self.channel1.clone()];
        if let Some(text) = self.text {
            let beyond = if keys.is_empty() {
                Default::default()
            } else {
                text.locate(keys.iter().copied())?
                    .into_iter()
                    .map(|(k, at)| (k, (at, Some(text.score(at)))))
                    .collect()
            };
            rankings.push(Partial {
                channel: "fulltext",
                top: Vec::new(),
                len: text.len(),
                beyond,
                raw_scores: true,
                weight: self.fusion.weights.text,
                best: (!text.is_empty()).then(|| text.score(0)),
            });
        }
        rankings.push(self.dense.clone());
        Ok(fuse_keys(&rankings, keys, &self.fusion))
    }

    /// Bounded fusion for a bucket stage: `fill` turns the settled entries into buckets and
    /// says whether they are full; until they are, and while there is more to read, the text
    /// ranking is read deeper and the buckets refilled. Both sides fill through this.
    pub fn fill<T>(
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
    pub fn deepen(&mut self) -> Result<bool, SearchError> {
        let Some(text) = self.text else {
            return Ok(false);
        };
        if self.depth >= text.len() {
            return Ok(false);
        }
        self.depth = self.depth.saturating_mul(DEEPER);
        self.locate_if_needed()?;
        Ok(true)
    }
}
