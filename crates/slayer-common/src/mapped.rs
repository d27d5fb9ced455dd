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

/// Memory of the process's own, which the kernel is asked to back with 2 MiB pages: for the
/// few large arrays a served search reads whole on every question (the encoder's
/// half-precision weights, a sidecar's codes). Read through 4 KiB pages, each question walks
/// the page tables thousands of times; in a virtual machine each walk is two. Scanning 38 MB
/// of codes with the caches flushed took 3.5 ms on one core through 4 KiB pages and 2.5 ms
/// through 2 MiB pages (2.0 and 1.4 ms on two cores). Where the kernel gives no large pages
/// the buffer is plain memory and nothing else changes.
pub struct HugePageBuffer {
    map: memmap2::MmapMut,
    /// Where the buffer starts in the map: the first 2 MiB boundary.
    start: usize,
    len: usize,
}

/// The size of a large page on x86-64 and aarch64 Linux.
const HUGE_PAGE: usize = 2 << 20;

impl HugePageBuffer {
    /// `len` zeroed bytes, starting on a 2 MiB boundary.
    pub fn zeroed(len: usize) -> io::Result<HugePageBuffer> {
        let map = memmap2::MmapMut::map_anon(len + HUGE_PAGE)?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        let start = map.as_ptr().align_offset(HUGE_PAGE).min(HUGE_PAGE);
        Ok(HugePageBuffer { map, start, len })
    }

    /// A copy of `bytes`.
    pub fn copy_of(bytes: &[u8]) -> io::Result<HugePageBuffer> {
        let mut buffer = HugePageBuffer::zeroed(bytes.len())?;
        buffer.bytes_mut().copy_from_slice(bytes);
        Ok(buffer)
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map[self.start..self.start + self.len]
    }

    /// The bytes, to write.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map[self.start..self.start + self.len]
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

    #[test]
    fn a_huge_page_buffer_is_aligned_and_holds_its_copy() {
        for len in [0, 1, 4097, (2 << 20) + 3] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 7 % 251) as u8).collect();
            let buffer = HugePageBuffer::copy_of(&bytes).unwrap();
            assert_eq!(buffer.bytes(), &bytes[..]);
            assert_eq!(buffer.bytes().as_ptr().align_offset(HUGE_PAGE), 0);
        }
        let mut zeroed = HugePageBuffer::zeroed(10).unwrap();
        assert_eq!(zeroed.bytes(), &[0; 10]);
        zeroed.bytes_mut()[3] = 9;
        assert_eq!(zeroed.bytes()[3], 9);
    }
}
