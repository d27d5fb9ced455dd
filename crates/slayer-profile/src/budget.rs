//! What profiling may use of the machine: the engines read it when they open a connection.

use std::path::PathBuf;

/// What the connections to one source may use of the machine.
#[derive(Debug, Clone)]
pub struct Budget {
    /// Worker connections, and DuckDB's own threads.
    pub threads: usize,
    /// DuckDB's `memory_limit` in bytes, shared by every connection to the database.
    pub memory_bytes: u64,
    /// Where DuckDB spills what does not fit (its `temp_directory`); `None` leaves DuckDB's
    /// default.
    pub spill_dir: Option<PathBuf>,
}
