//! The vector change log on both backends: after the same writes, the docs named since a
//! state are the same, read as they are now (`StoreRead::vector_changes`).

use slayer_common::records::Standing;
use slayer_common::store::{OpenMode, Store, StoreRead};

use crate::parity::{doc, memory, Backend};
use crate::support::new_store;

/// Writes that move the vector rows: rows written, rewritten and of another revision, a doc
/// with a row removed, a memory retagged.
fn vector_writes(b: &mut dyn Backend, phase: u8) {
    b.tx(&mut |w| {
        let put = |id: &str, rev: &str, v: &[f32]| {
            w.put_embedding(id, "local/m", rev, "h", v, "t").unwrap();
        };
        match phase {
            0 => {
                for (id, kind) in [("db.a", "model"), ("db.b", "model"), ("db.c", "column")] {
                    w.upsert_doc(&doc(id, kind, Some("db"), Some("a"), 0))
                        .unwrap();
                    put(id, "r1", &[1.0, 0.0]);
                }
                w.put_memory(&memory(
                    "7",
                    &["db.a"],
                    "2026-01-01T00:00:00Z",
                    false,
                    Standing::default(),
                ))
                .unwrap();
                w.upsert_doc(&doc("memory:7", "memory", None, None, 0))
                    .unwrap();
                put("memory:7", "r1", &[0.0, 1.0]);
            }
            _ => {
                put("db.a", "r1", &[0.5, 0.5]);
                put("db.b", "r0", &[0.5, 0.5]);
                w.delete_doc("db.c").unwrap();
                w.put_memory(&memory(
                    "7",
                    &["db.b", "other.x"],
                    "2026-01-01T00:00:00Z",
                    false,
                    Standing::default(),
                ))
                .unwrap();
                w.put_memory(&memory(
                    "8",
                    &["db.a"],
                    "2026-01-02T00:00:00Z",
                    false,
                    Standing::default(),
                ))
                .unwrap();
                w.upsert_doc(&doc("memory:8", "memory", None, None, 0))
                    .unwrap();
                put("memory:8", "r1", &[0.0, 1.0]);
            }
        }
        Vec::new()
    });
}

#[test]
fn vector_changes_name_the_same_docs_as_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    let (mut pg, _) = new_store("vector_changes");
    let mut changes = Vec::new();
    for b in [&mut sqlite as &mut dyn Backend, &mut pg] {
        vector_writes(b, 0);
    }
    let (s0, p0) = (
        sqlite.vectors_state().unwrap().unwrap(),
        pg.vectors_state().unwrap().unwrap(),
    );
    for b in [&mut sqlite as &mut dyn Backend, &mut pg] {
        vector_writes(b, 1);
    }
    for (r, since) in [(&sqlite as &dyn StoreRead, &s0), (&pg, &p0)] {
        let found = r
            .vector_changes(since, "local/m", "r1", 10)
            .unwrap()
            .unwrap();
        assert_eq!(found.to, r.vectors_state().unwrap().unwrap());
        changes.push(format!("{:?}", found.rows));
        // Nothing after the current state; too many changes, or another store's state, say
        // nothing (the caller rebuilds).
        let now = r.vectors_state().unwrap().unwrap();
        assert!(r
            .vector_changes(&now, "local/m", "r1", 10)
            .unwrap()
            .unwrap()
            .rows
            .is_empty());
        assert_eq!(r.vector_changes(since, "local/m", "r1", 2).unwrap(), None);
        let mut other = since.clone();
        other.store_id = "another".into();
        assert_eq!(r.vector_changes(&other, "local/m", "r1", 10).unwrap(), None);
    }
    assert_eq!(changes[0], changes[1]);
    assert!(
        changes[0].contains("\"db.b\", live: None, stale: true"),
        "{}",
        changes[0]
    );
    assert!(
        changes[0].contains("\"db.c\", live: None, stale: false"),
        "{}",
        changes[0]
    );
    assert!(
        changes[0].contains("tags: [\"db.b\", \"other.x\"]"),
        "{}",
        changes[0]
    );
}
