//! Channel 3: the question's embedding against the active model's stored rows (docs/spec.md
//! §7.2 for the order of checks, §10.1 for the warnings).

use std::cell::{OnceCell, RefCell};
use std::collections::HashMap;

use rusqlite::Connection;
use slayer_common::store::embeddings;
use slayer_embed::provider::{active_name, Embedder};
use slayer_embed::similar::{normalized, rank_unit};

use crate::channels::ChannelOutcome;
use crate::corpus::Scope;
use crate::SearchError;

/// A stored row: canonical id, doc kind, vector (scaled to unit length).
type Row = (String, String, Vec<f32>);

/// One side's ranking: `(canonical id, cosine)`, best first.
pub type DenseHits = Vec<(String, Option<f64>)>;

/// The active model, opened on the first question and kept for a `--batch` run.
pub struct Dense {
    model: String,
    embedder: OnceCell<Result<Embedder, String>>,
    rows: OnceCell<Vec<Row>>,
    questions: RefCell<HashMap<String, Result<Vec<f32>, String>>>,
}

impl Dense {
    /// Drops the embedding rows read so far (the store changed); the loaded model and the
    /// question embeddings stay.
    pub fn forget_rows(&mut self) {
        self.rows = OnceCell::new();
    }
}

impl Default for Dense {
    fn default() -> Self {
        Dense::new(active_name())
    }
}

impl Dense {
    /// Channel 3 under this model name.
    pub fn new(model: String) -> Dense {
        Dense {
            model,
            embedder: OnceCell::new(),
            rows: OnceCell::new(),
            questions: RefCell::default(),
        }
    }

    /// Ranks memory docs and entity docs by cosine to the question, after the datasource
    /// filter: `(memories, entities)`. Skipped, with the warning, when a precondition fails:
    /// the search goes on without it.
    pub fn rank(
        &self,
        conn: &Connection,
        scope: &Scope<'_, '_>,
        question: &str,
    ) -> Result<ChannelOutcome<(DenseHits, DenseHits)>, SearchError> {
        if let Err(why) = Embedder::check(&self.model) {
            return Ok(ChannelOutcome::Skipped(format!(
                "embedding channel skipped: the embedding model '{}' is unavailable: {why}.",
                self.model
            )));
        }
        if self.rows.get().is_none() {
            // Scaled to unit length once, so each question costs one dot product per row.
            let rows = embeddings::live_rows(conn, &self.model)?
                .into_iter()
                .map(|(id, kind, v)| (id, kind, normalized(&v)))
                .collect();
            let _ = self.rows.set(rows);
        }
        let rows = self.rows.get().map(Vec::as_slice).unwrap_or_default();
        let mut eligible: Vec<&Row> = Vec::with_capacity(rows.len());
        for row in rows {
            if scope.keeps_doc(&row.0)? {
                eligible.push(row);
            }
        }
        if eligible.is_empty() {
            return Ok(ChannelOutcome::Skipped(format!(
                "embedding channel skipped: no embedding rows for model '{}'. Run `slayer-embed refresh --all` to populate.",
                self.model
            )));
        }
        let query = match self.embed_question(question) {
            Ok(q) => q,
            Err(_) => {
                return Ok(ChannelOutcome::Skipped(
                    "embedding channel skipped: query embedding failed.".to_owned(),
                ))
            }
        };
        // Rows of another size (written by another model under this name) cannot be compared:
        // they are left out, never truncated to fit.
        let corpus_dim = eligible[0].2.len();
        eligible.retain(|r| r.2.len() == query.len());
        if eligible.is_empty() {
            return Ok(ChannelOutcome::Skipped(format!(
                "embedding channel skipped: dim mismatch (query={}, corpus={corpus_dim}). Re-run `slayer-embed refresh --all` to refresh embeddings against the current model.",
                query.len()
            )));
        }
        let (memory_rows, entity_rows): (Vec<&Row>, Vec<&Row>) =
            eligible.into_iter().partition(|r| r.1 == "memory");
        let query = normalized(&query);
        let side = |rows: &[&Row]| -> DenseHits {
            rank_unit(&query, rows.iter().map(|r| r.2.as_slice()))
                .into_iter()
                .map(|(i, score)| (rows[i].0.clone(), Some(score)))
                .collect()
        };
        Ok(ChannelOutcome::Ran((
            side(&memory_rows),
            side(&entity_rows),
        )))
    }

    fn embed_question(&self, question: &str) -> Result<Vec<f32>, String> {
        if let Some(cached) = self.questions.borrow().get(question) {
            return cached.clone();
        }
        let embedder = self
            .embedder
            .get_or_init(|| Embedder::open(&self.model))
            .as_ref()
            .map_err(Clone::clone)?;
        let result = embedder
            .embed(&[question])
            .pop()
            .unwrap_or_else(|| Err("no embedding returned".into()));
        self.questions
            .borrow_mut()
            .insert(question.to_owned(), result.clone());
        result
    }
}
