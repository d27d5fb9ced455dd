//! Model revisions in search: rows another revision of the active model wrote are never
//! ranked, one warning counts them with the docs that have no row, `slayer-embed refresh`
//! clears it, and a `--batch` process re-embeds them in the background (docs/spec/channels.md §7.2,
//! §7.4).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::model::{change_revision, model_copy};
use crate::support::{ids, run_with_models, strings, Fixture};

const MODEL: &str = "local/all-MiniLM-L6-v2";

fn stale_warning(stale: i64, missing: i64) -> String {
    format!(
        "embedding channel: {stale} docs have a stale row (written by another revision of '{MODEL}', or before slayer recorded revisions) and {missing} docs have no row; they are ranked without the dense channel until `slayer-embed refresh --all` re-embeds them."
    )
}

fn embedding_warnings(response: &Value) -> Vec<String> {
    strings(&response["warnings"])
        .into_iter()
        .filter(|w| w.starts_with("embedding channel"))
        .collect()
}

struct Models {
    _dir: tempfile::TempDir,
    root: PathBuf,
    model: PathBuf,
}

impl Models {
    fn new() -> Models {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_owned();
        let model = model_copy(&root);
        Models {
            _dir: dir,
            root,
            model,
        }
    }
}

fn search(f: &Fixture, models: &Models, question: &str) -> Value {
    let out = run_with_models(
        "slayer-search",
        &f.store,
        &["--question", question, "--explain"],
        None,
        &models.root,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.json()
}

fn refresh_all(f: &Fixture, models: &Models) -> Vec<Value> {
    let out = run_with_models(
        "slayer-embed",
        &f.store,
        &["refresh", "--all"],
        None,
        &models.root,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.lines()
}

fn embedded(reports: &[Value]) -> usize {
    reports.iter().filter(|r| r["status"] == "embedded").count()
}

fn docs(f: &Fixture) -> i64 {
    let conn = rusqlite::Connection::open(&f.store).unwrap();
    conn.query_row("SELECT count(*) FROM docs", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_model_switched_under_the_same_name_leaves_rows_inert_until_refreshed() {
    let f = Fixture::new();
    let models = Models::new();
    let docs = docs(&f);
    assert_eq!(embedded(&refresh_all(&f, &models)) as i64, docs);
    let question = "refunded orders revenue";
    let current = search(&f, &models, question);
    assert!(embedding_warnings(&current).is_empty(), "{current:#}");

    // Revision B under the same name: every row is revision A's, none is ranked, and the
    // search still answers by text.
    change_revision(&models.model, "B");
    let switched = search(&f, &models, question);
    assert_eq!(
        embedding_warnings(&switched),
        [stale_warning(docs, 0)],
        "{switched:#}"
    );
    assert!(!ids(&switched, "memories").is_empty(), "{switched:#}");
    for hit in switched["memories"].as_array().unwrap() {
        assert!(
            !hit["explain"].to_string().contains("dense"),
            "a stale row was ranked: {hit}"
        );
    }

    // Refresh re-embeds exactly the stale rows; then nothing.
    assert_eq!(embedded(&refresh_all(&f, &models)) as i64, docs);
    let refreshed = search(&f, &models, question);
    assert!(embedding_warnings(&refreshed).is_empty(), "{refreshed:#}");
    assert_eq!(embedded(&refresh_all(&f, &models)), 0);
}

#[test]
fn docs_without_a_current_row_are_counted_while_the_rest_are_ranked() {
    let f = Fixture::new();
    let models = Models::new();
    let docs = docs(&f);
    refresh_all(&f, &models);
    // One doc the model never saw, and one row written by another revision.
    f.raw_memory_import(
        "{\"kind\":\"memory\",\"id\":\"late\",\"learning\":\"Refunds post on Mondays.\",\"entities\":[]}\n",
    );
    let conn = rusqlite::Connection::open(&f.store).unwrap();
    conn.execute(
        "UPDATE embeddings SET model_revision = 'feedfacefeedface' WHERE canonical_id = 'memory:1'",
        [],
    )
    .unwrap();
    let response = search(&f, &models, "refunded orders revenue");
    assert_eq!(
        embedding_warnings(&response),
        [stale_warning(1, 1)],
        "{response:#}"
    );
    // The other rows are ranked.
    assert!(response.to_string().contains("\"dense\""), "{response:#}");
    let reports = refresh_all(&f, &models);
    let mut redone: Vec<&str> = reports
        .iter()
        .filter(|r| r["status"] == "embedded")
        .map(|r| r["canonical_id"].as_str().unwrap())
        .collect();
    redone.sort_unstable();
    assert_eq!(redone, ["memory:1", "memory:late"]);
    assert_eq!(reports.len() as i64, docs + 1);
}

#[test]
fn a_batch_process_re_embeds_stale_rows_in_the_background() {
    let f = Fixture::new();
    let models = Models::new();
    let docs = docs(&f);
    refresh_all(&f, &models);
    change_revision(&models.model, "B");
    let mut child = crate::kit::command("slayer-search")
        .env("SLAYER_MODEL_DIR", &models.root)
        .env("SLAYER_STORE", &f.store)
        .env("SLAYER_NO_EMBED", "0")
        .args(["--batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut replies = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |question: &str| -> Value {
        writeln!(input, "{{\"question\": \"{question}\", \"explain\": true}}").unwrap();
        input.flush().unwrap();
        serde_json::from_str(&replies.next().unwrap().unwrap()).unwrap()
    };
    let revision = slayer_embed::revision::local(&models.model).unwrap();
    let conn = rusqlite::Connection::open(&f.store).unwrap();
    let current = || -> i64 {
        conn.query_row(
            "SELECT count(*) FROM embeddings WHERE model_revision = ?1",
            [&revision],
            |r| r.get(0),
        )
        .unwrap()
    };
    let started = Instant::now();
    let mut warned = Vec::new();
    let settled = loop {
        let response = ask("refunded orders revenue");
        let warnings = embedding_warnings(&response);
        if warnings.is_empty() && current() == docs {
            break response;
        }
        warned.extend(warnings);
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "never re-embedded: {warned:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(settled.to_string().contains("\"dense\""), "{settled:#}");
    // Each warning counted what was still stale, never more than there was.
    for w in &warned {
        assert!(w.starts_with("embedding channel: "), "{w}");
    }
    drop(input);
    assert!(child.wait().unwrap().success());
}

#[test]
fn no_background_re_embed_when_embedding_is_turned_off() {
    let f = Fixture::new();
    let models = Models::new();
    refresh_all(&f, &models);
    change_revision(&models.model, "B");
    // The kit's environment sets SLAYER_NO_EMBED=1.
    let out = crate::kit::run(
        "slayer-search",
        Some(&f.store),
        &["--batch", "-"],
        &[("SLAYER_MODEL_DIR", models.root.to_str().unwrap())],
        Some("{\"question\": \"revenue\"}\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::thread::sleep(Duration::from_millis(300));
    let revision = slayer_embed::revision::local(&models.model).unwrap();
    let conn = rusqlite::Connection::open(&f.store).unwrap();
    let current: i64 = conn
        .query_row(
            "SELECT count(*) FROM embeddings WHERE model_revision = ?1",
            [&revision],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(current, 0);
}
