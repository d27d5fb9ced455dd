//! Files slayer-embed derives from others and keeps for later processes (a model's revision,
//! its half-precision weights, a store's vector sidecar): where a model folder's derived file
//! lives, and how any of them is written so that no reader ever sees half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Hex digits kept of a digest: 64 bits tell folders and revisions apart.
pub(crate) const SHORT: usize = 16;

/// Where a model folder's derived file may be: `name` inside the folder, then
/// `<user cache>/<kind>/<digest of the folder's path><extension>` (`$XDG_CACHE_HOME/slayer`,
/// or `~/.cache/slayer`) for a folder that refuses writes.
pub(crate) fn places(dir: &Path, name: &str, kind: &str, extension: &str) -> Vec<PathBuf> {
    let mut places = vec![dir.join(name)];
    if let Some(cache) = slayer_common::env::user_cache_dir() {
        let absolute = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_owned());
        let tag = short_hex(&Sha256::digest(absolute.as_os_str().as_encoded_bytes()));
        places.push(cache.join(kind).join(format!("{tag}{extension}")));
    }
    places
}

/// The first [`SHORT`] hex digits of a digest.
pub(crate) fn short_hex(digest: &[u8]) -> String {
    digest
        .iter()
        .take(SHORT / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Writes `parts`, one after the other, to a temporary file beside `path` and renames it over
/// `path`: a reader maps or reads either the old file or the new one, never a half-written
/// one. The temporary file is gone either way.
pub(crate) fn write_atomically(path: &Path, parts: &[&[u8]]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // Unique per writer, threads of one process included (a search and its background
    // re-embed may both rebuild a sidecar).
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("derived"),
        std::process::id(),
        WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let written = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        for part in parts {
            file.write_all(part)?;
        }
        drop(file);
        std::fs::rename(&tmp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("f.bin");
        write_atomically(&path, &[b"ab", b"", b"cd"]).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcd");
        // A path whose folder is a file: an error, and nothing left behind.
        let blocked = dir.path().join("sub").join("f.bin").join("g");
        assert!(write_atomically(&blocked, &[b"x"]).is_err());
        let names: Vec<String> = std::fs::read_dir(dir.path().join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, ["f.bin"]);
    }

    #[test]
    fn the_folder_comes_first_then_the_user_cache_by_the_folder_s_digest() {
        let dir = tempfile::tempdir().unwrap();
        let places = places(dir.path(), ".x", "kind", ".bin");
        assert_eq!(places[0], dir.path().join(".x"));
        if let Some(cached) = places.get(1) {
            assert!(cached.parent().unwrap().ends_with("kind"));
            let name = cached.file_name().unwrap().to_str().unwrap();
            assert_eq!(name.len(), 16 + 4);
            assert!(name.ends_with(".bin"));
        }
    }
}
