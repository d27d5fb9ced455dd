//! Opening a sidecar current with the store: the mapped base, its journal replayed, any
//! changes since caught up from the store's change log (and journaled), or a rebuild.

use std::path::{Path, PathBuf};

use slayer_common::mapped::MappedFile;
use slayer_common::store::rows::{VectorChanges, VectorsState};
use slayer_common::store::{StoreError, StoreRead};

use super::build::{build, quantize_row, row_datasources};
use super::journal::{self, Entry, NewRow, Record};
use super::layout::{build_on_disk, validated_header, MEMORY};
use super::overlay::Overlay;
use super::{base_row_of, path_for, sidecar_files, Bytes, Sidecar};
use crate::derived_file::write_atomically;

/// When an open folds the journal into a new base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Compact {
    /// Never (a search: it follows the store, a writer compacts).
    Never,
    /// When the journal holds more than a sixty-fourth of the rows (at least 1,024): a writer.
    Heavy,
    /// Whenever the journal holds anything (`slayer-embed refresh`).
    Always,
}

impl Compact {
    fn wants(self, sidecar: &Sidecar) -> bool {
        let weight = sidecar.overlay.weight();
        match self {
            Compact::Never => false,
            Compact::Heavy => weight > (sidecar.header.rows / 64).max(1024),
            Compact::Always => weight > 0,
        }
    }
}

/// Past this many changes (a quarter of the rows, at least 4,096) a reader rebuilds instead
/// of catching up.
fn catch_up_limit(rows: usize) -> usize {
    (rows / 4).max(4096)
}

impl Sidecar {
    /// The current sidecar of `model` at `revision`: the base file when it is this model's,
    /// revision's and store's, with its journal replayed and any later changes caught up
    /// (and journaled); else rebuilt from the rows and written (atomically; kept in memory
    /// when the directory is not writable). `None` on a store too old to say its state.
    pub fn open(
        conn: &dyn StoreRead,
        dir: &Path,
        model: &str,
        revision: &str,
    ) -> Result<Option<Sidecar>, StoreError> {
        open(conn, dir, model, revision, Compact::Never)
    }

    /// Brings an open sidecar up to the store's current state in place (a long-lived search
    /// between questions): `Ok(false)` when it cannot follow (too many changes, another
    /// store, a pruned log) and has to be opened again.
    pub fn follow(&mut self, conn: &dyn StoreRead) -> Result<bool, StoreError> {
        let Some(state) = conn.vectors_state()? else {
            return Ok(false);
        };
        Ok(*self.state() == state || self.catch_up(conn)?)
    }

    /// The base at `path` if it is a sound sidecar of this store, its journal replayed (not
    /// paged in: a writer that follows it reads only its ids).
    fn mapped(path: &Path, store_id: &str) -> Option<Sidecar> {
        let file = MappedFile::open(path).ok()?;
        let header = validated_header(file.bytes())?;
        if header.state.store_id != store_id {
            return None;
        }
        let mut sidecar = Sidecar {
            bytes: Bytes::Mapped(file),
            header,
            overlay: Overlay::default(),
            path: path.to_owned(),
            rebuilt: false,
            hot: Default::default(),
            rows_by_hash: Default::default(),
            paged_in: Default::default(),
        };
        sidecar.replay();
        Some(sidecar)
    }

    fn journal_path(&self) -> PathBuf {
        journal::path_for(&self.path)
    }

    /// Applies the journal's records that chain from the base's state.
    fn replay(&mut self) {
        let h = &self.header;
        for record in journal::read_chain(&self.journal_path(), h.build, h.dim, &h.state) {
            self.apply(&record);
        }
    }

    fn apply(&mut self, record: &Record) {
        let (header, bytes) = (&self.header, self.bytes.as_slice());
        self.overlay
            .apply(header, |id| base_row_of(header, bytes, id), record);
    }

    /// Catches up from the store's change log and journals the record: `Ok(false)` when the
    /// log cannot say what changed (or says too much), so the caller rebuilds.
    fn catch_up(&mut self, conn: &dyn StoreRead) -> Result<bool, StoreError> {
        let (rows, dim) = (self.header.rows, self.header.dim);
        if self.header.other_dims > 0 || rows == 0 {
            // Which rows are held depends on the first row's size: rebuild.
            return Ok(false);
        }
        let limit = catch_up_limit(rows).saturating_sub(self.overlay.weight());
        let from = self.state().clone();
        let (model, revision) = (self.header.model.clone(), self.header.revision.clone());
        let Some(changes) = conn.vector_changes(&from, &model, &revision, limit)? else {
            return Ok(false);
        };
        let Some(record) = self.record(conn, from, changes)? else {
            return Ok(false);
        };
        self.apply(&record);
        let path = self.path.clone();
        // A journal that cannot be written leaves the record in this process only: the next
        // one catches up again.
        let _ = journal::append(
            &self.journal_path(),
            self.header.build,
            &self.header.state,
            dim,
            || build_on_disk(&path),
            &record,
        );
        Ok(true)
    }

    /// The changes as a journal record; `None` when a row is of another dimension.
    fn record(
        &self,
        conn: &dyn StoreRead,
        from: VectorsState,
        changes: VectorChanges,
    ) -> Result<Option<Record>, StoreError> {
        let dim = self.header.dim;
        let mut any_stale = false;
        let mut entries = Vec::with_capacity(changes.rows.len());
        for changed in changes.rows {
            any_stale |= changed.stale;
            let row = match &changed.live {
                Some((kind, blob)) => {
                    if blob.len() != dim * 4 {
                        return Ok(None);
                    }
                    let mut codes = Vec::with_capacity(dim);
                    let scale =
                        quantize_row(&slayer_common::store::embeddings::decode(blob), &mut codes);
                    let datasources = row_datasources(&changed.canonical_id, &changed.tags)
                        .into_iter()
                        .map(str::to_owned)
                        .collect();
                    Some(NewRow {
                        kind: if kind == "memory" { MEMORY } else { 0 },
                        datasources,
                        scale,
                        codes,
                    })
                }
                None => None,
            };
            entries.push(Entry {
                id: changed.canonical_id,
                row,
            });
        }
        // Only changed docs can change the stale count: it is read again when one of them is
        // stale now or some row was stale before.
        let stale = if any_stale || self.stale() > 0 {
            conn.stale_live_rows(&self.header.model, &self.header.revision)? as usize
        } else {
            0
        };
        Ok(Some(Record {
            from,
            to: changes.to,
            stale,
            entries,
        }))
    }
}

/// The state a base with this header is current with once its journal (beside `path`) is
/// replayed.
pub(super) fn journaled_state(path: &Path, header: &super::layout::Header) -> VectorsState {
    let path = journal::path_for(path);
    journal::read_chain(&path, header.build, header.dim, &header.state)
        .pop()
        .map_or_else(|| header.state.clone(), |last| last.to)
}

/// [`Sidecar::open`], compacting as `compact` says.
pub(super) fn open(
    conn: &dyn StoreRead,
    dir: &Path,
    model: &str,
    revision: &str,
    compact: Compact,
) -> Result<Option<Sidecar>, StoreError> {
    let Some(state) = conn.vectors_state()? else {
        return Ok(None);
    };
    let path = path_for(dir, model);
    let base = Sidecar::mapped(&path, &state.store_id)
        .filter(|s| s.header.model == model && s.header.revision == revision);
    if let Some(mut sidecar) = base {
        let current = *sidecar.state() == state || sidecar.catch_up(conn)?;
        if current && !compact.wants(&sidecar) {
            return Ok(Some(sidecar));
        }
    }
    rebuild(conn, path, model, revision, state).map(Some)
}

/// The sidecar built afresh from the store's rows, written in place of the base (atomically)
/// with an empty journal.
fn rebuild(
    conn: &dyn StoreRead,
    path: PathBuf,
    model: &str,
    revision: &str,
    state: VectorsState,
) -> Result<Sidecar, StoreError> {
    let bytes = build(conn, model, revision, state)?;
    let header = validated_header(&bytes).ok_or_else(|| StoreError::Serialize {
        what: "vector sidecar",
        cause: "unreadable header".into(),
    })?;
    // A failed write leaves the search to its in-memory copy; the next writer retries.
    if write_atomically(&path, &[&bytes]).is_ok() {
        let _ = journal::reset(&journal::path_for(&path), header.build);
    }
    Ok(Sidecar {
        bytes: Bytes::Owned(bytes),
        header,
        overlay: Overlay::default(),
        path,
        rebuilt: true,
        hot: Default::default(),
        rows_by_hash: Default::default(),
        paged_in: Default::default(),
    })
}

/// Brings every sidecar of this store in `dir` up to the store (what a writer calls after it
/// commits), compacting those whose journal grew heavy: how many it followed. A sidecar of
/// another store, or one that cannot be followed (rows of another dimension, a pruned log),
/// is left to the next search, so a write never pays a rebuild it did not cause.
pub fn follow(conn: &dyn StoreRead, dir: &Path) -> Result<usize, StoreError> {
    let Some(state) = conn.vectors_state()? else {
        return Ok(0);
    };
    let mut followed = 0;
    for file in sidecar_files(dir) {
        let Some(mut sidecar) = Sidecar::mapped(&file, &state.store_id) else {
            continue;
        };
        let (model, revision) = (
            sidecar.header.model.clone(),
            sidecar.header.revision.clone(),
        );
        if path_for(dir, &model) != file
            || (*sidecar.state() != state && !sidecar.catch_up(conn)?)
        {
            continue;
        }
        if Compact::Heavy.wants(&sidecar) {
            rebuild(conn, file, &model, &revision, state.clone())?;
        }
        followed += 1;
    }
    Ok(followed)
}
