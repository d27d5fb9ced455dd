//! Read-only memory maps: with [`crate::simd`] and [`crate::shutdown`], the only modules of the
//! workspace allowed `unsafe` (every other crate root forbids it, and the workspace denies it).
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

    /// Lets go of the pages of `range` this process has read (a one-shot search, done with the
    /// encoder's weights or a scanned part of a sidecar): they stop counting in its resident
    /// memory and stay in the page cache, from which a later read maps them again.
    pub fn release(&self, range: std::ops::Range<usize>) {
        let end = range.end.min(self.map.len());
        if range.start < end {
            // SAFETY: the map is a read-only shared map of a file nobody modifies in place
            // (module documentation): after MADV_DONTNEED a read faults the same bytes back
            // in from the page cache, so every slice into the map stays valid and unchanged.
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    range.start,
                    end - range.start,
                )
            };
        }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }
}

/// Asks the kernel to back none of this process's memory with transparent huge pages from
/// now on. For a short process on a kernel that gives them to any large mapping
/// (`transparent_hugepage=always`): each first touch of one zeroes 2 MiB of which a one-shot
/// search uses a few KiB. (Where the kernel gives them only when asked, the allocator no
/// longer asks: mimalloc's `no_thp`. A fifth of a one-shot's time at 10,000 memories went to
/// zeroing them, and its peak was 32 MiB instead of 21.) Elsewhere than Linux, nothing.
pub fn no_transparent_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes plain integers and reads or writes no memory of
    // the caller's; a kernel without it (before 3.15) returns an error, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
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
        // Released pages read back the same bytes.
        let big = dir.path().join("big");
        let bytes: Vec<u8> = (0..3 * 4096 + 17).map(|i| (i % 251) as u8).collect();
        std::fs::write(&big, &bytes).unwrap();
        let mapped = MappedFile::open(&big).unwrap();
        assert_eq!(mapped.bytes(), &bytes[..]);
        mapped.release(100..2 * 4096 + 5);
        mapped.release(0..usize::MAX);
        assert_eq!(mapped.bytes(), &bytes[..]);
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
