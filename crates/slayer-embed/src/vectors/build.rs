//! Building a sidecar from the store's live rows.

use rustc_hash::FxHashMap;
use slayer_common::canonical::{datasource_of, memory_id_of};
use slayer_common::store::embeddings::{self, VectorsState};
use slayer_common::store::StoreError;
use slayer_common::store::StoreRead;

use super::layout::{encode, Header, Parts, Sections, FORMAT, MEMORY};

/// Datasource names, each given the index of its first appearance.
#[derive(Default)]
struct Datasources {
    names: Vec<String>,
    index: FxHashMap<String, u32>,
}

impl Datasources {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_owned());
        self.index.insert(name.to_owned(), i);
        i
    }
}

/// The live rows of the first row's dimension, quantised, in canonical id order.
#[derive(Default)]
struct Rows {
    dim: Option<usize>,
    /// Live rows of another size, left out.
    other_dims: usize,
    ids: Vec<u8>,
    id_ends: Vec<u64>,
    kinds: Vec<u8>,
    scales: Vec<f32>,
    codes: Vec<i8>,
    /// Per row: its datasource indexes (memories' filled from their tags).
    datasources: Vec<Vec<u32>>,
}

/// The sidecar's bytes, built from the store's live rows of `model` at `revision`.
pub(super) fn build(
    conn: &dyn StoreRead,
    model: &str,
    revision: &str,
    state: VectorsState,
) -> Result<Vec<u8>, StoreError> {
    let mut datasources = Datasources::default();
    let rows = read_rows(conn, model, revision, &mut datasources)?;
    let (sets, row_sets) = distinct_sets(rows.datasources);
    let header = Header {
        format: FORMAT,
        model: model.to_owned(),
        revision: revision.to_owned(),
        build: new_build(),
        state,
        stale: conn.stale_live_rows(model, revision)? as usize,
        dim: rows.dim.unwrap_or(0),
        rows: rows.kinds.len(),
        other_dims: rows.other_dims,
        datasources: datasources.names,
        sets,
        sections: Sections::default(),
    };
    let parts = Parts {
        id_ends: &rows.id_ends,
        ids: &rows.ids,
        kinds: &rows.kinds,
        sets: &row_sets,
        scales: &rows.scales,
        codes: &rows.codes,
    };
    encode(header, &parts)
}

/// A build number no other build of the file is likely to share: the process's random hash
/// keys, the time and a counter.
fn new_build() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static BUILDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.write_u64(BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// The datasources a row carries: an entity's is its id's first segment, a memory's those of
/// its tags (stale ones included), as the search's datasource filter reads them.
pub(super) fn row_datasources<'a>(id: &'a str, tags: &'a [String]) -> Vec<&'a str> {
    if memory_id_of(id).is_some() {
        tags.iter().filter_map(|t| datasource_of(t)).collect()
    } else {
        datasource_of(id).into_iter().collect()
    }
}

/// The rows, with each entity's datasource (its id's first segment) and each memory's (those
/// of its tags, stale ones included), as the search's datasource filter reads them.
fn read_rows(
    conn: &dyn StoreRead,
    model: &str,
    revision: &str,
    datasources: &mut Datasources,
) -> Result<Rows, StoreError> {
    let mut rows = Rows::default();
    let mut memory_rows: FxHashMap<String, usize> = FxHashMap::default();
    conn.for_each_live_row(model, revision, &mut |id, kind, blob| {
        let size = blob.len() / 4;
        if *rows.dim.get_or_insert(size) != size {
            rows.other_dims += 1;
            return;
        }
        rows.scales
            .push(quantize_row(&embeddings::decode(blob), &mut rows.codes));
        rows.ids.extend_from_slice(id.as_bytes());
        rows.id_ends.push(rows.ids.len() as u64);
        let row = rows.kinds.len();
        if kind == "memory" {
            rows.kinds.push(MEMORY);
            if let Some(m) = memory_id_of(id) {
                memory_rows.insert(m.to_owned(), row);
            }
            rows.datasources.push(Vec::new());
        } else {
            rows.kinds.push(0);
            let own = datasource_of(id).map(|d| datasources.intern(d));
            rows.datasources.push(own.into_iter().collect());
        }
    })?;
    conn.for_each_memory_tag(&mut |memory, tag| {
        if let (Some(&row), Some(ds)) = (memory_rows.get(memory), datasource_of(tag)) {
            let i = datasources.intern(ds);
            if !rows.datasources[row].contains(&i) {
                rows.datasources[row].push(i);
            }
        }
    })?;
    Ok(rows)
}

/// The distinct datasource sets (sorted) and each row's index among them.
fn distinct_sets(per_row: Vec<Vec<u32>>) -> (Vec<Vec<u32>>, Vec<u32>) {
    let mut sets: Vec<Vec<u32>> = Vec::new();
    let mut set_index: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let row_sets = per_row
        .into_iter()
        .map(|mut set| {
            set.sort_unstable();
            *set_index.entry(set.clone()).or_insert_with(|| {
                sets.push(set);
                sets.len() as u32 - 1
            })
        })
        .collect();
    (sets, row_sets)
}

/// A unit vector as int8 codes and their scale.
pub(super) fn quantize_row(vector: &[f32], codes: &mut Vec<i8>) -> f32 {
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
