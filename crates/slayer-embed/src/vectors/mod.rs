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
//! its cosine to within about 1e-3 (docs/quality/scifact.md measures what that does to
//! retrieval).
//! Every row also carries its kind (memory or entity) and its datasources, so a filtered scan
//! is one pass: an entity's datasource is its id's first segment, a memory's are those of its
//! tags (stale ones included), as the search's datasource filter reads them.
//!
//! A store that moved since the base file was built is followed, not rebuilt: the docs its
//! change log names since the state the sidecar reached are re-read (`StoreRead::vector_changes`)
//! and appended to the sidecar's journal ([`journal`]) as one record; rows they replace or drop
//! are marked dead. Readers replay the journal over the mapped base. Writers (save, forget,
//! load, import) follow after they commit and compact (rebuild the base, empty the journal)
//! once the journal holds more than a sixty-fourth of the rows; `slayer-embed refresh` always
//! compacts. A journal that is missing, torn or another base's only costs a catch-up.
//!
//! Layout (little-endian): `SLAYVEC1`, the header's length (u32) and the header (JSON), then the
//! sections the header places, each 64-byte aligned: id ends (u64 per row), ids (UTF-8, in
//! canonical id order), kinds (u8), datasource sets (u32), scales (f32), codes (i8 × dim).

mod build;
mod follow;
mod journal;
mod layout;
mod overlay;

use slayer_common::store::StoreRead;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use rayon::prelude::*;
use sha2::{Digest, Sha256};
use slayer_common::hash_index::{Found, HashIndex};
use slayer_common::mapped::{HugePageBuffer, MappedFile};
use slayer_common::simd::{dot_i16_i8, prefetch};
use slayer_common::store::rows::VectorsState;
use slayer_common::store::StoreError;

use layout::{validated_header, Header, MEMORY};
use overlay::Overlay;

pub use follow::follow;

/// Rows past which a scan is split across the cores.
const PARALLEL_ROWS: usize = 16_384;
/// How many rows ahead of the one it scores a scan asks the CPU for: at 100k rows the codes
/// (38 MB at 384 dimensions) come from memory, not cache, and a scan that waits for each row
/// in turn took 20% longer (4.6 against 3.8 ms a core, measured with the caches flushed).
const PREFETCH_ROWS: usize = 8;

enum Bytes {
    Mapped(MappedFile),
    Owned(Vec<u8>),
}

impl Bytes {
    fn as_slice(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m.bytes(),
            Bytes::Owned(v) => v,
        }
    }
}

/// An opened sidecar: its base file and what was applied over it.
pub struct Sidecar {
    bytes: Bytes,
    header: Header,
    overlay: Overlay,
    /// The base file's path (its journal is beside it).
    path: PathBuf,
    /// Whether this open rebuilt it (for timings and tests).
    pub rebuilt: bool,
    /// The base's codes copied into large pages, for a process that scans them on every
    /// question ([`Sidecar::keep_hot`]); `None` inside when too large or refused.
    hot: OnceLock<Option<HugePageBuffer>>,
    /// A served process's index of the base's ids by hash ([`Sidecar::keep_hot`]).
    rows_by_hash: OnceLock<HashIndex>,
    /// Whether the scanned sections were mapped in ([`Sidecar::page_in`]).
    paged_in: OnceLock<()>,
}

/// The largest codes section [`Sidecar::keep_hot`] copies: 1 GiB (2.7M rows of 384
/// dimensions); past it a scan reads the map.
const HOT_CODES_MAX: usize = 1 << 30;

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

/// Where the sidecar for `model` lives in a store's vectors folder (`Store::vectors_dir`:
/// `<store>.vectors/` beside a file, this host's cache of a server store).
pub fn path_for(dir: &Path, model: &str) -> PathBuf {
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
    dir.join(format!("{readable}-{tag}.bin"))
}

impl Sidecar {
    fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The rows' dimension.
    pub fn dim(&self) -> usize {
        self.header.dim
    }

    /// How many row numbers it uses: the base's rows, then those written since (a dead row
    /// keeps its number and is never scored).
    pub fn len(&self) -> usize {
        self.header.rows + self.overlay.ids.len()
    }

    /// The rows it holds live.
    pub fn held(&self) -> usize {
        self.header.rows - self.overlay.dead_count + self.overlay.alive_count
    }

    /// Whether it holds no live row.
    pub fn is_empty(&self) -> bool {
        self.held() == 0
    }

    /// Live rows of another dimension, not held.
    pub fn other_dims(&self) -> usize {
        self.header.other_dims
    }

    /// Live rows under the model name written by another revision, not held.
    pub fn stale(&self) -> usize {
        match self.overlay.state {
            Some(_) => self.overlay.stale,
            None => self.header.stale,
        }
    }

    /// Every live row under the model name, held or not: one per doc that has a row.
    pub fn live_rows(&self) -> usize {
        self.held() + self.header.other_dims + self.stale()
    }

    /// The store state it is current with.
    pub fn state(&self) -> &VectorsState {
        self.overlay.state.as_ref().unwrap_or(&self.header.state)
    }

    /// How many changes it holds over its base (dead rows and rows written since).
    pub fn journaled(&self) -> usize {
        self.overlay.weight()
    }

    /// For a process that answers many questions (`--batch`, MCP): copies the base's codes,
    /// once, into memory of its own backed by large pages, which every later scan reads
    /// instead of the map ([`HugePageBuffer`]: at 100k rows a served scan took 2.7 ms
    /// through the map's 4 KiB pages). The copy costs what one scan does and holds the codes'
    /// size again (38 MB at 100k rows of 384 dimensions); the page cache may drop its pages
    /// meanwhile. A one-shot search scans once and keeps the map.
    pub fn keep_hot(&self) {
        // Fusion looks a thousand or so ids up per question; a binary search of the sorted
        // ids touches 17 scattered ones each.
        self.rows_by_hash.get_or_init(|| {
            let bytes = self.bytes();
            HashIndex::of((0..self.header.rows).map(|row| base_id_bytes(&self.header, bytes, row)))
        });
        self.hot.get_or_init(|| {
            let len = self.header.rows * self.header.dim;
            if len == 0 || len > HOT_CODES_MAX {
                return None;
            }
            // Mapped in with one call first (a fault per few pages made the copy 6x slower at
            // 1M rows), and let go after: every scan reads the copy, and the process need not
            // hold the codes twice (384 MB at 1M rows).
            self.page_in();
            let start = self.header.sections.codes;
            let hot = HugePageBuffer::copy_of(&self.bytes()[start..start + len]).ok();
            if let (Some(_), Bytes::Mapped(file)) = (&hot, &self.bytes) {
                file.release(start..start + len);
            }
            hot
        });
    }

    /// The base's codes: the hot copy where there is one.
    fn codes(&self) -> &[i8] {
        match self.hot.get().and_then(Option::as_ref) {
            Some(hot) => bytemuck::cast_slice(hot.bytes()),
            None => self.section(
                self.header.sections.codes,
                self.header.rows * self.header.dim,
            ),
        }
    }

    fn section<T: bytemuck::Pod>(&self, start: usize, count: usize) -> &[T] {
        let len = count * std::mem::size_of::<T>();
        bytemuck::cast_slice(&self.bytes()[start..start + len])
    }

    /// A row's canonical id (empty for a row past the end, or bytes that changed under the
    /// map since they were checked).
    pub fn id(&self, row: u32) -> &str {
        let row = row as usize;
        if row >= self.header.rows {
            return self
                .overlay
                .ids
                .get(row - self.header.rows)
                .map_or("", String::as_str);
        }
        base_id(&self.header, self.bytes(), row)
    }

    /// The live row of a canonical id.
    pub fn row_of(&self, id: &str) -> Option<u32> {
        if let Some(&row) = self.overlay.by_id.get(id) {
            return Some((self.header.rows + row as usize) as u32);
        }
        let search = || base_row_of(&self.header, self.bytes(), id);
        let row = match self.rows_by_hash.get() {
            None => search(),
            Some(rows) => match rows.find(id.as_bytes(), |row| {
                base_id_bytes(&self.header, self.bytes(), row as usize) == id.as_bytes()
            }) {
                Found::At(row) => Some(row),
                Found::Absent => None,
                Found::Search => search(),
            },
        };
        row.filter(|r| !self.overlay.is_dead(*r as usize))
    }

    /// Ranking order of two scored rows: higher score first, then canonical id (row order
    /// within the base, whose rows are in id order), as a sidecar built afresh would rank.
    #[inline]
    pub fn order(&self, a: &(f32, u32), b: &(f32, u32)) -> std::cmp::Ordering {
        match b.0.total_cmp(&a.0) {
            std::cmp::Ordering::Equal => self.tie(a.1, b.1),
            unequal => unequal,
        }
    }

    /// Two rows of equal score: base rows by number (their id order), others by id.
    fn tie(&self, a: u32, b: u32) -> std::cmp::Ordering {
        let base = self.header.rows as u32;
        if a < base && b < base {
            a.cmp(&b)
        } else {
            self.id(a).cmp(self.id(b))
        }
    }

    /// What a datasource filter keeps.
    pub fn keep(&self, datasource: Option<&str>) -> Keep {
        let Some(d) = datasource else {
            return Keep::All;
        };
        if d.contains('.') {
            return Keep::RowByRow;
        }
        let index = self
            .header
            .datasources
            .iter()
            .chain(&self.overlay.datasources)
            .position(|n| n == d);
        Keep::Sets(
            self.header
                .sets
                .iter()
                .chain(&self.overlay.sets)
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
        let base = self.header.rows;
        let overlay = &self.overlay;
        let live = |row: usize| {
            if row < base {
                !overlay.is_dead(row)
            } else {
                overlay.alive[row - base]
            }
        };
        sets.iter()
            .chain(&overlay.row_sets)
            .enumerate()
            .any(|(row, set)| {
                live(row)
                    && keep.is_none_or(|k| kept(k, *set))
                    && admit.is_none_or(|a| a(row as u32))
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
        self.page_in();
        let (dim, rows) = (self.header.dim, self.header.rows);
        let s = self.header.sections;
        let kinds: &[u8] = self.section(s.kinds, rows);
        let sets: &[u32] = self.section(s.sets, rows);
        let scales: &[f32] = self.section(s.scales, rows);
        let codes = self.codes();
        let (q, q_scale) = quantize_query(query);
        let dead = &self.overlay.dead;
        let score_chunk = |first: usize, chunk: &[i8]| -> (Scored, Scored) {
            let mut sides = (Vec::with_capacity(chunk.len() / dim.max(1)), Vec::new());
            for (i, code) in chunk.chunks_exact(dim).enumerate() {
                if let Some(ahead) =
                    chunk.get((i + PREFETCH_ROWS) * dim..(i + PREFETCH_ROWS + 1) * dim)
                {
                    prefetch(ahead);
                }
                let row = first + i;
                if dead.get(row).copied().unwrap_or(false)
                    || keep.is_some_and(|k| !kept(k, sets[row]))
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
        let mut out = if rows < PARALLEL_ROWS || dim == 0 {
            score_chunk(0, codes)
        } else {
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
        };
        self.scan_overlay(&q, q_scale, keep, admit, &mut out);
        out
    }

    /// Maps in, once, the sections after the ids that every scan reads whole: when the first
    /// scan starts, not when the sidecar is opened, so that a one-shot search does not hold
    /// them beside the encoder's weights while it embeds the question (one-shot at 100,000
    /// memories: peak 122 -> 75 MiB, with [`slayer_common::mapped::MappedFile::release`]).
    fn page_in(&self) {
        self.paged_in.get_or_init(|| {
            if let Bytes::Mapped(file) = &self.bytes {
                let s = self.header.sections;
                file.prefault(s.kinds..s.end);
            }
        });
    }

    /// [`Sidecar::scan`] over the rows written since the base, appended to `out`.
    fn scan_overlay(
        &self,
        q: &[i16],
        q_scale: f64,
        keep: Option<&[bool]>,
        admit: Option<&(dyn Fn(u32) -> bool + Sync)>,
        out: &mut (Scored, Scored),
    ) {
        let (o, dim, base) = (&self.overlay, self.header.dim, self.header.rows);
        if dim == 0 {
            return;
        }
        for (i, code) in o.codes.chunks_exact(dim).enumerate() {
            let row = base + i;
            if !o.alive[i]
                || keep.is_some_and(|k| !kept(k, o.row_sets[i]))
                || admit.is_some_and(|a| !a(row as u32))
            {
                continue;
            }
            let score = (dot_i16_i8(q, code) as f64 * f64::from(o.scales[i]) * q_scale) as f32;
            let side = if o.kinds[i] == MEMORY {
                &mut out.0
            } else {
                &mut out.1
            };
            side.push((score, row as u32));
        }
    }
}

/// Whether a datasource set is kept; a set the header does not list (bytes changed under the
/// map since they were checked) is not.
fn kept(keep: &[bool], set: u32) -> bool {
    keep.get(set as usize).copied().unwrap_or(false)
}

/// Base row `row`'s canonical id ("" past the end or in bytes that changed under the map).
fn base_id<'b>(header: &Header, bytes: &'b [u8], row: usize) -> &'b str {
    std::str::from_utf8(base_id_bytes(header, bytes, row)).unwrap_or_default()
}

/// Base row `row`'s canonical id as stored (empty past the end).
fn base_id_bytes<'b>(header: &Header, bytes: &'b [u8], row: usize) -> &'b [u8] {
    let s = header.sections;
    let ends: &[u64] = bytemuck::cast_slice(&bytes[s.id_ends..s.id_ends + header.rows * 8]);
    let start = match row {
        0 => 0,
        _ => ends.get(row - 1).map_or(0, |e| *e as usize),
    };
    let end = ends.get(row).map_or(0, |e| *e as usize);
    bytes[s.ids..s.kinds].get(start..end).unwrap_or_default()
}

/// The base row of a canonical id, dead or not (base rows are in id order; bytes compare as
/// UTF-8 strings do, so the search need not check each probe's encoding).
fn base_row_of(header: &Header, bytes: &[u8], id: &str) -> Option<u32> {
    let (mut lo, mut hi) = (0usize, header.rows);
    while lo < hi {
        let mid = (lo + hi) / 2;
        match base_id_bytes(header, bytes, mid).cmp(id.as_bytes()) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid as u32),
        }
    }
    None
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

/// The sidecar files of a vectors folder (`*.bin`), by name.
fn sidecar_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "bin"))
        .collect();
    files.sort();
    files
}

/// What one file of a vectors folder records of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The file.
    pub file: PathBuf,
    /// The model and revision whose rows it holds, and the store state it is current with
    /// (its base's, moved on by its journal); `None` for a file that is not a readable
    /// sidecar (rebuilt when next opened).
    pub built_for: Option<(String, String, VectorsState)>,
}

/// The sidecars of a vectors folder (`Store::vectors_dir`) and what each records, by file
/// name: `stats` compares them with the store.
pub fn recorded(dir: &Path) -> Vec<Recorded> {
    sidecar_files(dir)
        .into_iter()
        .map(|file| {
            let built_for = MappedFile::open(&file)
                .ok()
                .and_then(|m| validated_header(m.bytes()))
                .map(|h| {
                    let state = follow::journaled_state(&file, &h);
                    (h.model, h.revision, state)
                });
            Recorded { file, built_for }
        })
        .collect()
}

/// Brings the sidecar of `model` at `revision` up to date after rows were written (a search's
/// re-embed), compacting it when its journal grew heavy: `true` when it was rebuilt.
pub fn update(
    conn: &dyn StoreRead,
    dir: &Path,
    model: &str,
    revision: &str,
) -> Result<bool, StoreError> {
    rebuilt_if(conn, dir, model, revision, follow::Compact::Heavy)
}

/// Brings the sidecar of `model` at `revision` up to date and compacts it (what
/// `slayer-embed refresh` calls after writing rows): `true` when it was rebuilt.
pub fn refresh(
    conn: &dyn StoreRead,
    dir: &Path,
    model: &str,
    revision: &str,
) -> Result<bool, StoreError> {
    rebuilt_if(conn, dir, model, revision, follow::Compact::Always)
}

/// Opens the sidecar, compacting as `compact` says: whether it was rebuilt.
fn rebuilt_if(
    conn: &dyn StoreRead,
    dir: &Path,
    model: &str,
    revision: &str,
    compact: follow::Compact,
) -> Result<bool, StoreError> {
    Ok(follow::open(conn, dir, model, revision, compact)?.is_some_and(|s| s.rebuilt))
}

#[cfg(test)]
mod tests;
