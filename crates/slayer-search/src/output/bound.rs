//! The response's size bound (`limits.response_bytes`, docs/spec/limits.md §16.1): a search
//! whose answer would be larger (a cap of hundreds of entities whose texts are long, a
//! hundred memories expanded whole) is cut from its lowest-ranked end, with a warning, so a
//! long-lived server never builds or sends an answer past the bound.

use serde::Serialize;

use super::response::Response;

/// Bytes a hit adds besides its texts (keys, score, kind, punctuation): an over-estimate, so
/// the cheap sum below is never under the real size by much.
const PER_HIT: usize = 160;

/// Cuts `response` to at most `limit` bytes of JSON (what cannot be dropped aside), dropping
/// the last hit of its longest list (entities, example queries, memories, expanded memories)
/// one at a time, and says so in its warnings.
pub(crate) fn bound(response: &mut Response, limit: usize) {
    // Most answers are far below the bound: their texts' lengths say so without serializing.
    if rough_size(response) <= limit / 2 {
        return;
    }
    let total = json_size(response);
    if total <= limit {
        return;
    }
    let before = counts(response);
    let mut size = total;
    // One hit at a time, from the end of the longest list: every list keeps its best.
    while size > limit {
        let [e, q, m, x] = counts(response);
        let longest = e.max(q).max(m).max(x);
        let dropped = if longest == 0 {
            break;
        } else if e == longest {
            response.entities.pop().map(|h| json_size(&h))
        } else if q == longest {
            response.example_queries.pop().map(|h| json_size(&h))
        } else if m == longest {
            response.memories.pop().map(|h| json_size(&h))
        } else {
            response
                .expanded
                .as_mut()
                .and_then(Vec::pop)
                .map(|h| json_size(&h))
        };
        size = size.saturating_sub(dropped.unwrap_or(0) + 1);
    }
    let after = counts(response);
    response.warnings.push(format!(
        "response cut to {} of {} entities, {} of {} example queries, {} of {} memories and {} of {} expanded memories: it was {total} bytes; the limit is {limit} (limits.response_bytes in slayer.toml).",
        after[0], before[0], after[1], before[1], after[2], before[2], after[3], before[3]
    ));
}

fn counts(r: &Response) -> [usize; 4] {
    [
        r.entities.len(),
        r.example_queries.len(),
        r.memories.len(),
        r.expanded.as_ref().map_or(0, Vec::len),
    ]
}

/// The texts' lengths plus a fixed amount per hit.
fn rough_size(r: &Response) -> usize {
    let entities: usize = r.entities.iter().map(|h| h.text.len() + h.id.len()).sum();
    let memories: usize = r.memories.iter().map(|h| h.text.len() + h.id.len()).sum();
    let queries: usize = r
        .example_queries
        .iter()
        .map(|h| h.text.len() + h.query.to_string().len())
        .sum();
    let expanded: usize = r
        .expanded
        .iter()
        .flatten()
        .map(|h| h.text.len() + h.query.as_ref().map_or(0, |q| q.to_string().len()))
        .sum();
    let hits = counts(r).iter().sum::<usize>();
    entities + memories + queries + expanded + hits * PER_HIT + 4096
}

fn json_size(value: &impl Serialize) -> usize {
    serde_json::to_vec(value).map_or(0, |v| v.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::response::EntityHit;

    fn entity(i: usize, text_bytes: usize) -> EntityHit {
        EntityHit {
            id: format!("db.m.c{i}"),
            kind: "column".into(),
            score: 1.0 / (i + 1) as f64,
            text: "x".repeat(text_bytes),
            explain: None,
        }
    }

    #[test]
    fn an_answer_within_the_bound_is_untouched() {
        let mut r = Response {
            entities: (0..10).map(|i| entity(i, 100)).collect(),
            ..Response::default()
        };
        bound(&mut r, 1 << 20);
        assert_eq!(r.entities.len(), 10);
        assert!(r.warnings.is_empty());
    }

    #[test]
    fn a_larger_answer_loses_its_lowest_ranked_hits_and_says_so() {
        let mut r = Response {
            entities: (0..100).map(|i| entity(i, 10_000)).collect(),
            ..Response::default()
        };
        bound(&mut r, 200_000);
        assert!(json_size(&r) <= 200_000 + 2_000, "{}", json_size(&r));
        assert!(
            r.entities.len() < 20 && r.entities.len() > 15,
            "{}",
            r.entities.len()
        );
        assert_eq!(r.entities[0].id, "db.m.c0", "the best stay");
        assert!(
            r.warnings[0].starts_with(&format!(
                "response cut to {} of 100 entities, 0 of 0 example queries",
                r.entities.len()
            )),
            "{:?}",
            r.warnings
        );
        assert!(
            r.warnings[0].ends_with("the limit is 200000 (limits.response_bytes in slayer.toml).")
        );
    }
}
