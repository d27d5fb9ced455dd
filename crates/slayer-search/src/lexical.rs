//! Channel 2: the persistent tantivy index, queried leniently.
//!
//! A question is never parsed as query syntax: it goes through the index's own `en_stem`
//! analyzer and every token becomes an OR'ed term, so `what's revenue?`, `kind:memory`, `NOT`,
//! quotes and parentheses are all just words. With a datasource, documents outside it are
//! filtered before scoring and BM25's IDF and average length come from the filtered subset.

use tantivy::collector::{Count, DocSetCollector, TopDocs};
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::{DocAddress, Searcher, TantivyDocument, Term};

use slayer_index::fulltext::{Fields, FullText};

/// Which docs a query ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Memory docs.
    Memories,
    /// Datasource, model, column, measure and aggregation docs.
    Entities,
}

/// The question's terms, as the index analyzes text.
pub fn question_terms(fulltext: &FullText, question: &str) -> Vec<Term> {
    let field = fulltext.fields().text;
    let Ok(mut analyzer) = fulltext.index().tokenizer_for_field(field) else {
        return Vec::new();
    };
    let mut terms = Vec::new();
    let mut stream = analyzer.token_stream(question);
    while let Some(token) = stream.next() {
        terms.push(Term::from_field_text(field, &token.text));
    }
    terms
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

/// Statistics over the docs of one datasource only.
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

/// Ranks one side by the question: `(id field value, score)`, best first, every match (never
/// truncated). Equal scores keep index order (doc address), as tantivy does.
pub fn rank(
    fulltext: &FullText,
    searcher: &Searcher,
    terms: &[Term],
    side: Side,
    datasource: Option<&str>,
) -> tantivy::Result<Vec<(String, f64)>> {
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let f: Fields = fulltext.fields();
    let words: Vec<(Occur, Box<dyn Query>)> = terms
        .iter()
        .map(|t| {
            (
                Occur::Should,
                Box::new(TermQuery::new(t.clone(), IndexRecordOption::WithFreqs)) as Box<dyn Query>,
            )
        })
        .collect();
    let mut clauses: Vec<(Occur, Box<dyn Query>)> =
        vec![(Occur::Must, Box::new(BooleanQuery::new(words)))];
    clauses.push(match side {
        Side::Memories => (Occur::Must, unscored(term_query(f.kind, "memory"))),
        Side::Entities => (Occur::MustNot, term_query(f.kind, "memory")),
    });
    if let Some(ds) = datasource {
        clauses.push((Occur::Must, unscored(term_query(f.datasource, ds))));
    }
    let query = BooleanQuery::new(clauses);
    let limit = (searcher.num_docs() as usize).max(1);
    let top = TopDocs::with_limit(limit).order_by_score();
    let hits = match datasource {
        None => searcher.search(&query, &top)?,
        Some(ds) => {
            let filter = term_query(f.datasource, ds);
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
            searcher.search_with_statistics_provider(&query, &top, &stats)?
        }
    };
    // Ids come from the `id` fast field, looked up in ordinal order per segment: a ranking can
    // hold every memory of a large corpus, and decompressing a stored doc (or seeking the term
    // dictionary) per hit would dominate the search.
    let mut ids: Vec<String> = vec![String::new(); hits.len()];
    let mut by_segment: std::collections::BTreeMap<u32, Vec<(u64, usize)>> = Default::default();
    let readers = searcher.segment_readers();
    let mut columns = Vec::with_capacity(readers.len());
    for reader in readers {
        columns.push(reader.fast_fields().str("id")?);
    }
    for (i, (_, addr)) in hits.iter().enumerate() {
        let ord = columns[addr.segment_ord as usize]
            .as_ref()
            .and_then(|c| c.term_ords(addr.doc_id).next());
        match ord {
            Some(ord) => by_segment
                .entry(addr.segment_ord)
                .or_default()
                .push((ord, i)),
            None => {
                let doc: TantivyDocument = searcher.doc(*addr)?;
                ids[i] = doc
                    .get_first(f.id)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_owned();
            }
        }
    }
    for (segment, mut wanted) in by_segment {
        let Some(column) = &columns[segment as usize] else {
            continue;
        };
        wanted.sort_unstable();
        let mut slots = wanted.iter().map(|(_, i)| *i);
        column.dictionary().sorted_ords_to_term_cb(
            wanted.iter().map(|(ord, _)| *ord),
            |bytes| {
                if let Some(i) = slots.next() {
                    ids[i] = String::from_utf8_lossy(bytes).into_owned();
                }
                Ok(())
            },
        )?;
    }
    let out: Vec<(String, f64)> = hits
        .iter()
        .zip(ids)
        .map(|((score, _), id)| (id, f64::from(*score)))
        .collect();
    Ok(out)
}
