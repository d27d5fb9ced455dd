//! The active embedding model and the provider behind it.
//!
//! `SLAYER_EMBEDDING_MODEL` names it in `<provider>/<model>` form and rows are keyed by that
//! exact string, so switching models leaves the old rows in place but unread.

use std::path::PathBuf;

use crate::local::{self, LocalError, LocalModel};
use crate::openai::{OpenAiClient, OpenAiConfig, OpenAiError};
use crate::revision::RevisionError;
use crate::EmbedResult;

/// The model used when `SLAYER_EMBEDDING_MODEL` is unset or blank: offline, no key.
pub const DEFAULT_NAME: &str = "local/all-MiniLM-L6-v2";

/// The active model name: `SLAYER_EMBEDDING_MODEL` trimmed, or the default.
pub fn active_name() -> String {
    std::env::var(slayer_common::env::EMBEDDING_MODEL)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_NAME.to_owned())
}

/// What a model name points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Spec {
    /// A sentence-transformers folder: `local/<model>` (under the models dir) or `local:<path>`.
    Local(PathBuf),
    /// `openai/<model>` on OpenAI or any compatible server (`SLAYER_EMBEDDING_BASE_URL`).
    OpenAi(String),
}

/// A model name none of the providers answers to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown embedding model '{0}': use local/<model>, local:<folder> or openai/<model> in SLAYER_EMBEDDING_MODEL")]
pub struct UnknownModel(pub String);

/// Why the named provider cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The name is of no provider.
    #[error(transparent)]
    Unknown(#[from] UnknownModel),
    /// The local model's folder is incomplete or cannot be loaded.
    #[error(transparent)]
    Local(#[from] LocalError),
    /// The local model's revision cannot be read.
    #[error(transparent)]
    Revision(#[from] RevisionError),
    /// The OpenAI-compatible endpoint is misconfigured.
    #[error(transparent)]
    OpenAi(#[from] OpenAiError),
}

/// Parses a model name.
pub fn spec(name: &str) -> Result<Spec, UnknownModel> {
    if let Some(path) = name.strip_prefix("local:") {
        return Ok(Spec::Local(PathBuf::from(path)));
    }
    match name.split_once('/') {
        Some(("local", model)) if !model.is_empty() => {
            Ok(Spec::Local(local::models_dir().join(model)))
        }
        Some(("openai", model)) if !model.is_empty() => Ok(Spec::OpenAi(model.to_owned())),
        _ => Err(UnknownModel(name.to_owned())),
    }
}

/// The revision of the named model (see [`crate::revision`]): a digest of a local folder's
/// configuration, tokenizer and weights (cached), or of an `openai/<m>` model's name and base
/// URL. Loads nothing; fails where [`Embedder::check`] would.
///
/// slayer-search's dense channel and slayer-memory quote the [`ProviderError`] as is in their
/// warnings ("the embedding model '…' is unavailable: …").
pub fn revision(name: &str) -> Result<String, ProviderError> {
    Ok(match spec(name)? {
        Spec::Local(dir) => {
            local::check_folder(&dir)?;
            crate::revision::local(&dir)?
        }
        Spec::OpenAi(model) => {
            crate::revision::remote(&model, &OpenAiConfig::from_env(&model).base_url)
        }
    })
}

enum Backend {
    Local(Box<LocalModel>),
    OpenAi(Box<OpenAiClient>),
}

/// An opened provider under its model name.
pub struct Embedder {
    name: String,
    backend: Backend,
}

impl Embedder {
    /// Whether the named provider can be used, without loading a model or calling a server.
    pub fn check(name: &str) -> Result<(), ProviderError> {
        match spec(name)? {
            Spec::Local(dir) => local::check_folder(&dir)?,
            Spec::OpenAi(model) => OpenAiClient::new(OpenAiConfig::from_env(&model))?.check()?,
        }
        Ok(())
    }

    /// Opens the named provider (loads a local model).
    pub fn open(name: &str) -> Result<Embedder, ProviderError> {
        let backend = match spec(name)? {
            Spec::Local(dir) => Backend::Local(Box::new(LocalModel::load(&dir)?)),
            Spec::OpenAi(model) => {
                let client = OpenAiClient::new(OpenAiConfig::from_env(&model))?;
                client.check()?;
                Backend::OpenAi(Box::new(client))
            }
        };
        Ok(Embedder {
            name: name.to_owned(),
            backend,
        })
    }

    /// The model name rows are keyed by.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Embeds one batch, results in input order.
    pub fn embed(&self, texts: &[&str]) -> Vec<EmbedResult> {
        match &self.backend {
            Backend::Local(m) => m.embed(texts),
            Backend::OpenAi(c) => c.embed(texts),
        }
    }

    /// Embeds a question to search with (a local model may read its weights in half
    /// precision: [`LocalModel::embed_question`]).
    pub fn embed_question(&self, question: &str, asking: crate::local::Asking) -> EmbedResult {
        match &self.backend {
            Backend::Local(m) => m.embed_question(question, asking),
            Backend::OpenAi(c) => c
                .embed(&[question])
                .pop()
                .unwrap_or(Err(crate::NotEmbedded::NothingReturned)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_into_providers() {
        assert_eq!(
            spec("local:/m/x").unwrap(),
            Spec::Local(PathBuf::from("/m/x"))
        );
        assert_eq!(
            spec("openai/text-embedding-3-small").unwrap(),
            Spec::OpenAi("text-embedding-3-small".into())
        );
        assert!(
            matches!(spec("local/all-MiniLM-L6-v2").unwrap(), Spec::Local(p) if p.ends_with("all-MiniLM-L6-v2"))
        );
        assert!(spec("cohere/x")
            .unwrap_err()
            .to_string()
            .contains("unknown embedding model"));
        assert!(spec("openai/").is_err());
    }
}
