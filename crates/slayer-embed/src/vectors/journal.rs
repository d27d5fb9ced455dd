//! The sidecar's journal, `<sidecar>.log`: the changes made to the store after its base file
//! was built, appended as the store moves, so a save costs the rows it wrote, not a rebuild.
//!
//! Layout: `SLAYLOG1` and the base's build number (u64, little-endian), then records, each
//! framed as its meta's length (u32), its codes' length (u32), the first 8 bytes of the
//! SHA-256 of meta and codes, the meta (JSON) and the codes (i8 per dimension per new row).
//!
//! Readers never lock: they read the file whole and keep the records up to the first frame
//! that is short or fails its checksum (a writer killed mid-append), which the next appender
//! cuts off. Appenders hold an exclusive `flock` on the journal while they check the base on
//! disk is still theirs and append; a compaction renames a new base into place, then resets
//! the journal to its build under the same lock, so a record always follows its own base.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use slayer_common::store::rows::VectorsState;

const MAGIC: &[u8; 8] = b"SLAYLOG1";
const HEADER: usize = 16;
const FRAME: usize = 16;

/// One catch-up: the docs that changed between two states of the store, as they are at `to`.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record {
    pub(super) from: VectorsState,
    pub(super) to: VectorsState,
    /// Live rows under the model name another revision wrote, at `to`.
    pub(super) stale: usize,
    pub(super) entries: Vec<Entry>,
}

/// A doc of a [`Record`]: its new row, or none (its old row, if any, is dead).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Entry {
    pub(super) id: String,
    pub(super) row: Option<NewRow>,
}

/// A row as the sidecar holds it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct NewRow {
    pub(super) kind: u8,
    pub(super) datasources: Vec<String>,
    pub(super) scale: f32,
    pub(super) codes: Vec<i8>,
}

#[derive(Serialize, Deserialize)]
struct Meta {
    from: VectorsState,
    to: VectorsState,
    stale: usize,
    entries: Vec<MetaEntry>,
}

#[derive(Serialize, Deserialize)]
struct MetaEntry {
    id: String,
    /// `None`: dead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kind: Option<u8>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    ds: Vec<String>,
    #[serde(default)]
    scale: f32,
}

/// Where the journal of the sidecar at `sidecar` lives.
pub(super) fn path_for(sidecar: &Path) -> PathBuf {
    let mut name = sidecar.as_os_str().to_owned();
    name.push(".log");
    PathBuf::from(name)
}

fn checksum(meta: &[u8], codes: &[u8]) -> [u8; 8] {
    let mut hash = Sha256::new();
    hash.update(meta);
    hash.update(codes);
    hash.finalize()[..8].try_into().unwrap_or_default()
}

fn encode(record: &Record) -> Vec<u8> {
    let mut codes: Vec<u8> = Vec::new();
    let entries = record
        .entries
        .iter()
        .map(|e| match &e.row {
            Some(row) => {
                codes.extend(row.codes.iter().map(|c| *c as u8));
                MetaEntry {
                    id: e.id.clone(),
                    kind: Some(row.kind),
                    ds: row.datasources.clone(),
                    scale: row.scale,
                }
            }
            None => MetaEntry {
                id: e.id.clone(),
                kind: None,
                ds: Vec::new(),
                scale: 0.0,
            },
        })
        .collect();
    let meta = serde_json::to_vec(&Meta {
        from: record.from.clone(),
        to: record.to.clone(),
        stale: record.stale,
        entries,
    })
    .unwrap_or_default();
    let mut out = Vec::with_capacity(FRAME + meta.len() + codes.len());
    out.extend_from_slice(&(meta.len() as u32).to_le_bytes());
    out.extend_from_slice(&(codes.len() as u32).to_le_bytes());
    out.extend_from_slice(&checksum(&meta, &codes));
    out.extend_from_slice(&meta);
    out.extend_from_slice(&codes);
    out
}

/// The record framed at the start of `bytes` and its framed length, if it is whole and sound
/// and its rows have `dim` codes each.
fn decode(bytes: &[u8], dim: usize) -> Option<(Record, usize)> {
    let word = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let (meta_len, codes_len) = (word(0)?, word(4)?);
    let meta_end = FRAME.checked_add(meta_len)?;
    let end = meta_end.checked_add(codes_len)?;
    let (meta, codes) = (bytes.get(FRAME..meta_end)?, bytes.get(meta_end..end)?);
    if bytes.get(8..16)? != checksum(meta, codes) {
        return None;
    }
    let meta: Meta = serde_json::from_slice(meta).ok()?;
    let mut codes = codes.chunks_exact(dim.max(1));
    let mut entries = Vec::with_capacity(meta.entries.len());
    for e in meta.entries {
        let row = match e.kind {
            Some(kind) => Some(NewRow {
                kind,
                datasources: e.ds,
                scale: e.scale,
                codes: codes.next()?.iter().map(|c| *c as i8).collect(),
            }),
            None => None,
        };
        entries.push(Entry { id: e.id, row });
    }
    if codes.next().is_some() || !codes.remainder().is_empty() {
        return None;
    }
    let record = Record {
        from: meta.from,
        to: meta.to,
        stale: meta.stale,
        entries,
    };
    Some((record, end))
}

/// The sound records of a journal's bytes that belong to the base `build`, and where the
/// sound part ends (0 when the header is not this build's).
fn parse(bytes: &[u8], build: u64, dim: usize) -> (Vec<Record>, usize) {
    let ours =
        bytes.get(..8) == Some(MAGIC) && bytes.get(8..16) == Some(build.to_le_bytes().as_slice());
    if !ours {
        return (Vec::new(), 0);
    }
    let (mut records, mut at) = (Vec::new(), HEADER);
    while let Some((record, len)) = bytes.get(at..).and_then(|b| decode(b, dim)) {
        records.push(record);
        at += len;
    }
    (records, at)
}

/// The journal's records for the base `build` (none when it is missing or another base's).
pub(super) fn read(path: &Path, build: u64, dim: usize) -> Vec<Record> {
    std::fs::read(path).map_or_else(|_| Vec::new(), |bytes| parse(&bytes, build, dim).0)
}

/// The journal's records for the base `build` that chain from the base's state `from`: a
/// record that does not start where the one before it ended, and all after it, are not this
/// base's history.
pub(super) fn read_chain(path: &Path, build: u64, dim: usize, from: &VectorsState) -> Vec<Record> {
    let mut records = read(path, build, dim);
    let mut at = from;
    let chained = records
        .iter()
        .take_while(|r| {
            let follows = r.from == *at;
            at = &r.to;
            follows
        })
        .count();
    records.truncate(chained);
    records
}

/// Opens the journal for writing and takes its lock (released when the file is dropped).
fn locked(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    file.lock()?;
    Ok(file)
}

/// Appends `record` to the journal of the base `build` (whose state is `base_state`), if
/// the base on disk is still that build (`on_disk_build`, read under the lock) and the
/// journal's records end where `record` starts; a torn tail is cut off first. `Ok(false)`:
/// another process moved the journal on, and the caller keeps its record in memory only.
pub(super) fn append(
    path: &Path,
    build: u64,
    base_state: &VectorsState,
    dim: usize,
    on_disk_build: impl Fn() -> Option<u64>,
    record: &Record,
) -> std::io::Result<bool> {
    let mut file = locked(path)?;
    if on_disk_build() != Some(build) {
        return Ok(false);
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    let (records, sound) = parse(&bytes, build, dim);
    let end = records.last().map_or(base_state, |r| &r.to);
    if sound == 0 {
        if record.from != *base_state {
            // A journal of this build must start at its base's state.
            return Ok(false);
        }
        // Another base's journal, or none yet: start this build's.
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(MAGIC)?;
        file.write_all(&build.to_le_bytes())?;
    } else if *end != record.from {
        return Ok(false);
    } else {
        file.set_len(sound as u64)?;
        file.seek(SeekFrom::Start(sound as u64))?;
    }
    file.write_all(&encode(record))?;
    Ok(true)
}

/// Empties the journal for a new base `build` (a compaction, after the base's rename).
pub(super) fn reset(path: &Path, build: u64) -> std::io::Result<()> {
    let mut file = locked(path)?;
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(MAGIC)?;
    file.write_all(&build.to_le_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(e: i64, m: i64) -> VectorsState {
        VectorsState {
            store_id: "s".into(),
            embeddings_changes: e,
            memory_tags_changes: m,
        }
    }

    fn record(from: i64, to: i64) -> Record {
        Record {
            from: state(from, 0),
            to: state(to, 0),
            stale: 0,
            entries: vec![
                Entry {
                    id: format!("memory:{to}"),
                    row: Some(NewRow {
                        kind: 1,
                        datasources: vec!["shop".into()],
                        scale: 0.5,
                        codes: vec![1, -2, 3],
                    }),
                },
                Entry {
                    id: "shop.gone".into(),
                    row: None,
                },
            ],
        }
    }

    #[test]
    fn records_chain_and_a_torn_or_foreign_journal_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v.bin.log");
        let base = state(1, 0);
        let on_disk = || Some(7);
        assert!(append(&path, 7, &base, 3, on_disk, &record(1, 2)).unwrap());
        assert!(append(&path, 7, &base, 3, on_disk, &record(2, 4)).unwrap());
        // A record that does not follow the journal's end is not appended.
        assert!(!append(&path, 7, &base, 3, on_disk, &record(2, 5)).unwrap());
        assert_eq!(read(&path, 7, 3), vec![record(1, 2), record(2, 4)]);
        // Another base's reader sees nothing; an appender whose base was replaced appends nothing.
        assert!(read(&path, 8, 3).is_empty());
        assert!(!append(&path, 7, &base, 3, || Some(8), &record(4, 5)).unwrap());

        // A writer killed mid-append leaves a torn tail: readers stop before it, and the next
        // appender cuts it off.
        let whole = std::fs::read(&path).unwrap();
        let torn = encode(&record(4, 5));
        let mut bytes = whole.clone();
        bytes.extend_from_slice(&torn[..torn.len() - 2]);
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path, 7, 3).len(), 2);
        assert!(append(&path, 7, &base, 3, on_disk, &record(4, 6)).unwrap());
        assert_eq!(
            read(&path, 7, 3),
            vec![record(1, 2), record(2, 4), record(4, 6)]
        );
        // A flipped byte fails the checksum.
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(read(&path, 7, 3).len(), 2);

        reset(&path, 9).unwrap();
        assert!(read(&path, 7, 3).is_empty());
        // An empty journal takes only a record from its base's state.
        assert!(!append(&path, 9, &base, 3, || Some(9), &record(2, 4)).unwrap());
        assert!(append(&path, 9, &base, 3, || Some(9), &record(1, 2)).unwrap());
        assert_eq!(read(&path, 9, 3), vec![record(1, 2)]);
    }
}
