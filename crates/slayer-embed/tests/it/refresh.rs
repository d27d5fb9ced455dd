//! `refresh` against an OpenAI-compatible server run in this process: hash skip, per-text
//! failure isolation, retries, and model switches.

use slayer_embed::test_support::Server;

use crate::openai::{embeddings, error, inputs};
use crate::support::TempStore;

const MODEL: &str = "openai/text-embedding-3-small";

fn env(server: &Server) -> Vec<(&'static str, String)> {
    vec![
        ("SLAYER_EMBEDDING_MODEL", MODEL.to_owned()),
        ("SLAYER_EMBEDDING_BASE_URL", server.base_url()),
        ("OPENAI_API_KEY", "sk-test".to_owned()),
    ]
}

fn refresh(s: &TempStore, server: &Server, args: &[&str]) -> crate::support::Out {
    let env = env(server);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    s.run("slayer-embed", args, &env, None)
}

#[test]
fn unchanged_texts_make_no_provider_call() {
    let s = TempStore::with_catalog();
    let server = Server::start(|_, req| embeddings(req));
    let docs = s.count("SELECT count(*) FROM docs") as usize;
    let first = refresh(&s, &server, &["refresh", "--all", "--batch-size", "5"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(server.count(), docs.div_ceil(5));
    let rows = s.count(
        "SELECT count(*) FROM embeddings WHERE model_name = 'openai/text-embedding-3-small'",
    );
    assert_eq!(rows as usize, docs);
    let second = refresh(&s, &server, &["refresh", "--all", "--batch-size", "5"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(
        server.count(),
        docs.div_ceil(5),
        "a second refresh called the provider"
    );
    assert!(second.lines().iter().all(|r| r["status"] == "unchanged"));
}

#[test]
fn one_bad_text_fails_alone_and_a_rate_limit_is_retried() {
    let s = TempStore::with_catalog();
    let mut lines = String::new();
    for i in 0..31 {
        lines.push_str(&format!(
            "{{\"kind\":\"memory\",\"id\":\"n{i}\",\"learning\":\"note {i}\",\"entities\":[]}}\n"
        ));
    }
    lines.push_str(
        "{\"kind\":\"memory\",\"id\":\"bad\",\"learning\":\"BAD text\",\"entities\":[]}\n",
    );
    let out = s.run("slayer-memory", &["import", "-"], &[], Some(&lines));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let server = Server::start(|n, req| {
        if n == 0 {
            return error(429, "slow down").header("Retry-After", "0");
        }
        if inputs(req).iter().any(|t| t.contains("BAD")) {
            return error(400, "input contains a forbidden word");
        }
        embeddings(req)
    });
    let memories: String = (0..31)
        .map(|i| format!("{{\"kind\":\"doc\",\"canonical_id\":\"memory:n{i}\"}}\n"))
        .chain(["{\"kind\":\"imported\",\"memory_id\":\"bad\"}\n".to_owned()])
        .collect();
    let env = env(&server);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = s.run(
        "slayer-embed",
        &["refresh", "--batch-size", "32"],
        &env,
        Some(&memories),
    );
    assert_eq!(out.code, 1, "{}", out.stderr);
    let records = out.lines();
    let failed: Vec<&serde_json::Value> =
        records.iter().filter(|r| r["status"] == "failed").collect();
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["canonical_id"], "memory:bad");
    assert!(failed[0]["warning"]
        .as_str()
        .unwrap()
        .contains("forbidden word"));
    assert_eq!(
        records.iter().filter(|r| r["status"] == "embedded").count(),
        31
    );
    // 429, the batch's 400, then each of the 32 texts alone.
    assert_eq!(server.count(), 1 + 1 + 32);
    assert!(!out.stderr.contains("sk-test"));
    assert_eq!(s.count("SELECT count(*) FROM embeddings"), 31);
}

#[test]
fn another_model_s_rows_stay_but_count_for_nothing() {
    let s = TempStore::with_catalog();
    let server = Server::start(|_, req| embeddings(req));
    assert_eq!(refresh(&s, &server, &["refresh", "--all"]).code, 0);
    let docs = s.count("SELECT count(*) FROM docs");
    // The default model is active now: the OpenAI rows are kept, and every doc lacks a row.
    let status = s.run(
        "slayer-embed",
        &["status", "--format", "json"],
        &[("SLAYER_MODEL_DIR", "/nonexistent/models")],
        None,
    );
    let v: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(v["active_model"], "local/all-MiniLM-L6-v2");
    assert_eq!(v["rows"][MODEL], docs);
    assert_eq!(v["docs_lacking_active"], docs);
    assert_eq!(v["usable"], false);
}

#[test]
fn text_sends_long_input_in_chunks_and_keeps_its_order() {
    let s = TempStore::with_catalog();
    let server = Server::start(|_, req| embeddings(req));
    let input: String = (0..150).map(|i| format!("text number {i}\n")).collect();
    let env = env(&server);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = s.run("slayer-embed", &["text"], &env, Some(&input));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let sizes: Vec<usize> = server.requests().iter().map(|r| inputs(r).len()).collect();
    assert_eq!(sizes, [64, 64, 22]);
    let texts: Vec<String> = out
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(texts.len(), 150);
    assert_eq!(texts[149], "text number 149");
}
