//! Channel 2 scored term at a time: every match of both sides, in one pass over each term's
//! postings.
//!
//! A ranking holds every match (fusion places any doc the other channels bring), so nothing
//! can be pruned, and tantivy's union of term scorers then costs more than the scores: a
//! sliding window re-sorted per block, an intersection that seeks the `kind` postings for
//! every match, and the entity side walking all of the memories' postings a second time only
//! to exclude them. Here each term's postings are read once per segment into one score per
//! doc; the memory side is read off after the text field's terms, and the entity side after
//! its name and value terms are added on top.
//!
//! The scores are BM25 as tantivy's `TermQuery` makes them (its own `Bm25Weight`, boosts
//! multiplied in the same order), summed over a doc's terms in the question's order. Tantivy
//! sums a doc's terms in its union's order, which is reshuffled whenever a term's postings run
//! out (for a term found only in the first docs, over most of the segment), so a doc matched
//! by three or more terms may differ from tantivy's score in the last bit: equal docs now
//! score equal wherever they lie (the tests check both against tantivy's query).

use tantivy::fieldnorm::FieldNormReader;
use tantivy::postings::Postings;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight, EnableScoring, Query};
use tantivy::schema::{Field, IndexRecordOption};
use tantivy::{DocAddress, DocId, DocSet, Searcher, SegmentReader, Term, TERMINATED};

/// One term of the query and its boost (how often the question says it, times a field's
/// weight).
#[derive(Debug, Clone)]
pub(crate) struct Clause {
    pub term: Term,
    pub boost: f32,
}

/// Every match of each side, with its score, in address order.
#[derive(Debug, Default)]
pub(crate) struct SideHits {
    pub memories: Vec<(f32, DocAddress)>,
    pub entities: Vec<(f32, DocAddress)>,
}

/// What [`score_sides`] reads besides the index: the terms of both sides (`text`), of the
/// entity side only (`entity_only`), which docs are memories, and which docs the scope holds
/// (`None`: all).
pub(crate) struct Sides<'q> {
    pub text: &'q [Clause],
    pub entity_only: &'q [Clause],
    pub memory_kind: &'q Term,
    pub scope: Option<&'q dyn Query>,
}

/// Scores both sides. Under a scope, BM25's document count, average length and each term's
/// document frequency are the scope's (as `SubsetStats` made them for tantivy's query).
pub(crate) fn score_sides(searcher: &Searcher, sides: &Sides<'_>) -> tantivy::Result<SideHits> {
    let segments = searcher.segment_readers();
    let scopes = match sides.scope {
        None => None,
        Some(filter) => {
            let weight = filter.weight(EnableScoring::disabled_from_searcher(searcher))?;
            let mut bitmaps = Vec::with_capacity(segments.len());
            for reader in segments {
                let mut bits = Bitmap::new(reader.max_doc());
                weight.for_each_no_score(reader, &mut |docs: &[DocId]| {
                    for &doc in docs {
                        bits.insert(doc);
                    }
                })?;
                if let Some(alive) = reader.alive_bitset() {
                    bits.keep(|doc| alive.is_alive(doc));
                }
                bitmaps.push(bits);
            }
            Some(bitmaps)
        }
    };
    let weights = |clauses: &[Clause]| -> tantivy::Result<Vec<Bm25Weight>> {
        match &scopes {
            None => weights_of(searcher, clauses),
            Some(bitmaps) => weights_of(
                &ScopeStats {
                    searcher,
                    scopes: bitmaps,
                },
                clauses,
            ),
        }
    };
    let text_weights = weights(sides.text)?;
    let entity_weights = weights(sides.entity_only)?;
    let mut out = SideHits::default();
    for (ord, reader) in segments.iter().enumerate() {
        let max_doc = reader.max_doc();
        let memories = postings_bitmap(reader, sides.memory_kind)?;
        let mut admitted = Bitmap::new(max_doc);
        match scopes.as_ref().map(|s| &s[ord]) {
            Some(scope) => admitted.words.copy_from_slice(&scope.words),
            None => {
                admitted.fill();
                if let Some(alive) = reader.alive_bitset() {
                    admitted.keep(|doc| alive.is_alive(doc));
                }
            }
        }
        let mut scores = vec![0f32; max_doc as usize];
        let mut matched = Bitmap::new(max_doc);
        for (clause, weight) in sides.text.iter().zip(&text_weights) {
            add_term(reader, clause, weight, &mut scores, &mut matched)?;
        }
        let at = |doc: DocId| DocAddress::new(ord as u32, doc);
        matched.for_each(|doc| {
            if admitted.contains(doc) && memories.contains(doc) {
                out.memories.push((scores[doc as usize], at(doc)));
            }
        });
        for (clause, weight) in sides.entity_only.iter().zip(&entity_weights) {
            add_term(reader, clause, weight, &mut scores, &mut matched)?;
        }
        matched.for_each(|doc| {
            if admitted.contains(doc) && !memories.contains(doc) {
                out.entities.push((scores[doc as usize], at(doc)));
            }
        });
    }
    Ok(out)
}

/// Each clause's BM25 weight, as `TermQuery` makes it, boosted.
fn weights_of(
    stats: &dyn Bm25StatisticsProvider,
    clauses: &[Clause],
) -> tantivy::Result<Vec<Bm25Weight>> {
    clauses
        .iter()
        .map(|c| Ok(Bm25Weight::for_terms(stats, std::slice::from_ref(&c.term))?.boost_by(c.boost)))
        .collect()
}

/// Adds one term's score to each doc of its postings in this segment.
fn add_term(
    reader: &SegmentReader,
    clause: &Clause,
    weight: &Bm25Weight,
    scores: &mut [f32],
    matched: &mut Bitmap,
) -> tantivy::Result<()> {
    let field = clause.term.field();
    let Some(mut postings) = reader
        .inverted_index(field)?
        .read_postings(&clause.term, IndexRecordOption::WithFreqs)?
    else {
        return Ok(());
    };
    let norms = fieldnorms(reader, field)?;
    let mut doc = postings.doc();
    while doc != TERMINATED {
        let score = weight.score(norms.fieldnorm_id(doc), postings.term_freq());
        scores[doc as usize] += score;
        matched.insert(doc);
        doc = postings.advance();
    }
    Ok(())
}

/// A field's length norms, or the constant norm tantivy scores a field without them by.
fn fieldnorms(reader: &SegmentReader, field: Field) -> tantivy::Result<FieldNormReader> {
    Ok(reader
        .fieldnorms_readers()
        .get_field(field)?
        .unwrap_or_else(|| FieldNormReader::constant(reader.max_doc(), 1)))
}

/// The docs of a term's postings in one segment (deleted ones included).
fn postings_bitmap(reader: &SegmentReader, term: &Term) -> tantivy::Result<Bitmap> {
    let mut bits = Bitmap::new(reader.max_doc());
    if let Some(mut postings) = reader
        .inverted_index(term.field())?
        .read_postings(term, IndexRecordOption::Basic)?
    {
        let mut doc = postings.doc();
        while doc != TERMINATED {
            bits.insert(doc);
            doc = postings.advance();
        }
    }
    Ok(bits)
}

/// BM25's statistics over the docs of a scope (alive docs only), as tantivy's `SubsetStats`
/// counted them: documents, the sum of each doc's length norm, and the docs holding a term.
struct ScopeStats<'a> {
    searcher: &'a Searcher,
    /// Per segment, the docs in scope.
    scopes: &'a [Bitmap],
}

impl Bm25StatisticsProvider for ScopeStats<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let mut total = 0u64;
        for (reader, scope) in self.searcher.segment_readers().iter().zip(self.scopes) {
            let norms = fieldnorms(reader, field)?;
            scope.for_each(|doc| total += u64::from(norms.fieldnorm(doc)));
        }
        Ok(total)
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.scopes.iter().map(Bitmap::count).sum())
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        let mut freq = 0u64;
        for (reader, scope) in self.searcher.segment_readers().iter().zip(self.scopes) {
            let Some(mut postings) = reader
                .inverted_index(term.field())?
                .read_postings(term, IndexRecordOption::Basic)?
            else {
                continue;
            };
            let mut doc = postings.doc();
            while doc != TERMINATED {
                freq += u64::from(scope.contains(doc));
                doc = postings.advance();
            }
        }
        Ok(freq)
    }
}

/// A set of a segment's docs, one bit each.
#[derive(Debug, Clone)]
struct Bitmap {
    words: Vec<u64>,
    max_doc: u32,
}

impl Bitmap {
    fn new(max_doc: u32) -> Bitmap {
        Bitmap {
            words: vec![0; (max_doc as usize).div_ceil(64)],
            max_doc,
        }
    }

    /// Every doc of the segment.
    fn fill(&mut self) {
        self.words.fill(u64::MAX);
        let tail = self.max_doc % 64;
        if let (Some(last), true) = (self.words.last_mut(), tail != 0) {
            *last = (1u64 << tail) - 1;
        }
    }

    fn insert(&mut self, doc: DocId) {
        self.words[(doc / 64) as usize] |= 1 << (doc % 64);
    }

    fn contains(&self, doc: DocId) -> bool {
        self.words[(doc / 64) as usize] & (1 << (doc % 64)) != 0
    }

    fn count(&self) -> u64 {
        self.words.iter().map(|w| u64::from(w.count_ones())).sum()
    }

    /// Keeps the docs `keep` says yes to.
    fn keep(&mut self, keep: impl Fn(DocId) -> bool) {
        for doc in self.docs() {
            if !keep(doc) {
                self.words[(doc / 64) as usize] &= !(1 << (doc % 64));
            }
        }
    }

    fn docs(&self) -> Vec<DocId> {
        let mut docs = Vec::new();
        self.for_each(|doc| docs.push(doc));
        docs
    }

    /// Calls `f` with each doc, ascending.
    fn for_each(&self, mut f: impl FnMut(DocId)) {
        for (i, &word) in self.words.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let doc = (i as u32) * 64 + bits.trailing_zeros();
                f(doc);
                bits &= bits - 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::lexical::{question_terms, rank, rank_sides, Side};
    use crate::corpus::Admission;
    use slayer_common::store::rows::StoredDoc;
    use slayer_common::store::{OpenMode, Store, StoreWrite};
    use slayer_index::fulltext::FullText;

    const WORDS: &[&str] = &[
        "revenue", "refund", "order", "payment", "customer", "region", "amount", "status", "tax",
        "city",
    ];

    /// A store of 40 columns under two datasources and 600 memories of seeded words, indexed
    /// in two segments.
    fn indexed(dir: &std::path::Path) -> FullText {
        let mut store = Store::open(&dir.join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let mut seed = 11u64;
        let mut next = move |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let mut sentence = |len: usize| -> String {
            (0..len)
                .map(|_| WORDS[next(WORDS.len())])
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut docs = Vec::new();
        for i in 0..40 {
            let ds = if i % 3 == 0 { "other" } else { "db" };
            let mut d = StoredDoc::placeholder(
                &format!("{ds}.m.{}_{i}", WORDS[i % 10]),
                "column",
                Some(ds),
            );
            d.model = Some("m".into());
            d.doc.text = format!("Column {}. {}", WORDS[i % 10], sentence(6 + i % 5));
            docs.push(d);
        }
        for i in 0..600 {
            let mut d = StoredDoc::placeholder(&format!("memory:{i}"), "memory", None);
            d.doc.text = match i {
                // Twins, one in each segment.
                7 | 590 => "refund amount customer region status tax".to_owned(),
                _ => sentence(4 + i % 17),
            };
            docs.push(d);
        }
        let (first, second) = docs.split_at(330);
        for part in [first, second] {
            let tx = store.write().unwrap();
            for d in part {
                tx.upsert_doc(d).unwrap();
            }
            tx.commit().unwrap();
            FullText::open_synced(&mut store).unwrap();
        }
        FullText::open_synced(&mut store).unwrap().0
    }

    /// Both sides scored term at a time are tantivy's own queries' matches, with scores equal
    /// to the last bits of a float sum, in every scope; and equal docs score equal.
    #[test]
    fn both_sides_at_once_match_tantivy_s_queries() {
        let dir = tempfile::tempdir().unwrap();
        let fulltext = indexed(dir.path());
        let searcher = fulltext.searcher();
        assert!(
            searcher.segment_readers().len() >= 2,
            "two segments at least"
        );
        let out: Vec<&str> = vec!["3", "30", "301"];
        let only: Vec<&str> = vec!["5", "50", "77", "599"];
        let scopes = [
            (None, Admission::Except(Vec::new())),
            (Some("db"), Admission::Except(Vec::new())),
            (None, Admission::Except(out)),
            (Some("other"), Admission::Only(only)),
        ];
        let questions = [
            "refund amount by customer region",
            "tax tax city",
            "revenue",
            "status of the order payment refund city region",
            "nothing matches this",
        ];
        for (datasource, admission) in &scopes {
            for question in questions {
                for name_weight in [0.0, 2.0] {
                    let terms = question_terms(&fulltext, question, 32).terms;
                    let (memories, entities) = rank_sides(
                        &fulltext,
                        &searcher,
                        &terms,
                        *datasource,
                        admission,
                        name_weight,
                    )
                    .unwrap();
                    for (side, got) in [(Side::Memories, &memories), (Side::Entities, &entities)] {
                        let want = rank(
                            &fulltext,
                            &searcher,
                            &terms,
                            side,
                            *datasource,
                            admission,
                            name_weight,
                        )
                        .unwrap();
                        let (got, want) = (got.hits(), want.hits());
                        let at =
                            |h: &[(f32, DocAddress)]| h.iter().map(|(_, a)| *a).collect::<Vec<_>>();
                        assert_eq!(at(got), at(want), "{question:?} {side:?} {datasource:?}");
                        for ((g, _), (w, _)) in got.iter().zip(want) {
                            assert!((g - w).abs() <= w.abs() * 1e-6, "{question:?}: {g} vs {w}");
                        }
                    }
                    if question.starts_with("nothing") {
                        assert!(memories.is_empty() && entities.is_empty());
                    }
                }
            }
        }
        // Two memories of the same words, in two segments, score the same.
        let terms = question_terms(&fulltext, "tax status region customer amount refund", 32).terms;
        let (memories, _) = rank_sides(
            &fulltext,
            &searcher,
            &terms,
            None,
            &Admission::Except(Vec::new()),
            1.0,
        )
        .unwrap();
        let ids =
            crate::channels::doc_ids::ids_of(&searcher, fulltext.fields().id, memories.hits())
                .unwrap();
        let score_of = |id: &str| memories.hits()[ids.iter().position(|i| i == id).unwrap()].0;
        assert_eq!(
            score_of("memory:7").to_bits(),
            score_of("memory:590").to_bits()
        );
    }

    #[test]
    fn a_bitmap_holds_what_went_in_and_fills_to_its_size() {
        let mut b = Bitmap::new(130);
        for d in [0, 63, 64, 129] {
            b.insert(d);
        }
        assert_eq!(b.docs(), [0, 63, 64, 129]);
        assert!(b.contains(64) && !b.contains(65));
        b.keep(|d| d % 2 == 1);
        assert_eq!(b.docs(), [63, 129]);
        b.fill();
        assert_eq!(b.count(), 130);
        let mut exact = Bitmap::new(128);
        exact.fill();
        assert_eq!(exact.count(), 128);
        assert_eq!(Bitmap::new(0).count(), 0);
    }
}
