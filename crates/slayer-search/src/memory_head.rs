//! The memory side's head, arranged after fusion: the time rules (docs/spec/fusion.md §8.10),
//! session neighbours (§8.11) and supersession (docs/spec/search.md §9.14), the stages that
//! read event times, sessions, tags and texts of a few memories from the store. Each arranges
//! a fixed number of the first memories whatever the cap (the rest keep the fused order), so
//! a smaller cap still gives a prefix of a larger one.

use std::collections::HashMap;

use slayer_common::canonical::memory_id_of;

use crate::context::Context;
use crate::corpus::Scope;
use crate::fusion::buckets::{Caps, MemoryBuckets};
use crate::fusion::fuse::{Contribution, Fused};
use crate::fusion::memory_time::{self, TIME_WINDOW};
use crate::fusion::neighbours::{self, NEIGHBOUR_WINDOW};
use crate::inputs::Inputs;
use crate::output::hits;
use crate::output::supersession::{self, Candidate, SUPERSEDED, SUPERSEDED_FACTOR};
use crate::request::Request;
use crate::time_cues::TimeCues;
use crate::SearchError;

/// How many of the first memories supersession reads (docs/spec/search.md §9.14): what an
/// agent reads first. Wider windows fill the memory side deeper for every question (20 cost
/// served questions at 100,000 memories 1.29× in the standing A/B, 10 cost 1.15× at p95).
pub(crate) const SUPERSESSION_WINDOW: usize = 5;

/// What a request asks of the memory head: the time cues of its question and whether the
/// store's sessions bring neighbours.
pub(crate) struct MemoryHead {
    time_cues: Option<TimeCues>,
    sessions: bool,
}

impl MemoryHead {
    /// The caps the memory side is filled to: at least the stages' windows.
    pub(crate) fn caps(&self, caps: &Caps) -> Caps {
        let mut window = SUPERSESSION_WINDOW;
        if self.time_cues.is_some() {
            window = window.max(TIME_WINDOW);
        }
        if self.sessions {
            window = window.max(NEIGHBOUR_WINDOW);
        }
        Caps {
            memories: caps.memories.max(window),
            ..*caps
        }
    }
}

/// Runs `stage` on the first `window` of `memories`, the rest kept after it in their order
/// (less any the stage brought into the window).
fn within<E>(
    mut memories: Vec<Fused>,
    window: usize,
    stage: impl FnOnce(Vec<Fused>) -> Result<Vec<Fused>, E>,
) -> Result<Vec<Fused>, E> {
    let tail = memories.split_off(window.min(memories.len()));
    let mut head = stage(memories)?;
    let taken: rustc_hash::FxHashSet<&str> = head.iter().map(|f| f.key.as_str()).collect();
    let tail: Vec<Fused> = tail
        .into_iter()
        .filter(|f| !taken.contains(f.key.as_str()))
        .collect();
    head.extend(tail);
    Ok(head)
}

impl Context<'_> {
    /// The stages a request's memory head goes through.
    pub(crate) fn memory_head(
        &self,
        req: &Request,
        inputs: &Inputs<'_>,
    ) -> Result<MemoryHead, SearchError> {
        // A bad `as_of` is refused whether or not the request has a question to read it.
        let today = req.today()?;
        let time_cues = match (inputs.question, req.tuning.time_weight > 0.0) {
            (Some(q), true) => Some(TimeCues::of(q, today)).filter(|c| !c.is_empty()),
            _ => None,
        };
        let sessions = req.tuning.neighbour_weight > 0.0 && self.corpus.any_session()?;
        Ok(MemoryHead {
            time_cues,
            sessions,
        })
    }

    /// The fused memory head through the time rules, the session neighbours and supersession,
    /// then cut to the request's cap; which memories a newer one supersedes (id → the newer's).
    pub(crate) fn arrange_memory_head(
        &self,
        head: &MemoryHead,
        buckets: &mut MemoryBuckets<Fused>,
        caps: &Caps,
        req: &Request,
        scope: &Scope<'_, '_>,
    ) -> Result<HashMap<String, String>, SearchError> {
        let mut memories = std::mem::take(&mut buckets.memories);
        if let Some(cues) = &head.time_cues {
            memories = self.timings.time("time rules", || {
                within(memories, TIME_WINDOW, |m| {
                    self.arrange_by_time(m, cues, req.tuning.time_weight)
                })
            })?;
        }
        if head.sessions {
            memories = self.timings.time("session neighbours", || {
                within(memories, NEIGHBOUR_WINDOW, |m| {
                    neighbours::bring(m, req.tuning.neighbour_weight, |id| {
                        self.neighbours_in_scope(id, scope)
                    })
                })
            })?;
        }
        // A question about a named time asks for what held then: the older memory is marked,
        // not moved.
        let moves = head.time_cues.as_ref().is_none_or(|c| c.periods.is_empty());
        let mut superseded_by = HashMap::new();
        memories = self.timings.time("supersession", || {
            within(memories, SUPERSESSION_WINDOW, |m| {
                self.supersede(m, scope, moves, &mut superseded_by)
            })
        })?;
        memories.truncate(caps.memories);
        buckets.memories = memories;
        Ok(superseded_by)
    }

    /// The memory side's head re-scored by the question's time cues: the event times (and,
    /// for a question that asks when, the texts) of its memories read in one query each.
    fn arrange_by_time(
        &self,
        head: Vec<Fused>,
        cues: &TimeCues,
        weight: f64,
    ) -> Result<Vec<Fused>, SearchError> {
        let event_times = self.event_times(head.iter())?;
        let texts = match cues.asks_when {
            true => hits::texts(self.conn, head.iter().map(|f| f.key.as_str()))?,
            false => HashMap::new(),
        };
        Ok(memory_time::arrange(
            head,
            cues,
            weight,
            &event_times,
            &texts,
        ))
    }

    /// The event times of these memories that have one, by id, in one read.
    fn event_times<'f>(
        &self,
        memories: impl Iterator<Item = &'f Fused>,
    ) -> Result<HashMap<String, String>, SearchError> {
        let ids: Vec<String> = memories
            .filter_map(|f| memory_id_of(&f.key).map(str::to_owned))
            .collect();
        Ok(self
            .conn
            .memory_occasions(&ids)?
            .into_iter()
            .filter_map(|(id, o)| Some((id, o.event_time?)))
            .collect())
    }

    /// The memories saved just before and after `id` in its session that the request may
    /// return in its `memories` bucket (in scope, no attached query).
    fn neighbours_in_scope(
        &self,
        id: &str,
        scope: &Scope<'_, '_>,
    ) -> Result<Vec<String>, SearchError> {
        let (before, after) = self.conn.session_neighbours(id)?;
        let mut found = Vec::new();
        for n in [before, after].into_iter().flatten() {
            if scope.memory(&n)?.is_some_and(|m| !m.has_query) {
                found.push(n);
            }
        }
        Ok(found)
    }

    /// Supersession among the first memories (docs/spec/search.md §9.14): their tags from the
    /// corpus cache; texts and times read only for memories that share their tags with another.
    fn supersede(
        &self,
        mut memories: Vec<Fused>,
        scope: &Scope<'_, '_>,
        moves: bool,
        superseded_by: &mut HashMap<String, String>,
    ) -> Result<Vec<Fused>, SearchError> {
        let ids: Vec<&str> = memories
            .iter()
            .filter_map(|f| memory_id_of(&f.key))
            .collect();
        self.corpus.prefetch(ids.iter().copied())?;
        let mut tags = Vec::with_capacity(memories.len());
        for f in &memories {
            let meta = match memory_id_of(&f.key) {
                Some(id) => scope.memory(id)?,
                None => None,
            };
            tags.push(meta.map(|m| m.tags.clone()).unwrap_or_default());
        }
        let shared: Vec<bool> = (0..tags.len())
            .map(|i| {
                !tags[i].is_empty()
                    && tags
                        .iter()
                        .enumerate()
                        .any(|(j, t)| j != i && *t == tags[i])
            })
            .collect();
        if !shared.contains(&true) {
            return Ok(memories);
        }
        let keys = memories
            .iter()
            .zip(&shared)
            .filter(|(_, s)| **s)
            .map(|(f, _)| f.key.as_str());
        let texts = hits::texts(self.conn, keys)?;
        let event_times = self.event_times(
            memories
                .iter()
                .zip(&shared)
                .filter(|(_, s)| **s)
                .map(|(f, _)| f),
        )?;
        let mut when = Vec::with_capacity(memories.len());
        for (f, is_shared) in memories.iter().zip(&shared) {
            let id = memory_id_of(&f.key).unwrap_or_default();
            when.push(match (event_times.get(id), is_shared) {
                (_, false) => String::new(),
                (Some(t), true) => t.clone(),
                (None, true) => self
                    .conn
                    .memory(id)?
                    .map(|m| m.created_at)
                    .unwrap_or_default(),
            });
        }
        let candidates: Vec<Candidate<'_>> = memories
            .iter()
            .enumerate()
            .map(|(i, f)| Candidate {
                tags: if shared[i] { &tags[i] } else { &[] },
                text: texts.get(&f.key).map(String::as_str).unwrap_or(""),
                when: &when[i],
            })
            .collect();
        let by = supersession::superseded_by(&candidates);
        if by.iter().all(Option::is_none) {
            return Ok(memories);
        }
        let scores: Vec<f64> = memories.iter().map(|f| f.score).collect();
        for (older, newer) in by.iter().enumerate() {
            let Some(newer) = *newer else { continue };
            if let (Some(o), Some(n)) = (
                memory_id_of(&memories[older].key),
                memory_id_of(&memories[newer].key),
            ) {
                superseded_by.insert(o.to_owned(), n.to_owned());
            }
            if !moves {
                continue;
            }
            let lifted = scores[older].max(memories[newer].score);
            let gained = lifted - memories[newer].score;
            if gained > 0.0 {
                memories[newer].contributions.push(Contribution {
                    channel: SUPERSEDED,
                    rank: older + 1,
                    raw_score: Some(scores[older]),
                    contribution: gained,
                });
                memories[newer].score = lifted;
            }
            let dropped = scores[older] * SUPERSEDED_FACTOR;
            memories[older].contributions.push(Contribution {
                channel: SUPERSEDED,
                rank: newer + 1,
                raw_score: Some(SUPERSEDED_FACTOR),
                contribution: dropped - scores[older],
            });
            memories[older].score = dropped;
        }
        // A stable sort: the rest keep their order.
        memories.sort_by(|a, b| b.score.total_cmp(&a.score));
        Ok(memories)
    }
}
