//! A long ranking sorted only as deep as it is read. Its entries are scattered once into
//! buckets of score ranges, best bucket first; a bucket is sorted when a read reaches it, and an
//! entry's place is its bucket's start plus the entries of its bucket that rank above it,
//! counted. Fusion reads a few hundred places of a ranking of up to a million scores and
//! locates a few hundred keys in it: sorting it whole (and placing every entry) was most of a
//! served broad question's fusion at 1,000,000 memories.
//!
//! Entries are given by index in tie order (equal scores rank in index order unless the owner
//! passes another tie order) and stand for themselves as `rank_keys` keys.

use std::cmp::Ordering;
use std::sync::Mutex;

use rayon::prelude::*;

use crate::channels::rank_keys::{index_of, same_score, score_key, sort_by_high_half};

/// How many entries a bucket holds on average.
const PER_BUCKET: usize = 256;
/// Buckets shorter than this are sorted by comparison: a radix sort clears its counts first.
const RADIX_FROM: usize = 2048;
/// Rankings shorter than this are one bucket, and place every entry at the first place asked.
const PLACED_BELOW: usize = 1 << 15;
/// How long a ranking must be to be bucketed on two cores, and in how many parts.
const PARALLEL_FROM: usize = 1 << 17;
const PARTS: usize = 2;
/// The most buckets: their counts stay in the first-level cache, and the scatter writes to few
/// enough places at once to stay in the second.
const MAX_BUCKETS: usize = 4096;

/// How equal scores rank when not by index: the owner's order of two entries (by index).
pub(crate) type TieOrder<'a> = &'a dyn Fn(usize, usize) -> Ordering;

/// Entries ranked best first, sorted bucket by bucket as they are read.
pub(crate) struct Bucketed {
    best: Option<f32>,
    /// Bucket of a score: `((best - score) * scale)`, cut to the last bucket.
    scale: f32,
    /// Bucket `b` holds the keys at `starts[b]..starts[b + 1]`.
    starts: Vec<u32>,
    sorted: Mutex<Sorted>,
}

/// The bucket of `score`: a monotone map (rounding included), so a better score's bucket is
/// never a later one.
fn bucket_of(best: f32, scale: f32, buckets: usize, score: f32) -> usize {
    (((best - score) * scale) as usize).min(buckets - 1)
}

/// The least and greatest scores of some entries, and whether one is not a number.
#[derive(Clone, Copy)]
struct Spread {
    lo: f32,
    hi: f32,
    nan: bool,
}

impl Spread {
    fn of<T>(entries: &[(f32, T)]) -> Spread {
        // Eight running minima and maxima: one would make each comparison wait for the last.
        const LANES: usize = 8;
        let (mut lo, mut hi) = ([f32::INFINITY; LANES], [f32::NEG_INFINITY; LANES]);
        let mut nan = [false; LANES];
        let chunks = entries.chunks_exact(LANES);
        let rest = chunks.remainder();
        let mut take = |j: usize, s: f32| {
            lo[j] = if s < lo[j] { s } else { lo[j] };
            hi[j] = if s > hi[j] { s } else { hi[j] };
            nan[j] |= s.is_nan();
        };
        for chunk in chunks {
            for (j, (s, _)) in chunk.iter().enumerate() {
                take(j, *s);
            }
        }
        for (j, (s, _)) in rest.iter().enumerate() {
            take(j, *s);
        }
        Spread {
            lo: lo.into_iter().fold(f32::INFINITY, f32::min),
            hi: hi.into_iter().fold(f32::NEG_INFINITY, f32::max),
            nan: nan.contains(&true),
        }
    }

    fn and(self, other: Spread) -> Spread {
        Spread {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
            nan: self.nan || other.nan,
        }
    }

    /// The best score (as `f32::total_cmp` orders) and the width of the scores' range: 0
    /// where they do not spread or are not all finite.
    fn best_and_range<T>(self, entries: &[(f32, T)]) -> (Option<f32>, f32) {
        let finite = !self.nan && self.lo.is_finite() && self.hi.is_finite();
        // Plain comparisons cannot tell -0.0 from 0.0, nor order what is not a number.
        if finite && self.hi != 0.0 {
            return (Some(self.hi), self.hi - self.lo);
        }
        let best = entries.iter().map(|(s, _)| *s).max_by(f32::total_cmp);
        (best, if finite { self.hi - self.lo } else { 0.0 })
    }
}

/// `f` of each part: on as many cores as there are parts.
fn in_parts<P: Sync, R: Send>(parts: &[P], f: impl Fn(&P) -> R + Sync + Send) -> Vec<R> {
    match parts.len() {
        1 => parts.iter().map(f).collect(),
        _ => parts.par_iter().map(f).collect(),
    }
}

/// Key arrays of rankings dropped, kept for the next ones: a long-lived search ranks a
/// million scores per side on every question, and an array taken fresh from the kernel is
/// faulted in page by page (8 MB: up to 8 ms in a virtual machine, against 0.4 ms to clear one
/// kept). At most [`SPARE_ARRAYS`]; a one-shot search never takes one back.
static SPARE: Mutex<Vec<Vec<u64>>> = Mutex::new(Vec::new());
const SPARE_ARRAYS: usize = 4;
/// Shorter rankings take a fresh array: not worth the lock.
const SPARE_FROM: usize = 1 << 16;

/// An empty array with room for `len` keys: a kept one where there is one.
fn spare_keys(len: usize) -> Vec<u64> {
    if len >= SPARE_FROM {
        let mut spare = SPARE.lock().unwrap_or_else(|p| p.into_inner());
        // The largest: it grows least.
        if let Some(at) = (0..spare.len()).max_by_key(|i| spare[*i].capacity()) {
            let mut keys = spare.swap_remove(at);
            keys.clear();
            keys.reserve(len);
            return keys;
        }
    }
    Vec::with_capacity(len)
}

impl Drop for Bucketed {
    fn drop(&mut self) {
        let keys = std::mem::take(&mut self.lock().keys);
        if keys.capacity() >= SPARE_FROM {
            let mut spare = SPARE.lock().unwrap_or_else(|p| p.into_inner());
            if spare.len() < SPARE_ARRAYS {
                spare.push(keys);
            }
        }
    }
}

struct Sorted {
    /// Every entry's key, grouped by bucket; a bucket's keys are in rank order once `done`.
    keys: Vec<u64>,
    done: Vec<bool>,
    /// A short ranking's places, by index: made on its first place asked, every bucket
    /// sorted.
    places: Option<Vec<u32>>,
}

/// An entry's key: its score's order in the high half (ascending is best first), its index in
/// the low half (`rank_keys`).
fn key(index: usize, score: f32) -> u64 {
    (u64::from(!score_key(score)) << 32) | index as u64
}

impl Bucketed {
    /// The ranking of these entries (`(score, …)`, by index).
    pub(crate) fn new<T: Sync>(entries: &[(f32, T)]) -> Bucketed {
        let len = entries.len();
        debug_assert!(len <= u32::MAX as usize);
        // Long rankings are measured and counted in parts on two cores at once.
        let parts: Vec<&[(f32, T)]> = match len >= PARALLEL_FROM {
            true => entries.chunks(len.div_ceil(PARTS)).collect(),
            false => vec![entries],
        };
        let (best, range) = in_parts(&parts, |part| Spread::of(part))
            .into_iter()
            .reduce(Spread::and)
            .map_or((None, 0.0), |s| s.best_and_range(entries));
        // One bucket where scores do not spread (or are not all numbers), and for a short
        // ranking (read nearly whole): the first read sorts it whole. Otherwise score ranges
        // of equal width, best first: a monotone map, so no entry outranks an entry of an
        // earlier bucket.
        let buckets = match range > 0.0 && len >= PLACED_BELOW {
            true => (len / PER_BUCKET).clamp(1, MAX_BUCKETS),
            false => 1,
        };
        let scale = if buckets > 1 {
            buckets as f32 / range
        } else {
            0.0
        };
        let top = best.unwrap_or(0.0);
        let mut keys = spare_keys(len);
        let mut starts = vec![0u32; buckets + 1];
        if buckets == 1 {
            starts[1] = len as u32;
            keys.extend(entries.iter().enumerate().map(|(i, (s, _))| key(i, *s)));
        } else {
            let bucket = |s: f32| bucket_of(top, scale, buckets, s);
            let counts = in_parts(&parts, |part| {
                let mut count = vec![0u32; buckets];
                for (s, _) in part.iter() {
                    count[bucket(*s)] += 1;
                }
                count
            });
            for b in 0..buckets {
                starts[b + 1] = starts[b] + counts.iter().map(|c| c[b]).sum::<u32>();
            }
            keys.resize(len, 0);
            // One pass writes every key to its bucket's next place (on one core: parts would
            // need a share of each bucket apiece, and writing through those took twice as
            // long).
            let mut next: Vec<u32> = starts[..buckets].to_vec();
            for (i, (s, _)) in entries.iter().enumerate() {
                let at = &mut next[bucket(*s)];
                keys[*at as usize] = key(i, *s);
                *at += 1;
            }
        }
        Bucketed {
            best,
            scale,
            starts,
            sorted: Mutex::new(Sorted {
                keys,
                done: vec![false; buckets],
                places: None,
            }),
        }
    }

    /// The best score.
    pub(crate) fn best(&self) -> Option<f32> {
        self.best
    }

    fn buckets(&self) -> usize {
        self.starts.len() - 1
    }

    fn bucket_of(&self, score: f32) -> usize {
        bucket_of(self.best.unwrap_or(0.0), self.scale, self.buckets(), score)
    }

    /// The keys of places `start..end` (cut to the length), best first.
    pub(crate) fn range(&self, start: usize, end: usize, tie: Option<TieOrder>) -> Vec<u64> {
        let mut sorted = self.lock();
        let end = end.min(sorted.keys.len());
        let start = start.min(end);
        if start == end {
            return Vec::new();
        }
        // The buckets that hold places start..end: from the last starting at or before
        // `start` to the first ending at or after `end`.
        let first = self.starts.partition_point(|s| (*s as usize) <= start) - 1;
        let mut b = first;
        while b < self.buckets() && (self.starts[b] as usize) < end {
            sorted.sort(b, &self.starts, tie);
            b += 1;
        }
        sorted.keys[start..end].to_vec()
    }

    /// The 0-based place of the entry `index` with `score`: the entries of its bucket that
    /// rank above it, counted (its bucket need not be sorted).
    pub(crate) fn place(&self, index: usize, score: f32, tie: Option<TieOrder>) -> usize {
        let mut sorted = self.lock();
        if sorted.keys.len() < PLACED_BELOW {
            // A short ranking is sorted whole and every entry placed, once: fusion reads most
            // of it and asks many places (the entity side of a catalog's few thousand docs).
            if sorted.places.is_none() {
                let mut places = vec![0u32; sorted.keys.len()];
                for b in 0..self.buckets() {
                    sorted.sort(b, &self.starts, tie);
                }
                for (place, k) in sorted.keys.iter().enumerate() {
                    places[index_of(*k)] = place as u32;
                }
                sorted.places = Some(places);
            }
            if let Some(places) = &sorted.places {
                return places[index] as usize;
            }
        }
        let b = self.bucket_of(score);
        let own = key(index, score);
        let (from, to) = (self.starts[b] as usize, self.starts[b + 1] as usize);
        let keys = &sorted.keys[from..to];
        let above = match tie {
            None => keys.iter().filter(|k| **k < own).count(),
            Some(tie) => keys
                .iter()
                .filter(|k| {
                    if same_score(**k, own) {
                        tie(index_of(**k), index) == Ordering::Less
                    } else {
                        **k < own
                    }
                })
                .count(),
        };
        from + above
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Sorted> {
        // A panic while sorting leaves the keys a permutation of the bucket's: still whole.
        self.sorted.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Sorted {
    /// Sorts bucket `b` into rank order, once.
    fn sort(&mut self, b: usize, starts: &[u32], tie: Option<TieOrder>) {
        if self.done[b] {
            return;
        }
        let keys = &mut self.keys[starts[b] as usize..starts[b + 1] as usize];
        // The scatter kept index order within a bucket, so a stable sort by score gives
        // ties in index order; so does any sort of a few keys whole (no two are equal).
        if keys.len() < RADIX_FROM {
            keys.sort_unstable();
        } else {
            sort_by_high_half(keys);
        }
        if let Some(tie) = tie {
            let mut at = 0;
            while at < keys.len() {
                let run = keys[at..]
                    .iter()
                    .take_while(|k| same_score(**k, keys[at]))
                    .count();
                if run > 1 {
                    keys[at..at + run].sort_by(|a, b| tie(index_of(*a), index_of(*b)));
                }
                at += run;
            }
        }
        self.done[b] = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::channels::rank_keys::score_of;

    /// Scores with runs of ties, both signs, spread or clustered, and now and then not a number.
    fn scores(n: usize, spread: u32, odd: bool) -> Vec<f32> {
        let mut seed = 7u64 + n as u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
            (seed >> 33) as u32
        };
        (0..n)
            .map(|i| {
                let s = (next() % spread) as f32 / 9.0 - (spread / 18) as f32;
                match next() % 97 {
                    0 => -0.0,
                    1 if odd => f32::NAN,
                    2 if odd => f32::NEG_INFINITY,
                    _ if i % 11 == 0 => s * 1e-6,
                    _ => s,
                }
            })
            .collect()
    }

    /// Best first, ties by `tie` (or by index).
    fn whole(scores: &[f32], tie: Option<TieOrder>) -> Vec<usize> {
        let mut want: Vec<usize> = (0..scores.len()).collect();
        want.sort_by(|a, b| {
            scores[*b]
                .total_cmp(&scores[*a])
                .then_with(|| tie.map_or(a.cmp(b), |t| t(*a, *b)))
        });
        want
    }

    #[test]
    fn read_in_steps_and_placed_it_is_the_whole_sort() {
        // Ties broken backwards by index: an order the scatter does not give on its own.
        let backwards = |a: usize, b: usize| b.cmp(&a);
        for n in [0usize, 1, 2, 255, 256, 1000, 40_000] {
            for spread in [2u32, 50, 1 << 20] {
                for odd in [false, true] {
                    let scores = scores(n, spread, odd);
                    for tie in [None, Some(&backwards as TieOrder)] {
                        let want = whole(&scores, tie);
                        let entries: Vec<(f32, ())> = scores.iter().map(|s| (*s, ())).collect();
                        let ranking = Bucketed::new(&entries);
                        let case = format!("n {n} spread {spread} odd {odd} tie {}", tie.is_some());
                        // Places before anything is sorted, then reads in steps, then places.
                        for (place, i) in want.iter().enumerate().step_by(7) {
                            assert_eq!(ranking.place(*i, scores[*i], tie), place, "{case}");
                        }
                        let mut read = Vec::new();
                        let mut depth = 1;
                        while read.len() < n {
                            read.extend(ranking.range(read.len(), depth, tie));
                            depth *= 3;
                        }
                        let got: Vec<usize> = read.iter().map(|k| index_of(*k)).collect();
                        assert_eq!(got, want, "{case}");
                        for k in &read {
                            assert_eq!(score_of(*k).to_bits(), scores[index_of(*k)].to_bits());
                        }
                        for (place, i) in want.iter().enumerate() {
                            assert_eq!(ranking.place(*i, scores[*i], tie), place, "{case}");
                        }
                        let best = scores.iter().copied().max_by(f32::total_cmp);
                        assert_eq!(ranking.best().map(f32::to_bits), best.map(f32::to_bits));
                        assert!(ranking.range(n, n + 5, tie).is_empty());
                    }
                }
            }
        }
    }

    /// A read from the middle sorts only the buckets it reaches.
    #[test]
    fn a_read_sorts_only_the_buckets_it_reaches() {
        let scores = scores(100_000, 1 << 20, false);
        let entries: Vec<(f32, ())> = scores.iter().map(|s| (*s, ())).collect();
        let ranking = Bucketed::new(&entries);
        assert!(ranking.buckets() > 100);
        let top = ranking.range(0, 64, None);
        assert_eq!(top.len(), 64);
        let done = ranking.lock().done.iter().filter(|d| **d).count();
        assert!(done < 5, "{done} buckets sorted for the first 64 places");
    }
}
