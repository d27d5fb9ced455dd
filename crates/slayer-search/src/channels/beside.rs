//! What a long-lived search runs on another core beside the text channel: the question's
//! embedding, then the sidecar scan that waited for it (docs/internals/search.md, channel 3).

use slayer_embed::local::Asking;
use std::sync::Arc;

use slayer_embed::provider::{Embedder, ProviderError};
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

/// Where the question's embedding comes from beside the text channel.
#[derive(Clone, Copy)]
pub(crate) enum Source<'e> {
    /// The model a long-lived search loaded on an earlier question.
    Loaded(&'e Embedder),
    /// The active model, loaded there first: a process's first question (a one-shot search's
    /// only one), whose model load and embedding ran after the text channel before (100,000
    /// memories, all channels: 2.7 + 12.7 ms).
    Unloaded(&'e str),
}

/// A model loaded beside the text channel (or why it could not be), and how long it took.
pub(crate) type Loaded = (Result<Embedder, Arc<ProviderError>>, std::time::Duration);

/// What [`embed_beside`] did: `work`'s result, the question's embedding (`None` when the
/// model did not load), `then`'s result on it, and the model it loaded, if it loaded one.
pub(crate) struct Beside<T, R> {
    pub(crate) worked: T,
    pub(crate) embedded: Option<Embedded>,
    pub(crate) after: Option<R>,
    pub(crate) loaded: Option<Loaded>,
}

/// Runs `work` on this thread while [`embed_one`] embeds the question on another core of the
/// shared pool (loading the model first where `source` says so), then runs `then` on the
/// embedding there (the sidecar scan): the text channel (`work`) takes one core, the
/// embedding and the scan the other, and when the text channel is done this thread, one of
/// the pool's, takes up their parts while it waits. (It ran on a one-thread pool of its own
/// while the text channel took longer than the embedding; scored term at a time the text
/// channel finishes first: 100,000 memories, served, the embedding 5.1 -> 4.7 ms a question,
/// 300 questions.) An embedding that panics is an `Err`, and the search goes on without it.
pub(crate) fn embed_beside<T, R: Send>(
    source: Source<'_>,
    asking: Asking,
    question: &str,
    then: impl FnOnce(&Result<Vec<f32>, NotEmbedded>) -> R + Send,
    work: impl FnOnce() -> T,
) -> Beside<T, R> {
    let embed = |embedder: &Embedder| {
        let started = std::time::Instant::now();
        let embedded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            embed_one(embedder, question, asking)
        }))
        .unwrap_or(Err(NotEmbedded::Panicked));
        (embedded, started.elapsed())
    };
    let job = || -> (Option<Embedded>, Option<Loaded>) {
        match source {
            Source::Loaded(embedder) => (Some(embed(embedder)), None),
            Source::Unloaded(model) => {
                let started = std::time::Instant::now();
                let opened = Embedder::open(model).map_err(Arc::new);
                let took = started.elapsed();
                let embedded = opened.as_ref().ok().map(embed);
                (embedded, Some((opened, took)))
            }
        }
    };
    let mut done = None;
    let mut after = None;
    let worked = rayon::in_place_scope(|scope| {
        scope.spawn(|_| {
            let (embedded, loaded) = job();
            after = embedded.as_ref().map(|(e, _)| then(e));
            done = Some((embedded, loaded));
        });
        work()
    });
    // The scope waited for the spawned job, which always sets `done`.
    let (embedded, loaded) = done.unwrap_or_default();
    Beside {
        worked,
        embedded,
        after,
        loaded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_that_does_not_load_is_handed_back_and_nothing_waits_on_it() {
        let mut scanned = false;
        let beside = embed_beside(
            Source::Unloaded("local:/nonexistent/slayer-test-model"),
            Asking::Once,
            "refund amount by region",
            |_| scanned = true,
            || "text ranked",
        );
        assert_eq!(beside.worked, "text ranked");
        assert!(beside.embedded.is_none());
        assert!(beside.after.is_none());
        assert!(!scanned, "no scan without an embedding");
        let (loaded, _) = beside.loaded.expect("the load is handed back");
        let why = loaded.err().expect("the folder does not exist").to_string();
        assert!(why.contains("/nonexistent/slayer-test-model"), "{why}");
    }
}
