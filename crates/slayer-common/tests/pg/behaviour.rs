//! What only a server store does: opening (foreign schemas, readers, versions), writers on two
//! connections, a lost connection, a read-only role, and the change log's readings.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use slayer_common::records::{Memory, Standing};
use slayer_common::store::postgres::{PgStore, PG_SCHEMA_VERSION};
use slayer_common::store::rows::StoredDoc;
use slayer_common::store::{OpenMode, StoreError, StoreRead, StoreWrite};

use crate::parity::{reads, script};
use crate::pg_server::{quote_ident, SocketServer};
use crate::support::{endpoint, fresh_schema, new_store, open_admin, server, shown, DB};

fn memory(id: &str, tags: &[&str]) -> Memory {
    Memory {
        version: 4,
        id: id.into(),
        learning: "x".into(),
        description: None,
        entities: tags.iter().map(|t| t.to_string()).collect(),
        query: None,
        created_at: "2026-01-01".into(),
        standing: Standing::default(),
        occasion: Default::default(),
    }
}

#[test]
fn the_store_is_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<PgStore>();
}

#[test]
fn a_foreign_schema_is_refused_and_left_as_it_was() {
    let server = server();
    let schema = fresh_schema("foreign");
    server.psql(
        DB,
        &format!(
            "CREATE SCHEMA {s}; CREATE TABLE {s}.t (id int); INSERT INTO {s}.t VALUES (1);",
            s = quote_ident(&schema)
        ),
    );
    for mode in [
        OpenMode::CreateIfMissing,
        OpenMode::MustExist,
        OpenMode::ReadOnly,
    ] {
        match open_admin(server, &schema, mode) {
            Err(StoreError::NotAStore { path, why }) => {
                assert_eq!(path, PathBuf::from(shown(&schema)));
                assert!(why.contains('t'), "{why}");
            }
            other => panic!("{mode:?}: {other:?}"),
        }
    }
    let relations = server.query(
        DB,
        &format!(
            "SELECT string_agg(c.relname, ',' ORDER BY c.relname) FROM pg_class c
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = '{schema}'"
        ),
    );
    assert_eq!(relations, "t");
    let functions = server.query(
        DB,
        &format!(
            "SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
             WHERE n.nspname = '{schema}'"
        ),
    );
    assert_eq!(functions, "0");
}

#[test]
fn readers_never_create_and_refuse_other_versions() {
    let server = server();
    let schema = fresh_schema("absent");
    for mode in [OpenMode::ReadOnly, OpenMode::MustExist] {
        match open_admin(server, &schema, mode) {
            Err(StoreError::Missing(path)) => assert_eq!(path, PathBuf::from(shown(&schema))),
            other => panic!("{mode:?}: {other:?}"),
        }
    }
    let absent = server.query(
        DB,
        &format!("SELECT count(*) FROM pg_namespace WHERE nspname = '{schema}'"),
    );
    assert_eq!(absent, "0");
    // An empty schema: a reader finds no store; a writer (even MustExist) makes one there.
    server.psql(DB, &format!("CREATE SCHEMA {}", quote_ident(&schema)));
    assert!(matches!(
        open_admin(server, &schema, OpenMode::ReadOnly),
        Err(StoreError::Missing(_))
    ));
    let store = open_admin(server, &schema, OpenMode::MustExist).unwrap();
    assert_eq!(store.schema_version().unwrap(), PG_SCHEMA_VERSION);
    let id = store.store_id().unwrap();
    assert_eq!(id.len(), 32, "{id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    // Opening again migrates nothing and keeps the identity.
    let again = open_admin(server, &schema, OpenMode::CreateIfMissing).unwrap();
    assert_eq!(again.store_id().unwrap(), id);
    open_admin(server, &schema, OpenMode::ReadOnly).unwrap();

    let set_version = |v: i64| {
        server.psql(
            DB,
            &format!(
                "UPDATE {}.schema_version SET version = {v}",
                quote_ident(&schema)
            ),
        )
    };
    set_version(0);
    match open_admin(server, &schema, OpenMode::ReadOnly) {
        Err(StoreError::Outdated {
            found, supported, ..
        }) => assert_eq!((found, supported), (0, PG_SCHEMA_VERSION)),
        other => panic!("{other:?}"),
    }
    set_version(PG_SCHEMA_VERSION + 1);
    for mode in [OpenMode::ReadOnly, OpenMode::CreateIfMissing] {
        assert!(matches!(
            open_admin(server, &schema, mode),
            Err(StoreError::TooNew { .. })
        ));
    }
}

/// A version 1 store (before review of agent memories) gains `proposed` and the index that
/// finds proposed memories when a writer opens it; its memories stay as they were.
#[test]
fn a_version_1_store_migrates_to_hold_proposed_memories() {
    let (mut store, schema) = new_store("v1");
    let tx = store.write().unwrap();
    tx.put_memory(&memory("1", &["db"])).unwrap();
    tx.commit().unwrap();
    drop(store);
    // Version 1 as it was: no column, the index without it.
    let server = server();
    server.psql(
        DB,
        &format!(
            "SET search_path = {s}; DROP INDEX idx_memories_marked;
             ALTER TABLE memories DROP COLUMN proposed;
             CREATE INDEX idx_memories_marked ON memories (id)
                 INCLUDE (tier, confidence, strength, project, agent, deleted)
                 WHERE tier <> 'lesson' OR confidence <> 1 OR strength <> 1
                    OR project IS NOT NULL OR agent IS NOT NULL OR deleted;
             UPDATE schema_version SET version = 1;",
            s = quote_ident(&schema)
        ),
    );
    assert!(matches!(
        open_admin(server, &schema, OpenMode::ReadOnly),
        Err(StoreError::Outdated { found: 1, .. })
    ));
    let mut store = open_admin(server, &schema, OpenMode::MustExist).unwrap();
    assert_eq!(store.schema_version().unwrap(), PG_SCHEMA_VERSION);
    assert_eq!(store.memory("1").unwrap().unwrap(), memory("1", &["db"]));
    assert!(store.marked_memories().unwrap().is_empty());
    let mut proposed = memory("2", &["db"]);
    proposed.standing.proposed = true;
    let tx = store.write().unwrap();
    tx.put_memory(&proposed).unwrap();
    tx.commit().unwrap();
    let marked = store.marked_memories().unwrap();
    assert_eq!(marked.len(), 1);
    assert!(marked[0].id == "2" && marked[0].standing.proposed);
    let predicate = server.query(
        DB,
        &format!(
            "SELECT pg_get_expr(i.indpred, i.indrelid) FROM pg_index i
             JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = '{schema}' AND c.relname = 'idx_memories_marked'"
        ),
    );
    assert!(predicate.contains("proposed"), "{predicate}");
}

/// A version 2 store's skeletons (no join pairs, no primary keys) are rewritten from the full
/// models when a writer opens it, so search reads the keys that join two models.
/// The change log keeps each key's latest change only, and answers readers as before: a
/// reader synced before a run of writes to one key still sees the key; a version-3 store's
/// log, one row per write, is compacted by the migration.
#[test]
fn the_change_log_keeps_one_row_per_key_and_answers_as_before() {
    let (mut store, schema) = new_store("compact");
    let placeholder = |id: &str| StoredDoc::placeholder(id, "model", Some("db"));
    let write = |store: &mut PgStore, ids: &[&str]| {
        let tx = store.write().unwrap();
        for id in ids {
            tx.upsert_doc(&placeholder(id)).unwrap();
        }
        tx.commit().unwrap();
    };
    write(&mut store, &["db.a", "db.b"]);
    let v1 = store.docs_version().unwrap();
    for _ in 0..5 {
        write(&mut store, &["db.a"]);
    }
    let server = server();
    let rows = |key: &str| {
        server.query(
            DB,
            &format!(
                "SELECT count(*) FROM {s}.changes WHERE stream = 'docs' AND key = '{key}'",
                s = quote_ident(&schema)
            ),
        )
    };
    assert_eq!((rows("db.a").trim(), rows("db.b").trim()), ("1", "1"));
    let since_v1: Vec<String> = store
        .docs_changed_since(&v1)
        .unwrap()
        .unwrap()
        .upserts
        .into_iter()
        .map(|d| d.doc.canonical_id)
        .collect();
    assert_eq!(since_v1, ["db.a"]);
    let all = store.docs_changed_since("0").unwrap().unwrap();
    assert_eq!(all.upserts.len(), 2);
    // A version-3 log: every write a row of its own, until the migration compacts it.
    server.psql(
        DB,
        &format!(
            "SET search_path = {s};
             DROP TRIGGER changes_replace ON changes;
             INSERT INTO changes (stream, key) VALUES ('docs', 'db.b'), ('docs', 'db.b');
             UPDATE schema_version SET version = 3;",
            s = quote_ident(&schema)
        ),
    );
    assert_eq!(rows("db.b").trim(), "3");
    let top = store.docs_version().unwrap();
    drop(store);
    let mut store = open_admin(server, &schema, OpenMode::MustExist).unwrap();
    assert_eq!(store.schema_version().unwrap(), PG_SCHEMA_VERSION);
    assert_eq!(rows("db.b").trim(), "1");
    assert_eq!(store.docs_version().unwrap(), top, "the latest seq is kept");
    write(&mut store, &["db.b"]);
    assert_eq!(rows("db.b").trim(), "1", "the trigger is back");
}

#[test]
fn a_version_2_store_rewrites_its_skeletons_with_join_pairs_and_keys() {
    let (mut store, schema) = new_store("v2");
    let model: slayer_common::records::Model = serde_json::from_value(serde_json::json!({
        "name": "orders", "data_source": "db",
        "columns": [{"name": "id", "primary_key": true}, {"name": "customer_id"}],
        "joins": [{"target_model": "customers", "join_pairs": [["customer_id", "id"]]}]
    }))
    .unwrap();
    let tx = store.write().unwrap();
    tx.put_model(&model).unwrap();
    tx.commit().unwrap();
    drop(store);
    let server = server();
    server.psql(
        DB,
        &format!(
            "SET search_path = {s};
             UPDATE model_skeletons SET skeleton = '{{\"name\":\"orders\",\"data_source\":\"db\",\"columns\":[{{\"name\":\"id\"}},{{\"name\":\"customer_id\"}}],\"joins\":[{{\"target_model\":\"customers\"}}]}}';
             UPDATE schema_version SET version = 2;",
            s = quote_ident(&schema)
        ),
    );
    let old = open_admin(server, &schema, OpenMode::ReadOnly);
    assert!(matches!(old, Err(StoreError::Outdated { found: 2, .. })));
    let store = open_admin(server, &schema, OpenMode::MustExist).unwrap();
    assert_eq!(store.schema_version().unwrap(), PG_SCHEMA_VERSION);
    let skeleton = &store.model_skeletons().unwrap()[0];
    assert!(skeleton.columns[0].primary_key);
    assert_eq!(
        skeleton.joins[0].join_pairs,
        [("customer_id".to_owned(), "id".to_owned())]
    );
}

#[test]
fn two_writers_take_turns_and_allocate_distinct_ids() {
    let server = server();
    let (mut first, schema) = new_store("writers");
    let mut second = open_admin(server, &schema, OpenMode::MustExist).unwrap();
    let next_id = |r: &dyn StoreRead| {
        r.largest_int_id()
            .unwrap()
            .map_or(1, |id| id.parse::<u64>().unwrap() + 1)
            .to_string()
    };
    let tx = first.write().unwrap();
    let mine = next_id(&tx);
    tx.put_memory(&memory(&mine, &["db"])).unwrap();
    let started = Instant::now();
    let theirs = std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let tx = second.write().unwrap();
            let waited = started.elapsed();
            let id = next_id(&tx);
            tx.put_memory(&memory(&id, &["db"])).unwrap();
            tx.commit().unwrap();
            (id, waited)
        });
        std::thread::sleep(Duration::from_millis(400));
        tx.commit().unwrap();
        waiter.join().unwrap()
    });
    assert_eq!(mine, "1");
    assert_eq!(
        theirs.0, "2",
        "the second writer read after the first committed"
    );
    assert!(theirs.1 >= Duration::from_millis(350), "{:?}", theirs.1);
    assert_eq!(first.memory_count().unwrap(), 2);
}

#[test]
fn an_uncommitted_or_failed_transaction_writes_nothing() {
    let (mut store, _) = new_store("rollback");
    let tx = store.write().unwrap();
    tx.set_setting("a", "1").unwrap();
    drop(tx);
    assert_eq!(store.setting("a").unwrap(), None);
    let tx = store.write().unwrap();
    tx.set_setting("a", "1").unwrap();
    // PostgreSQL text cannot hold NUL: the statement fails and the transaction is doomed.
    let mut bad = StoredDoc::placeholder("db.x", "model", Some("db"));
    bad.doc.text = "a\0b".into();
    assert!(matches!(
        tx.upsert_doc(&bad),
        Err(StoreError::Postgres { .. })
    ));
    assert!(tx.set_setting("b", "2").is_err());
    let err = tx.commit().unwrap_err();
    assert!(err.to_string().contains("rolled back"), "{err}");
    assert_eq!(store.setting("a").unwrap(), None);
}

#[test]
fn a_lost_connection_reconnects_outside_a_transaction_and_is_an_error_inside_one() {
    let own = SocketServer::start();
    own.create_database(DB);
    let schema = fresh_schema("lost");
    let store = PgStore::open(
        endpoint(&own, &schema, crate::pg_server::ADMIN, None),
        OpenMode::CreateIfMissing,
    )
    .unwrap();
    assert_eq!(store.doc_count().unwrap(), 0);
    own.restart();
    // The dead connection is found on its first use after the restart, and the read runs
    // again on a new one (issue 49: the first request after a restart used to fail).
    let started = Instant::now();
    assert_eq!(store.doc_count().unwrap(), 0, "the read reconnects");
    assert!(started.elapsed() < Duration::from_secs(5));

    // Inside a snapshot the loss is an error; once it ends, reads reconnect.
    store.begin_snapshot().unwrap();
    own.restart();
    assert!(store.doc_count().is_err());
    assert!(store.doc_count().is_err(), "no reconnect inside a snapshot");
    let _ = store.end_snapshot();
    assert_eq!(store.doc_count().unwrap(), 0);

    // With the server down, an error comes at once.
    own.stop();
    let started = Instant::now();
    assert!(matches!(
        store.docs_version(),
        Err(StoreError::Postgres { .. })
    ));
    assert!(store.data_version().is_err());
    assert!(started.elapsed() < Duration::from_secs(5));
    own.start_again();
    assert_eq!(store.docs_version().unwrap(), "0");
}

#[test]
fn a_read_only_role_reads_everything() {
    let server = server();
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite =
        slayer_common::store::Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing)
            .unwrap();
    let (mut store, schema) = new_store("reader");
    script(&mut store);
    script(&mut sqlite);
    let role = format!("reader_{schema}");
    server.create_role(&role, "r3ader-pw");
    server.grant_read_only(DB, &schema, &role);
    let reader = PgStore::open(
        endpoint(server, &schema, &role, Some("r3ader-pw")),
        OpenMode::ReadOnly,
    )
    .unwrap();
    assert_eq!(reads(&reader), reads(&sqlite));
    reader.begin_snapshot().unwrap();
    reader.data_version().unwrap();
    reader.docs_version().unwrap();
    reader.embedding_changes().unwrap();
    reader.vectors_state().unwrap().unwrap();
    reader.docs_changed_since("0").unwrap().unwrap();
    reader.end_snapshot().unwrap();
    // A reader role cannot write, and says so; a writer's open of it would migrate nothing.
    let mut reader = reader;
    let refused = reader.write().and_then(|tx| tx.set_setting("x", "y"));
    assert!(refused.is_err());
}

#[test]
fn the_change_log_tells_what_moved() {
    let (mut store, _) = new_store("changes");
    assert_eq!(store.docs_version().unwrap(), "0");
    assert_eq!(store.data_version().unwrap(), 0);
    assert_eq!(store.embedding_changes().unwrap(), Some(0));
    let state = store.vectors_state().unwrap().unwrap();
    assert_eq!(state.store_id, store.store_id().unwrap());
    assert_eq!(
        (state.embeddings_changes, state.memory_tags_changes),
        (0, 0)
    );
    assert_eq!(
        store.docs_changed_since("0").unwrap().unwrap(),
        Default::default()
    );

    let placeholder = |id: &str| StoredDoc::placeholder(id, "model", Some("db"));
    let tx = store.write().unwrap();
    for id in ["db.b", "db.a", "db.c"] {
        tx.upsert_doc(&placeholder(id)).unwrap();
    }
    tx.commit().unwrap();
    let v1 = store.docs_version().unwrap();
    assert_ne!(v1, "0");
    let all = store.docs_changed_since("0").unwrap().unwrap();
    assert_eq!(all.upserts, store.all_docs().unwrap());
    assert!(all.deletes.is_empty());
    assert_eq!(
        store.index_lag().unwrap().upserts,
        store.all_docs().unwrap()
    );
    assert_eq!(store.indexed_count().unwrap(), 3);
    assert_eq!(
        store.embedding_changes().unwrap(),
        Some(0),
        "no doc had a row"
    );

    let tx = store.write().unwrap();
    tx.put_embedding("db.a", "m", "r", "h", &[1.0], "t")
        .unwrap();
    tx.commit().unwrap();
    let e1 = store.embedding_changes().unwrap().unwrap();
    assert!(e1 > 0);
    let version = store.live_row_versions("m", "r").unwrap()[0].2.clone();

    let data = store.data_version().unwrap();
    let tx = store.write().unwrap();
    tx.delete_doc("db.a").unwrap();
    tx.upsert_doc(&placeholder("db.d")).unwrap();
    tx.upsert_doc(&placeholder("db.b")).unwrap();
    tx.mark_indexed(&Default::default()).unwrap();
    tx.clear_index_state().unwrap();
    tx.commit().unwrap();
    assert!(store.data_version().unwrap() > data);
    let lag = store.docs_changed_since(&v1).unwrap().unwrap();
    let ids: Vec<&str> = lag
        .upserts
        .iter()
        .map(|d| d.doc.canonical_id.as_str())
        .collect();
    assert_eq!(ids, ["db.b", "db.d"]);
    assert_eq!(lag.deletes, ["db.a"]);
    let e2 = store.embedding_changes().unwrap().unwrap();
    assert!(e2 > e1, "a doc with a row went");
    // Back with another kind: the row is live again, under a new kind.
    let tx = store.write().unwrap();
    tx.upsert_doc(&StoredDoc::placeholder("db.a", "column", Some("db")))
        .unwrap();
    tx.commit().unwrap();
    assert!(store.embedding_changes().unwrap().unwrap() > e2);
    let e3 = store.embedding_changes().unwrap().unwrap();
    let tx = store.write().unwrap();
    tx.upsert_doc(&StoredDoc::placeholder("db.a", "column", Some("db")))
        .unwrap();
    tx.commit().unwrap();
    assert_eq!(
        store.embedding_changes().unwrap().unwrap(),
        e3,
        "same kind: no change"
    );
    let tx = store.write().unwrap();
    tx.upsert_doc(&StoredDoc::placeholder("db.a", "measure", Some("db")))
        .unwrap();
    tx.commit().unwrap();
    assert!(
        store.embedding_changes().unwrap().unwrap() > e3,
        "kind changed"
    );

    // A rewritten row has a new version.
    let tx = store.write().unwrap();
    tx.put_embedding("db.a", "m", "r", "h", &[1.0], "t")
        .unwrap();
    tx.commit().unwrap();
    let again = store.live_row_versions("m", "r").unwrap()[0].2.clone();
    assert_ne!(again, version);
    assert_eq!(
        store
            .vector_and_version("db.a", "m", "r")
            .unwrap()
            .unwrap()
            .1,
        again
    );

    memory_tag_changes_count_only_tag_writes(&mut store);
    // A version that is not a number counts as before every change.
    assert_eq!(
        store.docs_changed_since("x").unwrap(),
        store.docs_changed_since("0").unwrap()
    );
}

/// The memory-tags change counter moves when a memory's tags are written, not when a memory
/// without tags is.
fn memory_tag_changes_count_only_tag_writes(store: &mut PgStore) {
    let tags = store.vectors_state().unwrap().unwrap().memory_tags_changes;
    let tx = store.write().unwrap();
    tx.put_memory(&memory("1", &[])).unwrap();
    tx.commit().unwrap();
    assert_eq!(
        store.vectors_state().unwrap().unwrap().memory_tags_changes,
        tags
    );
    let tx = store.write().unwrap();
    tx.put_memory(&memory("1", &["db.a"])).unwrap();
    tx.commit().unwrap();
    assert!(store.vectors_state().unwrap().unwrap().memory_tags_changes > tags);
}

#[test]
// The timings are for a person reading `--nocapture`; only the generous bound is asserted.
#[allow(clippy::print_stderr)]
fn ten_thousand_docs_load_in_seconds_and_versions_read_cheaply() {
    let (mut store, _) = new_store("load");
    let started = Instant::now();
    let tx = store.write().unwrap();
    for i in 0..10_000 {
        let mut doc =
            StoredDoc::placeholder(&format!("db.m{}.c{i}", i % 100), "column", Some("db"));
        doc.model = Some(format!("m{}", i % 100));
        doc.position = i64::from(i);
        doc.doc.text = format!("column {i} of a table, with some text to index");
        tx.upsert_doc(&doc).unwrap();
        tx.put_embedding(&doc.doc.canonical_id, "m", "r", "h", &[0.5; 384], "t")
            .unwrap();
    }
    tx.commit().unwrap();
    let load = started.elapsed();
    let started = Instant::now();
    let rounds = 200;
    for _ in 0..rounds {
        store.data_version().unwrap();
        store.docs_version().unwrap();
        store.embedding_changes().unwrap();
        store.vectors_state().unwrap();
    }
    let per_request = started.elapsed() / rounds;
    let started = Instant::now();
    let mut rows = 0;
    store
        .for_each_live_row("m", "r", &mut |_, _, _| rows += 1)
        .unwrap();
    let vectors = started.elapsed();
    eprintln!(
        "10k docs + embeddings loaded in {load:?}; the four version reads of a request: \
         {per_request:?}; {rows} live rows read in {vectors:?}"
    );
    assert_eq!(rows, 10_000);
    assert!(load < Duration::from_secs(120), "{load:?}");
}

#[test]
fn writers_creating_one_store_at_once_make_one() {
    let server = server();
    let schema = fresh_schema("race");
    let ids: Vec<String> = std::thread::scope(|scope| {
        let opens: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    open_admin(server, &schema, OpenMode::CreateIfMissing)
                        .unwrap()
                        .store_id()
                        .unwrap()
                })
            })
            .collect();
        opens.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
}
