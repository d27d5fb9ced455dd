//! The vector sidecar: one model's live embedding rows laid out for scanning, in
//! `<store>.vectors/<model>.bin`. It is derived from the store (never the source of truth),
//! rebuilt from the rows whenever the store's [`VectorsState`] moved past the one it records
//! or the model's revision is not the one it was built for, and mapped by searches, so a
//! one-shot search reads no vector through SQLite. It holds only rows the active revision
//! wrote, and counts the live rows other revisions wrote (stale).
//!
//! Each row is the unit vector quantised to int8 with its own scale (`max |x| / 127`), so a
//! million 384-dimension rows take 384 MB. A scan quantises the question to i16 and sums
//! integer products: the dense channel's score of a row is `scale × question scale × Σ q·c`,
//! its cosine to within about 1e-3 (docs/quality.md measures what that does to retrieval).
//! Every row also carries its kind (memory or entity) and its datasources, so a filtered scan
//! is one pass: an entity's datasource is its id's first segment, a memory's are those of its
//! tags (stale ones included), as the search's datasource filter reads them.
//!
//! Layout (little-endian): `SLAYVEC1`, the header's length (u32) and the header (JSON), then the
//! sections the header places, each 64-byte aligned: id ends (u64 per row), ids (UTF-8, in
//! canonical id order), kinds (u8), datasource sets (u32), scales (f32), codes (i8 × dim).

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use rusqlite::Connection;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use slayer_common::canonical::{datasource_of, memory_id_of};
use slayer_common::mapped::MappedFile;
use slayer_common::simd::dot_i16_i8;
use slayer_common::store::embeddings::{self, VectorsState};
use slayer_common::store::StoreError;

const MAGIC: &[u8; 8] = b"SLAYVEC1";
const FORMAT: u32 = 2;
const ALIGN: usize = 64;
/// Rows past which a scan is split across the cores.
const PARALLEL_ROWS: usize = 16_384;

/// A row's kind byte.
const MEMORY: u8 = 1;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Header {
    format: u32,
    model: String,
    /// The model revision whose rows are here.
    revision: String,
    state: VectorsState,
    /// Live rows under the model name that another revision wrote, left out.
    stale: usize,
    /// The dimension of the first live row: the rows of that size are here.
    dim: usize,
    rows: usize,
    /// Live rows of another size, left out.
    other_dims: usize,
    datasources: Vec<String>,
    /// Each distinct set of datasource indexes rows carry.
    sets: Vec<Vec<u32>>,
    sections: Sections,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
struct Sections {
    id_ends: usize,
    ids: usize,
    kinds: usize,
    sets: usize,
    scales: usize,
    codes: usize,
    end: usize,
}

enum Bytes {
    Mapped(MappedFile),
    Owned(Vec<u8>),
}

/// An opened sidecar.
pub struct Sidecar {
    bytes: Bytes,
    header: Header,
    /// Whether this open rebuilt it (for timings and tests).
    pub rebuilt: bool,
}

/// What a datasource filter keeps of a sidecar's rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// No filter.
    All,
    /// The rows whose datasource set is `true` here.
    Sets(Vec<bool>),
    /// A datasource name with a dot, which rooting does not read by first segment: the
    /// caller decides row by row.
    RowByRow,
}

/// One side's scores from a scan: `(score, row)`, in row order.
pub type Scored = Vec<(f32, u32)>;

/// Where a store's sidecar for `model` lives.
pub fn path_for(store: &Path, model: &str) -> PathBuf {
    let mut dir = store.as_os_str().to_owned();
    dir.push(".vectors");
    let readable: String = model
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let digest = Sha256::digest(model.as_bytes());
    let tag: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    PathBuf::from(dir).join(format!("{readable}-{tag}.bin"))
}

impl Sidecar {
    /// The current sidecar of `model` at `revision`: the file when it records the store's
    /// state and this revision, else rebuilt from the rows and written (atomically; kept in
    /// memory when the directory is not writable). `None` on a store too old to say its state.
    pub fn open(
        conn: &Connection,
        store: &Path,
        model: &str,
        revision: &str,
    ) -> Result<Option<Sidecar>, StoreError> {
        let Some(state) = embeddings::vectors_state(conn)? else {
            return Ok(None);
        };
        let path = path_for(store, model);
        if let Ok(file) = MappedFile::open(&path) {
            if let Some(header) = validated_header(file.bytes()) {
                if header.model == model && header.revision == revision && header.state == state {
                    // Every scan reads the sections after the ids whole.
                    file.prefault(header.sections.kinds..header.sections.end);
                    return Ok(Some(Sidecar {
                        bytes: Bytes::Mapped(file),
                        header,
                        rebuilt: false,
                    }));
                }
            }
        }
        let bytes = build(conn, model, revision, state)?;
        // A failed write leaves the search to its in-memory copy; the next writer retries.
        let _ = write_atomically(&path, &bytes);
        let header = validated_header(&bytes).ok_or_else(|| StoreError::Serialize {
            what: "vector sidecar",
            cause: "unreadable header".into(),
        })?;
        Ok(Some(Sidecar {
            bytes: Bytes::Owned(bytes),
            header,
            rebuilt: true,
        }))
    }

    fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m.bytes(),
            Bytes::Owned(v) => v,
        }
    }

    /// The rows' dimension.
    pub fn dim(&self) -> usize {
        self.header.dim
    }

    /// How many rows it holds.
    pub fn len(&self) -> usize {
        self.header.rows
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.header.rows == 0
    }

    /// Live rows of another dimension, not held.
    pub fn other_dims(&self) -> usize {
        self.header.other_dims
    }

    /// Live rows under the model name written by another revision, not held.
    pub fn stale(&self) -> usize {
        self.header.stale
    }

    /// Every live row under the model name, held or not: one per doc that has a row.
    pub fn live_rows(&self) -> usize {
        self.header.rows + self.header.other_dims + self.header.stale
    }

    fn section<T: bytemuck::Pod>(&self, start: usize, count: usize) -> &[T] {
        let len = count * std::mem::size_of::<T>();
        bytemuck::cast_slice(&self.bytes()[start..start + len])
    }

    /// A row's canonical id (empty for a row past the end, or bytes that changed under the
    /// map since they were checked).
    pub fn id(&self, row: u32) -> &str {
        let ends: &[u64] = self.section(self.header.sections.id_ends, self.header.rows);
        let row = row as usize;
        let start = match row {
            0 => 0,
            _ => ends.get(row - 1).map_or(0, |e| *e as usize),
        };
        let end = ends.get(row).map_or(0, |e| *e as usize);
        let ids = &self.bytes()[self.header.sections.ids..self.header.sections.kinds];
        ids.get(start..end)
            .and_then(|id| std::str::from_utf8(id).ok())
            .unwrap_or_default()
    }

    /// The row of a canonical id (rows are in id order).
    pub fn row_of(&self, id: &str) -> Option<u32> {
        let (mut lo, mut hi) = (0usize, self.header.rows);
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.id(mid as u32).cmp(id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid as u32),
            }
        }
        None
    }

    /// What a datasource filter keeps.
    pub fn keep(&self, datasource: Option<&str>) -> Keep {
        let Some(d) = datasource else {
            return Keep::All;
        };
        if d.contains('.') {
            return Keep::RowByRow;
        }
        let index = self.header.datasources.iter().position(|n| n == d);
        Keep::Sets(
            self.header
                .sets
                .iter()
                .map(|set| index.is_some_and(|i| set.contains(&(i as u32))))
                .collect(),
        )
    }

    /// Whether the filter keeps any row.
    pub fn any_kept(
        &self,
        keep: Option<&[bool]>,
        admit: Option<&(dyn Fn(u32) -> bool + Sync)>,
    ) -> bool {
        let sets: &[u32] = self.section(self.header.sections.sets, self.header.rows);
        sets.iter().enumerate().any(|(row, set)| {
            keep.is_none_or(|k| kept(k, *set)) && admit.is_none_or(|a| a(row as u32))
        })
    }

    /// Scores every row the filter keeps against a unit query of the sidecar's dimension:
    /// `(memories, entities)`, each in row order. `admit` decides rows the set filter cannot
    /// (a dotted datasource).
    pub fn scan(
        &self,
        query: &[f32],
        keep: Option<&[bool]>,
        admit: Option<&(dyn Fn(u32) -> bool + Sync)>,
    ) -> (Scored, Scored) {
        let (dim, rows) = (self.header.dim, self.header.rows);
        let s = self.header.sections;
        let kinds: &[u8] = self.section(s.kinds, rows);
        let sets: &[u32] = self.section(s.sets, rows);
        let scales: &[f32] = self.section(s.scales, rows);
        let codes: &[i8] = self.section(s.codes, rows * dim);
        let (q, q_scale) = quantize_query(query);
        let score_chunk = |first: usize, chunk: &[i8]| -> (Scored, Scored) {
            let mut sides = (Vec::new(), Vec::new());
            for (i, code) in chunk.chunks_exact(dim).enumerate() {
                let row = first + i;
                if keep.is_some_and(|k| !kept(k, sets[row]))
                    || admit.is_some_and(|a| !a(row as u32))
                {
                    continue;
                }
                let score = (dot_i16_i8(&q, code) as f64 * f64::from(scales[row]) * q_scale) as f32;
                let side = if kinds[row] == MEMORY {
                    &mut sides.0
                } else {
                    &mut sides.1
                };
                side.push((score, row as u32));
            }
            sides
        };
        if rows < PARALLEL_ROWS || dim == 0 {
            return score_chunk(0, codes);
        }
        let per = rows.div_ceil(rayon::current_num_threads().max(1) * 4);
        let parts: Vec<(Scored, Scored)> = codes
            .par_chunks(per * dim)
            .enumerate()
            .map(|(i, chunk)| score_chunk(i * per, chunk))
            .collect();
        let mut out = (Vec::with_capacity(rows), Vec::new());
        for (m, e) in parts {
            out.0.extend(m);
            out.1.extend(e);
        }
        out
    }
}

/// Whether a datasource set is kept; a set the header does not list (bytes changed under the
/// map since they were checked) is not.
fn kept(keep: &[bool], set: u32) -> bool {
    keep.get(set as usize).copied().unwrap_or(false)
}

fn read_header(bytes: &[u8]) -> Option<Header> {
    if bytes.get(..8)? != MAGIC {
        return None;
    }
    let len = u32::from_le_bytes(bytes.get(8..12)?.try_into().ok()?) as usize;
    let header: Header = serde_json::from_slice(bytes.get(12..12usize.checked_add(len)?)?).ok()?;
    (header.format == FORMAT && header.sections.end <= bytes.len()).then_some(header)
}

/// The header of a sidecar whose every section bound holds: sections in order, aligned for
/// their types and inside the file, id ends rising within the ids, each row's datasource set
/// one the header lists. A file that fails (truncated, overwritten, bit-rotted) is not used:
/// the caller rebuilds it from the store, so no access past a section can happen.
fn validated_header(bytes: &[u8]) -> Option<Header> {
    let header = read_header(bytes)?;
    let (rows, s) = (header.rows, header.sections);
    let fits = |start: usize, size: usize, align: usize, next: usize| {
        start.is_multiple_of(align)
            && rows.checked_mul(size).and_then(|n| start.checked_add(n)) <= Some(next)
    };
    let code_bytes = rows.checked_mul(header.dim)?;
    let in_order = fits(s.id_ends, 8, 8, s.ids)
        && s.ids <= s.kinds
        && fits(s.kinds, 1, 1, s.sets)
        && fits(s.sets, 4, 4, s.scales)
        && fits(s.scales, 4, 4, s.codes)
        && s.codes.checked_add(code_bytes) <= Some(s.end)
        && s.end <= bytes.len()
        && (bytes.as_ptr() as usize).is_multiple_of(8);
    if !in_order {
        return None;
    }
    let ends: &[u64] = bytemuck::try_cast_slice(&bytes[s.id_ends..s.id_ends + rows * 8]).ok()?;
    let ids_len = (s.kinds - s.ids) as u64;
    let mut last = 0u64;
    for &end in ends {
        if end < last || end > ids_len {
            return None;
        }
        last = end;
    }
    let sets: &[u32] = bytemuck::try_cast_slice(&bytes[s.sets..s.sets + rows * 4]).ok()?;
    let known = header.sets.len() as u32;
    sets.iter().all(|set| *set < known).then_some(header)
}

/// The question as i16 and its scale: integer products against the codes are exact, and the
/// question's own rounding (1 part in 65,534 of its largest component) is far below the rows'.
fn quantize_query(query: &[f32]) -> (Vec<i16>, f64) {
    let max = query.iter().fold(0f32, |m, v| m.max(v.abs()));
    if max == 0.0 {
        return (vec![0; query.len()], 0.0);
    }
    let scale = f64::from(max) / 32767.0;
    let q = query
        .iter()
        .map(|v| (f64::from(*v) / scale).round() as i16)
        .collect();
    (q, scale)
}

/// A unit vector as int8 codes and their scale.
fn quantize_row(vector: &[f32], codes: &mut Vec<i8>) -> f32 {
    let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
    let max = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
    if norm == 0.0 || max == 0.0 {
        codes.extend(std::iter::repeat_n(0, vector.len()));
        return 0.0;
    }
    let scale = max / norm / 127.0;
    codes.extend(
        vector
            .iter()
            .map(|v| (v / norm / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// The sidecar's bytes, built from the store's live rows of `model` at `revision`.
fn build(
    conn: &Connection,
    model: &str,
    revision: &str,
    state: VectorsState,
) -> Result<Vec<u8>, StoreError> {
    let mut dim = None;
    let mut other_dims = 0;
    let (mut ids, mut id_ends, mut kinds, mut scales, mut codes) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut datasources: Vec<String> = Vec::new();
    let mut ds_index: FxHashMap<String, u32> = FxHashMap::default();
    let mut intern_ds = |name: &str| -> u32 {
        if let Some(&i) = ds_index.get(name) {
            return i;
        }
        let i = datasources.len() as u32;
        datasources.push(name.to_owned());
        ds_index.insert(name.to_owned(), i);
        i
    };
    // Per row: its datasource indexes (memories' filled from their tags below).
    let mut row_ds: Vec<Vec<u32>> = Vec::new();
    let mut memory_rows: FxHashMap<String, usize> = FxHashMap::default();
    embeddings::for_each_live_row(conn, model, revision, |id, kind, blob| {
        let size = blob.len() / 4;
        if *dim.get_or_insert(size) != size {
            other_dims += 1;
            return;
        }
        scales.push(quantize_row(&embeddings::decode(blob), &mut codes));
        ids.extend_from_slice(id.as_bytes());
        id_ends.push(ids.len() as u64);
        let row = kinds.len();
        if kind == "memory" {
            kinds.push(MEMORY);
            if let Some(m) = memory_id_of(id) {
                memory_rows.insert(m.to_owned(), row);
            }
            row_ds.push(Vec::new());
        } else {
            kinds.push(0);
            row_ds.push(datasource_of(id).map(&mut intern_ds).into_iter().collect());
        }
    })?;
    embeddings::for_each_memory_tag(conn, |memory, tag| {
        if let (Some(&row), Some(ds)) = (memory_rows.get(memory), datasource_of(tag)) {
            let i = intern_ds(ds);
            if !row_ds[row].contains(&i) {
                row_ds[row].push(i);
            }
        }
    })?;
    let mut sets: Vec<Vec<u32>> = Vec::new();
    let mut set_index: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let row_sets: Vec<u32> = row_ds
        .into_iter()
        .map(|mut set| {
            set.sort_unstable();
            *set_index.entry(set.clone()).or_insert_with(|| {
                sets.push(set);
                sets.len() as u32 - 1
            })
        })
        .collect();
    let rows = kinds.len();
    let dim = dim.unwrap_or(0);
    let stale = embeddings::stale_live_rows(conn, model, revision)? as usize;
    let mut header = Header {
        format: FORMAT,
        model: model.to_owned(),
        revision: revision.to_owned(),
        state,
        stale,
        dim,
        rows,
        other_dims,
        datasources,
        sets,
        sections: Sections::default(),
    };
    // The header's length depends on the offsets it holds: place the sections after a
    // generous bound of it, then write it (padded) into that room.
    let room = serde_json::to_vec(&header).map_or(0, |h| h.len()) + 200;
    let mut out = Vec::new();
    let place = |out: &mut Vec<u8>, bytes: &[u8]| -> usize {
        let at = (12 + room).max(out.len()).next_multiple_of(ALIGN);
        out.resize(at, 0);
        out.extend_from_slice(bytes);
        at
    };
    let s = &mut header.sections;
    s.id_ends = place(&mut out, bytemuck::cast_slice(&id_ends));
    s.ids = place(&mut out, &ids);
    s.kinds = place(&mut out, &kinds);
    s.sets = place(&mut out, bytemuck::cast_slice(&row_sets));
    s.scales = place(&mut out, bytemuck::cast_slice(&scales));
    s.codes = place(&mut out, bytemuck::cast_slice(&codes));
    s.end = out.len();
    let json = serde_json::to_vec(&header).map_err(|e| StoreError::Serialize {
        what: "vector sidecar",
        cause: e.to_string(),
    })?;
    if json.len() > room {
        return Err(StoreError::Serialize {
            what: "vector sidecar",
            cause: "header outgrew its room".into(),
        });
    }
    out[..8].copy_from_slice(MAGIC);
    out[8..12].copy_from_slice(&(json.len() as u32).to_le_bytes());
    out[12..12 + json.len()].copy_from_slice(&json);
    Ok(out)
}

/// Writes `bytes` to a temporary file beside `path` and renames it over `path`: a reader maps
/// either the old file or the new one, never a half-written one.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    // Unique per writer, threads of one process included (a search and its background
    // re-embed may both rebuild).
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("vectors"),
        std::process::id(),
        WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

/// Brings the sidecar of `model` at `revision` up to date (what `slayer-embed refresh` calls
/// after writing rows): `true` when it was rebuilt.
pub fn refresh(
    conn: &Connection,
    store: &Path,
    model: &str,
    revision: &str,
) -> Result<bool, StoreError> {
    Ok(Sidecar::open(conn, store, model, revision)?.is_some_and(|s| s.rebuilt))
}

#[cfg(test)]
mod tests {
    use super::*;
    use slayer_common::records::{Doc, Memory};
    use slayer_common::store::{docs, memories, OpenMode, Store};

    const MODEL: &str = "local/test";
    const REVISION: &str = "0123456789abcdef";

    fn doc(conn: &Connection, id: &str, kind: &str) {
        let stored = docs::StoredDoc {
            doc: Doc {
                canonical_id: id.into(),
                doc_kind: kind.into(),
                datasource: datasource_of(id).map(str::to_owned),
                text: "t".into(),
                content_hash: "h".into(),
                embedding_text: None,
            },
            model: None,
            position: 0,
        };
        docs::upsert(conn, &stored).unwrap();
    }

    fn memory(conn: &Connection, id: &str, tags: &[&str]) {
        let m = Memory {
            version: 4,
            id: id.into(),
            learning: "x".into(),
            description: None,
            entities: tags.iter().map(|t| t.to_string()).collect(),
            query: None,
            created_at: "t".into(),
            standing: Default::default(),
        };
        memories::put(conn, &m).unwrap();
        doc(conn, &format!("memory:{id}"), "memory");
    }

    fn row(conn: &Connection, id: &str, v: &[f32]) {
        embeddings::put(conn, id, MODEL, REVISION, "h", v, "t").unwrap();
    }

    /// Two datasources' entities, memories tagged in one, both or (by a stale tag) another.
    fn store(dir: &Path) -> Store {
        let store = Store::open(&dir.join("s.db"), OpenMode::CreateIfMissing).unwrap();
        let conn = store.conn();
        for (id, v) in [
            ("shop.orders", [1.0, 0.0, 0.0]),
            ("shop.orders.amount", [0.0, 2.0, 0.0]),
            ("crm.users", [0.0, 0.0, 3.0]),
        ] {
            doc(conn, id, "model");
            row(conn, id, &v);
        }
        memory(conn, "1", &["shop.orders"]);
        memory(conn, "2", &["shop.orders", "crm.users"]);
        memory(conn, "3", &["gone.table"]);
        row(conn, "memory:1", &[1.0, 1.0, 0.0]);
        row(conn, "memory:2", &[0.0, 1.0, 1.0]);
        row(conn, "memory:3", &[-1.0, 0.5, 0.25]);
        store
    }

    fn ids(sidecar: &Sidecar, scored: &Scored) -> Vec<String> {
        scored
            .iter()
            .map(|(_, r)| sidecar.id(*r).to_owned())
            .collect()
    }

    #[test]
    fn rows_scores_and_datasources_come_from_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let sidecar = Sidecar::open(store.conn(), store.path(), MODEL, REVISION)
            .unwrap()
            .unwrap();
        assert!(sidecar.rebuilt);
        assert_eq!(
            (sidecar.len(), sidecar.dim(), sidecar.other_dims()),
            (6, 3, 0)
        );
        assert_eq!(sidecar.id(0), "crm.users");
        assert_eq!(sidecar.row_of("memory:2"), Some(2));
        assert_eq!(sidecar.row_of("memory:9"), None);
        let query = [0.6f32, 0.8, 0.0];
        let (m, e) = sidecar.scan(&query, None, None);
        assert_eq!(ids(&sidecar, &m), ["memory:1", "memory:2", "memory:3"]);
        assert_eq!(
            ids(&sidecar, &e),
            ["crm.users", "shop.orders", "shop.orders.amount"]
        );
        // Cosines to within int8 rounding (half a step of each of three components).
        let exact = [
            1.4f32 / 2f32.sqrt(),
            0.8 / 2f32.sqrt(),
            (-0.6 + 0.4) / 1.3125f32.sqrt(),
        ];
        for ((score, _), want) in m.iter().zip(exact) {
            assert!((score - want).abs() < 5e-3, "{score} vs {want}");
        }
        let kept = |d: &str| {
            let Keep::Sets(sets) = sidecar.keep(Some(d)) else {
                panic!("{d}: not by sets")
            };
            let (m, e) = sidecar.scan(&query, Some(&sets), None);
            [ids(&sidecar, &m), ids(&sidecar, &e)].concat()
        };
        assert_eq!(
            kept("shop"),
            ["memory:1", "memory:2", "shop.orders", "shop.orders.amount"]
        );
        assert_eq!(kept("crm"), ["memory:2", "crm.users"]);
        assert_eq!(
            kept("gone"),
            ["memory:3"],
            "a stale tag still roots a memory"
        );
        assert!(kept("nowhere").is_empty());
        assert_eq!(sidecar.keep(Some("a.b")), Keep::RowByRow);
        assert_eq!(sidecar.keep(None), Keep::All);
    }

    #[test]
    fn the_file_is_reused_until_the_store_moves_and_never_across_stores() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let conn = store.conn();
        let open = || {
            Sidecar::open(conn, store.path(), MODEL, REVISION)
                .unwrap()
                .unwrap()
        };
        assert!(open().rebuilt);
        assert!(path_for(store.path(), MODEL).is_file());
        assert!(!open().rebuilt, "unchanged: mapped as written");
        // A memory's tags changed: its datasources did.
        memory(conn, "3", &["crm.users"]);
        let moved = open();
        assert!(moved.rebuilt);
        let Keep::Sets(sets) = moved.keep(Some("crm")) else {
            panic!()
        };
        let (m, _) = moved.scan(&[1.0, 0.0, 0.0], Some(&sets), None);
        assert_eq!(ids(&moved, &m), ["memory:2", "memory:3"]);
        assert!(!open().rebuilt);
        // A row rewritten, a doc removed.
        row(conn, "crm.users", &[1.0, 0.0, 0.0]);
        assert!(open().rebuilt);
        docs::delete(conn, "crm.users").unwrap();
        let after = open();
        assert!(after.rebuilt);
        assert_eq!(after.row_of("crm.users"), None);
        // A new store at the same path starts its counters again, under another id.
        let path = store.path().to_owned();
        let sidecar_file = path_for(&path, MODEL);
        drop(after);
        drop(store);
        for f in ["s.db", "s.db-wal", "s.db-shm"] {
            let _ = std::fs::remove_file(dir.path().join(f));
        }
        let fresh = Store::open(&path, OpenMode::CreateIfMissing).unwrap();
        assert!(sidecar_file.is_file());
        let reopened = Sidecar::open(fresh.conn(), &path, MODEL, REVISION)
            .unwrap()
            .unwrap();
        assert!(reopened.rebuilt);
        assert!(reopened.is_empty());
    }

    #[test]
    fn rows_of_another_size_are_counted_and_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        row(store.conn(), "shop.orders", &[1.0, 0.0]);
        let sidecar = Sidecar::open(store.conn(), store.path(), MODEL, REVISION)
            .unwrap()
            .unwrap();
        assert_eq!((sidecar.len(), sidecar.other_dims()), (5, 1));
        assert_eq!(sidecar.row_of("shop.orders"), None);
    }

    #[test]
    fn an_unwritable_directory_leaves_the_sidecar_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        // A file where the sidecar directory would go.
        let mut blocker = store.path().as_os_str().to_owned();
        blocker.push(".vectors");
        std::fs::write(&blocker, b"not a directory").unwrap();
        let sidecar = Sidecar::open(store.conn(), store.path(), MODEL, REVISION)
            .unwrap()
            .unwrap();
        assert_eq!(sidecar.len(), 6);
        assert!(
            Sidecar::open(store.conn(), store.path(), MODEL, REVISION)
                .unwrap()
                .unwrap()
                .rebuilt
        );
    }

    #[test]
    fn only_the_active_revision_s_rows_are_held_and_a_new_revision_rebuilds() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path());
        let conn = store.conn();
        // Two rows written by another revision of the same model name, one by none recorded.
        embeddings::put(
            conn,
            "crm.users",
            MODEL,
            "fedcba9876543210",
            "h",
            &[0.0, 0.0, 3.0],
            "t",
        )
        .unwrap();
        embeddings::put(conn, "memory:3", MODEL, "", "h", &[-1.0, 0.5, 0.25], "t").unwrap();
        let open = |revision| {
            Sidecar::open(conn, store.path(), MODEL, revision)
                .unwrap()
                .unwrap()
        };
        let current = open(REVISION);
        assert!(current.rebuilt);
        assert_eq!(
            (current.len(), current.stale(), current.live_rows()),
            (4, 2, 6)
        );
        assert_eq!(current.row_of("crm.users"), None);
        assert_eq!(current.row_of("memory:3"), None);
        let (m, e) = current.scan(&[1.0, 0.0, 0.0], None, None);
        assert_eq!(ids(&current, &m), ["memory:1", "memory:2"]);
        assert_eq!(ids(&current, &e), ["shop.orders", "shop.orders.amount"]);
        assert!(!open(REVISION).rebuilt);
        // The other revision is active now: the file is rebuilt for it, then reused.
        let other = open("fedcba9876543210");
        assert!(other.rebuilt);
        assert_eq!((other.len(), other.stale()), (1, 5));
        assert_eq!(other.id(0), "crm.users");
        assert!(!open("fedcba9876543210").rebuilt);
        assert!(open(REVISION).rebuilt);
    }

    #[test]
    fn integer_scores_track_the_float_cosine() {
        let mut seed = 11u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let query = unit((0..384).map(|_| next()).collect());
        let (q, q_scale) = quantize_query(&query);
        for _ in 0..200 {
            let row = unit((0..384).map(|_| next()).collect());
            let mut codes = Vec::new();
            let scale = quantize_row(&row, &mut codes);
            let approx = dot_i16_i8(&q, &codes) as f64 * f64::from(scale) * q_scale;
            let exact: f64 = query.iter().zip(&row).map(|(a, b)| f64::from(a * b)).sum();
            assert!((approx - exact).abs() < 2e-3, "{approx} vs {exact}");
        }
    }
}
