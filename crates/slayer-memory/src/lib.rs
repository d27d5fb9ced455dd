//! slayer-memory: the write side of agent memories.
//!
//! - [`resolve`]: canonical entity resolution against the stored catalog
//!   (docs/spec/resolution.md §3).
//! - [`aggref`]: aggregation suffixes and `agg(column)` forms.
//! - [`extract`]: the entities of an inline SlayerQuery.
//! - [`kb`]: a Markdown knowledge base's pages as memory records (`ingest`).
//! - [`service`]: save, forget, import in one store transaction each, docs re-rendered in it.
//! - [`write`]: save and forget as whole operations (transaction, commit, index, embedding).
//! - [`review`]: review of agent memories (proposals, approve, reject); [`review_setting`] the
//!   store setting it and every save read.
//!
//! Rules: resolution on save is strict (nothing is written on an error); every write is one
//! `BEGIN IMMEDIATE` transaction, so concurrent writers queue instead of colliding; the caller
//! brings the full-text index up to date after the commit. Nothing here prints or exits.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod aggref;
pub mod extract;
pub mod kb;
pub mod resolve;
pub mod review;
pub mod review_setting;
pub mod service;
pub mod write;

/// Parses a `--query` argument: JSON text, or `@FILE` holding it (messages as the original CLI).
pub fn parse_query_arg(arg: &str) -> Result<serde_json::Value, QueryArgError> {
    let given = slayer_common::cli::JsonArg::read(arg).map_err(|_| QueryArgError::NoFile {
        file: arg.strip_prefix('@').unwrap_or(arg).to_owned(),
    })?;
    Ok(serde_json::from_str(&given.text)?)
}

/// Why a `--query` argument is not a query.
#[derive(Debug, thiserror::Error)]
pub enum QueryArgError {
    /// `@FILE` names no readable file.
    #[error("Query file not found: {file}")]
    NoFile {
        /// The file named.
        file: String,
    },
    /// The text is not JSON.
    #[error("invalid JSON for query argument: {0}")]
    Json(#[from] serde_json::Error),
}

/// Why a memory command could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    /// The request cannot be done (a bad id, an unresolvable entity, a missing memory): exit
    /// 1, as in the original.
    #[error("{0}")]
    Invalid(String),
    /// A field of the request is malformed or out of range (a description over 500
    /// characters, a confidence outside 0–1, a field over its limit): bad input, exit 2.
    #[error("{0}")]
    Input(String),
    /// An input line of `import` is bad; nothing was written.
    #[error("line {line}: {message}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The store failed while resolving a reference.
    #[error("{0}")]
    Lookup(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] slayer_common::store::StoreError),
    /// Rendering or the index failed.
    #[error(transparent)]
    Index(#[from] slayer_index::IndexError),
    /// Reading input failed.
    #[error(transparent)]
    Read(#[from] slayer_common::jsonl::ReadError),
    /// The write's transaction could not commit; nothing was written.
    #[error("cannot commit the {what}")]
    Commit {
        /// What was being written (`save`, `deletion`).
        what: &'static str,
        /// The store's failure.
        #[source]
        source: slayer_common::store::CommitError,
    },
}

impl From<crate::resolve::ResolveError> for MemoryError {
    fn from(e: crate::resolve::ResolveError) -> Self {
        match e {
            crate::resolve::ResolveError::Invalid(message) => MemoryError::Invalid(message),
            lookup => MemoryError::Lookup(lookup.to_string()),
        }
    }
}

impl From<rusqlite::Error> for MemoryError {
    fn from(e: rusqlite::Error) -> Self {
        MemoryError::Store(e.into())
    }
}
