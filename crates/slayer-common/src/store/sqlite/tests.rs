//! The SQLite store: opening, migrating, the trigger-kept counters and the cascade predicate.

use super::migrations::MIGRATIONS;
use super::*;

/// A memory with these tags and nothing else of note.
fn memory(id: &str, tags: &[&str]) -> crate::records::Memory {
    crate::records::Memory::placeholder(id, tags)
}

#[test]
fn the_embedding_change_count_moves_exactly_when_live_rows_may_have_changed() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    let conn = store.conn();
    let count = || embeddings::change_count(conn).unwrap().unwrap();
    let doc = |id: &str, kind: &str| docs::StoredDoc {
        model: Some("m".into()),
        ..docs::StoredDoc::placeholder(id, kind, Some("db"))
    };
    let start = count();
    docs::upsert(conn, &doc("db.m.a", "column")).unwrap();
    assert_eq!(count(), start, "a doc without a row");
    embeddings::put(conn, "db.m.a", "local/x", "r", "h", &[1.0], "t").unwrap();
    assert_eq!(count(), start + 1, "a row written");
    embeddings::put(conn, "db.m.a", "local/x", "r", "h2", &[2.0], "t").unwrap();
    assert_eq!(count(), start + 2, "a row rewritten");
    docs::upsert(conn, &doc("db.m.a", "column")).unwrap();
    assert_eq!(count(), start + 2, "its doc re-rendered, same kind");
    docs::upsert(conn, &doc("db.m.a", "measure")).unwrap();
    assert_eq!(count(), start + 3, "its doc's kind changed");
    docs::delete(conn, "db.m.a").unwrap();
    assert_eq!(
        count(),
        start + 4,
        "its doc deleted: the row is no longer live"
    );
    docs::upsert(conn, &doc("db.m.a", "column")).unwrap();
    assert_eq!(count(), start + 5, "its doc back: the row is live again");
    embeddings::delete_exact(conn, "db.m.a").unwrap();
    assert_eq!(count(), start + 6, "a row deleted");
}

#[test]
fn a_newer_store_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    SqliteStore::open(&path, OpenMode::CreateIfMissing).unwrap();
    {
        let conn = Connection::open(&path).unwrap();
        conn.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = SqliteStore::open(&path, OpenMode::MustExist).unwrap_err();
    assert!(err.to_string().contains("schema version 99"), "{err}");
}

#[test]
fn missing_store_is_reported_for_readers() {
    let dir = tempfile::tempdir().unwrap();
    let err = SqliteStore::open(&dir.path().join("nope.db"), OpenMode::MustExist).unwrap_err();
    assert!(matches!(err, StoreError::Missing(_)));
}

#[test]
fn tag_counts_follow_every_tag_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    let tx = store.write().unwrap();
    memories::put(&tx, &memory("1", &["a.m", "a.m.c", "memory:1"])).unwrap();
    memories::put(&tx, &memory("2", &["a.m", "memory:1"])).unwrap();
    memories::put(&tx, &memory("3", &["b.n"])).unwrap();
    // A re-save replaces the tags; a deletion cascades.
    memories::put(&tx, &memory("3", &["a.m"])).unwrap();
    memories::delete(&tx, "2").unwrap();
    tx.commit().unwrap();
    let counts = |sql: &str| -> Vec<(String, i64)> {
        let mut stmt = store.conn().prepare(sql).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let kept = counts("SELECT entity, memories FROM tag_counts ORDER BY entity");
    let memory_count: String = store
        .conn()
        .query_row(
            "SELECT value FROM settings WHERE key = 'memory_count'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(memory_count, "2");
    assert_eq!(kept, [("a.m".into(), 2), ("a.m.c".into(), 1)]);
    let recomputed = counts(
        "SELECT entity, COUNT(*) FROM memory_entities
         WHERE entity <> 'memory:' || memory_id GROUP BY entity ORDER BY entity",
    );
    assert_eq!(kept, recomputed);
}

#[test]
fn suspended_counts_come_back_exact_with_the_migration_s_triggers() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    let triggers = |store: &SqliteStore| -> Vec<(String, String)> {
        let mut stmt = store
            .conn()
            .prepare(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'
                 AND (name LIKE 'tag_counts%' OR name LIKE 'memory_count%') ORDER BY name",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let from_migration = triggers(&store);
    assert_eq!(from_migration.len(), 4);
    let tx = store.write().unwrap();
    memories::put(&tx, &memory("0", &["a.m"])).unwrap();
    memories::suspend_counts(&tx).unwrap();
    memories::put(&tx, &memory("1", &["a.m", "memory:1"])).unwrap();
    memories::put(&tx, &memory("2", &["a.m.c"])).unwrap();
    memories::delete(&tx, "0").unwrap();
    memories::resume_counts(&tx).unwrap();
    tx.commit().unwrap();
    let normalize = |t: Vec<(String, String)>| -> Vec<(String, String)> {
        t.into_iter()
            .map(|(n, sql)| (n, sql.split_whitespace().collect::<Vec<_>>().join(" ")))
            .collect()
    };
    assert_eq!(normalize(triggers(&store)), normalize(from_migration));
    let counts: (String, String) = store
        .conn()
        .query_row(
            "SELECT (SELECT group_concat(entity || '=' || memories, ',') FROM
                        (SELECT * FROM tag_counts ORDER BY entity)),
                    (SELECT value FROM settings WHERE key = 'memory_count')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (counts.0.as_str(), counts.1.as_str()),
        ("a.m=1,a.m.c=1", "2")
    );
}

#[test]
fn there_is_one_migration_per_schema_version() {
    assert_eq!(MIGRATIONS.len() as i64, SCHEMA_VERSION);
}

#[test]
fn a_version_1_store_migrates_forward_keeping_its_memories() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(MIGRATIONS[0]).unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    conn.execute(
        "INSERT INTO memories (id, data, created_at) VALUES ('1', '{\"id\":\"1\",\"query\":{}}', 'x'), ('2', '{\"id\":\"2\"}', 'x')",
        [],
    )
    .unwrap();
    conn.execute_batch(
        "INSERT INTO memory_entities VALUES ('1', 'db.t'), ('2', 'db.t'), ('2', 'memory:2')",
    )
    .unwrap();
    drop(conn);
    let store = SqliteStore::open(&path, OpenMode::MustExist).unwrap();
    let flags: Vec<(String, bool)> = store
        .conn()
        .prepare("SELECT id, has_query FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(flags, [("1".to_owned(), true), ("2".to_owned(), false)]);
    assert_eq!(docs::version(store.conn()).unwrap(), "0");
    // Version 4 backfills the counts search reads (a memory's self-tag is not counted).
    let (tags, count): (String, String) = store
        .conn()
        .query_row(
            "SELECT (SELECT group_concat(entity || '=' || memories) FROM tag_counts),
                    (SELECT value FROM settings WHERE key = 'memory_count')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((tags.as_str(), count.as_str()), ("db.t=2", "2"));
    // Version 8: older memories are plain lessons, so none is marked.
    let tiers: Vec<String> = store
        .conn()
        .prepare("SELECT tier FROM memories ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(tiers, ["lesson", "lesson"]);
    assert!(memories::marked(store.conn()).unwrap().is_empty());
    // Version 9: none is proposed, and the partial index finds proposed ones.
    let (proposed, index): (i64, String) = store
        .conn()
        .query_row(
            "SELECT (SELECT count(*) FROM memories WHERE proposed = 0),
                    (SELECT sql FROM sqlite_master WHERE name = 'idx_memories_marked')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(proposed, 2);
    assert!(index.contains("proposed <> 0"), "{index}");
}

#[test]
fn a_proposed_lesson_is_marked_and_approving_it_unmarks_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    let mut m = crate::records::Memory::placeholder("7", &["db"]);
    m.standing.proposed = true;
    let tx = store.write().unwrap();
    memories::put(&tx, &m).unwrap();
    tx.commit().unwrap();
    let marked = memories::marked(store.conn()).unwrap();
    assert_eq!(marked.len(), 1);
    assert!(marked[0].standing.proposed && marked[0].id == "7");
    assert_eq!(memories::get(store.conn(), "7").unwrap().unwrap(), m);
    m.standing.proposed = false;
    let tx = store.write().unwrap();
    memories::put(&tx, &m).unwrap();
    tx.commit().unwrap();
    assert!(memories::marked(store.conn()).unwrap().is_empty());
}

#[test]
fn a_store_whose_version_was_lowered_migrates_again_without_adding_columns_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut store = SqliteStore::open(&path, OpenMode::CreateIfMissing).unwrap();
    store.write().unwrap().commit().unwrap();
    drop(store);
    Connection::open(&path)
        .unwrap()
        .pragma_update(None, "user_version", 7)
        .unwrap();
    let store = SqliteStore::open(&path, OpenMode::MustExist).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn a_writer_on_an_absent_file_creates_it_only_when_it_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut store = SqliteStore::open(&path, OpenMode::CreateIfMissing).unwrap();
    // Reads see an empty store; a rehearsed write is rolled back; no file yet.
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
    let rehearsal = store.rehearsal().unwrap().expect("absent file");
    rehearsal
        .execute("INSERT INTO settings (key, value) VALUES ('k', 'v')", [])
        .unwrap();
    drop(rehearsal);
    let count: i64 = store
        .conn()
        .query_row("SELECT count(*) FROM settings WHERE key = 'k'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(count, 0);
    assert!(!path.exists());

    let tx = store.write().unwrap();
    tx.execute("INSERT INTO settings (key, value) VALUES ('k', 'v')", [])
        .unwrap();
    tx.commit().unwrap();
    assert!(path.exists());
    assert!(store.rehearsal().unwrap().is_none());
    drop(store);
    let store = SqliteStore::open(&path, OpenMode::ReadOnly).unwrap();
    let value: String = store
        .conn()
        .query_row("SELECT value FROM settings WHERE key = 'k'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(value, "v");
}

fn file_bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

#[test]
fn readers_leave_a_foreign_database_untouched_and_say_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("other.sqlite");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('a');")
            .unwrap();
    }
    let before = file_bytes(&path);
    for mode in [
        OpenMode::ReadOnly,
        OpenMode::MustExist,
        OpenMode::CreateIfMissing,
    ] {
        let err = SqliteStore::open(&path, mode).unwrap_err();
        assert!(
            err.to_string()
                .contains("is not a slayer store (it has other tables: people)"),
            "{mode:?}: {err}"
        );
    }
    assert_eq!(file_bytes(&path), before);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["other.sqlite"]);
    let text = dir.path().join("notes.txt");
    std::fs::write(
        &text,
        "just some text, long enough to be a header of a file....\n".repeat(4),
    )
    .unwrap();
    let err = SqliteStore::open(&text, OpenMode::ReadOnly).unwrap_err();
    assert!(err.to_string().contains("not an SQLite database"), "{err}");
}

#[test]
fn readers_refuse_an_older_store_and_writers_migrate_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("old.db");
    {
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(MIGRATIONS[0]).unwrap();
        conn.pragma_update(None, "user_version", 1).unwrap();
    }
    let before = file_bytes(&path);
    let err = SqliteStore::open(&path, OpenMode::ReadOnly).unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "has schema version 1, older than this slayer's ({SCHEMA_VERSION}); upgrade it with `slayer-index migrate"
        )),
        "{err}"
    );
    assert_eq!(file_bytes(&path), before);
    SqliteStore::open(&path, OpenMode::MustExist).unwrap();
    let store = SqliteStore::open(&path, OpenMode::ReadOnly).unwrap();
    assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
}

#[test]
fn under_takes_the_root_and_its_dotted_descendants_only() {
    let conn = Connection::open_in_memory().unwrap();
    let ids = [
        "prod",
        "prod.orders",
        "prod.orders.amount",
        "prod_v2",
        "prod_v2.orders",
        "pro",
        "prod/x",
        "prodx",
        "memory:4",
        "memory:4.x",
        "memory:45",
    ];
    let under = |root: &str| -> Vec<String> {
        let values: Vec<String> = ids.iter().map(|i| format!("('{i}')")).collect();
        let sql = format!(
            "SELECT column1 FROM (VALUES {}) WHERE {} ORDER BY column1",
            values.join(", "),
            under_sql("column1", 1)
        );
        let mut stmt = conn.prepare(&sql).unwrap();
        stmt.query_map([root], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(under("prod"), ["prod", "prod.orders", "prod.orders.amount"]);
    assert_eq!(under("prod.orders"), ["prod.orders", "prod.orders.amount"]);
    // A memory id may hold a dot: `memory:4` takes only itself.
    assert_eq!(under("memory:4"), ["memory:4"]);
    assert!(under("nothing").is_empty());
}

#[test]
fn index_dir_sits_beside_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    assert_eq!(store.index_dir(), dir.path().join("s.db.index"));
}

/// An index synced to a `docs_version` the change log covers is compared with the docs logged
/// since, and that gives exactly the full comparison's lag: new, rewritten and deleted docs,
/// not a doc written again unchanged. Once the log is pruned past the synced version, the
/// full comparison answers.
#[test]
fn the_index_lag_read_from_the_change_log_is_the_full_comparison_s() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    let conn = store.conn();
    let doc = |id: &str, hash: &str| docs::StoredDoc {
        doc: crate::records::Doc {
            content_hash: hash.into(),
            ..docs::StoredDoc::placeholder(id, "column", Some("db")).doc
        },
        model: Some("m".into()),
        position: 0,
    };
    for id in ["db.m.a", "db.m.b", "db.m.c", "db.m.z"] {
        docs::upsert(conn, &doc(id, "h1")).unwrap();
    }
    let sync = || {
        let lag = docs::index_lag(conn).unwrap();
        docs::mark_indexed(conn, &lag).unwrap();
        let version = docs::version(conn).unwrap();
        settings::set(conn, docs::FULLTEXT_SYNCED_VERSION, &version).unwrap();
    };
    // Before any sync the log cannot say: every doc is compared.
    assert!(docs::logged_index_lag(conn).unwrap().is_none());
    sync();
    assert!(docs::index_lag(conn).unwrap().is_empty());
    assert_eq!(
        docs::logged_index_lag(conn).unwrap(),
        Some(docs::IndexLag::default())
    );
    docs::upsert(conn, &doc("db.m.c", "h2")).unwrap();
    docs::upsert(conn, &doc("db.m.b", "h1")).unwrap();
    docs::delete(conn, "db.m.z").unwrap();
    docs::upsert(conn, &doc("db.m.d", "h1")).unwrap();
    let logged = docs::logged_index_lag(conn)
        .unwrap()
        .expect("the log covers the sync");
    assert_eq!(logged, docs::full_index_lag(conn).unwrap());
    let upserts: Vec<&str> = logged
        .upserts
        .iter()
        .map(|d| d.doc.canonical_id.as_str())
        .collect();
    assert_eq!(upserts, ["db.m.c", "db.m.d"]);
    assert_eq!(logged.deletes, ["db.m.z"]);
    // Pruned past the synced version: the full comparison, with the same answer.
    for _ in 0..3 {
        docs::upsert(conn, &doc("db.m.e", "h3")).unwrap();
        docs::delete(conn, "db.m.e").unwrap();
    }
    docs::prune_docs_changes_keeping(conn, 1).unwrap();
    assert!(docs::logged_index_lag(conn).unwrap().is_none());
    assert_eq!(
        docs::index_lag(conn).unwrap(),
        docs::full_index_lag(conn).unwrap()
    );
    sync();
    assert!(docs::index_lag(conn).unwrap().is_empty());
    assert!(docs::logged_index_lag(conn).unwrap().is_some());
}
