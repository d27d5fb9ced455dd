//! What a long-lived search runs on another core beside the text channel: the question's
//! embedding, then the sidecar scan that waited for it (docs/internals/search.md, channel 3).

use slayer_embed::local::Asking;
use slayer_embed::provider::Embedder;
use slayer_embed::similar::normalized;
use slayer_embed::vectors::{Scored, Sidecar};
use slayer_embed::NotEmbedded;

/// A question's embedding (or why there is none) and how long it took.
pub(crate) type Embedded = (Result<Vec<f32>, NotEmbedded>, std::time::Duration);

/// A sidecar scan under a request's filter, waiting for the question's embedding: run by
/// `Dense::rank`, or beside the text channel (`Dense::early_scan`), so what it reads is
/// shared across threads.
pub(crate) struct ScanPlan<'d> {
    sidecar: &'d Sidecar,
    /// The datasource sets kept (all: `None`).
    keep: Option<Vec<bool>>,
    /// The rows admitted (all: `None`).
    admitted: Option<Vec<bool>>,
}

impl<'d> ScanPlan<'d> {
    /// A scan of `sidecar` that keeps the rows of these datasource sets and these admitted
    /// rows.
    pub(crate) fn new(
        sidecar: &'d Sidecar,
        keep: Option<Vec<bool>>,
        admitted: Option<Vec<bool>>,
    ) -> ScanPlan<'d> {
        ScanPlan {
            sidecar,
            keep,
            admitted,
        }
    }

    /// Whether the filter keeps any row.
    pub(crate) fn keeps_any(&self) -> bool {
        let admit = self.admit();
        self.sidecar
            .any_kept(self.keep.as_deref(), admit.as_ref().map(as_row_filter))
    }

    /// Every kept row scored against this embedding of the question's dimension:
    /// `(memories, entities)`.
    pub(crate) fn scan(&self, query: &[f32]) -> (Scored, Scored) {
        let admit = self.admit();
        self.sidecar.scan(
            &normalized(query),
            self.keep.as_deref(),
            admit.as_ref().map(as_row_filter),
        )
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
        let scanned = self.scan(query);
        Some((scanned, started.elapsed()))
    }

    fn admit(&self) -> Option<impl Fn(u32) -> bool + Sync + '_> {
        self.admitted
            .as_ref()
            .map(|a| move |row: u32| a[row as usize])
    }
}

/// A row filter as the sidecar takes it.
fn as_row_filter(f: &(impl Fn(u32) -> bool + Sync)) -> &(dyn Fn(u32) -> bool + Sync) {
    f
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
