//! Issue 12's import and input defects: validation gaps, duplicate ids, non-UTF-8 lines with
//! `--keep-going`, missing files, and id-less imports that count up once per transaction.

use std::process::Stdio;

use crate::kit::{assert_success, command};
use crate::support::TempStore;

#[test]
fn import_refuses_what_it_cannot_store_faithfully() {
    let s = TempStore::with_catalog();
    let cases = [
        (
            r#"{"kind":"memory","id":"a","learning":"x","created_at":"not a date"}"#,
            "Error: line 1: field 'created_at': 'not a date' is not an ISO 8601 timestamp; write it as 2026-01-31T12:00:00Z; nothing was imported\n",
        ),
        (
            r#"{"id":"a","learning":"x"}"#,
            "Error: line 1: missing field 'kind'; a memory record has \"kind\": \"memory\" (as export writes it); nothing was imported\n",
        ),
        (
            r#"{"kind":"memory","id":12,"learning":"x"}"#,
            "Error: line 1: field 'id': expected a string, got 12; quote it (\"id\": \"12\") or leave it out to have one allocated; nothing was imported\n",
        ),
    ];
    for (line, want) in cases {
        let out = s.memory(&["import"], Some(line));
        assert_eq!((out.code, out.stderr.as_str()), (2, want), "{line}");
    }
    assert_eq!(s.memory(&["export"], None).stdout, "");
}

#[test]
fn duplicate_ids_in_one_import_warn_naming_both_lines() {
    let s = TempStore::with_catalog();
    let input = [
        r#"{"kind":"memory","id":"k","learning":"first","created_at":"2026-01-01T00:00:00Z"}"#,
        r#"{"kind":"memory","id":"j","learning":"other","created_at":"2026-01-01T00:00:00Z"}"#,
        r#"{"kind":"memory","id":"k","learning":"second","created_at":"2026-01-01T00:00:00Z"}"#,
    ]
    .join("\n");
    let out = s.memory(&["import"], Some(&input));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = out.lines();
    assert_eq!(
        results[2]["warnings"],
        serde_json::json!([
            "id 'k' is also on line 1; this line (the later one) is what the store keeps"
        ])
    );
    assert_eq!(results[0]["warnings"], serde_json::json!([]));
    let shown = s.memory(&["show", "k", "--format", "json"], None).json();
    assert_eq!(shown["learning"], "second");
}

/// Issue 65: an import is read and written a chunk of 2,000 records at a time; a duplicate id
/// in a later chunk still replaces the earlier line (and is "updated", keeping its
/// `created_at`), and a memory: tag on a memory of another chunk is no dangling tag.
#[test]
fn duplicates_and_links_across_the_import_s_chunks_act_as_one_import() {
    let s = TempStore::with_catalog();
    let mut lines: Vec<String> = (0..4500)
        .map(|i| {
            format!(
                r#"{{"kind":"memory","id":"n{i}","learning":"note {i}","created_at":"2026-01-01T00:00:00Z"}}"#
            )
        })
        .collect();
    lines[10] =
        r#"{"kind":"memory","id":"k","learning":"first","created_at":"2026-01-01T00:00:00Z"}"#
            .into();
    lines[4400] = r#"{"kind":"memory","id":"k","learning":"second","created_at":"2026-02-01T00:00:00Z","entities":["memory:n5"]}"#.into();
    let out = s.memory(&["import"], Some(&lines.join("\n")));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let results = out.lines();
    assert_eq!(results[10]["status"], "created");
    assert_eq!(results[4400]["status"], "updated");
    assert_eq!(
        results[4400]["warnings"],
        serde_json::json!([
            "id 'k' is also on line 11; this line (the later one) is what the store keeps"
        ])
    );
    let shown = s.memory(&["show", "k", "--format", "json"], None).json();
    assert_eq!(shown["learning"], "second");
    assert_eq!(
        shown["created_at"], "2026-01-01T00:00:00Z",
        "the first line's"
    );
    assert!(
        out.stderr.contains("imported 4500 memories"),
        "{}",
        out.stderr
    );
}

#[test]
fn keep_going_skips_a_line_that_is_not_utf8() {
    let s = TempStore::with_catalog();
    let mut input = b"{\"kind\":\"memory\",\"id\":\"a\",\"learning\":\"one\"}\n".to_vec();
    input.extend_from_slice(b"{\"kind\":\"memory\",\"id\":\"b\",\"learning\":\"caf\xe9\"}\n");
    input.extend_from_slice(b"{\"kind\":\"memory\",\"id\":\"c\",\"learning\":\"three\"}\n");
    let run = |args: &[&str]| {
        let mut child = command("slayer-memory")
            .args(args)
            .env("SLAYER_STORE", &s.store)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(&input).unwrap();
        child.wait_with_output().unwrap()
    };
    let out = run(&["import"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "Error: line 2: not valid UTF-8; input must be UTF-8 JSON lines; nothing was imported\n"
    );
    let out = run(&["import", "--keep-going"]);
    assert_eq!(out.status.code(), Some(1));
    let kinds: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["kind"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds, ["imported", "error", "imported"]);
    assert_eq!(s.memory(&["export"], None).lines().len(), 2);
}

#[test]
fn a_missing_input_file_is_bad_input() {
    let s = TempStore::with_catalog();
    let out = s.memory(&["import", "no/such/file.jsonl"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("Error: cannot open no/such/file.jsonl: "),
        "{}",
        out.stderr
    );
    let out = s.index(&["load", "no/such/file.jsonl"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("cannot open no/such/file.jsonl"),
        "{}",
        out.stderr
    );
}

#[test]
fn id_less_imports_count_up_past_every_explicit_id_while_saves_go_on() {
    let s = TempStore::with_catalog();
    let mut input = String::new();
    for i in 0..20_000 {
        if i == 10 {
            input.push_str("{\"kind\":\"memory\",\"id\":\"5\",\"learning\":\"explicit five\"}\n");
        }
        input.push_str(&format!(
            "{{\"kind\":\"memory\",\"learning\":\"note {i}\",\"entities\":[\"shop.orders\"]}}\n"
        ));
    }
    input.push_str("{\"kind\":\"memory\",\"id\":\"20003\",\"learning\":\"explicit, late\"}\n");
    let mut import = command("slayer-memory")
        .args(["-q", "import", "-"])
        .env("SLAYER_STORE", &s.store)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        import
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    }
    // A save by another agent meanwhile waits for the import's transaction, then lands.
    let save = s.memory(
        &[
            "save",
            "--learning",
            "concurrent",
            "--entities",
            "shop.orders",
            "--format",
            "json",
        ],
        None,
    );
    let import = import.wait_with_output().unwrap();
    assert_success(&import);
    assert_eq!(save.code, 0, "{}", save.stderr);
    let exported = s.memory(&["export"], None).lines();
    assert_eq!(exported.len(), 20_003);
    let mut ids: Vec<String> = exported
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20_003, "every id is distinct");
    let five = s.memory(&["show", "5", "--format", "json"], None).json();
    assert_eq!(
        five["learning"], "explicit five",
        "no allocation reused an explicit id"
    );
    let late = s
        .memory(&["show", "20003", "--format", "json"], None)
        .json();
    assert_eq!(late["learning"], "explicit, late");
}

#[test]
fn a_refused_save_into_an_absent_store_leaves_no_file() {
    let s = TempStore::new();
    let out = s.memory(
        &[
            "save",
            "--learning",
            "Refunds post late.",
            "--entities",
            "mydb.orders",
            "--no-embed",
        ],
        None,
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "Error: 'mydb' is neither a known datasource nor a saved model. (segment of 'mydb.orders').\n"
    );
    let left: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_query_file_may_start_with_a_byte_order_mark() {
    let s = TempStore::with_catalog();
    let file = s.dir.path().join("q.json");
    std::fs::write(
        &file,
        "\u{feff}{\"source_model\":\"orders\",\"measures\":[{\"formula\":\"amount:sum\"}]}",
    )
    .unwrap();
    let query = format!("@{}", file.display());
    let out = s.memory(
        &[
            "save",
            "--learning",
            "Order count.",
            "--query",
            &query,
            "--no-embed",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn dbt_saved_queries_come_back_from_search_as_example_queries() {
    let s = crate::support::TempStore::new();
    let memories = s.dir.path().join("saved.jsonl");
    let memories = memories.to_str().unwrap();
    let out = s.index(
        &[
            "import",
            "dbt",
            "tests/fixtures/dbt/partial",
            "--load",
            "--memories",
            memories,
        ],
        None,
    );
    assert_eq!(
        out.code, 1,
        "one file of the project is broken: {}",
        out.stderr
    );
    let out = s.memory(&["import", memories], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = s.run(
        "slayer-search",
        &["--question", "claims by line of business per month"],
        &[],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    let examples = r["example_queries"].as_array().unwrap();
    assert_eq!(examples[0]["id"], "dbt.saved_query.claims_by_line", "{r}");
    assert_eq!(examples[0]["query"]["source_model"], "claim_amount");
    // Importing again changes nothing.
    let out = s.memory(&["import", memories, "--format", "json"], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
}
