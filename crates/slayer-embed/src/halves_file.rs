//! The encoder's half-precision weights kept on disk: a derived, per-host cache of what a
//! served process copies into memory on its first question ([`crate::bert::Precision::Half`]),
//! so that a process that embeds one question (a one-shot search) maps 21 MB of ready halves
//! instead of reading 42 MB of f32 weights and rounding them as it goes. Its vector is the
//! same, bit for bit: rounding as read and reading the rounded copy give the same products.
//!
//! The file is `.slayer-halves.bin` in the model folder, else
//! `$XDG_CACHE_HOME/slayer/halves/<digest of the folder's path>.bin` (or `~/.cache/...`): a
//! header that says which weights it was made from (the weights file's length and
//! modification time, the encoder's span), then the halves. One that does not match, is cut
//! short or cannot be read is ignored and written again; it is written to a temporary file and
//! renamed over the old one, so a reader never maps half a file.

use std::ops::Range;
use std::path::{Path, PathBuf};

use slayer_common::mapped::MappedFile;

use crate::derived_file;

/// The file's name inside a model folder.
const FILE: &str = ".slayer-halves.bin";

/// The first bytes of a file of this format.
const MAGIC: &[u8; 8] = b"SLYRHLF1";

/// The header's length: the halves start at this offset, aligned for any read.
pub(crate) const HEADER: usize = 64;

/// What a halves file was made from: the weights file as it stood and the encoder's span of
/// its floats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Key {
    weights_len: u64,
    weights_modified_ns: u128,
    encoder: Range<usize>,
}

impl Key {
    /// The key of the weights at `weights` (one `stat`); `None` where the file cannot be read.
    pub(crate) fn of(weights: &Path, encoder: Range<usize>) -> Option<Key> {
        let meta = std::fs::metadata(weights).ok()?;
        let modified = meta.modified().ok()?;
        let since = modified.duration_since(std::time::UNIX_EPOCH).ok()?;
        Some(Key {
            weights_len: meta.len(),
            weights_modified_ns: since.as_nanos(),
            encoder,
        })
    }

    fn header(&self) -> [u8; HEADER] {
        let mut header = [0u8; HEADER];
        header[..8].copy_from_slice(MAGIC);
        header[8..16].copy_from_slice(&self.weights_len.to_le_bytes());
        header[16..32].copy_from_slice(&self.weights_modified_ns.to_le_bytes());
        header[32..40].copy_from_slice(&(self.encoder.start as u64).to_le_bytes());
        header[40..48].copy_from_slice(&(self.encoder.end as u64).to_le_bytes());
        header
    }

    /// The file's length for this key.
    fn file_len(&self) -> usize {
        HEADER + 2 * self.encoder.len()
    }
}

/// Where a model folder's halves file may be: in the folder, then in the user's cache
/// directory.
pub(crate) fn places(dir: &Path) -> Vec<PathBuf> {
    derived_file::places(dir, FILE, "halves", ".bin")
}

/// The first file at `places` made from exactly these weights, mapped.
pub(crate) fn open(places: &[PathBuf], key: &Key) -> Option<MappedFile> {
    places.iter().find_map(|place| {
        let file = MappedFile::open(place).ok()?;
        let bytes = file.bytes();
        (bytes.len() == key.file_len() && bytes[..HEADER] == key.header()).then_some(file)
    })
}

/// Writes `halves` for `key` at the first of `places` that takes it; whether one did.
pub(crate) fn write(places: &[PathBuf], key: &Key, halves: &[u16]) -> bool {
    let parts = [&key.header()[..], bytemuck::cast_slice(halves)];
    places
        .iter()
        .any(|place| derived_file::write_atomically(place, &parts).is_ok())
}

/// Whether a place can take a file, asked before the halves are made for it: a folder and a
/// cache directory that refuse writes cost a one-shot nothing but this.
pub(crate) fn writable(places: &[PathBuf]) -> bool {
    places.iter().any(|place| {
        let dir = place.parent().unwrap_or(Path::new("."));
        if std::fs::create_dir_all(dir).is_err() {
            return false;
        }
        let probe = dir.join(format!(".slayer-halves.{}.probe", std::process::id()));
        let made = std::fs::File::create(&probe).is_ok();
        let _ = std::fs::remove_file(&probe);
        made
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_only_under_the_key_it_was_written_with() {
        let dir = tempfile::tempdir().unwrap();
        let weights = dir.path().join("model.safetensors");
        std::fs::write(&weights, vec![0u8; 64]).unwrap();
        let key = Key::of(&weights, 2..6).unwrap();
        let places = vec![dir.path().join(FILE)];
        assert!(open(&places, &key).is_none());
        assert!(writable(&places));
        assert!(write(&places, &key, &[1, 2, 3, 4]));
        let mapped = open(&places, &key).expect("written");
        assert_eq!(&mapped.bytes()[HEADER..], &[1, 0, 2, 0, 3, 0, 4, 0]);
        // Another span, other weights, a file cut short: each is ignored.
        assert!(open(&places, &Key::of(&weights, 2..7).unwrap()).is_none());
        std::fs::write(&weights, vec![0u8; 65]).unwrap();
        assert!(open(&places, &Key::of(&weights, 2..6).unwrap()).is_none());
        let key = Key::of(&weights, 2..6).unwrap();
        assert!(write(&places, &key, &[1, 2, 3, 4]));
        let file = std::fs::read(&places[0]).unwrap();
        std::fs::write(&places[0], &file[..file.len() - 1]).unwrap();
        assert!(open(&places, &key).is_none());
        // No temporary file is left behind.
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".tmp") || n.ends_with(".probe"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_place_that_refuses_writes_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let blocked = dir.path().join("a-file");
        std::fs::write(&blocked, b"x").unwrap();
        // A "folder" that is a file takes nothing; the next place does.
        let places = vec![blocked.join(FILE), dir.path().join("cache").join("h.bin")];
        let weights = dir.path().join("w");
        std::fs::write(&weights, b"w").unwrap();
        let key = Key::of(&weights, 0..1).unwrap();
        assert!(!writable(&places[..1]));
        assert!(write(&places, &key, &[9]));
        assert!(open(&places, &key).is_some());
    }
}
