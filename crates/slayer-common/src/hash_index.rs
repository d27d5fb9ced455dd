//! Positions of distinct keys by their hash, for the ids a served search looks up a thousand
//! times a question (an index segment's doc ids, a vector sidecar's rows). The keys themselves
//! stay where they are, sorted; a binary search of 100,000 of them touched 17 scattered ones,
//! 1.5 µs an id, where a hash lookup and one comparison touch two.

use rustc_hash::FxHashMap;

/// The position of each key by its hash; a hash two keys share sends the caller back to its
/// own search.
#[derive(Debug, Clone)]
pub struct HashIndex {
    positions: FxHashMap<u64, u32>,
    hash: fn(&[u8]) -> u64,
}

/// What [`HashIndex::find`] knows of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// The key is at this position.
    At(u32),
    /// No indexed key is this one.
    Absent,
    /// The key's hash is shared by several keys: search them.
    Search,
}

/// Marks a hash that two keys share.
const SHARED: u32 = u32::MAX;

fn fx_hash(key: &[u8]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault};
    BuildHasherDefault::<rustc_hash::FxHasher>::default().hash_one(key)
}

impl HashIndex {
    /// The index of `keys`, each at its place in the iteration.
    pub fn of<'k>(keys: impl ExactSizeIterator<Item = &'k [u8]>) -> HashIndex {
        HashIndex::hashed_by(keys, fx_hash)
    }

    /// [`HashIndex::of`] under another hash function (a test forces shared hashes with one).
    pub fn hashed_by<'k>(
        keys: impl ExactSizeIterator<Item = &'k [u8]>,
        hash: fn(&[u8]) -> u64,
    ) -> HashIndex {
        let mut positions = FxHashMap::with_capacity_and_hasher(keys.len(), Default::default());
        for (at, key) in keys.enumerate() {
            positions
                .entry(hash(key))
                .and_modify(|shared| *shared = SHARED)
                .or_insert(at as u32);
        }
        HashIndex { positions, hash }
    }

    /// Where `key` is: `is_at(position)` says whether the key at that position is `key`.
    pub fn find(&self, key: &[u8], is_at: impl FnOnce(u32) -> bool) -> Found {
        match self.positions.get(&(self.hash)(key)) {
            // Every key's hash is in the table: another hash is no key.
            None => Found::Absent,
            Some(&SHARED) => Found::Search,
            // The one key of this hash, or (a hash no other key has) none.
            Some(&at) if is_at(at) => Found::At(at),
            Some(_) => Found::Absent,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_absent_or_searched() {
        let keys: Vec<Vec<u8>> = (0..1000).map(|i| format!("k{i:04}").into_bytes()).collect();
        let index = HashIndex::of(keys.iter().map(Vec::as_slice));
        for (at, key) in keys.iter().enumerate() {
            assert_eq!(
                index.find(key, |p| keys[p as usize] == *key),
                Found::At(at as u32)
            );
        }
        assert_eq!(
            index.find(b"nope", |p| keys[p as usize] == b"nope"),
            Found::Absent
        );
        let shared = HashIndex::hashed_by(keys.iter().map(Vec::as_slice), |_| 0);
        assert_eq!(shared.find(&keys[3], |_| true), Found::Search);
        let empty = HashIndex::of(std::iter::empty());
        assert_eq!(empty.find(&keys[3], |_| true), Found::Absent);
    }
}
