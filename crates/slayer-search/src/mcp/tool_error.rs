//! Why a tool call failed: the text the client reads as the tool error. A failure the CLI
//! also meets reads as the CLI's message for it, naming the store as the CLI does.

use std::path::{Path, PathBuf};

use slayer_common::cli::error_message_on;
use slayer_common::records::UnknownTier;

/// The store this server serves, for messages that name it.
static STORE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Names the store the messages of this process name (once, when the worker opens it).
pub fn serving(path: &Path) {
    let _ = STORE.set(path.to_owned());
}

/// The CLI's message for an error.
fn cli_message(err: &anyhow::Error) -> String {
    error_message_on(err, STORE.get().map(PathBuf::as_path))
}

/// Why a tool call failed.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The store, the search or a write failed.
    #[error("{}", cli_message(.0))]
    Failed(anyhow::Error),
    /// A reference that failed to resolve, named.
    #[error("{reference}: {}", cli_message(.why))]
    Unresolved {
        /// The reference as given.
        reference: String,
        /// Why it failed.
        why: anyhow::Error,
    },
    /// Arguments that are not of the tool's shape.
    #[error("invalid arguments for {tool}: {why}")]
    Arguments {
        /// The tool.
        tool: String,
        /// What the JSON reader says.
        why: serde_json::Error,
    },
    /// A list item that is not a string.
    #[error("{list}[{index}] must be a string (an entity reference); got {got}")]
    NotAString {
        /// The list argument.
        list: String,
        /// The item's position.
        index: usize,
        /// The JSON type given.
        got: &'static str,
    },
    /// A query argument that is not JSON.
    #[error("invalid JSON for query argument: {0}")]
    QueryJson(serde_json::Error),
    /// A tier name that names no tier.
    #[error(transparent)]
    Tier(#[from] UnknownTier),
    /// An argument the tool cannot take, or a combination of them: the sentence that says
    /// what to give instead.
    #[error("{0}")]
    Argument(String),
    /// A memory that does not exist, or that the session may not see (out of scope and absent
    /// look alike).
    #[error("No memory with id '{0}'.")]
    NoMemory(String),
    /// A save naming an id that is taken by a memory the session may not see.
    #[error(
        "memory id '{0}' is taken; save under another id (or without one to have one allocated)"
    )]
    IdTaken(String),
    /// A call naming another project or agent than the session's.
    #[error("{what} '{asked}' is outside this session's scope ({scope}); a call may narrow the scope, never widen it")]
    OutOfScope {
        /// `project` or `agent`.
        what: String,
        /// What the call asked for.
        asked: String,
        /// The session's scope, described.
        scope: String,
    },
    /// A change to a memory the session sees but does not own.
    #[error("memory '{id}' is outside this session's scope ({scope}): {owner}; this session changes only its own memories")]
    NotOwned {
        /// The memory.
        id: String,
        /// The session's scope, described.
        scope: String,
        /// Whose it is.
        owner: String,
    },
    /// The call panicked (a bug).
    #[error("internal error: {0}; the call did nothing, and the server goes on")]
    Panicked(String),
    /// The store thread is gone.
    #[error("the store thread has stopped; the session ends (restart `slayer-search mcp`)")]
    StoreThreadGone,
}

/// A failure of the store, the search or a write, as a tool error.
pub fn failed(err: impl Into<anyhow::Error>) -> ToolError {
    ToolError::Failed(err.into())
}
