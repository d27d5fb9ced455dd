//! save / forget / list / show / export / import through the real binary.

use serde_json::json;

use crate::support::TempStore;

#[test]
fn save_prints_the_original_text_and_allocates_ids() {
    let s = TempStore::with_catalog();
    let out = s.memory(
        &[
            "save",
            "--learning",
            "Amounts are dollars",
            "--entities",
            "amount, revenue:sum",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stdout,
        "Saved memory 1.\nResolved entities: shop.orders.amount, shop.orders.revenue\n"
    );
    let out = s.memory(&["save", "--learning", "x", "--entities", "events"], None);
    assert_eq!(
        out.stdout,
        "Saved memory 2.\nResolved entities: events\nWarning: 'events' is both a datasource and a model; interpreted as datasource. To force the model interpretation, qualify as <other_ds>.events...\n"
    );
    for id in ["5", "007", "42abc", "kb.x"] {
        assert_eq!(
            s.memory(
                &["save", "--id", id, "--learning", "x", "--entities", "shop"],
                None
            )
            .code,
            0
        );
    }
    let out = s.memory(
        &[
            "save",
            "--learning",
            "next",
            "--entities",
            "shop",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(
        out.json(),
        json!({"memory_id": "6", "resolved_entities": ["shop"], "warnings": []})
    );
}

#[test]
fn usage_and_input_errors() {
    let s = TempStore::with_catalog();
    let cases: [(&[&str], i32, &str); 9] = [
        (&["save", "--learning", "x"], 2, "Error: --entities or --query must be supplied (one or the other).\n"),
        (&["save", "--learning", "x", "--entities", "shop", "--query", "{}"], 2, "Error: --entities and --query are mutually exclusive.\n"),
        (&["save", "--learning", "x", "--query", "{oops"], 2, "Error: invalid JSON for query argument: key must be a string at line 1 column 2\n"),
        (&["save", "--learning", "x", "--query", "@/no/such.json"], 2, "Error: Query file not found: /no/such.json\n"),
        (&["save", "--learning", "  ", "--entities", "shop"], 1, "Error: learning text must be a non-empty string.\n"),
        (&["save", "--learning", "x", "--entities", " , "], 1, "Error: linked_entities must be a non-empty list of entity references (or a SlayerQuery / dict).\n"),
        (&["save", "--id", "a:b", "--learning", "x", "--entities", "shop"], 1, "Error: memory id 'a:b': forbidden character ':'.\n"),
        (&["save", "--id", "tab\there", "--learning", "x", "--entities", "shop"], 1, "Error: memory id 'tab\there': whitespace and ASCII control characters are not allowed.\n"),
        (&["forget", "404"], 1, "Error: No memory with id '404'.\n"),
    ];
    for (args, code, stderr) in cases {
        let out = s.memory(args, None);
        assert_eq!((out.code, out.stderr.as_str()), (code, stderr), "{args:?}");
    }
    let long = "d".repeat(501);
    let out = s.memory(
        &[
            "save",
            "--learning",
            "x",
            "--entities",
            "shop",
            "--description",
            &long,
        ],
        None,
    );
    assert_eq!(
        out.stderr,
        "Error: description must be <= 500 chars; got 501.\n"
    );
    let out = s.memory(
        &[
            "save",
            "--id",
            "x\u{1}",
            "--learning",
            "x",
            "--entities",
            "shop",
        ],
        None,
    );
    assert!(
        out.stderr
            .contains("whitespace and ASCII control characters are not allowed"),
        "{}",
        out.stderr
    );
    assert_eq!(s.memory(&["export"], None).stdout, "", "nothing was saved");
}

#[test]
fn upsert_keeps_created_at_and_forget_cascades_exactly() {
    let s = TempStore::with_catalog();
    let import = [
        r#"{"kind":"memory","id":"4","learning":"four","entities":["shop.orders"],"created_at":"2026-01-01T00:00:00Z"}"#,
        r#"{"kind":"memory","id":"42","learning":"forty-two","entities":["shop"],"created_at":"2026-01-02T00:00:00Z"}"#,
        r#"{"kind":"memory","id":"n","learning":"links","entities":["memory:4","memory:42","shop.orders.amount"],"created_at":"2026-01-03T00:00:00Z"}"#,
    ]
    .join("\n");
    assert_eq!(s.memory(&["import"], Some(&import)).code, 0);
    let out = s.memory(
        &[
            "save",
            "--id",
            "4",
            "--learning",
            "four, again",
            "--entities",
            "amount",
            "--description",
            "d",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = s.memory(&["show", "4", "--format", "json"], None).json();
    assert_eq!(shown["created_at"], "2026-01-01T00:00:00Z");
    assert_eq!(shown["learning"], "four, again");
    assert_eq!(shown["entities"], json!(["shop.orders.amount"]));
    let out = s.memory(&["forget", "4"], None);
    assert_eq!(out.stdout, "Forgot memory 4.\n");
    let n = s.memory(&["show", "n", "--format", "json"], None).json();
    assert_eq!(n["entities"], json!(["memory:42", "shop.orders.amount"]));
    let doc = s
        .index(&["show", "memory:n", "--format", "jsonl"], None)
        .lines();
    assert_eq!(
        doc[0]["text"],
        "links\nTagged entities: memory:42, shop.orders.amount"
    );
    assert_eq!(
        s.index(&["show", "memory:4"], None).code,
        1,
        "its doc is gone"
    );
    assert_eq!(
        s.index(&["stats", "--check"], None).code,
        0,
        "the index followed"
    );
    let out = s.memory(&["forget", "4", "--format", "json"], None);
    assert_eq!(out.code, 1);
}

#[test]
fn list_show_and_text_formats() {
    let s = TempStore::with_catalog();
    s.memory(
        &[
            "save",
            "--learning",
            "On orders\nsecond line",
            "--entities",
            "shop.orders.status",
        ],
        None,
    );
    s.memory(
        &[
            "save",
            "--learning",
            "On regions",
            "--entities",
            "regions.name",
        ],
        None,
    );
    let out = s.memory(&["list", "--entity", "orders", "--format", "jsonl"], None);
    let ids: Vec<_> = out
        .lines()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["1"]);
    let out = s.memory(&["list"], None);
    assert!(out.stdout.starts_with("M 1  "), "{}", out.stdout);
    assert!(
        out.stdout.contains("[shop.orders.status]\n    On orders\n"),
        "{}",
        out.stdout
    );
    let out = s.memory(&["show", "2"], None);
    assert!(
        out.stdout.starts_with("Memory 2\nCreated: "),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .ends_with("Entities: shop.regions.name\n\nOn regions\n"),
        "{}",
        out.stdout
    );
    assert_eq!(s.memory(&["list", "--entity", "nope"], None).code, 1);
}

#[test]
fn export_import_round_trips_into_a_fresh_store() {
    let s = TempStore::with_catalog();
    s.memory(
        &[
            "save",
            "--learning",
            "a",
            "--entities",
            "shop.orders.status",
            "--description",
            "désc",
        ],
        None,
    );
    s.memory(
        &[
            "save",
            "--id",
            "kb.policy.42",
            "--learning",
            "q",
            "--query",
            r#"{"source_model":"orders","measures":[{"formula":"amount:sum"}]}"#,
        ],
        None,
    );
    s.memory(
        &[
            "save",
            "--learning",
            "link",
            "--entities",
            "memory:kb.policy.42, memory:1",
        ],
        None,
    );
    let exported = s.memory(&["export"], None).stdout;
    assert_eq!(exported.lines().count(), 3);
    let fresh = TempStore::new();
    let out = fresh.memory(&["import"], Some(&exported));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = out.lines();
    assert_eq!(results[0]["status"], "created");
    assert_eq!(
        results[0]["warnings"],
        json!(["tag 'shop.orders.status' names nothing in the store yet; search ignores it until it exists"])
    );
    assert_eq!(results[1]["memory_id"], "2");
    assert_eq!(
        results[1]["warnings"],
        json!([]),
        "memory links to the same batch resolve"
    );
    assert_eq!(fresh.memory(&["export"], None).stdout, exported);
    // Importing again changes nothing.
    let again = fresh.memory(&["import", "--format", "text"], Some(&exported));
    assert!(
        again.stdout.starts_with("line 1: unchanged memory 1\n"),
        "{}",
        again.stdout
    );
    assert_eq!(fresh.index(&["stats", "--check"], None).code, 0);
}

#[test]
fn import_bad_lines_abort_or_keep_going() {
    let s = TempStore::with_catalog();
    let input = [
        r#"{"kind":"memory","learning":"no id: allocated","entities":["shop"]}"#,
        r#"{"kind":"memory","id":"a:b","learning":"x","created_at":"2026-01-01T00:00:00Z"}"#,
        "",
        r#"{"kind":"memory","id":"ok","learning":"x","entities":["a.b.c.d"],"created_at":"2026-01-01T00:00:00Z"}"#,
        r#"{"kind":"model","name":"x"}"#,
        r#"{"kind":"memory","id":7,"learning":"numeric id","entities":["shop.orders"]}"#,
    ]
    .join("\n");
    let out = s.memory(&["import"], Some(&input));
    assert_eq!(out.code, 2);
    assert_eq!(out.stderr, "Error: line 2: memory record: field 'id': memory id 'a:b': forbidden character ':'.; nothing was imported\n");
    assert_eq!(s.memory(&["export"], None).stdout, "");
    let out = s.memory(&["import", "--keep-going"], Some(&input));
    assert_eq!(out.code, 1);
    let results = out.lines();
    let kinds: Vec<(i64, &str)> = results
        .iter()
        .map(|r| (r["line"].as_i64().unwrap(), r["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        kinds,
        [
            (1, "imported"),
            (2, "error"),
            (4, "error"),
            (5, "error"),
            (6, "error")
        ]
    );
    assert_eq!(results[0]["memory_id"], "1");
    assert_eq!(
        results[4]["error"],
        "field 'id': expected a string, got 7; quote it (\"id\": \"7\") or leave it out to have one allocated"
    );
    assert!(
        results[2]["error"]
            .as_str()
            .unwrap()
            .contains("'a.b.c.d' is not a canonical id"),
        "{}",
        results[2]
    );
}

#[test]
fn the_slayer_fixture_imports_through_the_pipe() {
    let s = TempStore::new();
    let out = s.index(&["import-slayer", "tests/fixtures/slayer-project"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = s.memory(&["import"], Some(&out.stdout));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let ids: Vec<_> = out
        .lines()
        .iter()
        .map(|r| r["memory_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["1", "kb.policy.42"]);
    let m = s
        .memory(&["show", "kb.policy.42", "--format", "json"], None)
        .json();
    assert_eq!(m["created_at"], "2026-02-11T14:00:00Z");
    assert_eq!(m["query"]["source_model"], "customers");
    let doc = s
        .index(&["show", "memory:1", "--format", "jsonl"], None)
        .lines();
    assert!(doc[0]["text"]
        .as_str()
        .unwrap()
        .starts_with("Refunded orders keep their original amount"));
}

#[test]
fn a_bulk_import_leaves_the_tag_counts_exact() {
    let s = TempStore::with_catalog();
    let lines: String = (0..1200)
        .map(|i| {
            let tags = if i % 3 == 0 {
                r#"["shop.orders.amount","memory:1"]"#
            } else {
                r#"["shop.orders"]"#
            };
            format!(
                "{{\"kind\":\"memory\",\"id\":\"{i}\",\"learning\":\"n\",\"entities\":{tags}}}\n"
            )
        })
        .collect();
    let out = s.memory(&["import", "-"], Some(&lines));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // And the triggers are back: a later save is counted.
    let out = s.memory(
        &["save", "--learning", "x", "--entities", "shop.orders"],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let conn = rusqlite::Connection::open(&s.store).unwrap();
    let counts = |sql: &str| -> Vec<(String, i64)> {
        let mut stmt = conn.prepare(sql).unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let kept = counts("SELECT entity, memories FROM tag_counts ORDER BY entity");
    let recounted = counts(
        "SELECT entity, COUNT(*) FROM memory_entities WHERE entity <> 'memory:' || memory_id
         GROUP BY entity ORDER BY entity",
    );
    assert_eq!(kept, recounted);
    assert_eq!(
        kept.iter().find(|(e, _)| e == "shop.orders").unwrap().1,
        801
    );
    let total: String = conn
        .query_row(
            "SELECT value FROM settings WHERE key = 'memory_count'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(total, "1201");
}
