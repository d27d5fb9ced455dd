//! Stages 4 and 5, fuse and fill buckets: each side's rankings are fused (§8, read only as
//! deep as the buckets need, see [`Deepening::fill`]) and the fused order is walked into the
//! response's buckets, each to its own cap. So a bucket depends only on corpus, inputs and its
//! own cap, and a smaller cap gives a prefix.
//!
//! Pure over a [`Deepening`]: the store is reached only through the hit closure of
//! [`fill_entity_bucket`], so the tests below run in process.

use rustc_hash::FxHashSet;
use slayer_common::canonical::{memory_id_of, memory_ref};

use crate::fusion::answer_first;
use crate::fusion::deepening::{Deepening, DEEPER, FIRST_DEPTH};
use crate::fusion::fuse::Fused;
use crate::fusion::model_evidence;
use crate::intent::{Intent, Kind};
use crate::request::Request;
use crate::tuning::ModelEvidence;
use crate::SearchError;

/// Up to this many query-bearing memories, their bucket is computed from all of them.
pub(crate) const EXACT_BUCKET: usize = 20_000;

/// The request's bucket caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caps {
    /// Cap of `memories` (learning-only memories).
    pub memories: usize,
    /// Cap of `example_queries` (query-bearing memories).
    pub example_queries: usize,
    /// Cap of `entities`.
    pub entities: usize,
}

impl Caps {
    /// The caps a request asks for.
    pub(crate) fn of(req: &Request) -> Caps {
        Caps {
            memories: req.max_memories,
            example_queries: req.max_example_queries,
            entities: req.max_entities,
        }
    }

    /// How deep the memory side's text ranking is read first.
    pub(crate) fn memory_depth(&self) -> usize {
        FIRST_DEPTH.max(DEEPER * (self.memories + self.example_queries))
    }

    /// How deep the entity side's text ranking is read first.
    pub(crate) fn entity_depth(&self) -> usize {
        FIRST_DEPTH.max(DEEPER * self.entities)
    }
}

/// The two memory buckets, named as the response's: `memories` takes learning-only memories,
/// `example_queries` query-bearing ones, each up to its cap, in the order offered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemoryBuckets<T> {
    /// Learning-only memories.
    pub memories: Vec<T>,
    /// Query-bearing memories.
    pub example_queries: Vec<T>,
    caps: (usize, usize),
}

impl<T> MemoryBuckets<T> {
    /// Empty buckets with these caps.
    pub(crate) fn new(memories: usize, example_queries: usize) -> Self {
        MemoryBuckets {
            memories: Vec::new(),
            example_queries: Vec::new(),
            caps: (memories, example_queries),
        }
    }

    /// Puts the entry in the bucket its query flag names, if that one has room.
    pub(crate) fn offer(&mut self, entry: T, has_query: bool) {
        let (bucket, cap) = if has_query {
            (&mut self.example_queries, self.caps.1)
        } else {
            (&mut self.memories, self.caps.0)
        };
        if bucket.len() < cap {
            bucket.push(entry);
        }
    }

    /// Whether both buckets are at their caps.
    pub(crate) fn full(&self) -> bool {
        self.memories.len() >= self.caps.0 && self.example_queries.len() >= self.caps.1
    }
}

/// Fills the memory buckets from the memory side's fusion; `with_query` holds the ids of the
/// query-bearing memories. While there are at most `exact_limit` of those (they are usually
/// few), their bucket is computed exactly from where each of them sits, so a bucket that cannot
/// fill never makes us read every hit; past it, both buckets fill from the fused walk.
pub(crate) fn fill_memory_buckets(
    fusion: &mut Deepening<'_, '_>,
    with_query: &FxHashSet<String>,
    caps: &Caps,
    exact_limit: usize,
) -> Result<MemoryBuckets<Fused>, SearchError> {
    let exact = with_query.len() <= exact_limit;
    let mut examples = Vec::new();
    if exact {
        let keys: Vec<String> = with_query.iter().map(|id| memory_ref(id)).collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        examples = fusion.exact(&keys)?;
        examples.truncate(caps.example_queries);
    }
    // Computed exactly, the example bucket takes nothing from the walk (a zero cap).
    let walked_examples = if exact { 0 } else { caps.example_queries };
    let mut buckets = fusion.fill(|settled| {
        let buckets = walk_memory_buckets(settled, with_query, caps.memories, walked_examples);
        let full = buckets.full();
        Ok((buckets, full))
    })?;
    if exact {
        buckets.example_queries = examples;
    }
    Ok(buckets)
}

/// Walks fused memories in order into the two buckets, each up to its cap; `with_query`
/// holds the ids of the query-bearing memories.
pub(crate) fn walk_memory_buckets(
    order: impl IntoIterator<Item = Fused>,
    with_query: &FxHashSet<String>,
    memories: usize,
    example_queries: usize,
) -> MemoryBuckets<Fused> {
    let mut buckets = MemoryBuckets::new(memories, example_queries);
    for f in order {
        let Some(id) = memory_id_of(&f.key) else {
            continue;
        };
        let has_query = with_query.contains(id);
        buckets.offer(f, has_query);
        if buckets.full() {
            break;
        }
    }
    buckets
}

/// How the entity side's fused list is reordered before the bucket is filled: model-level
/// evidence, then the answer-first head (docs/spec/fusion.md §8.6, §8.9).
pub(crate) struct EntityOrder<'q, C, K, F> {
    /// Model-level evidence.
    pub evidence: ModelEvidence,
    /// The question, when there is one.
    pub question: Option<&'q str>,
    /// The key columns joining two models.
    pub connecting: C,
    /// How many first places are arranged for the question (0: none).
    pub answer_head: usize,
    /// What an entity is.
    pub kind_of: K,
    /// The formulas of measures, by id.
    pub formulas: F,
}

/// What [`fill_entity_bucket`] gives.
pub(crate) struct EntityFill<H> {
    /// The entity bucket.
    pub bucket: Vec<H>,
    /// The fused order (the evidence's when a depth was asked for), for the schema answer.
    pub ordered: Vec<Fused>,
    /// The intent the answer-first head was arranged for.
    pub intent: Option<Intent>,
}

/// Fills the entity bucket from the entity side's fusion, up to `cap` hits, after model-level
/// evidence reorders the fused list's first entries and the answer-first arrangement its
/// head; `hit` builds one (`None`: its doc is gone, and the next entry takes the place). Also
/// gives the fused order itself, at least `depth` entries deep where the fusion has them (the
/// schema answer reads it; a deeper read never changes the bucket): the evidence's order when
/// `depth` is set, before the head is arranged; and the intent chosen.
pub(crate) fn fill_entity_bucket<H, C, K, F>(
    fusion: &mut Deepening<'_, '_>,
    cap: usize,
    depth: usize,
    order: &EntityOrder<'_, C, K, F>,
    mut hits: impl FnMut(&[Fused]) -> Result<Vec<Option<H>>, SearchError>,
) -> Result<EntityFill<H>, SearchError>
where
    C: Fn(&str, &str) -> Vec<String>,
    K: Fn(&str) -> Kind,
    F: Fn(&[&str]) -> Result<Vec<String>, SearchError>,
{
    let evidence = &order.evidence;
    // The evidence reads a fixed window whatever the cap, so that a smaller cap is a prefix.
    let mut need = if evidence.is_on() || order.answer_head > 0 {
        cap.max(evidence.window).max(answer_first::WINDOW)
    } else {
        cap
    }
    .max(depth);
    loop {
        let settled = fusion.fill(|settled| {
            let full = settled.len() >= need;
            Ok((settled, full))
        })?;
        let exhausted = settled.len() < need;
        let ordered = model_evidence::apply(
            settled,
            evidence,
            order.question,
            |keys| fusion.exact(keys),
            &order.connecting,
        )?;
        // The schema answer reads the evidence's order (it ranks each model's columns itself);
        // the bucket, the arranged one.
        let evidence_order = (depth > 0).then(|| ordered.clone());
        let (arranged, intent) = answer_first::arrange(
            ordered,
            order.question,
            order.answer_head,
            answer_first::WINDOW,
            &order.kind_of,
            &order.formulas,
            |keys| fusion.exact(keys),
        )?;
        // The hits of as many entries as the bucket lacks, in one read each round (a store on
        // a server answers each read over the network); an entry whose doc is gone has none
        // and is passed over, and the next round reads past it.
        let mut bucket: Vec<H> = Vec::new();
        let mut next = 0;
        while bucket.len() < cap && next < arranged.len() {
            let end = (next + cap - bucket.len()).min(arranged.len());
            bucket.extend(hits(&arranged[next..end])?.into_iter().flatten());
            next = end;
        }
        if bucket.len() >= cap || exhausted {
            return Ok(EntityFill {
                bucket,
                ordered: evidence_order.unwrap_or(arranged),
                intent,
            });
        }
        need += cap - bucket.len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::ranked::Ranking;
    use crate::tuning::Fusion;

    fn ranking(channel: &'static str, keys: &[&str]) -> Ranking {
        Ranking {
            channel,
            hits: keys.iter().map(|k| (k.to_string(), None)).collect(),
        }
    }

    fn caps(memories: usize, example_queries: usize) -> Caps {
        Caps {
            memories,
            example_queries,
            entities: 0,
        }
    }

    fn ids(fused: &[Fused]) -> Vec<&str> {
        fused.iter().map(|f| f.key.as_str()).collect()
    }

    /// Memories 1..=8 ranked by channel 1 and dense; 2, 5 and 7 carry a query.
    fn memory_buckets(caps: &Caps, exact_limit: usize) -> MemoryBuckets<Fused> {
        let bm25 = ranking(
            "bm25",
            &["memory:1", "memory:2", "memory:3", "memory:4", "memory:5"],
        );
        let dense = ranking(
            "dense",
            &["memory:6", "memory:5", "memory:7", "memory:8", "memory:2"],
        );
        let dense = crate::channels::ranked::DenseRanking::Listed(dense);
        let with_query: FxHashSet<String> = ["2", "5", "7"].into_iter().map(String::from).collect();
        let mut fusion =
            Deepening::new(&bm25, None, &dense, caps.memory_depth(), Fusion::RRF).unwrap();
        fill_memory_buckets(&mut fusion, &with_query, caps, exact_limit).unwrap()
    }

    #[test]
    fn query_bearing_memories_fill_example_queries_and_the_rest_memories() {
        let b = memory_buckets(&caps(10, 10), EXACT_BUCKET);
        // 2 and 5 tie (1/62 + 1/65 each): 2 sits higher in bm25, the first ranking. Each
        // single-channel pair ties too (1 and 6, 3 and 7, 4 and 8): bm25's key first.
        assert_eq!(
            ids(&b.example_queries),
            ["memory:2", "memory:5", "memory:7"]
        );
        assert_eq!(
            ids(&b.memories),
            ["memory:1", "memory:6", "memory:3", "memory:4", "memory:8"]
        );
    }

    #[test]
    fn each_bucket_stops_at_its_own_cap_and_a_smaller_cap_gives_a_prefix() {
        let whole = memory_buckets(&caps(10, 10), EXACT_BUCKET);
        for (m, q) in [(0, 0), (1, 0), (0, 1), (2, 1), (3, 2), (5, 3)] {
            let b = memory_buckets(&caps(m, q), EXACT_BUCKET);
            assert_eq!(ids(&b.memories), ids(&whole.memories)[..m.min(5)]);
            assert_eq!(
                ids(&b.example_queries),
                ids(&whole.example_queries)[..q.min(3)]
            );
        }
    }

    #[test]
    fn the_exact_example_bucket_equals_the_walked_one() {
        for (m, q) in [(0, 2), (1, 1), (5, 3), (10, 10)] {
            let exact = memory_buckets(&caps(m, q), EXACT_BUCKET);
            let walked = memory_buckets(&caps(m, q), 0);
            assert_eq!(exact.memories, walked.memories);
            assert_eq!(exact.example_queries, walked.example_queries);
        }
    }

    #[test]
    fn equal_scores_keep_first_insertion_order_across_channels() {
        // Every key once, at rank 1 or 2: 1 and 3 tie at 1/61, 2 and 4 at 1/62; channel 1's
        // key comes first in each tie.
        let bm25 = ranking("bm25", &["memory:1", "memory:2"]);
        let dense = ranking("dense", &["memory:3", "memory:4"]);
        let dense = crate::channels::ranked::DenseRanking::Listed(dense);
        let mut fusion = Deepening::new(&bm25, None, &dense, FIRST_DEPTH, Fusion::RRF).unwrap();
        let b = fill_memory_buckets(&mut fusion, &FxHashSet::default(), &caps(4, 2), 0).unwrap();
        assert_eq!(
            ids(&b.memories),
            ["memory:1", "memory:3", "memory:2", "memory:4"]
        );
        assert!(b.example_queries.is_empty());
        assert_eq!(b.memories[0].score, b.memories[1].score);
    }

    #[test]
    fn entity_keys_never_enter_the_memory_buckets() {
        let bm25 = ranking("bm25", &["db.orders", "memory:1"]);
        let dense = ranking("dense", &[]);
        let dense = crate::channels::ranked::DenseRanking::Listed(dense);
        let mut fusion = Deepening::new(&bm25, None, &dense, 64, Fusion::RRF).unwrap();
        let b = fill_memory_buckets(&mut fusion, &FxHashSet::default(), &caps(5, 5), 0).unwrap();
        assert_eq!(ids(&b.memories), ["memory:1"]);
    }

    #[test]
    fn the_entity_bucket_skips_entries_without_a_hit_and_still_fills_its_cap() {
        let named = ranking("named", &["db.a", "db.gone", "db.b"]);
        let dense = ranking("dense", &["db.c", "db.a"]);
        let dense = crate::channels::ranked::DenseRanking::Listed(dense);
        let fill = |cap: usize| {
            let mut fusion = Deepening::new(&named, None, &dense, 64, Fusion::RRF).unwrap();
            fill_entity_bucket(
                &mut fusion,
                cap,
                0,
                &EntityOrder {
                    evidence: ModelEvidence::OFF,
                    question: None,
                    connecting: |_: &str, _: &str| Vec::new(),
                    answer_head: 0,
                    kind_of: |_: &str| Kind::Other,
                    formulas: |_: &[&str]| Ok(Vec::new()),
                },
                |fused| {
                    Ok(fused
                        .iter()
                        .map(|f| (f.key != "db.gone").then(|| f.key.clone()))
                        .collect())
                },
            )
            .unwrap()
            .bucket
        };
        // a: 1/61 + 1/62; then c (1/61) before b (1/63); gone is skipped.
        assert_eq!(fill(10), ["db.a", "db.c", "db.b"]);
        assert_eq!(fill(2), ["db.a", "db.c"]);
        assert!(fill(0).is_empty());
    }

    #[test]
    fn with_model_evidence_a_smaller_entity_cap_still_gives_a_prefix() {
        let keys: Vec<String> = (0..150)
            .map(|i| format!("db.m{}.c{i}", i % 7))
            .chain((0..7).map(|m| format!("db.m{m}")))
            .collect();
        let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
        let dense = ranking("dense", &keys);
        let dense = crate::channels::ranked::DenseRanking::Listed(dense);
        let fill_at = |cap: usize, depth: usize| {
            let mut fusion =
                Deepening::new(&ranking("named", &[]), None, &dense, 64, Fusion::RRF).unwrap();
            // The answer-first head arranges a question's list whatever the cap too.
            fill_entity_bucket(
                &mut fusion,
                cap,
                depth,
                &EntityOrder {
                    evidence: ModelEvidence::default(),
                    question: Some("how many c3"),
                    connecting: |_: &str, _: &str| Vec::new(),
                    answer_head: 5,
                    kind_of: |key: &str| match key.matches('.').count() {
                        1 => Kind::Model,
                        _ if key.ends_with('3') => Kind::Measure,
                        _ => Kind::Other,
                    },
                    formulas: |ids: &[&str]| Ok(ids.iter().map(|_| String::new()).collect()),
                },
                |fused| Ok(fused.iter().map(|f| Some(f.key.clone())).collect()),
            )
            .map(|filled| (filled.bucket, filled.ordered))
            .unwrap()
        };
        let depth = 0;
        let fill = |cap| fill_at(cap, depth).0;
        let whole = fill(200);
        assert_eq!(whole.len(), 157);
        // A metric question: its best measure (`c3`, the first of the equally matched `…3`
        // leaves), then the next two measures (they match as well as that measure's model
        // does), then the model; then the models of the best leaves: m0 (c0, c7).
        assert_eq!(
            &whole[..5],
            ["db.m3.c3", "db.m2.c23", "db.m6.c13", "db.m3", "db.m0"]
        );
        for cap in [0, 1, 3, 10, 99, 100, 101, 150] {
            assert_eq!(fill(cap), whole[..cap], "cap {cap}");
            // Read deeper for a schema answer, the bucket is the same and the order its
            // extension.
            let (bucket, ordered) = fill_at(cap, 140);
            assert_eq!(bucket, whole[..cap], "cap {cap}, depth 140");
            assert!(ordered.len() >= 140);
            // The schema answer reads the evidence's order: the models of the best leaves
            // first, the head not arranged.
            let keys: Vec<&str> = ordered.iter().map(|f| f.key.as_str()).collect();
            assert_eq!(keys[..3], ["db.m0", "db.m1", "db.m2"]);
        }
    }

    #[test]
    fn offers_beyond_a_cap_are_dropped_and_full_means_both_caps() {
        let mut b = MemoryBuckets::new(1, 2);
        b.offer("m1", false);
        b.offer("m2", false);
        b.offer("q1", true);
        assert!(!b.full());
        b.offer("q2", true);
        b.offer("q3", true);
        assert!(b.full());
        assert_eq!(b.memories, ["m1"]);
        assert_eq!(b.example_queries, ["q1", "q2"]);
        assert!(MemoryBuckets::<()>::new(0, 0).full());
    }
}
