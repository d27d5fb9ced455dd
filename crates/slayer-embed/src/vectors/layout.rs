//! The sidecar's file layout (see [`super`]): the header, its sections, and the checks a file
//! must pass before it is read.

use serde::{Deserialize, Serialize};
use slayer_common::store::embeddings::VectorsState;
use slayer_common::store::StoreError;

/// The kind byte of a memory's row (an entity's is 0).
pub(super) const MEMORY: u8 = 1;

/// The file's first bytes.
const MAGIC: &[u8; 8] = b"SLAYVEC1";
/// The layout's version: a file of another is rebuilt.
pub(super) const FORMAT: u32 = 3;
/// Each section starts on a multiple of this.
const ALIGN: usize = 64;
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub(super) struct Header {
    pub(super) format: u32,
    pub(super) model: String,
    /// The model revision whose rows are here.
    pub(super) revision: String,
    /// Random per build: the journal names the base it follows by it.
    pub(super) build: u64,
    pub(super) state: VectorsState,
    /// Live rows under the model name that another revision wrote, left out.
    pub(super) stale: usize,
    /// The dimension of the first live row: the rows of that size are here.
    pub(super) dim: usize,
    pub(super) rows: usize,
    /// Live rows of another size, left out.
    pub(super) other_dims: usize,
    pub(super) datasources: Vec<String>,
    /// Each distinct set of datasource indexes rows carry.
    pub(super) sets: Vec<Vec<u32>>,
    pub(super) sections: Sections,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub(super) struct Sections {
    pub(super) id_ends: usize,
    pub(super) ids: usize,
    pub(super) kinds: usize,
    pub(super) sets: usize,
    pub(super) scales: usize,
    pub(super) codes: usize,
    pub(super) end: usize,
}

/// The build number of the sidecar file at `path`, from its header alone (an appender checks
/// the base on disk is still the one its journal follows).
pub(super) fn build_on_disk(path: &std::path::Path) -> Option<u64> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).ok()?;
    let mut start = [0u8; 12];
    file.read_exact(&mut start).ok()?;
    let len = u32::from_le_bytes(start[8..12].try_into().ok()?) as usize;
    let mut bytes = start.to_vec();
    bytes.resize(12 + len, 0);
    file.read_exact(&mut bytes[12..]).ok()?;
    let header: Header = serde_json::from_slice(&bytes[12..]).ok()?;
    (&bytes[..8] == MAGIC && header.format == FORMAT).then_some(header.build)
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
pub(super) fn validated_header(bytes: &[u8]) -> Option<Header> {
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

/// The row sections of a sidecar, in file order.
pub(super) struct Parts<'a> {
    pub(super) id_ends: &'a [u64],
    pub(super) ids: &'a [u8],
    pub(super) kinds: &'a [u8],
    pub(super) sets: &'a [u32],
    pub(super) scales: &'a [f32],
    pub(super) codes: &'a [i8],
}

/// The file's bytes: `header` (its sections placed here) and the sections, each aligned.
pub(super) fn encode(mut header: Header, parts: &Parts<'_>) -> Result<Vec<u8>, StoreError> {
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
    s.id_ends = place(&mut out, bytemuck::cast_slice(parts.id_ends));
    s.ids = place(&mut out, parts.ids);
    s.kinds = place(&mut out, parts.kinds);
    s.sets = place(&mut out, bytemuck::cast_slice(parts.sets));
    s.scales = place(&mut out, bytemuck::cast_slice(parts.scales));
    s.codes = place(&mut out, bytemuck::cast_slice(parts.codes));
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
