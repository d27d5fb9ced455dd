//! The text channel's ranking as fusion reads it: every match held in address order, ranked
//! only as deep as it is read (`bucketed`), and any doc's place found by its address, not by
//! a table of every doc in the index.

use std::sync::{Arc, OnceLock};

use rustc_hash::FxHashMap;
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocSet, Searcher, Term, TERMINATED};

use crate::channels::bucketed::Bucketed;
use crate::channels::doc_ids::ids_of;
use crate::channels::doc_ids::DocIds;
use crate::channels::rank_keys::{index_of, score_key, score_of, score_of_key};

/// One side's full ranking by the question, ids read only where asked: best score first,
/// equal scores in ascending doc address, as tantivy's `TopDocs`.
pub(crate) struct TextRanking<'s> {
    searcher: &'s Searcher,
    id_field: Field,
    /// Every match, in address order.
    hits: Vec<(f32, DocAddress)>,
    /// The ranking (of indexes in `hits`), sorted as deep as it is read; made on the first
    /// read.
    ranked: OnceLock<Bucketed>,
    /// A long-lived search's doc id tables: ids read and found without the index.
    doc_ids: Option<Arc<DocIds>>,
}

/// A match as one integer that orders as the ranking does (best score first, then address):
/// for sorting hits that are in no order.
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
    /// The ranking of these matches (in any order; a collector gives them in address order,
    /// which costs nothing to check).
    pub(crate) fn new(
        searcher: &'s Searcher,
        id_field: Field,
        mut hits: Vec<(f32, DocAddress)>,
    ) -> TextRanking<'s> {
        if !hits.is_sorted_by_key(|(_, at)| *at) {
            hits.sort_unstable_by_key(|(_, at)| *at);
        }
        TextRanking {
            searcher,
            id_field,
            hits,
            ranked: OnceLock::new(),
            doc_ids: None,
        }
    }

    /// The same ranking, reading ids through a long-lived search's tables.
    pub(crate) fn with_doc_ids(mut self, doc_ids: Option<Arc<DocIds>>) -> Self {
        self.doc_ids = doc_ids;
        self
    }

    /// The ids of these matches, in their order: from the tables where there are some.
    fn ids_of(&self, hits: &[(f32, DocAddress)]) -> tantivy::Result<Vec<String>> {
        let Some(tables) = &self.doc_ids else {
            return ids_of(self.searcher, self.id_field, hits);
        };
        let mut ids: Vec<Option<String>> = hits
            .iter()
            .map(|(_, at)| tables.id(*at).map(str::to_owned))
            .collect();
        if ids.iter().all(Option::is_some) {
            return Ok(ids.into_iter().flatten().collect());
        }
        // A doc without a value in the column: read as the index reads it.
        let missing: Vec<(f32, DocAddress)> = hits
            .iter()
            .zip(&ids)
            .filter(|(_, id)| id.is_none())
            .map(|(hit, _)| *hit)
            .collect();
        let mut read = ids_of(self.searcher, self.id_field, &missing)?.into_iter();
        Ok(ids
            .iter_mut()
            .map(|id| id.take().or_else(|| read.next()).unwrap_or_default())
            .collect())
    }

    fn ranked(&self) -> &Bucketed {
        self.ranked.get_or_init(|| Bucketed::new(&self.hits))
    }

    /// Buckets the matches by score ahead of the first read (fusion does it on another core
    /// while the dense ranking is bucketed).
    pub(crate) fn prepare(&self) {
        self.ranked();
    }

    /// Whether [`TextRanking::prepare`] ran.
    pub(crate) fn is_prepared(&self) -> bool {
        self.ranked.get().is_some()
    }

    /// The ranking split into `groups` rankings by each match's group (`group_of(address)`),
    /// each in the same order with the same scores: the tiers' shares of a ranking, scored
    /// with the whole ranking's statistics.
    pub(crate) fn split(
        &self,
        groups: usize,
        group_of: impl Fn(DocAddress) -> usize,
    ) -> Vec<TextRanking<'s>> {
        let mut hits: Vec<Vec<(f32, DocAddress)>> = vec![Vec::new(); groups];
        for hit in &self.hits {
            hits[group_of(hit.1)].push(*hit);
        }
        hits.into_iter()
            .map(|hits| {
                TextRanking::new(self.searcher, self.id_field, hits)
                    .with_doc_ids(self.doc_ids.clone())
            })
            .collect()
    }

    /// How many docs matched.
    /// Every match, in address order.
    #[cfg(test)]
    pub(crate) fn hits(&self) -> &[(f32, DocAddress)] {
        &self.hits
    }

    pub(crate) fn len(&self) -> usize {
        self.hits.len()
    }

    /// Whether nothing matched.
    pub(crate) fn is_empty(&self) -> bool {
        self.hits.is_empty()
    }

    /// The best raw score, if anything matched (read without ranking the matches).
    pub(crate) fn best(&self) -> Option<f64> {
        if let Some(ranked) = self.ranked.get() {
            return ranked.best().map(f64::from);
        }
        self.hits
            .iter()
            .map(|(s, _)| *s)
            .max_by(f32::total_cmp)
            .map(f64::from)
    }

    /// `(score, address)` of the matches from 0-based place `start` to `end` (cut to the
    /// length).
    fn hits_in(&self, start: usize, end: usize) -> Vec<(f32, DocAddress)> {
        self.ranked()
            .range(start, end, None)
            .iter()
            .map(|k| (score_of(*k), self.hits[index_of(*k)].1))
            .collect()
    }

    /// `(id, score)` of the first `n` matches.
    #[cfg(test)]
    pub(crate) fn top(&self, n: usize) -> tantivy::Result<Vec<(String, Option<f64>)>> {
        self.range(0, n)
    }

    /// `(id, score)` of the matches from 0-based place `start` to `end` (cut to the length).
    pub(crate) fn range(
        &self,
        start: usize,
        end: usize,
    ) -> tantivy::Result<Vec<(String, Option<f64>)>> {
        let hits = self.hits_in(start, end);
        let ids = self.ids_of(&hits)?;
        Ok(hits
            .iter()
            .zip(ids)
            .map(|((score, _), id)| (id, Some(f64::from(*score))))
            .collect())
    }

    /// Every match's address and id, in ranking order.
    pub(crate) fn ids(&self) -> tantivy::Result<Vec<(DocAddress, String)>> {
        let hits = self.hits_in(0, self.len());
        let ids = self.ids_of(&hits)?;
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
            .map(|(id, i)| (id, self.hits[i].1))
            .collect())
    }

    /// Each id that matched, with its index in `hits`: the id's docs (its postings in the id
    /// field), found among the matches by address.
    fn matched<'k>(
        &self,
        ids: impl IntoIterator<Item = &'k str>,
    ) -> tantivy::Result<Vec<(String, usize)>> {
        let readers = self.searcher.segment_readers();
        let mut out = Vec::new();
        for id in ids {
            if let Some(docs) = self.doc_ids.as_ref().and_then(|t| t.docs(id)) {
                for at in docs {
                    if let Ok(i) = self.hits.binary_search_by_key(&at, |(_, a)| *a) {
                        out.push((id.to_owned(), i));
                    }
                }
                continue;
            }
            let term = Term::from_field_text(self.id_field, id);
            for (segment, reader) in readers.iter().enumerate() {
                let inverted = reader.inverted_index(self.id_field)?;
                let Some(mut postings) = inverted.read_postings(&term, IndexRecordOption::Basic)?
                else {
                    continue;
                };
                let mut doc = postings.doc();
                while doc != TERMINATED {
                    let at = DocAddress::new(segment as u32, doc);
                    if let Ok(i) = self.hits.binary_search_by_key(&at, |(_, a)| *a) {
                        out.push((id.to_owned(), i));
                    }
                    doc = postings.advance();
                }
            }
        }
        Ok(out)
    }

    /// The 0-based position and raw score of each id that matched (ids that did not are left
    /// out).
    pub(crate) fn locate<'k>(
        &self,
        ids: impl IntoIterator<Item = &'k str>,
    ) -> tantivy::Result<FxHashMap<String, (usize, f64)>> {
        let targets = self.matched(ids)?;
        if targets.is_empty() {
            return Ok(FxHashMap::default());
        }
        let ranked = self.ranked();
        Ok(targets
            .into_iter()
            .map(|(id, i)| {
                let score = self.hits[i].0;
                (id, (ranked.place(i, score, None), f64::from(score)))
            })
            .collect())
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
