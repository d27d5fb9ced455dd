//! Session neighbours on the memory side (docs/spec/fusion.md §8.11): a conversation is saved
//! a memory at a time, and the answer to a question often sits in the memory saved just
//! before or after the one whose words match it ("How'd they like it?" / "The kids loved
//! the clay!"). Each of the first [`NEIGHBOUR_HITS`] memories of the fused head brings the
//! memories saved just before and after it in its session, each gaining `weight` × the hit's
//! score (the most any hit gives it), so a neighbour lands beside its hit or just below.
//! Pure: the neighbours come from the caller, already checked against the request's scope.

use rustc_hash::FxHashMap;
use slayer_common::canonical::{memory_id_of, memory_ref};

use crate::fusion::fuse::{Contribution, Fused};

/// How many of the first memories this stage reads, whatever the cap: a neighbour already
/// among them keeps its fused score beside what it gains.
pub(crate) const NEIGHBOUR_WINDOW: usize = 50;

/// How many of the head's first memories bring their neighbours.
pub(crate) const NEIGHBOUR_HITS: usize = 5;

/// The channel name of what a neighbour gains from its hit; its `raw_score` is the hit's
/// score.
pub(crate) const SESSION: &str = "session";

/// `head` with the neighbours of its first [`NEIGHBOUR_HITS`] memories raised (or brought
/// in), re-sorted, equal scores keeping their order. `neighbours(id)` gives the ids saved
/// just before and after `id` in its session that the request may return as memories.
pub(crate) fn bring<E>(
    mut head: Vec<Fused>,
    weight: f64,
    mut neighbours: impl FnMut(&str) -> Result<Vec<String>, E>,
) -> Result<Vec<Fused>, E> {
    // What each neighbour gains: the most any hit gives, with that hit's place and score.
    let mut gains: FxHashMap<String, (f64, usize, f64)> = FxHashMap::default();
    for (place, hit) in head.iter().take(NEIGHBOUR_HITS).enumerate() {
        let Some(id) = memory_id_of(&hit.key) else {
            continue;
        };
        let gain = weight * hit.score.max(0.0);
        for n in neighbours(id)? {
            let key = memory_ref(&n);
            let better = gains.get(&key).is_none_or(|(g, _, _)| gain > *g);
            if better && gain > 0.0 {
                gains.insert(key, (gain, place + 1, hit.score));
            }
        }
    }
    if gains.is_empty() {
        return Ok(head);
    }
    for f in head.iter_mut() {
        if let Some((gain, rank, hit_score)) = gains.remove(&f.key) {
            raise(f, gain, rank, hit_score);
        }
    }
    // The neighbours the head lacked join it, in the order of the hits that brought them.
    let mut joining: Vec<(String, (f64, usize, f64))> = gains.into_iter().collect();
    joining.sort_by(|a, b| a.1 .1.cmp(&b.1 .1).then_with(|| a.0.cmp(&b.0)));
    for (key, (gain, rank, hit_score)) in joining {
        let mut f = Fused {
            key,
            score: 0.0,
            contributions: Vec::new(),
        };
        raise(&mut f, gain, rank, hit_score);
        head.push(f);
    }
    head.sort_by(|a, b| b.score.total_cmp(&a.score));
    Ok(head)
}

fn raise(f: &mut Fused, gain: f64, rank: usize, hit_score: f64) {
    f.contributions.push(Contribution {
        channel: SESSION,
        rank,
        raw_score: Some(hit_score),
        contribution: gain,
    });
    f.score += gain;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fused(id: &str, score: f64) -> Fused {
        Fused {
            key: memory_ref(id),
            score,
            contributions: vec![],
        }
    }

    fn keys(list: &[Fused]) -> Vec<&str> {
        list.iter().map(|f| f.key.as_str()).collect()
    }

    fn around(id: &str) -> Result<Vec<String>, ()> {
        Ok(match id {
            "q" => vec!["p".into(), "answer".into()],
            "x" => vec!["y".into()],
            _ => vec![],
        })
    }

    #[test]
    fn the_memory_saved_after_a_hit_lands_beside_it() {
        let head = vec![fused("q", 1.0), fused("z", 0.8), fused("x", 0.2)];
        let out = bring(head, 0.9, around).unwrap();
        assert_eq!(
            keys(&out),
            [
                "memory:q",
                "memory:answer",
                "memory:p",
                "memory:z",
                "memory:x",
                "memory:y"
            ]
        );
        let answer = &out[1];
        assert_eq!(answer.contributions[0].channel, SESSION);
        assert_eq!(answer.contributions[0].rank, 1);
        assert!((answer.score - 0.9).abs() < 1e-12);
    }

    #[test]
    fn a_neighbour_in_the_head_gains_the_most_a_hit_gives_once() {
        let head = vec![fused("q", 1.0), fused("answer", 0.1), fused("x", 0.5)];
        let out = bring(head, 0.5, around).unwrap();
        let answer = out.iter().find(|f| f.key == "memory:answer").unwrap();
        assert!((answer.score - 0.6).abs() < 1e-12);
        assert_eq!(answer.contributions.len(), 1);
    }

    #[test]
    fn nothing_changes_without_neighbours_or_weight() {
        let head = vec![fused("a", 1.0), fused("b", 0.5)];
        assert_eq!(bring(head.clone(), 0.5, around).unwrap(), head);
        let head = vec![fused("q", 1.0), fused("b", 0.5)];
        assert_eq!(bring(head.clone(), 0.0, around).unwrap(), head);
    }
}
