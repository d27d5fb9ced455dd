//! What a long-lived search runs on another core beside the text channel: the question's
//! embedding, then the sidecar scan that waited for it (docs/internals/search.md, channel 3).

use slayer_embed::local::Asking;
use slayer_embed::provider::Embedder;
use slayer_embed::similar::normalized;
use slayer_embed::vectors::{Scored, Sidecar};
use slayer_embed::NotEmbedded;

/// A question's embedding (or why there is none) and how long it took.
pub(crate) type Embedded = (Result<Vec<f32>, NotEmbedded>, std::time::Duration);

/// A sidecar scan waiting for the question's embedding (`Dense::early_scan`): what it reads
/// is shared across threads.
pub(crate) struct EarlyScan<'d> {
    sidecar: &'d Sidecar,
    keep: Option<Vec<bool>>,
    admitted: Option<Vec<bool>>,
}

impl<'d> EarlyScan<'d> {
    /// A scan of `sidecar` that keeps the rows of these datasource sets (all: `None`) and
    /// these admitted rows (all: `None`).
    pub(crate) fn new(
        sidecar: &'d Sidecar,
        keep: Option<Vec<bool>>,
        admitted: Option<Vec<bool>>,
    ) -> EarlyScan<'d> {
        EarlyScan {
            sidecar,
            keep,
            admitted,
        }
    }

    /// The scan of this embedding, and how long it took; `None` where the embedding failed
    /// or does not fit the sidecar (`Dense::rank` says why).
    pub(crate) fn run(
        &self,
        embedding: &Result<Vec<f32>, NotEmbedded>,
    ) -> Option<((Scored, Scored), std::time::Duration)> {
        let query = embedding.as_ref().ok()?;
        if query.len() != self.sidecar.dim() {
            return None;
        }
        let started = std::time::Instant::now();
        let admit = self
            .admitted
            .as_ref()
            .map(|a| move |row: u32| a[row as usize]);
        let admit: Option<&(dyn Fn(u32) -> bool + Sync)> =
            admit.as_ref().map(|f| f as &(dyn Fn(u32) -> bool + Sync));
        let scanned = self
            .sidecar
            .scan(&normalized(query), self.keep.as_deref(), admit);
        Some((scanned, started.elapsed()))
    }
}

/// One question's embedding.
pub(crate) fn embed_one(
    embedder: &Embedder,
    question: &str,
    asking: Asking,
) -> Result<Vec<f32>, NotEmbedded> {
    embedder.embed_question(question, asking)
}

/// Runs `work` on this thread while [`embed_one`] embeds the question on another core of the
/// shared pool, then runs `then` on the embedding there (a long-lived search's scan): the
/// text channel (`work`) takes one core, the embedding and the scan the other, and when the
/// text channel is done this thread, one of the pool's, takes up their parts while it waits. (It ran on a one-thread pool of its own while the text channel
/// took longer than the embedding; scored term at a time the text channel finishes first:
/// 100,000 memories, served, the embedding 5.1 -> 4.7 ms a question, 300 questions.) An
/// embedding that panics is an `Err`, and the search goes on without it.
pub(crate) fn embed_beside<T, R: Send>(
    embedder: &Embedder,
    question: &str,
    then: impl FnOnce(&Result<Vec<f32>, NotEmbedded>) -> R + Send,
    work: impl FnOnce() -> T,
) -> (T, Embedded, Option<R>) {
    let embed = || {
        let started = std::time::Instant::now();
        let embedded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            embed_one(embedder, question, Asking::Often)
        }))
        .unwrap_or(Err(NotEmbedded::Panicked));
        (embedded, started.elapsed())
    };
    let mut embedded = None;
    let mut after = None;
    let out = rayon::in_place_scope(|scope| {
        scope.spawn(|_| {
            let done = embed();
            after = Some(then(&done.0));
            embedded = Some(done);
        });
        work()
    });
    // The scope waited for the spawned job, which always sets both.
    (out, embedded.unwrap_or_else(embed), after)
}
