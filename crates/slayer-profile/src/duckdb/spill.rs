//! The folder DuckDB spills to when a query does not fit its memory limit.

use std::path::{Path, PathBuf};

/// A fresh folder under the system's temp directory, readable by its owner only (spilled
/// blocks hold the source's values), removed with whatever is in it when dropped. Drop it after
/// the database's last connection, which deletes DuckDB's own files in it.
#[derive(Debug)]
pub struct SpillDir {
    path: PathBuf,
}

impl SpillDir {
    /// Creates the folder, under a name no other process holds.
    pub fn create() -> std::io::Result<SpillDir> {
        let base = std::env::temp_dir();
        let pid = std::process::id();
        let mut attempt = 0u32;
        loop {
            let path = base.join(format!("slayer-profile-{pid}-{attempt}"));
            let mut builder = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            match builder.create(&path) {
                Ok(()) => return Ok(SpillDir { path }),
                // Left by an earlier process of the same id, or another user's: never reused.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for SpillDir {
    fn drop(&mut self) {
        // Nothing to report to: the run is over, and the folder is under the temp directory.
        let _ = std::fs::remove_dir_all(&self.path);
    }
}
