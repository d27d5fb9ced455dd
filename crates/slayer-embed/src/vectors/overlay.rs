//! What a sidecar holds beyond its base file: the base rows that died since it was built and
//! the rows written since, in memory, from the journal's records and any catch-up not yet in
//! it. Row numbers continue the base's: overlay row `i` is row `base rows + i`.

use rustc_hash::FxHashMap;
use slayer_common::store::rows::VectorsState;

use super::journal::{Entry, Record};
use super::layout::Header;

/// The changes applied over a base.
#[derive(Default)]
pub(super) struct Overlay {
    /// Per base row, whether it died (empty while none has).
    pub(super) dead: Vec<bool>,
    pub(super) dead_count: usize,
    pub(super) ids: Vec<String>,
    /// Whether each overlay row is still live (a doc written twice kills its first row).
    pub(super) alive: Vec<bool>,
    pub(super) alive_count: usize,
    pub(super) kinds: Vec<u8>,
    /// Indexes into the base's datasource sets followed by [`Overlay::sets`].
    pub(super) row_sets: Vec<u32>,
    pub(super) scales: Vec<f32>,
    pub(super) codes: Vec<i8>,
    /// The live overlay row of each id written since the base.
    pub(super) by_id: FxHashMap<String, u32>,
    /// Datasource names the base does not list (indexes continue the base's).
    pub(super) datasources: Vec<String>,
    /// Datasource sets the base does not list (indexes continue the base's).
    pub(super) sets: Vec<Vec<u32>>,
    /// The state and stale count the last applied record reached (`None`: none applied).
    pub(super) state: Option<VectorsState>,
    pub(super) stale: usize,
}

impl Overlay {
    /// How much a rebuild would fold in: dead base rows and overlay rows.
    pub(super) fn weight(&self) -> usize {
        self.dead_count + self.ids.len()
    }

    /// Applies one record whose `from` is the overlay's state. `base_row` finds an id's row in
    /// the base.
    pub(super) fn apply(
        &mut self,
        header: &Header,
        base_row: impl Fn(&str) -> Option<u32>,
        record: &Record,
    ) {
        for Entry { id, row } in &record.entries {
            if let Some(old) = self.by_id.remove(id) {
                self.alive[old as usize] = false;
                self.alive_count -= 1;
            } else if let Some(old) = base_row(id) {
                if self.dead.is_empty() {
                    self.dead = vec![false; header.rows];
                }
                if !self.dead[old as usize] {
                    self.dead[old as usize] = true;
                    self.dead_count += 1;
                }
            }
            let Some(row) = row else {
                continue;
            };
            let mut set: Vec<u32> = row
                .datasources
                .iter()
                .map(|name| self.datasource_index(header, name))
                .collect();
            set.sort_unstable();
            set.dedup();
            let set = self.set_index(header, set);
            self.by_id.insert(id.clone(), self.ids.len() as u32);
            self.ids.push(id.clone());
            self.alive.push(true);
            self.alive_count += 1;
            self.kinds.push(row.kind);
            self.row_sets.push(set);
            self.scales.push(row.scale);
            self.codes.extend_from_slice(&row.codes);
        }
        self.state = Some(record.to.clone());
        self.stale = record.stale;
    }

    fn datasource_index(&mut self, header: &Header, name: &str) -> u32 {
        if let Some(i) = header.datasources.iter().position(|n| n == name) {
            return i as u32;
        }
        let extra = match self.datasources.iter().position(|n| n == name) {
            Some(i) => i,
            None => {
                self.datasources.push(name.to_owned());
                self.datasources.len() - 1
            }
        };
        (header.datasources.len() + extra) as u32
    }

    fn set_index(&mut self, header: &Header, set: Vec<u32>) -> u32 {
        if let Some(i) = header.sets.iter().position(|s| *s == set) {
            return i as u32;
        }
        let extra = match self.sets.iter().position(|s| *s == set) {
            Some(i) => i,
            None => {
                self.sets.push(set);
                self.sets.len() - 1
            }
        };
        (header.sets.len() + extra) as u32
    }

    /// Whether base row `row` died.
    pub(super) fn is_dead(&self, row: usize) -> bool {
        self.dead.get(row).copied().unwrap_or(false)
    }
}
