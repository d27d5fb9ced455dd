//! The doc ids of a served search's index, read once per segment: fusion asks for the ids of
//! the text matches it reads (a few hundred to a thousand a question) and for where the dense
//! channel's top ids matched, and through the index each is a dictionary or a postings lookup
//! of about a microsecond (1.1 ms of a served question at 100,000 memories). A segment never
//! changes, so its table lives until the segment is merged away. Only a long-lived search
//! (`--batch`, MCP) keeps one; the tables hold every id once (about 5 MB at 100,000 docs).

use std::sync::Arc;

use rustc_hash::FxHashMap;
use slayer_common::hash_index::{Found, HashIndex};
use tantivy::index::SegmentId;
use tantivy::schema::{Field, Value};
use tantivy::{DocAddress, Searcher, SegmentReader, TantivyDocument};

/// The fast column that holds each doc's id.
pub(crate) const ID_COLUMN: &str = "id";

/// One segment's ids: each doc's, and each id's docs.
#[derive(Debug)]
pub(crate) struct SegmentIds {
    /// The id column's values in its term order (the dictionary's: sorted by bytes).
    terms: Vec<Box<str>>,
    /// Each doc's term (`NONE` where the doc has no id in the column).
    term_of_doc: Vec<u32>,
    /// The docs of term `t` are `docs[starts[t]..starts[t + 1]]`, ascending.
    starts: Vec<u32>,
    docs: Vec<u32>,
    /// The terms by hash (a binary search of them was 0.9 ms of a served question's fusion).
    by_hash: HashIndex,
}

const NONE: u32 = u32::MAX;

impl SegmentIds {
    /// The table of a segment; `None` where the segment has no id column.
    fn read(reader: &SegmentReader) -> tantivy::Result<Option<SegmentIds>> {
        let Some(column) = reader.fast_fields().str(ID_COLUMN)? else {
            return Ok(None);
        };
        let dictionary = column.dictionary();
        let count = dictionary.num_terms();
        let mut terms: Vec<Box<str>> = Vec::with_capacity(count);
        dictionary.sorted_ords_to_term_cb(0..count as u64, |bytes| {
            // As the index's own reading of an id does (`ids_of`).
            terms.push(String::from_utf8_lossy(bytes).into());
            Ok(())
        })?;
        let mut term_of_doc = vec![NONE; reader.max_doc() as usize];
        let mut starts = vec![0u32; count + 1];
        for (doc, term) in term_of_doc.iter_mut().enumerate() {
            if let Some(ord) = column.term_ords(doc as u32).next() {
                *term = ord as u32;
                starts[ord as usize + 1] += 1;
            }
        }
        for t in 0..count {
            starts[t + 1] += starts[t];
        }
        let mut next = starts.clone();
        let mut docs = vec![0u32; starts[count] as usize];
        for (doc, &term) in term_of_doc.iter().enumerate() {
            if term != NONE {
                docs[next[term as usize] as usize] = doc as u32;
                next[term as usize] += 1;
            }
        }
        let by_hash = HashIndex::of(terms.iter().map(|t| t.as_bytes()));
        Ok(Some(SegmentIds {
            terms,
            term_of_doc,
            starts,
            docs,
            by_hash,
        }))
    }

    /// A doc's id, where the column holds one.
    fn id(&self, doc: u32) -> Option<&str> {
        let term = *self.term_of_doc.get(doc as usize)?;
        self.terms.get(term as usize).map(|t| &**t)
    }

    /// The docs whose id is `id`, ascending.
    fn docs(&self, id: &str) -> &[u32] {
        let found = self
            .by_hash
            .find(id.as_bytes(), |t| *self.terms[t as usize] == *id);
        let term = match found {
            Found::At(t) => Some(t as usize),
            Found::Absent => None,
            Found::Search => self
                .terms
                .binary_search_by(|t| t.as_bytes().cmp(id.as_bytes()))
                .ok(),
        };
        match term {
            Some(t) => &self.docs[self.starts[t] as usize..self.starts[t + 1] as usize],
            None => &[],
        }
    }
}

/// The tables of one searcher's segments, by segment ord.
#[derive(Debug)]
pub(crate) struct DocIds {
    segments: Vec<Option<Arc<SegmentIds>>>,
}

impl DocIds {
    /// A doc's id, where its segment's column holds one (`None`: read it from the doc).
    pub(crate) fn id(&self, at: DocAddress) -> Option<&str> {
        self.segments
            .get(at.segment_ord as usize)?
            .as_ref()?
            .id(at.doc_id)
    }

    /// The docs whose id is `id`, by segment then doc; `None` where a segment has no table.
    pub(crate) fn docs(&self, id: &str) -> Option<Vec<DocAddress>> {
        let mut out = Vec::new();
        for (segment, ids) in self.segments.iter().enumerate() {
            let ids = ids.as_ref()?;
            out.extend(
                ids.docs(id)
                    .iter()
                    .map(|doc| DocAddress::new(segment as u32, *doc)),
            );
        }
        Some(out)
    }
}

/// The segment tables a long-lived search has read, kept across index reopens.
#[derive(Debug, Default)]
pub(crate) struct DocIdCache {
    segments: FxHashMap<SegmentId, Arc<SegmentIds>>,
}

impl DocIdCache {
    /// The tables of `searcher`'s segments: those read before, and the rest read now. Tables
    /// of segments the searcher no longer has are dropped.
    pub(crate) fn tables(&mut self, searcher: &Searcher) -> tantivy::Result<DocIds> {
        let readers = searcher.segment_readers();
        self.segments
            .retain(|id, _| readers.iter().any(|r| r.segment_id() == *id));
        let mut segments = Vec::with_capacity(readers.len());
        for reader in readers {
            let id = reader.segment_id();
            let table = match self.segments.get(&id) {
                Some(table) => Some(table.clone()),
                None => SegmentIds::read(reader)?.map(|table| {
                    let table = Arc::new(table);
                    self.segments.insert(id, table.clone());
                    table
                }),
            };
            segments.push(table);
        }
        Ok(DocIds { segments })
    }
}

/// The `id` of each hit, from the `id` fast field looked up in ordinal order per segment
/// (decompressing a stored doc, or seeking the term dictionary, per hit would dominate).
pub(super) fn ids_of(
    searcher: &Searcher,
    id_field: Field,
    hits: &[(f32, DocAddress)],
) -> tantivy::Result<Vec<String>> {
    let mut ids: Vec<String> = vec![String::new(); hits.len()];
    let mut by_segment: std::collections::BTreeMap<u32, Vec<(u64, usize)>> = Default::default();
    let readers = searcher.segment_readers();
    let mut columns = Vec::with_capacity(readers.len());
    for reader in readers {
        columns.push(reader.fast_fields().str(ID_COLUMN)?);
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
                    .get_first(id_field)
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
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tantivy::schema::{Schema, FAST, STORED, STRING};
    use tantivy::{doc, Index, Term};

    #[test]
    fn tables_give_each_doc_s_id_and_each_id_s_docs_across_segments() {
        let mut schema = Schema::builder();
        let id = schema.add_text_field(ID_COLUMN, STRING | FAST | STORED);
        let index = Index::create_in_ram(schema.build());
        let mut writer = index.writer_with_num_threads(1, 15_000_000).unwrap();
        for segment in 0..3 {
            for i in 0..50 {
                writer
                    .add_document(doc!(id => format!("d{:03}", (segment * 50 + i) % 120)))
                    .unwrap();
            }
            writer.commit().unwrap();
        }
        writer.delete_term(Term::from_field_text(id, "d007"));
        writer.commit().unwrap();
        let searcher = index.reader().unwrap().searcher();
        let mut cache = DocIdCache::default();
        let tables = cache.tables(&searcher).unwrap();
        // Every doc's id is the stored one; every id's docs are its postings.
        for (segment, reader) in searcher.segment_readers().iter().enumerate() {
            for doc in 0..reader.max_doc() {
                let at = DocAddress::new(segment as u32, doc);
                let stored: tantivy::TantivyDocument = searcher.doc(at).unwrap();
                use tantivy::schema::Value;
                let want = stored.get_first(id).and_then(|v| v.as_str()).unwrap();
                assert_eq!(tables.id(at), Some(want));
            }
        }
        for n in [0, 7, 30, 119, 200] {
            let key = format!("d{n:03}");
            let mut want = Vec::new();
            for (segment, reader) in searcher.segment_readers().iter().enumerate() {
                let inverted = reader.inverted_index(id).unwrap();
                let term = Term::from_field_text(id, &key);
                if let Some(mut postings) = inverted
                    .read_postings(&term, tantivy::schema::IndexRecordOption::Basic)
                    .unwrap()
                {
                    use tantivy::DocSet;
                    while postings.doc() != tantivy::TERMINATED {
                        want.push(DocAddress::new(segment as u32, postings.doc()));
                        postings.advance();
                    }
                }
            }
            assert_eq!(tables.docs(&key).unwrap(), want, "{key}");
        }
        // Where two terms share a hash, both are still found (the terms are searched).
        let first = tables.segments[0].as_ref().unwrap();
        let mut shared = SegmentIds {
            terms: first.terms.clone(),
            term_of_doc: first.term_of_doc.clone(),
            starts: first.starts.clone(),
            docs: first.docs.clone(),
            by_hash: HashIndex::hashed_by(first.terms.iter().map(|t| t.as_bytes()), |_| 0),
        };
        for term in first.terms.iter() {
            assert_eq!(shared.docs(term), first.docs(term));
            assert!(!shared.docs(term).is_empty());
        }
        shared.by_hash = HashIndex::of(std::iter::empty());
        assert!(shared.docs(&first.terms[0]).is_empty());
        assert!(first.docs("d999").is_empty());
        // A second searcher over the same segments reads nothing again; a merge drops them.
        assert_eq!(cache.segments.len(), 3);
        let again = cache.tables(&searcher).unwrap();
        assert!(Arc::ptr_eq(
            again.segments[0].as_ref().unwrap(),
            tables.segments[0].as_ref().unwrap()
        ));
        let ids: Vec<SegmentId> = searcher
            .segment_readers()
            .iter()
            .map(|r| r.segment_id())
            .collect();
        writer.merge(&ids).wait().unwrap();
        let reader = index.reader().unwrap();
        reader.reload().unwrap();
        cache.tables(&reader.searcher()).unwrap();
        assert_eq!(cache.segments.len(), 1);
    }
}
