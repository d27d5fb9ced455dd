//! The sidecar against a real store: what it holds, when it is rebuilt, how it scores.

use slayer_common::canonical::datasource_of;
use slayer_common::records::Memory;
// The fixtures write through the SQLite functions on a plain connection (autocommit), as
// a store's writers did before the interface; the code under test only reads.
use rusqlite::Connection;
use slayer_common::store::{docs, embeddings, memories, OpenMode, SqliteStore as Store};

use super::build::quantize_row;
use super::journal;
use super::*;

const MODEL: &str = "local/test";
const REVISION: &str = "0123456789abcdef";

fn doc(conn: &Connection, id: &str, kind: &str) {
    let stored = docs::StoredDoc::placeholder(id, kind, datasource_of(id));
    docs::upsert(conn, &stored).unwrap();
}

fn memory(conn: &Connection, id: &str, tags: &[&str]) {
    let m = Memory::placeholder(id, tags);
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

/// The vectors folder beside the store file at `store`.
fn vectors_dir(store: &Path) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(".vectors");
    PathBuf::from(name)
}

/// The sidecar of `MODEL` at `REVISION` in `folder`, opened as a search opens it.
fn opened(conn: &Connection, folder: &Path) -> Sidecar {
    Sidecar::open(conn, folder, MODEL, REVISION)
        .unwrap()
        .unwrap()
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
    let sidecar = Sidecar::open(store.conn(), &vectors_dir(store.path()), MODEL, REVISION)
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
    let open = || opened(conn, &vectors_dir(store.path()));
    assert!(open().rebuilt);
    assert!(path_for(&vectors_dir(store.path()), MODEL).is_file());
    assert!(!open().rebuilt, "unchanged: mapped as written");
    // A memory's tags changed: its datasources did; the change is followed, not rebuilt.
    memory(conn, "3", &["crm.users"]);
    let moved = open();
    assert!(!moved.rebuilt);
    assert_eq!(moved.journaled(), 2);
    let Keep::Sets(sets) = moved.keep(Some("crm")) else {
        panic!()
    };
    let (m, _) = moved.scan(&[1.0, 0.0, 0.0], Some(&sets), None);
    assert_eq!(ids(&moved, &m), ["memory:2", "memory:3"]);
    assert!(!open().rebuilt);
    // A row rewritten, a doc removed.
    row(conn, "crm.users", &[1.0, 0.0, 0.0]);
    assert!(!open().rebuilt);
    docs::delete(conn, "crm.users").unwrap();
    let after = open();
    assert!(!after.rebuilt);
    assert_eq!(after.row_of("crm.users"), None);
    assert_eq!(after.held(), 5);
    // A new store at the same path starts its counters again, under another id.
    let path = store.path().to_owned();
    let sidecar_file = path_for(&vectors_dir(&path), MODEL);
    drop(after);
    drop(store);
    for f in ["s.db", "s.db-wal", "s.db-shm"] {
        let _ = std::fs::remove_file(dir.path().join(f));
    }
    let fresh = Store::open(&path, OpenMode::CreateIfMissing).unwrap();
    assert!(sidecar_file.is_file());
    let reopened = Sidecar::open(fresh.conn(), &vectors_dir(&path), MODEL, REVISION)
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
    let sidecar = Sidecar::open(store.conn(), &vectors_dir(store.path()), MODEL, REVISION)
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
    let sidecar = Sidecar::open(store.conn(), &vectors_dir(store.path()), MODEL, REVISION)
        .unwrap()
        .unwrap();
    assert_eq!(sidecar.len(), 6);
    assert!(
        Sidecar::open(store.conn(), &vectors_dir(store.path()), MODEL, REVISION)
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
        Sidecar::open(conn, &vectors_dir(store.path()), MODEL, revision)
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

/// Every kept row's id and score, best first, as fusion reads a scan.
fn ranked(sidecar: &Sidecar, query: &[f32], datasource: Option<&str>) -> Vec<(String, f32)> {
    let sets = match sidecar.keep(datasource) {
        Keep::Sets(sets) => Some(sets),
        _ => None,
    };
    let (m, e) = sidecar.scan(query, sets.as_deref(), None);
    let mut all: Vec<(f32, u32)> = m.into_iter().chain(e).collect();
    all.sort_by(|a, b| sidecar.order(a, b));
    all.iter()
        .map(|(s, r)| (sidecar.id(*r).to_owned(), *s))
        .collect()
}

/// What a sidecar built afresh from the store ranks, in another folder.
fn rebuilt_ranking(
    conn: &dyn StoreRead,
    query: &[f32],
    datasource: Option<&str>,
) -> Vec<(String, f32)> {
    let fresh = tempfile::tempdir().unwrap();
    let sidecar = Sidecar::open(conn, fresh.path(), MODEL, REVISION)
        .unwrap()
        .unwrap();
    assert!(sidecar.rebuilt);
    ranked(&sidecar, query, datasource)
}

#[test]
fn a_followed_sidecar_ranks_as_a_rebuilt_one_and_its_journal_survives_a_torn_append() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let conn = store.conn();
    let folder = vectors_dir(store.path());
    let open = || opened(conn, &folder);
    assert!(open().rebuilt);
    let mut served = open();
    // Saves, a rewrite, a retag, a removal, a doc written twice, a row of another revision.
    memory(conn, "4", &["crm.users", "new.thing"]);
    row(conn, "memory:4", &[0.5, 0.5, 0.5]);
    memory(conn, "3", &["shop.orders"]);
    row(conn, "memory:1", &[0.0, 0.0, 1.0]);
    row(conn, "memory:1", &[0.2, 0.0, 1.0]);
    docs::delete(conn, "shop.orders.amount").unwrap();
    embeddings::put(
        conn,
        "crm.users",
        MODEL,
        "another",
        "h",
        &[0.0, 0.0, 3.0],
        "t",
    )
    .unwrap();
    let queries: [&[f32]; 3] = [&[0.6, 0.8, 0.0], &[0.0, 0.0, 1.0], &[-1.0, 0.2, 0.1]];
    let same_as_rebuilt = |sidecar: &Sidecar| {
        for query in queries {
            for datasource in [
                None,
                Some("shop"),
                Some("crm"),
                Some("new"),
                Some("nowhere"),
            ] {
                assert_eq!(
                    ranked(sidecar, query, datasource),
                    rebuilt_ranking(conn, query, datasource),
                    "{query:?} in {datasource:?}"
                );
            }
        }
    };
    let followed = open();
    assert!(!followed.rebuilt);
    assert_eq!(
        (followed.held(), followed.stale(), followed.live_rows()),
        (5, 1, 6)
    );
    same_as_rebuilt(&followed);
    // A long-lived reader keeps its codes hot, and follows in place.
    served.keep_hot();
    assert!(served.hot.get().unwrap().is_some());
    assert!(served.follow(conn).unwrap());
    same_as_rebuilt(&served);
    // Its ids are found by hash as a fresh open finds them by search, dead rows included.
    let fresh = open();
    let mut asked: Vec<String> = (0..fresh.len() as u32)
        .map(|row| fresh.id(row).to_owned())
        .collect();
    asked.extend(["shop.orders.amount", "memory:3", "no.such.doc", ""].map(String::from));
    for id in &asked {
        assert_eq!(served.row_of(id), fresh.row_of(id), "{id}");
    }
    assert_eq!(served.row_of("shop.orders.amount"), None);
    // The journal holds the catch-up: the next open replays it and reads no change.
    let journal = journal::path_for(&path_for(&folder, MODEL));
    let whole = std::fs::metadata(&journal).unwrap().len();
    assert!(whole > 16);
    same_as_rebuilt(&open());
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), whole);
    // A writer killed mid-append: the torn record is ignored, the store caught up again.
    memory(conn, "5", &["shop.orders"]);
    row(conn, "memory:5", &[1.0, 0.0, 0.0]);
    let before_torn = std::fs::metadata(&journal).unwrap().len();
    drop(open());
    let appended = std::fs::read(&journal).unwrap();
    std::fs::write(&journal, &appended[..appended.len() - 5]).unwrap();
    let after_torn = open();
    assert!(!after_torn.rebuilt);
    same_as_rebuilt(&after_torn);
    assert_eq!(
        std::fs::read(&journal).unwrap().len() as u64,
        appended.len() as u64
    );
    assert!(before_torn < appended.len() as u64);
    // A base replaced under the journal: the old journal is another build's, never replayed.
    std::fs::write(&journal, b"SLAYLOG1\0\0\0\0\0\0\0\0garbage").unwrap();
    same_as_rebuilt(&open());
    // refresh compacts: a new base, an empty journal.
    assert!(refresh(conn, &folder, MODEL, REVISION).unwrap());
    assert_eq!(std::fs::metadata(&journal).unwrap().len(), 16);
    let compacted = open();
    assert!(!compacted.rebuilt);
    assert_eq!(compacted.journaled(), 0);
    same_as_rebuilt(&compacted);
    // follow() (what writers call) journals for every sidecar of the store.
    row(conn, "memory:2", &[1.0, 1.0, 1.0]);
    assert_eq!(follow(conn, &folder).unwrap(), 1);
    assert!(std::fs::metadata(&journal).unwrap().len() > 16);
    same_as_rebuilt(&open());
}

#[test]
fn a_log_that_cannot_say_what_changed_rebuilds() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let conn = store.conn();
    let folder = vectors_dir(store.path());
    let open = || opened(conn, &folder);
    assert!(open().rebuilt);
    row(conn, "memory:2", &[1.0, 0.0, 0.0]);
    // The log pruned past the sidecar's state.
    conn.execute(
        "UPDATE settings SET value = CAST(value AS INTEGER) + 100 WHERE key = 'vector_changes_from_e'",
        [],
    )
    .unwrap();
    assert!(open().rebuilt);
    assert!(!open().rebuilt);
}

#[test]
fn a_writer_leaves_a_sidecar_it_cannot_follow_to_the_next_search() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let conn = store.conn();
    let folder = vectors_dir(store.path());
    // A row of another size: which rows are held depends on the first, so no catch-up.
    row(conn, "shop.orders", &[1.0, 0.0]);
    assert!(
        Sidecar::open(conn, &folder, MODEL, REVISION)
            .unwrap()
            .unwrap()
            .rebuilt
    );
    let file = path_for(&folder, MODEL);
    let built = std::fs::read(&file).unwrap();
    row(conn, "memory:1", &[0.0, 1.0, 0.0]);
    assert_eq!(follow(conn, &folder).unwrap(), 0);
    assert_eq!(
        std::fs::read(&file).unwrap(),
        built,
        "not rebuilt by the writer"
    );
    assert!(
        Sidecar::open(conn, &folder, MODEL, REVISION)
            .unwrap()
            .unwrap()
            .rebuilt
    );
}
