//! Channel 2: the persistent tantivy index, queried leniently.
//!
//! A question is never parsed as query syntax: it goes through the index's own analyzer
//! (`slayer_index::analysis`) and every token becomes an OR'ed term, so `what's revenue?`, `kind:memory`, `NOT`,
//! quotes and parentheses are all just words. With a datasource, documents outside it are
//! filtered before scoring and BM25's IDF and average length come from the filtered subset.

use tantivy::collector::{Collector, Count, DocSetCollector, SegmentCollector};
#[cfg(test)]
use tantivy::query::BoostQuery;
use tantivy::query::{
    AllQuery, Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery,
    TermSetQuery,
};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, Searcher, SegmentReader, Term};

use slayer_common::canonical::memory_ref;
use slayer_common::store::StoreRead;
use slayer_index::fulltext::{Fields, FullText};

use std::sync::Arc;

use crate::channels::doc_ids::{DocIdCache, DocIds};
use crate::channels::exhaustive::{score_sides, Clause, Sides};
pub(crate) use crate::channels::text_ranking::TextRanking;
use crate::channels::text_ranking::{hit_key, key_hit};
use crate::corpus::Admission;
use crate::SearchError;

/// The full-text index, opened (and synced) on the first question: a search without one
/// never touches it. Beside a file it is synced on a connection of its own (a sync writes the
/// store's record of it); a server store's is this host's cache, synced through the search's
/// own connection (it only reads the store).
pub struct TextIndex {
    store: std::path::PathBuf,
    /// A server store's cache folder of the index.
    cache: Option<std::path::PathBuf>,
    opened: std::cell::OnceCell<(FullText, tantivy::Searcher)>,
    /// A long-lived search's tables of the segments' doc ids (`None`: not kept), kept across
    /// reopens, and the opened searcher's.
    doc_id_cache: std::cell::RefCell<Option<DocIdCache>>,
    doc_ids: std::cell::OnceCell<Option<Arc<DocIds>>>,
}

impl TextIndex {
    /// The index of the store `--store` names, whose cache (a server store's) is in `cache`.
    pub fn new(store: std::path::PathBuf, cache: Option<std::path::PathBuf>) -> TextIndex {
        TextIndex {
            store,
            cache,
            opened: std::cell::OnceCell::new(),
            doc_id_cache: Default::default(),
            doc_ids: Default::default(),
        }
    }

    /// The same index, to be opened afresh on the next question (the doc id tables of the
    /// segments it still has are kept).
    pub fn reopened(&self) -> TextIndex {
        let index = TextIndex::new(self.store.clone(), self.cache.clone());
        *index.doc_id_cache.borrow_mut() = self.doc_id_cache.take();
        index
    }

    /// For a process that answers many questions: the index's doc ids are read into tables
    /// once per segment ([`crate::channels::doc_ids`]).
    pub fn serve(&mut self) {
        self.doc_id_cache
            .get_mut()
            .get_or_insert_with(DocIdCache::default);
    }

    /// The opened searcher's doc id tables, in a long-lived search.
    pub(crate) fn doc_ids(
        &self,
        searcher: &tantivy::Searcher,
    ) -> Result<Option<Arc<DocIds>>, SearchError> {
        if let Some(tables) = self.doc_ids.get() {
            return Ok(tables.clone());
        }
        let tables = match self.doc_id_cache.borrow_mut().as_mut() {
            Some(cache) => Some(Arc::new(cache.tables(searcher)?)),
            None => None,
        };
        Ok(self.doc_ids.get_or_init(|| tables).clone())
    }

    /// The store this index belongs to.
    pub fn store(&self) -> &std::path::Path {
        &self.store
    }

    pub(crate) fn get(
        &self,
        conn: &dyn StoreRead,
    ) -> Result<&(FullText, tantivy::Searcher), SearchError> {
        if let Some(opened) = self.opened.get() {
            return Ok(opened);
        }
        let fulltext = match &self.cache {
            Some(dir) => FullText::open_cache(conn, dir)?,
            None => {
                let store = slayer_common::store::Store::open(
                    &self.store,
                    slayer_common::store::OpenMode::ReadOnly,
                )?;
                FullText::open_for_reading(&store)?
            }
        };
        let searcher = fulltext.searcher();
        Ok(self.opened.get_or_init(|| (fulltext, searcher)))
    }
}

/// Which docs a query ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// Memory docs.
    Memories,
    /// Datasource, model, column, measure and aggregation docs.
    Entities,
}

/// A question's distinct terms, each with how often the question says it, in first-seen order.
#[derive(Debug, Default)]
pub(crate) struct QuestionTerms {
    /// At most the cap asked for.
    pub terms: Vec<(Term, u32)>,
    /// Distinct terms past the cap, left out.
    pub dropped: usize,
}

/// The question's terms, as the index analyzes text: each distinct term once, counted (a
/// repeated word weighs what it weighed as repeated clauses), at most `max_terms` of them.
pub(crate) fn question_terms(
    fulltext: &FullText,
    question: &str,
    max_terms: usize,
) -> QuestionTerms {
    let field = fulltext.fields().text;
    let mut out = QuestionTerms::default();
    let Ok(mut analyzer) = fulltext.index().tokenizer_for_field(field) else {
        return out;
    };
    let mut seen: rustc_hash::FxHashMap<String, usize> = Default::default();
    let mut stream = analyzer.token_stream(question);
    while let Some(token) = stream.next() {
        if let Some(&at) = seen.get(&token.text) {
            if let Some((_, count)) = out.terms.get_mut(at) {
                *count += 1;
            }
            continue;
        }
        if out.terms.len() == max_terms {
            out.dropped += 1;
            seen.insert(token.text.clone(), usize::MAX);
            continue;
        }
        seen.insert(token.text.clone(), out.terms.len());
        out.terms
            .push((Term::from_field_text(field, &token.text), 1));
    }
    out
}

/// A term's clause, boosted by how often the question repeats it.
#[cfg(test)]
fn counted(query: Box<dyn Query>, count: u32) -> Box<dyn Query> {
    if count == 1 {
        query
    } else {
        Box::new(BoostQuery::new(query, count as f32))
    }
}

fn term_query(field: Field, value: &str) -> Box<dyn Query> {
    Box::new(TermQuery::new(
        Term::from_field_text(field, value),
        IndexRecordOption::Basic,
    ))
}

/// A filter that adds nothing to the score.
fn unscored(q: Box<dyn Query>) -> Box<dyn Query> {
    Box::new(ConstScoreQuery::new(q, 0.0))
}

/// Statistics over the docs of one scope only (a datasource, the memories a filter admits).
struct SubsetStats<'a> {
    searcher: &'a Searcher,
    filter: Box<dyn Query>,
    docs: Vec<DocAddress>,
}

impl Bm25StatisticsProvider for SubsetStats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut readers = Vec::new();
        for segment in self.searcher.segment_readers() {
            readers.push(segment.get_fieldnorms_reader(field)?);
        }
        Ok(self
            .docs
            .iter()
            .map(|addr| u64::from(readers[addr.segment_ord as usize].fieldnorm(addr.doc_id)))
            .sum())
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.docs.len() as u64)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let q = BooleanQuery::new(vec![
            (
                Occur::Must,
                Box::new(TermQuery::new(term.clone(), IndexRecordOption::Basic)) as Box<dyn Query>,
            ),
            (Occur::Must, self.filter.box_clone()),
        ]);
        Ok(self.searcher.search(&q, &Count)? as u64)
    }
}

/// Every matching doc with its score: a ranking holds every match, so no top-k heap.
struct AllScored;

struct SegmentScored {
    segment: u32,
    hits: Vec<(f32, DocAddress)>,
}

impl Collector for AllScored {
    type Fruit = Vec<(f32, DocAddress)>;
    type Child = SegmentScored;

    fn for_segment(&self, segment: u32, _reader: &SegmentReader) -> tantivy::Result<SegmentScored> {
        Ok(SegmentScored {
            segment,
            hits: Vec::new(),
        })
    }

    fn requires_scoring(&self) -> bool {
        true
    }

    fn merge_fruits(&self, fruits: Vec<Vec<(f32, DocAddress)>>) -> tantivy::Result<Self::Fruit> {
        Ok(fruits.concat())
    }
}

impl SegmentCollector for SegmentScored {
    type Fruit = Vec<(f32, DocAddress)>;

    fn collect(&mut self, doc: u32, score: f32) {
        self.hits.push((score, DocAddress::new(self.segment, doc)));
    }

    fn harvest(self) -> Self::Fruit {
        self.hits
    }
}

/// Ranks both sides by the question ([`exhaustive`]): every match (never truncated), best
/// first as it is read, equal scores in index order (doc address), as tantivy orders them.
/// On the entity side a word also counts in the entity's own name, scored apart (its own
/// BM25 statistics) and weighted, so a name outweighs a sentence of description; and in a
/// column's value index (docs/spec/profile.md §12.4), so that a question naming a value past the
/// column's top 50 ("Alameda") finds the column holding it.
pub(crate) fn rank_sides<'s>(
    fulltext: &FullText,
    searcher: &'s Searcher,
    terms: &[(Term, u32)],
    datasource: Option<&str>,
    admission: &Admission<'_>,
    name_weight: f32,
) -> tantivy::Result<(TextRanking<'s>, TextRanking<'s>)> {
    let f: Fields = fulltext.fields();
    if terms.is_empty() {
        return Ok((
            TextRanking::new(searcher, f.id, Vec::new()),
            TextRanking::new(searcher, f.id, Vec::new()),
        ));
    }
    // A clause's boost is what nested `BoostQuery`s multiply: the count, then the weight.
    let text: Vec<Clause> = terms
        .iter()
        .map(|(term, count)| Clause {
            term: term.clone(),
            boost: *count as f32,
        })
        .collect();
    let entity_only: Vec<Clause> = entity_terms(&f, terms, name_weight)
        .map(|(term, weight, count)| Clause {
            term,
            boost: count as f32 * weight,
        })
        .collect();
    let scope = scope_filter(&f, datasource, admission);
    let memory_kind = Term::from_field_text(f.kind, "memory");
    let hits = score_sides(
        searcher,
        &Sides {
            text: &text,
            entity_only: &entity_only,
            memory_kind: &memory_kind,
            scope: scope.as_deref(),
        },
    )?;
    Ok((
        TextRanking::new(searcher, f.id, hits.memories),
        TextRanking::new(searcher, f.id, hits.entities),
    ))
}

/// Ranks one side by the question through tantivy's own query: the reference
/// [`rank_sides`] is tested against.
#[cfg(test)]
pub(crate) fn rank<'s>(
    fulltext: &FullText,
    searcher: &'s Searcher,
    terms: &[(Term, u32)],
    side: Side,
    datasource: Option<&str>,
    admission: &Admission<'_>,
    name_weight: f32,
) -> tantivy::Result<TextRanking<'s>> {
    let f: Fields = fulltext.fields();
    if terms.is_empty() {
        return Ok(TextRanking::new(searcher, f.id, Vec::new()));
    }
    let mut words: Vec<(Occur, Box<dyn Query>)> = terms
        .iter()
        .map(|(t, count)| {
            let query = Box::new(TermQuery::new(t.clone(), IndexRecordOption::WithFreqs));
            (Occur::Should, counted(query, *count))
        })
        .collect();
    // On the entity side a word also counts in the entity's own name, scored apart (its own
    // BM25 statistics) and weighted, so a name outweighs a sentence of description; and in a
    // column's value index (docs/spec/profile.md §12.4), so that a question naming a value past the
    // column's top 50 ("Alameda") finds the column holding it.
    if side == Side::Entities {
        for (term, weight, count) in entity_terms(&f, terms, name_weight) {
            let on_field = TermQuery::new(term, IndexRecordOption::WithFreqs);
            let weighted = Box::new(BoostQuery::new(Box::new(on_field), weight));
            words.push((Occur::Should, counted(weighted, count)));
        }
    }
    let hits = matches(fulltext, searcher, words, side, datasource, admission)?;
    Ok(TextRanking::new(searcher, f.id, hits))
}

/// The weight of a measure's `related` field (the plain words of its name's jargon): chosen
/// between 1 and 2 on the metric-lookup set and a blind set (docs/quality/metrics.md, fourth
/// round).
const RELATED_WEIGHT: f32 = 2.0;

/// The fields that name an entity, which a question's word scores on again beside `text`, with
/// their weights: its own `name` at `name_weight` (off at 0 or less) and a measure's `related`
/// plain words at [`RELATED_WEIGHT`]. Channel 2 and the planner's passes both read these.
pub(crate) fn naming_fields(f: &Fields, name_weight: f32) -> [(Field, f32); 2] {
    [(f.name, name_weight), (f.related, RELATED_WEIGHT)]
}

/// The entity side's terms beyond the text field's: each question term on the fields that
/// name an entity ([`naming_fields`]) and on the `values` field (weight 1), in the order name,
/// values, related, with the term's weight and count; a field of weight 0 or less is left out.
fn entity_terms<'t>(
    f: &Fields,
    terms: &'t [(Term, u32)],
    name_weight: f32,
) -> impl Iterator<Item = (Term, f32, u32)> + 't {
    let [name, related] = naming_fields(f, name_weight);
    [name, (f.values, 1.0), related]
        .into_iter()
        .filter(|(_, weight)| *weight > 0.0)
        .flat_map(move |(field, weight)| {
            terms.iter().filter_map(move |(t, count)| {
                let word = t.value().as_str()?.to_owned();
                Some((Term::from_field_text(field, &word), weight, *count))
            })
        })
}

/// The memory docs of these ids.
fn memory_docs(f: &Fields, ids: &[&str]) -> Box<dyn Query> {
    Box::new(TermSetQuery::new(
        ids.iter()
            .map(|id| Term::from_field_text(f.id, &memory_ref(id))),
    ))
}

/// The docs a scope holds: under the datasource, entity docs and the memory docs the memory
/// filter admits; `None` when that is every doc.
pub(crate) fn scope_filter(
    f: &Fields,
    datasource: Option<&str>,
    admission: &Admission<'_>,
) -> Option<Box<dyn Query>> {
    let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
    if let Some(ds) = datasource {
        clauses.push((Occur::Must, term_query(f.datasource, ds)));
    }
    match admission {
        Admission::Except(out) if out.is_empty() => {}
        Admission::Except(out) => clauses.push((Occur::MustNot, memory_docs(f, out))),
        Admission::Only(only) => {
            let entities = BooleanQuery::new(vec![
                (Occur::Must, Box::new(AllQuery) as Box<dyn Query>),
                (Occur::MustNot, term_query(f.kind, "memory")),
            ]);
            clauses.push((
                Occur::Must,
                Box::new(BooleanQuery::new(vec![
                    (Occur::Should, Box::new(entities) as Box<dyn Query>),
                    (Occur::Should, memory_docs(f, only)),
                ])),
            ));
        }
    }
    if clauses.is_empty() {
        return None;
    }
    if clauses.iter().all(|(occur, _)| *occur == Occur::MustNot) {
        clauses.push((Occur::Must, Box::new(AllQuery)));
    }
    Some(Box::new(BooleanQuery::new(clauses)))
}

/// Every doc of one side (and scope) that matches any of `words`, with its score, in no
/// order ([`best_first`] sorts them). Under a datasource or a memory filter, BM25's
/// statistics are the scope's.
pub(crate) fn matches(
    fulltext: &FullText,
    searcher: &Searcher,
    words: Vec<(Occur, Box<dyn Query>)>,
    side: Side,
    datasource: Option<&str>,
    admission: &Admission<'_>,
) -> tantivy::Result<Vec<(f32, DocAddress)>> {
    let f: Fields = fulltext.fields();
    let mut clauses: Vec<(Occur, Box<dyn Query>)> =
        vec![(Occur::Must, Box::new(BooleanQuery::new(words)))];
    clauses.push(match side {
        Side::Memories => (Occur::Must, unscored(term_query(f.kind, "memory"))),
        Side::Entities => (Occur::MustNot, term_query(f.kind, "memory")),
    });
    let filter = scope_filter(&f, datasource, admission);
    if let Some(filter) = &filter {
        clauses.push((Occur::Must, unscored(filter.box_clone())));
    }
    let query = BooleanQuery::new(clauses);
    let hits = match filter {
        None => searcher.search(&query, &AllScored)?,
        Some(filter) => {
            let mut docs: Vec<DocAddress> = searcher
                .search(filter.as_ref(), &DocSetCollector)?
                .into_iter()
                .collect();
            docs.sort();
            let stats = SubsetStats {
                searcher,
                filter,
                docs,
            };
            searcher.search_with_statistics_provider(&query, &AllScored, &stats)?
        }
    };
    Ok(hits)
}

/// Hits best first, equal scores by doc address: sorted as integer keys (score, segment,
/// doc), which takes a fraction of the time a comparison closure does over 100,000 hits.
pub(crate) fn best_first(hits: Vec<(f32, DocAddress)>) -> Vec<(f32, DocAddress)> {
    let mut keys: Vec<u128> = hits.into_iter().map(|(s, at)| hit_key(s, at)).collect();
    keys.sort_unstable();
    keys.into_iter().map(key_hit).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_first_is_the_comparison_sort() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) as u32
        };
        let hits: Vec<(f32, DocAddress)> = (0..5000)
            .map(|_| {
                // Few distinct scores, so ties are common; some negative, one -0.0.
                let score = (next() % 40) as f32 / 4.0 - 2.0;
                let score = if score == 0.0 && next() % 2 == 0 {
                    -0.0
                } else {
                    score
                };
                (score, DocAddress::new(next() % 3, next() % 100_000))
            })
            .collect();
        let mut expected = hits.clone();
        expected.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let got = best_first(hits);
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(&expected) {
            assert_eq!((g.0.to_bits(), g.1), (e.0.to_bits(), e.1));
        }
    }
}
