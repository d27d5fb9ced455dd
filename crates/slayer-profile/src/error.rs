//! The errors of slayer-profile, as sentences a user can act on.

use crate::db::DbError;

/// Why profiling could not run at all (a single table or column failing is a warning instead).
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The source argument names nothing usable.
    #[error("{0}")]
    Source(String),
    /// The source file exists but cannot be opened.
    #[error("cannot open {what}: {cause}")]
    Open {
        /// The file, or the server's masked URL.
        what: String,
        /// The engine's message (boxed: the drivers' errors are large).
        cause: Box<DbError>,
    },
    /// A CSV / Parquet file or glob of the source cannot be read (or matches no file).
    #[error("cannot read {path}: {cause}")]
    Unreadable {
        /// The path or glob as given.
        path: String,
        /// The driver's message.
        cause: String,
    },
    /// Listing the tables of the source failed.
    #[error("cannot list the tables of {source_name}: {cause}")]
    Introspect {
        /// The source as given.
        source_name: String,
        /// The engine's message (boxed: the drivers' errors are large).
        cause: Box<DbError>,
    },
    /// A `--models` input line is bad; nothing was written.
    #[error("{0}")]
    Input(String),
    /// Reading `--models` input failed.
    #[error(transparent)]
    Read(#[from] slayer_common::jsonl::ReadError),
    /// The folder DuckDB spills to could not be made.
    #[error("cannot make a folder for DuckDB to spill to under {dir}: {cause}; set TMPDIR to a writable folder")]
    Spill {
        /// The temp directory it was made under.
        dir: String,
        /// Why.
        cause: std::io::Error,
    },
    /// A worker thread pool could not be built.
    #[error("cannot start {threads} worker threads: {cause}")]
    Threads {
        /// Requested threads.
        threads: usize,
        /// Why.
        cause: rayon::ThreadPoolBuildError,
    },
}

impl ProfileError {
    /// Whether this is bad usage or input (exit 2) rather than a failure while running (exit 1).
    /// A source that cannot be opened or listed is bad input: nothing was profiled or written.
    pub fn is_usage(&self) -> bool {
        match self {
            ProfileError::Source(_)
            | ProfileError::Open { .. }
            | ProfileError::Unreadable { .. }
            | ProfileError::Introspect { .. }
            | ProfileError::Input(_)
            | ProfileError::Read(_) => true,
            ProfileError::Threads { .. } | ProfileError::Spill { .. } => false,
        }
    }
}
