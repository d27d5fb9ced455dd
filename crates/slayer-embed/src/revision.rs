//! The revision of a model: what tells two models under one name apart. Every embedding row
//! records the revision that wrote it, so a model folder replaced in place (new weights, a new
//! tokenizer, another configuration) leaves its old rows stale instead of silently mixed with
//! the new ones (docs/spec/channels.md §7.1).
//!
//! - A local folder's revision is the first [`SHORT`] hex digits of the SHA-256 over
//!   `config.json`, `tokenizer.json` and `model.safetensors`, each as its name, its length
//!   (u64 little-endian) and its bytes, in that order.
//! - An `openai/<m>` model's weights cannot be seen: its revision is the same digest over
//!   `openai`, the model name and the base URL (trailing `/` trimmed), so a server switch is a
//!   new revision but a provider retraining under the same name is not.
//!
//! Hashing the 90 MB of weights on every search would cost far more than the search, so a
//! local revision is cached with the key it was computed under: each file's length and
//! modification time (nanoseconds) and the SHA-256 of the small `config.json`. The cache is
//! `<folder>/.slayer-revision` when the folder is writable, else
//! `$XDG_CACHE_HOME/slayer/revisions/<digest of the folder's path>` (or `~/.cache/...`), else
//! nothing (the revision is computed each time). A hit costs three stats, a read of
//! `config.json` and a read of the cache file; a key that no longer matches is recomputed and
//! rewritten.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::derived_file::{self, short_hex};

/// Hex digits kept of the digest: 64 bits tell revisions apart.
pub const SHORT: usize = derived_file::SHORT;

/// The files a local folder's revision covers, in hashing order.
pub const LOCAL_FILES: [&str; 3] = ["config.json", "tokenizer.json", "model.safetensors"];

/// The cache file's name inside a model folder.
pub const CACHE_FILE: &str = ".slayer-revision";

/// The first line of a cache file: its format.
const CACHE_FORMAT: &str = "slayer-revision 1";

/// The revision of `openai/<model>` at `base_url`.
pub fn remote(model: &str, base_url: &str) -> String {
    let mut hasher = Sha256::new();
    for part in ["openai", model, base_url.trim_end_matches('/')] {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part.as_bytes());
    }
    short_hex(&hasher.finalize())
}

/// Where a revision came from (tests and timings tell a cache hit from a computation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The cache held it under the folder's current key.
    Cached,
    /// Hashed from the files (and cached where a cache could be written).
    Computed,
}

/// The revision of a local model folder, from its cache when the key still holds.
pub fn local(dir: &Path) -> Result<String, RevisionError> {
    local_with_source(dir).map(|(revision, _)| revision)
}

/// [`local`], saying whether the cache answered.
pub fn local_with_source(dir: &Path) -> Result<(String, Source), RevisionError> {
    let key = cache_key(dir)?;
    let places = derived_file::places(dir, CACHE_FILE, "revisions", "");
    for place in &places {
        if let Some(revision) = read_cache(place, &key) {
            return Ok((revision, Source::Cached));
        }
    }
    let revision = hash_folder(dir)?;
    let body = format!("{CACHE_FORMAT}\n{key}\n{revision}\n");
    // The first place that takes the file keeps it; none is fine (computed next time too).
    for place in &places {
        if derived_file::write_atomically(place, &[body.as_bytes()]).is_ok() {
            break;
        }
    }
    Ok((revision, Source::Computed))
}

/// What a cached revision is valid for: the files' lengths and modification times, and the
/// configuration's digest.
fn cache_key(dir: &Path) -> Result<String, RevisionError> {
    let mut key = String::new();
    for name in LOCAL_FILES {
        let path = dir.join(name);
        let meta = std::fs::metadata(&path).map_err(|e| cannot_read(&path, e))?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        key.push_str(&format!("{name}:{}:{mtime} ", meta.len()));
    }
    let config = dir.join(LOCAL_FILES[0]);
    let bytes = std::fs::read(&config).map_err(|e| cannot_read(&config, e))?;
    key.push_str(&format!("config-sha256:{:x}", Sha256::digest(&bytes)));
    Ok(key)
}

/// Why a local model's revision cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RevisionError {
    /// One of the folder's files cannot be read.
    #[error("cannot read {}: {source}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

fn cannot_read(path: &Path, source: std::io::Error) -> RevisionError {
    RevisionError::Read {
        path: path.to_owned(),
        source,
    }
}

/// The whole digest over the folder's files.
fn hash_folder(dir: &Path) -> Result<String, RevisionError> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 20];
    for name in LOCAL_FILES {
        let path = dir.join(name);
        let mut file = std::fs::File::open(&path).map_err(|e| cannot_read(&path, e))?;
        let len = file.metadata().map_err(|e| cannot_read(&path, e))?.len();
        hasher.update((name.len() as u64).to_le_bytes());
        hasher.update(name.as_bytes());
        hasher.update(len.to_le_bytes());
        loop {
            let n = file.read(&mut buffer).map_err(|e| cannot_read(&path, e))?;
            if n == 0 {
                break;
            }
            hasher.update(&buffer[..n]);
        }
    }
    Ok(short_hex(&hasher.finalize()))
}

/// The revision a cache file holds under exactly this key.
fn read_cache(path: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    if lines.next()? != CACHE_FORMAT || lines.next()? != key {
        return None;
    }
    let revision = lines.next()?;
    (revision.len() == SHORT && revision.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| revision.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folder(dir: &Path) {
        std::fs::write(dir.join("config.json"), br#"{"hidden_size": 4}"#).unwrap();
        std::fs::write(dir.join("tokenizer.json"), b"{}").unwrap();
        std::fs::write(dir.join("model.safetensors"), vec![7u8; 3 << 20]).unwrap();
    }

    #[test]
    fn a_revision_is_cached_in_the_folder_and_recomputed_when_a_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        folder(dir.path());
        let (first, source) = local_with_source(dir.path()).unwrap();
        assert_eq!(source, Source::Computed);
        assert_eq!(first.len(), SHORT);
        assert!(dir.path().join(CACHE_FILE).is_file());
        assert_eq!(
            local_with_source(dir.path()).unwrap(),
            (first.clone(), Source::Cached)
        );
        // A harmless change to the configuration is another revision.
        std::fs::write(
            dir.path().join("config.json"),
            br#"{"hidden_size": 4, "note": 1}"#,
        )
        .unwrap();
        let (second, source) = local_with_source(dir.path()).unwrap();
        assert_eq!(source, Source::Computed);
        assert_ne!(second, first);
        assert_eq!(local(dir.path()).unwrap(), second);
        // New weights of the same length: the modification time tells.
        let weights = dir.path().join("model.safetensors");
        std::fs::write(&weights, vec![8u8; 3 << 20]).unwrap();
        let file = std::fs::File::options().write(true).open(&weights).unwrap();
        file.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(9))
            .unwrap();
        let (third, source) = local_with_source(dir.path()).unwrap();
        assert_eq!(source, Source::Computed);
        assert_ne!(third, second);
        // The digest is of the contents alone: the same files elsewhere agree.
        let copy = tempfile::tempdir().unwrap();
        for name in LOCAL_FILES {
            std::fs::copy(dir.path().join(name), copy.path().join(name)).unwrap();
        }
        assert_eq!(local(copy.path()).unwrap(), third);
    }

    #[test]
    fn a_tampered_or_foreign_cache_is_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        folder(dir.path());
        let revision = local(dir.path()).unwrap();
        let cache = dir.path().join(CACHE_FILE);
        let text = std::fs::read_to_string(&cache).unwrap();
        std::fs::write(&cache, text.replace(&revision, "not-hex-at-all!!")).unwrap();
        assert_eq!(
            local_with_source(dir.path()).unwrap(),
            (revision.clone(), Source::Computed)
        );
        std::fs::write(&cache, "garbage").unwrap();
        assert_eq!(local(dir.path()).unwrap(), revision);
    }

    #[test]
    fn a_missing_file_is_an_error_and_remote_revisions_follow_the_server() {
        let dir = tempfile::tempdir().unwrap();
        assert!(local(dir.path())
            .unwrap_err()
            .to_string()
            .contains("config.json"));
        let a = remote("text-embedding-3-small", "https://api.openai.com/v1");
        assert_eq!(
            a,
            remote("text-embedding-3-small", "https://api.openai.com/v1/")
        );
        assert_ne!(
            a,
            remote("text-embedding-3-small", "http://localhost:8080/v1")
        );
        assert_ne!(
            a,
            remote("text-embedding-3-large", "https://api.openai.com/v1")
        );
        assert_eq!(a.len(), SHORT);
    }
}
