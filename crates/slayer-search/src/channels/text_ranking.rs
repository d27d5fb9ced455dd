//! The text channel's ranking as fusion reads it: every match held, but sorted only as deep
//! as fusion reads (a question of common words matches most of a 100,000-memory corpus, and
//! sorting every match took most of the channel's time), with the place of any other doc
//! found by counting, not by sorting everything.
//!
//! Each match is held as one integer key that orders as the ranking does: best score first
//! (`ranked::score_key`), equal scores in ascending doc address, as tantivy's `TopDocs`.

use std::cell::{Cell, OnceCell, RefCell};

use rustc_hash::FxHashMap;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocSet, Searcher, Term, TERMINATED};

use crate::channels::lexical::ids_of;
use crate::channels::ranked::{score_key, score_of_key};

/// One side's full ranking by the question, ids read only where asked.
pub(crate) struct TextRanking<'s> {
    searcher: &'s Searcher,
    id_field: Field,
    /// Every match's key; the first `sorted` in ranking order, the rest partitioned below them.
    keys: RefCell<Vec<u128>>,
    sorted: Cell<usize>,
    /// Per segment, doc id → its match's key (`NONE`: no match), built on the first lookup.
    by_doc: OnceCell<Vec<Vec<u128>>>,
    /// Counting passes made: past the first, the whole is sorted once and places are read.
    passes: Cell<u32>,
}

/// The key of a doc that did not match.
const NONE: u128 = u128::MAX;

/// A match as its ranking key.
pub(crate) fn hit_key(score: f32, at: DocAddress) -> u128 {
    (u128::from(!score_key(score)) << 64)
        | (u128::from(at.segment_ord) << 32)
        | u128::from(at.doc_id)
}

/// The match a [`hit_key`] was made from.
pub(crate) fn key_hit(key: u128) -> (f32, DocAddress) {
    (
        score_of_key(!((key >> 64) as u32)),
        DocAddress::new((key >> 32) as u32, key as u32),
    )
}

impl<'s> TextRanking<'s> {
    /// The ranking of these matches (in any order).
    pub(crate) fn new(
        searcher: &'s Searcher,
        id_field: Field,
        hits: Vec<(f32, DocAddress)>,
    ) -> TextRanking<'s> {
        TextRanking::of_keys(
            searcher,
            id_field,
            hits.into_iter().map(|(s, at)| hit_key(s, at)).collect(),
        )
    }

    fn of_keys(searcher: &'s Searcher, id_field: Field, keys: Vec<u128>) -> TextRanking<'s> {
        TextRanking {
            searcher,
            id_field,
            keys: RefCell::new(keys),
            sorted: Cell::new(0),
            by_doc: OnceCell::new(),
            passes: Cell::new(0),
        }
    }

    /// Sorts the first `depth` keys into ranking order (selecting them from the unsorted rest
    /// first, so the rest is never sorted).
    fn sort_to(&self, depth: usize) {
        let mut keys = self.keys.borrow_mut();
        let depth = depth.min(keys.len());
        let done = self.sorted.get();
        if done >= depth {
            return;
        }
        let rest = &mut keys[done..];
        if depth - done < rest.len() {
            rest.select_nth_unstable(depth - done - 1);
        }
        rest[..depth - done].sort_unstable();
        self.sorted.set(depth);
    }

    /// The ranking split into `groups` rankings by each match's group (`group_of(address)`),
    /// each in the same order with the same scores: the tiers' shares of a ranking, scored
    /// with the whole ranking's statistics.
    pub(crate) fn split(
        &self,
        groups: usize,
        group_of: impl Fn(DocAddress) -> usize,
    ) -> Vec<TextRanking<'s>> {
        let mut keys: Vec<Vec<u128>> = vec![Vec::new(); groups];
        for k in self.keys.borrow().iter() {
            keys[group_of(key_hit(*k).1)].push(*k);
        }
        keys.into_iter()
            .map(|keys| TextRanking::of_keys(self.searcher, self.id_field, keys))
            .collect()
    }

    /// How many docs matched.
    pub(crate) fn len(&self) -> usize {
        self.keys.borrow().len()
    }

    /// Whether nothing matched.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The best raw score, if anything matched.
    pub(crate) fn best(&self) -> Option<f64> {
        self.sort_to(1);
        self.keys.borrow().first().map(|k| f64::from(key_hit(*k).0))
    }

    /// `(score, address)` of the first `n` matches.
    fn top_hits(&self, n: usize) -> Vec<(f32, DocAddress)> {
        self.sort_to(n);
        let keys = self.keys.borrow();
        keys[..n.min(keys.len())]
            .iter()
            .map(|k| key_hit(*k))
            .collect()
    }

    /// `(id, score)` of the first `n` matches.
    pub(crate) fn top(&self, n: usize) -> tantivy::Result<Vec<(String, Option<f64>)>> {
        let hits = self.top_hits(n);
        let ids = ids_of(self.searcher, self.id_field, &hits)?;
        Ok(hits
            .iter()
            .zip(ids)
            .map(|((score, _), id)| (id, Some(f64::from(*score))))
            .collect())
    }

    /// Every match's address and id, in ranking order.
    pub(crate) fn ids(&self) -> tantivy::Result<Vec<(DocAddress, String)>> {
        let hits = self.top_hits(self.len());
        let ids = ids_of(self.searcher, self.id_field, &hits)?;
        Ok(hits.into_iter().map(|(_, at)| at).zip(ids).collect())
    }

    /// The address of each id that matched.
    pub(crate) fn addresses<'k>(
        &self,
        ids: impl IntoIterator<Item = &'k str>,
    ) -> tantivy::Result<FxHashMap<String, DocAddress>> {
        Ok(self
            .matched(ids)?
            .into_iter()
            .map(|(id, k)| (id, key_hit(k).1))
            .collect())
    }

    /// Each id that matched, with its key.
    fn matched<'k>(
        &self,
        ids: impl IntoIterator<Item = &'k str>,
    ) -> tantivy::Result<Vec<(String, u128)>> {
        let readers = self.searcher.segment_readers();
        let by_doc = self.by_doc.get_or_init(|| {
            let mut out: Vec<Vec<u128>> = readers
                .iter()
                .map(|r| vec![NONE; r.max_doc() as usize])
                .collect();
            for k in self.keys.borrow().iter() {
                let at = key_hit(*k).1;
                out[at.segment_ord as usize][at.doc_id as usize] = *k;
            }
            out
        });
        let mut out = Vec::new();
        for id in ids {
            let term = Term::from_field_text(self.id_field, id);
            for (segment, reader) in readers.iter().enumerate() {
                let inverted = reader.inverted_index(self.id_field)?;
                let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let k = by_doc[segment][doc as usize];
                    if k != NONE {
                        out.push((id.to_owned(), k));
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(out)
    }

    /// The 0-based position and raw score of each id that matched (ids that did not are left
    /// out): positions inside the sorted top are read, the others counted in one pass.
    pub(crate) fn locate<'k>(
        &self,
        ids: impl IntoIterator<Item = &'k str>,
    ) -> tantivy::Result<FxHashMap<String, (usize, f64)>> {
        let mut targets = self.matched(ids)?;
        if targets.is_empty() {
            return Ok(FxHashMap::default());
        }
        if self.passes.get() > 0 {
            // Fusion asks again and again as it reads deeper: one sort of the whole costs
            // less than a counting pass per question.
            self.sort_to(self.len());
            let keys = self.keys.borrow();
            return Ok(targets
                .into_iter()
                .filter_map(|(id, k)| {
                    let at = keys.binary_search(&k).ok()?;
                    Some((id, (at, f64::from(key_hit(k).0))))
                })
                .collect());
        }
        self.passes.set(1);
        targets.sort_unstable_by_key(|(_, k)| *k);
        let sorted_keys: Vec<u128> = targets.iter().map(|(_, k)| *k).collect();
        let last = sorted_keys[sorted_keys.len() - 1];
        // ahead[i]: keys ranked before target i but not before target i-1.
        let mut ahead = vec![0usize; targets.len()];
        for k in self.keys.borrow().iter() {
            if *k >= last {
                continue;
            }
            ahead[sorted_keys.partition_point(|t| t <= k)] += 1;
        }
        let mut position = 0;
        let mut out = FxHashMap::default();
        for (i, (id, k)) in targets.into_iter().enumerate() {
            position += ahead[i];
            out.insert(id, (position, f64::from(key_hit(k).0)));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST, STORED, STRING};
    use tantivy::{doc, Index};

    /// 3 segments of docs `d000`…, and scores that tie in runs of three, in no order.
    fn index_and_hits() -> (Index, Field, Vec<(f32, DocAddress)>) {
        let mut schema = Schema::builder();
        let id = schema.add_text_field("id", STRING | FAST | STORED);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for segment in 0..3 {
            for i in 0..200 {
                writer
                    .add_document(doc!(id => format!("d{:03}", segment * 200 + i)))
                    .unwrap();
            }
            writer.commit().unwrap();
        }
        let searcher = index.reader().unwrap().searcher();
        let mut hits = Vec::new();
        for (segment, reader) in searcher.segment_readers().iter().enumerate() {
            for doc in 0..reader.max_doc() {
                // Every fifth doc did not match.
                if doc % 5 != 0 {
                    let score = ((doc * 37 + segment as u32 * 11) % 60 / 3) as f32 - 4.0;
                    hits.push((score, DocAddress::new(segment as u32, doc)));
                }
            }
        }
        (index, id, hits)
    }

    fn whole(searcher: &Searcher, id: Field, hits: &[(f32, DocAddress)]) -> Vec<(String, f64)> {
        let mut sorted = hits.to_vec();
        sorted.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let ids = ids_of(searcher, id, &sorted).unwrap();
        ids.into_iter()
            .zip(sorted)
            .map(|(i, (s, _))| (i, f64::from(s)))
            .collect()
    }

    #[test]
    fn read_in_steps_and_located_it_is_the_whole_sort() {
        let (index, id, hits) = index_and_hits();
        let searcher = index.reader().unwrap().searcher();
        let expected = whole(&searcher, id, &hits);
        let ranking = TextRanking::new(&searcher, id, hits.clone());
        assert_eq!(ranking.len(), expected.len());
        let ask: Vec<String> = (0..600).step_by(7).map(|i| format!("d{i:03}")).collect();
        let expected_places = |ask: &[String]| -> FxHashMap<String, (usize, f64)> {
            expected
                .iter()
                .enumerate()
                .filter(|(_, (i, _))| ask.contains(i))
                .map(|(at, (i, s))| (i.clone(), (at, *s)))
                .collect()
        };
        // Located before anything is sorted (a counting pass), then read in steps, then
        // located again (the whole sorted once).
        assert_eq!(
            ranking.locate(ask.iter().map(String::as_str)).unwrap(),
            expected_places(&ask)
        );
        assert_eq!(ranking.best(), Some(expected[0].1));
        for depth in [1, 2, 10, 64, 300, 480, 700] {
            let top: Vec<(String, f64)> = ranking
                .top(depth)
                .unwrap()
                .into_iter()
                .map(|(i, s)| (i, s.unwrap()))
                .collect();
            assert_eq!(top, expected[..depth.min(expected.len())], "depth {depth}");
        }
        let all: Vec<String> = (0..600).map(|i| format!("d{i:03}")).collect();
        assert_eq!(
            ranking.locate(all.iter().map(String::as_str)).unwrap(),
            expected_places(&all)
        );
        // Split by address: each share keeps the order and the scores.
        let shares = ranking.split(2, |at| (at.doc_id % 2) as usize);
        for (g, share) in shares.iter().enumerate() {
            let want: Vec<(String, f64)> = expected
                .iter()
                .filter(|(i, _)| {
                    let at = ranking.addresses([i.as_str()]).unwrap()[i.as_str()];
                    (at.doc_id % 2) as usize == g
                })
                .cloned()
                .collect();
            let got: Vec<(String, f64)> = share
                .top(share.len())
                .unwrap()
                .into_iter()
                .map(|(i, s)| (i, s.unwrap()))
                .collect();
            assert_eq!(got, want);
        }
    }
}
