//! Read-only memory maps: with [`crate::simd`], the only modules of the workspace allowed
//! `unsafe` (every other crate root forbids it, and the workspace denies it).
//!
//! Why map at all: a search process reads the model weights (91 MB, of which one question
//! touches about half) and the vector sidecar (up to hundreds of MB) once. Mapping them lets
//! the kernel's page cache serve both: start-up costs no copy, and the pages a search never
//! touches (most of the word-embedding table) never count against its memory.
//!
//! Why it is sound here: a map is undefined behaviour only if the file changes while mapped.
//! The files mapped through this module are slayer's own read-only artifacts, never written in
//! place: vector sidecars are written to a temporary file and renamed over the old one (a
//! rename leaves the mapped inode untouched), and model folders are installed the same way by
//! `scripts/fetch-model.sh`. A user truncating such a file under a running search gets a
//! SIGBUS, as with any mapped reader (tantivy maps its segments the same way).
#![allow(unsafe_code)]

use std::fs::File;
use std::io;
use std::path::Path;

/// A whole file mapped read-only.
pub struct MappedFile {
    map: memmap2::Mmap,
}

impl MappedFile {
    /// Maps `path` read-only.
    pub fn open(path: &Path) -> io::Result<MappedFile> {
        let file = File::open(path)?;
        // SAFETY: see the module documentation: mapped files are replaced by rename, never
        // modified in place.
        let map = unsafe { memmap2::Mmap::map(&file)? };
        Ok(MappedFile { map })
    }

    /// Maps in, in one call, the pages of `range` a reader is about to read whole (a scan, the
    /// encoder's weights): cheaper than a fault per page. A kernel without the call (before
    /// Linux 5.14) leaves the pages to fault in as read.
    pub fn prefault(&self, range: std::ops::Range<usize>) {
        let end = range.end.min(self.map.len());
        if range.start < end {
            let _ = self.map.advise_range(
                memmap2::Advice::PopulateRead,
                range.start,
                end - range.start,
            );
        }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_a_file_s_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"slayer").unwrap();
        assert_eq!(MappedFile::open(&path).unwrap().bytes(), b"slayer");
        let empty = dir.path().join("e");
        std::fs::write(&empty, b"").unwrap();
        assert!(MappedFile::open(&empty).unwrap().bytes().is_empty());
        assert!(MappedFile::open(&dir.path().join("missing")).is_err());
    }
}
