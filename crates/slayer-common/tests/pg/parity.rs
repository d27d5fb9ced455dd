//! One scripted sequence of writes on a temp SQLite store and on a fresh PostgreSQL schema, then
//! every read of both compared, order included. Versions and change counters are the backends'
//! own (SQLite counts, PostgreSQL numbers its change log): they are masked here and checked in
//! behaviour.rs.

use slayer_common::records::{Datasource, Doc, Memory, Model, Standing, Tier};
use slayer_common::store::postgres::PgStore;
use slayer_common::store::rows::StoredDoc;
use slayer_common::store::{OpenMode, Store, StoreRead, StoreWrite};

use crate::support::new_store;

/// A store the script writes through, one transaction at a time.
pub trait Backend {
    fn tx(&mut self, f: &mut dyn FnMut(&dyn StoreWrite) -> Vec<String>) -> Vec<String>;
}

impl Backend for Store {
    fn tx(&mut self, f: &mut dyn FnMut(&dyn StoreWrite) -> Vec<String>) -> Vec<String> {
        let tx = self.write().unwrap();
        let out = f(&tx);
        tx.commit().unwrap();
        out
    }
}

impl Backend for PgStore {
    fn tx(&mut self, f: &mut dyn FnMut(&dyn StoreWrite) -> Vec<String>) -> Vec<String> {
        let tx = self.write().unwrap();
        let out = f(&tx);
        tx.commit().unwrap();
        out
    }
}

fn datasource(name: &str, description: &str) -> Datasource {
    // Keys in an order serde would not pick, so the JSON must come back byte for byte.
    serde_json::from_value(serde_json::json!({
        "name": name, "type": "postgres", "description": description,
        "zeta": 1, "alpha": {"y": 2, "b": [3, 1]}
    }))
    .unwrap()
}

fn model(ds: &str, name: &str) -> Model {
    serde_json::from_value(serde_json::json!({
        "name": name, "data_source": ds, "description": format!("the {name} table"),
        "columns": [{"name": "id", "type": "INT"}, {"name": "secret", "hidden": true}],
        "measures": [{"formula": "amount:sum"}, {"name": "revenue", "formula": "amount:sum"}],
        "aggregations": [{"name": "wavg", "formula": "x"}],
        "joins": [{"target_model": "customers", "name": "buyer", "join_pairs": [["bid", "id"]]}]
    }))
    .unwrap()
}

pub fn doc(
    id: &str,
    kind: &str,
    ds: Option<&str>,
    model: Option<&str>,
    position: i64,
) -> StoredDoc {
    StoredDoc {
        doc: Doc {
            canonical_id: id.into(),
            doc_kind: kind.into(),
            datasource: ds.map(str::to_owned),
            text: format!("text of {id}"),
            content_hash: format!("h-{id}"),
            embedding_text: (position % 2 == 1).then(|| format!("embed {id}")),
        },
        model: model.map(str::to_owned),
        position,
    }
}

pub fn memory(
    id: &str,
    tags: &[&str],
    created_at: &str,
    query: bool,
    standing: Standing,
) -> Memory {
    Memory {
        version: 4,
        id: id.into(),
        learning: format!("learning {id}"),
        description: None,
        entities: tags.iter().map(|t| t.to_string()).collect(),
        query: query.then(|| serde_json::json!({"source_model": "m", "b": 1, "a": 2})),
        created_at: created_at.into(),
        standing,
        occasion: Default::default(),
    }
}

fn standing(tier: Tier, confidence: f64, project: Option<&str>, deleted: bool) -> Standing {
    Standing {
        tier,
        confidence,
        strength: 1.0,
        project: project.map(str::to_owned),
        agent: project.map(|p| format!("{p}-agent")),
        deleted,
        proposed: false,
    }
}

/// The script: each inner closure is one committed transaction; what each write returned.
pub fn script(b: &mut dyn Backend) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(catalog_writes(b));
    out.extend(memory_writes(b));
    out.extend(embedding_and_delete_writes(b));
    out.extend(batch_writes(b));
    out
}

/// The datasources, models and docs, in one transaction.
fn catalog_writes(b: &mut dyn Backend) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(b.tx(&mut |w| {
        let mut r = Vec::new();
        for (name, d) in [
            ("db", "main"),
            ("shop", "shop"),
            ("Zed", "upper"),
            ("a_b", "u"),
        ] {
            w.put_datasource(&datasource(name, d)).unwrap();
        }
        for (ds, name) in [
            ("db", "orders"),
            ("db", "customers"),
            ("db", "Orders"),
            ("shop", "items"),
            ("ghost", "t"),
        ] {
            w.put_model(&model(ds, name)).unwrap();
        }
        let docs = [
            doc("db", "datasource", Some("db"), None, 0),
            doc("shop", "datasource", Some("shop"), None, 0),
            doc("Zed", "datasource", Some("Zed"), None, 0),
            doc("db.orders", "model", Some("db"), Some("orders"), 0),
            doc("db.orders.id", "column", Some("db"), Some("orders"), 1),
            doc("db.orders.amount", "column", Some("db"), Some("orders"), 2),
            doc(
                "db.orders.revenue",
                "measure",
                Some("db"),
                Some("orders"),
                3,
            ),
            doc("db.Orders", "model", Some("db"), Some("Orders"), 0),
            doc("db.customers", "model", Some("db"), Some("customers"), 0),
            doc("db.customers.é", "column", Some("db"), Some("customers"), 1),
            doc("db.a_b", "model", Some("db"), Some("a_b"), 0),
            doc("db.a-b", "model", Some("db"), Some("a-b"), 0),
            doc("shop.items", "model", Some("shop"), Some("items"), 0),
            doc("shop.items.sku", "column", Some("shop"), Some("items"), 1),
            doc("odd", "column", None, None, 5),
            doc("memory:1", "memory", None, None, 0),
            doc("memory:22", "memory", None, None, 0),
            doc("memory:sem_3", "memory", None, None, 0),
        ];
        for d in &docs {
            w.upsert_doc(d).unwrap();
        }
        r.push(format!("{:?}", w.all_docs().unwrap().len()));
        r
    }));
    out
}

/// The memories and their tags, in one transaction.
fn memory_writes(b: &mut dyn Backend) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(b.tx(&mut |w| {
        let lesson = Standing::default();
        let memories = [
            memory(
                "1",
                &["db.orders", "db.orders.amount", "memory:1", "memory:22"],
                "2026-01-02",
                false,
                lesson.clone(),
            ),
            memory(
                "22",
                &["db.orders", "shop", "memory:99"],
                "2026-01-02",
                true,
                lesson.clone(),
            ),
            memory(
                "10",
                &["a_b.n", "Zed", "memory:1"],
                "2026-01-01",
                false,
                lesson.clone(),
            ),
            memory("022", &["db.Orders"], "2026-01-03", false, lesson.clone()),
            memory(
                "sem_3",
                &["db.customers", "memory:1"],
                "2026-01-04",
                true,
                standing(Tier::Semantic, 0.5, None, false),
            ),
            memory(
                "sem_12",
                &["db"],
                "2026-01-04",
                false,
                standing(Tier::Semantic, 1.0, Some("p"), false),
            ),
            memory(
                "sem_x",
                &[],
                "2025-12-31",
                false,
                standing(Tier::Semantic, 1.0, None, true),
            ),
            memory(
                "proc_1",
                &["shop.items"],
                "2026-01-05",
                false,
                standing(Tier::Procedural, 0.25, Some("q"), false),
            ),
            // A plain lesson awaiting review: marked for that alone.
            memory(
                "prop",
                &["db.orders"],
                "2026-01-06",
                false,
                Standing {
                    proposed: true,
                    ..lesson.clone()
                },
            ),
            memory(
                "a",
                &["db.orders.id", "memory:10"],
                "2026-01-02",
                false,
                lesson.clone(),
            ),
        ];
        // One session of three (two saved at the same time, ordered by id), event times of
        // three precisions.
        let mut memories = memories;
        for (m, (time, session)) in memories.iter_mut().zip([
            (Some("2023-05"), Some("s1")),
            (None, Some("s1")),
            (Some("2023"), Some("s1")),
            (Some("2023-05-08T13:56:00Z"), None),
        ]) {
            m.occasion.event_time = time.map(str::to_owned);
            m.occasion.session = session.map(str::to_owned);
        }
        for m in &memories {
            w.put_memory(m).unwrap();
        }
        vec![format!("{:?}", w.largest_int_id().unwrap())]
    }));
    out
}

/// Embeddings, deletions and a bulk write with the counts suspended, a transaction each.
fn embedding_and_delete_writes(b: &mut dyn Backend) -> Vec<String> {
    let mut out = Vec::new();
    out.extend(b.tx(&mut |w| {
        let mut r = Vec::new();
        for (id, model, rev) in [
            ("db.orders", "local/m", "r1"),
            ("db.orders.id", "local/m", "r1"),
            ("db.orders.amount", "local/m", "r2"),
            ("shop.items", "local/m", "r1"),
            ("memory:1", "local/m", "r1"),
            ("memory:22", "local/m", "r2"),
            ("db.gone", "local/m", "r1"),
            ("db.orders", "local/o", "r1"),
            ("db.Orders", "local/o", "r1"),
        ] {
            let v = [id.len() as f32, 0.5, -1.25];
            w.put_embedding(
                id,
                model,
                rev,
                &format!("h-{id}"),
                &v,
                "2026-01-01T00:00:00Z",
            )
            .unwrap();
        }
        // Rewritten: same row, new version.
        w.put_embedding(
            "db.orders",
            "local/m",
            "r1",
            "h2",
            &[9.0],
            "2026-01-02T00:00:00Z",
        )
        .unwrap();
        w.set_setting("k1", "v1").unwrap();
        w.set_setting("k1", "v2").unwrap();
        w.set_setting("fulltext_generation", "g").unwrap();
        r.push(format!("{:?}", w.setting("k1").unwrap()));
        r
    }));
    out.extend(b.tx(&mut |w| {
        vec![
            format!("{:?}", w.delete_doc("odd").unwrap()),
            format!("{:?}", w.delete_doc("nope").unwrap()),
            format!("{:?}", w.delete_docs_under("shop").unwrap()),
            format!("{:?}", w.delete_docs_under("memory:1").unwrap()),
            format!("{:?}", w.delete_embeddings_under("shop").unwrap()),
            format!("{:?}", w.delete_embeddings_of("db.orders.id").unwrap()),
            format!("{:?}", w.delete_memory("22").unwrap()),
            format!("{:?}", w.delete_memory("22").unwrap()),
            format!("{:?}", w.strip_tags_under("db.orders").unwrap()),
            format!("{:?}", w.strip_tags_under("memory:10").unwrap()),
            format!("{:?}", w.delete_model("db", "customers").unwrap()),
            format!("{:?}", w.delete_model("db", "nope").unwrap()),
            format!("{:?}", w.delete_models_of("shop").unwrap()),
            format!("{:?}", w.delete_datasource("shop").unwrap()),
            format!("{:?}", w.delete_datasource("shop").unwrap()),
        ]
    }));
    out.extend(b.tx(&mut |w| {
        // A doc that changes kind, and a bulk write with the counts suspended.
        w.upsert_doc(&doc(
            "db.orders.amount",
            "measure",
            Some("db"),
            Some("orders"),
            2,
        ))
        .unwrap();
        w.suspend_counts().unwrap();
        for i in 0..30 {
            let tags = [format!("db.t{}", i % 4), format!("memory:{}", i + 99)];
            let tags: Vec<&str> = tags.iter().map(String::as_str).collect();
            w.put_memory(&memory(
                &format!("{}", 100 + i),
                &tags,
                "2026-02-01",
                i % 3 == 0,
                Standing::default(),
            ))
            .unwrap();
        }
        w.resume_counts().unwrap();
        vec![format!("{:?}", w.memory_count().unwrap())]
    }));
    out
}

/// The batch writes (`put_memories`, `upsert_docs`, `put_models`) with the counts kept: a later
/// entry of one id replaces an earlier one, an existing row is updated, a doc changes kind.
fn batch_writes(b: &mut dyn Backend) -> Vec<String> {
    b.tx(&mut |w| {
        let lesson = Standing::default();
        let batch = [
            memory(
                "200",
                &["db.orders", "db.t1"],
                "2026-03-01",
                false,
                lesson.clone(),
            ),
            memory(
                "201",
                &["db.t1", "memory:200", "shop.items"],
                "2026-03-01",
                true,
                lesson.clone(),
            ),
            memory("200", &["db.t2"], "2026-03-02", false, lesson.clone()),
            memory(
                "sem_3",
                &["db.orders.id"],
                "2026-01-04",
                false,
                standing(Tier::Semantic, 0.75, None, false),
            ),
        ];
        w.put_memories(&batch).unwrap();
        w.upsert_docs(&[
            doc("memory:200", "memory", None, None, 0),
            doc("memory:201", "memory", None, None, 0),
            doc("db.orders.amount", "column", Some("db"), Some("orders"), 2),
            doc("db.fresh", "model", Some("db"), Some("fresh"), 0),
            doc("db.fresh", "model", Some("db"), Some("fresh"), 1),
        ])
        .unwrap();
        let orders = model("db", "orders");
        let fresh = model("db", "fresh");
        w.put_models(&[&orders, &fresh, &fresh]).unwrap();
        let mut found = w
            .memories_by_ids(&["200".into(), "sem_3".into(), "nope".into()])
            .unwrap();
        found.sort_by(|a, b| a.id.cmp(&b.id));
        let mut roots: Vec<_> = w
            .memories_datasources(&["200", "201", "sem_3", "nope"])
            .unwrap()
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .collect();
        roots.sort();
        vec![
            format!("{found:?}"),
            format!("{roots:?}"),
            format!("{:?}", w.memory_count().unwrap()),
            format!("{:?}", w.doc_count().unwrap()),
        ]
    })
}

/// Every read, as text, with the backends' own versions masked.
pub fn reads(r: &dyn StoreRead) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |name: &str, value: String| out.push((name.to_owned(), value));
    catalog_reads(r, &mut put);
    memory_reads(r, &mut put);
    embedding_and_setting_reads(r, &mut put);
    out
}

/// The catalog and doc reads.
fn catalog_reads(r: &dyn StoreRead, put: &mut dyn FnMut(&str, String)) {
    put("datasource", format!("{:?}", r.datasource("db").unwrap()));
    put(
        "datasource none",
        format!("{:?}", r.datasource("nope").unwrap()),
    );
    put("datasources", format!("{:?}", r.datasources().unwrap()));
    put(
        "datasource_names",
        format!("{:?}", r.datasource_names().unwrap()),
    );
    put("model", format!("{:?}", r.model("db", "orders").unwrap()));
    put(
        "model none",
        format!("{:?}", r.model("db", "nope").unwrap()),
    );
    put("models", format!("{:?}", r.models(None).unwrap()));
    put("models db", format!("{:?}", r.models(Some("db")).unwrap()));
    put(
        "model_skeletons",
        format!("{:?}", r.model_skeletons().unwrap()),
    );
    put("doc", format!("{:?}", r.doc("db.orders.amount").unwrap()));
    put("doc none", format!("{:?}", r.doc("nope").unwrap()));
    let mut many = r
        .docs(&[
            "db.orders.amount".into(),
            "nope".into(),
            "db".into(),
            "db.Orders".into(),
        ])
        .unwrap();
    // In no particular order: compared sorted.
    many.sort_by(|a, b| a.doc.canonical_id.cmp(&b.doc.canonical_id));
    put("docs", format!("{many:?}"));
    put(
        "docs_of_datasource",
        format!("{:?}", r.docs_of_datasource("db").unwrap()),
    );
    put("all_docs", format!("{:?}", r.all_docs().unwrap()));
    put("doc_ids", format!("{:?}", r.doc_ids().unwrap()));
    put(
        "doc_counts_by_kind",
        format!("{:?}", r.doc_counts_by_kind().unwrap()),
    );
    for id in ["1", "a", "10", "nope"] {
        put(
            "memory_datasources",
            format!("{:?}", r.memory_datasources(id).unwrap()),
        );
    }
}

/// The memory and tag reads.
fn memory_reads(r: &dyn StoreRead, put: &mut dyn FnMut(&str, String)) {
    put("index_lag", format!("{:?}", r.index_lag().unwrap()));
    for id in ["1", "sem_3", "nope"] {
        put("memory", format!("{:?}", r.memory(id).unwrap()));
        put(
            "memory_exists",
            format!("{:?}", r.memory_exists(id).unwrap()),
        );
        put(
            "tagged_memory",
            format!("{:?}", r.tagged_memory(id).unwrap()),
        );
    }
    let mut tagged = r
        .tagged_memories(&["1".into(), "sem_3".into(), "nope".into()])
        .unwrap();
    tagged.sort_by(|a, b| a.id.cmp(&b.id));
    put("tagged_memories", format!("{tagged:?}"));
    put("memories", format!("{:?}", r.memories().unwrap()));
    let ids: Vec<String> = ["1", "22", "10", "022", "a", "nope"]
        .map(String::from)
        .into();
    put(
        "memory_occasions",
        format!("{:?}", r.memory_occasions(&ids).unwrap()),
    );
    for id in &ids {
        put(
            "session_neighbours",
            format!("{:?}", r.session_neighbours(id).unwrap()),
        );
    }
    put(
        "any_memory_session",
        format!("{:?}", r.any_memory_session().unwrap()),
    );
    put(
        "largest_int_id",
        format!("{:?}", r.largest_int_id().unwrap()),
    );
    for prefix in ["sem", "proc", "obs", "se"] {
        put(
            "largest_prefixed_id",
            format!("{:?}", r.largest_prefixed_id(prefix).unwrap()),
        );
    }
    put("memory_count", format!("{:?}", r.memory_count().unwrap()));
    put(
        "marked_memories",
        format!("{:?}", r.marked_memories().unwrap()),
    );
    for root in ["db", "db.orders", "a_b", "memory:1", "Zed", "nope"] {
        put(
            "memories_tagged_under",
            format!("{:?}", r.memories_tagged_under(root).unwrap()),
        );
        put(
            "memory_count_under",
            format!("{:?}", r.memory_count_under(Some(root)).unwrap()),
        );
        let mut counts = Vec::new();
        r.entity_tag_counts(Some(root), &mut |e, n| counts.push((e.to_owned(), n)))
            .unwrap();
        put("entity_tag_counts", format!("{counts:?}"));
    }
    put(
        "memory_count_under none",
        format!("{:?}", r.memory_count_under(None).unwrap()),
    );
    let mut counts = Vec::new();
    r.entity_tag_counts(None, &mut |e, n| counts.push((e.to_owned(), n)))
        .unwrap();
    put("entity_tag_counts all", format!("{counts:?}"));
    for tags in [
        vec!["db.customers".to_owned()],
        vec!["memory:10".to_owned(), "Zed".to_owned()],
        vec![
            "db.t1".to_owned(),
            "memory:sem_x".to_owned(),
            "memory:nope".to_owned(),
        ],
        vec![],
    ] {
        put(
            "memories_sharing_a_tag",
            format!("{:?}", r.memories_sharing_a_tag(&tags).unwrap()),
        );
    }
    put(
        "live_memory_tag_count",
        format!("{:?}", r.live_memory_tag_count().unwrap()),
    );
    put(
        "memory_tag_links",
        format!("{:?}", r.memory_tag_links().unwrap()),
    );
    put(
        "memory_ids_with_query",
        format!("{:?}", r.memory_ids_with_query().unwrap()),
    );
    let mut newest = Vec::new();
    r.memory_ids_newest_first(&mut |id| {
        newest.push(id.to_owned());
        Ok(true)
    })
    .unwrap();
    put("memory_ids_newest_first", format!("{newest:?}"));
    let mut first_three = Vec::new();
    r.memory_ids_newest_first(&mut |id| {
        first_three.push(id.to_owned());
        Ok(first_three.len() < 3)
    })
    .unwrap();
    put("memory_ids_newest_first stop", format!("{first_three:?}"));

    put(
        "embedding_counts_by_model",
        format!("{:?}", r.embedding_counts_by_model().unwrap()),
    );
}

/// The embedding, count, tag-walk and setting reads.
fn embedding_and_setting_reads(r: &dyn StoreRead, put: &mut dyn FnMut(&str, String)) {
    let ids: Vec<String> = ["db.orders", "db.Orders", "memory:22", "db.gone", "nope"]
        .map(String::from)
        .to_vec();
    for model in ["local/m", "local/o", "local/none"] {
        let mut stamps: Vec<_> = r
            .texts_and_stamps(model, &ids)
            .unwrap()
            .into_iter()
            .collect();
        stamps.sort_by(|a, b| a.0.cmp(&b.0));
        put("texts_and_stamps", format!("{stamps:?}"));
        put(
            "docs_lacking",
            format!("{:?}", r.docs_lacking(model).unwrap()),
        );
        for rev in ["r1", "r2", ""] {
            put("coverage", format!("{:?}", r.coverage(model, rev).unwrap()));
            put(
                "stale_or_missing",
                format!("{:?}", r.stale_or_missing(model, rev).unwrap()),
            );
            put(
                "stale_live_rows",
                format!("{:?}", r.stale_live_rows(model, rev).unwrap()),
            );
            let rows: Vec<_> = r
                .live_rows(model, rev)
                .unwrap()
                .into_iter()
                .map(|row| (row.canonical_id, row.doc_kind, row.vector))
                .collect();
            put("live_rows", format!("{rows:?}"));
            let versions: Vec<_> = r
                .live_row_versions(model, rev)
                .unwrap()
                .into_iter()
                .map(|(id, kind, _)| (id, kind))
                .collect();
            put("live_row_versions", format!("{versions:?}"));
            let mut each = Vec::new();
            r.for_each_live_row(model, rev, &mut |id, kind, blob| {
                each.push((id.to_owned(), kind.to_owned(), blob.to_vec()))
            })
            .unwrap();
            put("for_each_live_row", format!("{each:?}"));
            for id in ["db.orders", "memory:22", "db.gone"] {
                let found = r
                    .vector_and_version(id, model, rev)
                    .unwrap()
                    .map(|(v, _)| v);
                put("vector_and_version", format!("{found:?}"));
            }
        }
    }
    put("doc_count", format!("{:?}", r.doc_count().unwrap()));
    let mut tags = Vec::new();
    r.for_each_memory_tag(&mut |m, t| tags.push((m.to_owned(), t.to_owned())))
        .unwrap();
    tags.sort();
    put("for_each_memory_tag", format!("{tags:?}"));
    for key in ["k1", "fulltext_generation", "nope"] {
        put("setting", format!("{:?}", r.setting(key).unwrap()));
    }
}

fn assert_same(sqlite: &[(String, String)], pg: &[(String, String)]) {
    assert_eq!(sqlite.len(), pg.len());
    for (s, p) in sqlite.iter().zip(pg) {
        assert_eq!(s, p, "{} differs", s.0);
    }
}

#[test]
fn every_read_answers_as_sqlite_after_the_same_writes() {
    let dir = tempfile::tempdir().unwrap();
    let mut sqlite = Store::open(&dir.path().join("s.db"), OpenMode::CreateIfMissing).unwrap();
    let (mut pg, _) = new_store("parity");
    assert_eq!(script(&mut sqlite), script(&mut pg), "the writes' answers");
    let from_sqlite = reads(&sqlite);
    assert_same(&from_sqlite, &reads(&pg));
    // In a snapshot, and inside a write transaction (which reads its own connection).
    pg.begin_snapshot().unwrap();
    assert_same(&from_sqlite, &reads(&pg));
    pg.end_snapshot().unwrap();
    let tx = pg.write().unwrap();
    assert_same(&from_sqlite, &reads(&tx));
    drop(tx);
}
