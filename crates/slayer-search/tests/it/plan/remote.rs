//! The planner's remote parts end to end: an LLM expanding the question (cached in the store,
//! failing into feedback, its invalid terms gated out) and an HTTP reranker, each against an
//! in-process server that speaks the real wire format.

use serde_json::{json, Value};
use slayer_embed::test_support::{Reply, Server};

use super::*;

/// A server that answers each request with the next canned `(status, body)`.
fn serve(replies: Vec<(u16, String)>) -> Server {
    Server::replies(
        replies
            .into_iter()
            .map(|(status, body)| {
                Reply::new(status, &body).header("Content-Type", "application/json")
            })
            .collect(),
    )
}

/// The body of the first request the server saw.
fn first_body(server: &Server) -> String {
    server.requests()[0].body.clone()
}

fn chat(content: &str) -> String {
    json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}]}).to_string()
}

#[test]
fn the_llm_expands_the_question_and_its_answer_is_cached_in_the_store() {
    let store = loaded();
    let server = serve(vec![(200, chat(SEED_TERMS))]);
    let url = server.url("");
    let env = [
        ("SLAYER_LLM_MODEL", "openai/test-model"),
        ("SLAYER_LLM_BASE_URL", url.as_str()),
        ("SLAYER_LLM_API_KEY", "sk-secret-123"),
    ];
    let args = [
        "--plan",
        "auto",
        "--question",
        SEED_QUESTION,
        "--rerank",
        "none",
        "--explain",
        "--max-entities",
        "50",
    ];
    let first = search_env(&store, &args, &env);
    assert_eq!(
        first["plan"]["sources"],
        json!(["llm"]),
        "{}",
        first["plan"]
    );
    assert_eq!(first["plan"]["llm"]["cached"], false);
    assert!(!ids(&first, "entities").contains(&"mkt.customers_tmp".to_owned()));
    let sent = first_body(&server);
    let sent: Value = serde_json::from_str(&sent).unwrap();
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["temperature"], 0);
    let prompt = sent["messages"].to_string();
    assert!(
        prompt.contains("mkt"),
        "the datasource names are the allowed enums"
    );
    assert!(
        !prompt.contains("customers_tmp") && !prompt.contains("Customer master"),
        "no catalog contents: {prompt}"
    );
    // The second run asks nobody (the server has no reply left) and plans the same.
    let second = search_env(&store, &args, &env);
    assert_eq!(second["plan"]["llm"]["cached"], true);
    assert_eq!(ids(&second, "entities"), ids(&first, "entities"));
    assert!(!second.to_string().contains("sk-secret-123"));
}

#[test]
fn a_failing_llm_is_a_warning_and_feedback_plans_instead() {
    let store = loaded();
    let server = serve(vec![(200, chat("this is not json"))]);
    let url = server.url("");
    let env = [
        ("SLAYER_LLM_MODEL", "openai/m"),
        ("SLAYER_LLM_BASE_URL", url.as_str()),
    ];
    let r = search_env(
        &store,
        &[
            "--plan",
            "auto",
            "--question",
            "pii emails",
            "--rerank",
            "none",
            "--explain",
        ],
        &env,
    );
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("planner: LLM expansion failed"),
        "{warnings}"
    );
    assert_eq!(r["plan"]["llm"]["failed"], true);
    assert!(
        r["plan"]["sources"]
            .as_array()
            .unwrap()
            .contains(&json!("prf")),
        "{}",
        r["plan"]
    );
    let r = search_env(
        &store,
        &["--plan", "auto", "--question", "pii emails"],
        &[("SLAYER_LLM_MODEL", "gpt-4")],
    );
    assert!(
        r["warnings"].to_string().contains("SLAYER_LLM_MODEL"),
        "{}",
        r["warnings"]
    );
}

#[test]
fn an_http_reranker_decides_the_order_and_a_failing_one_falls_back() {
    let store = loaded();
    // The reranker scores the documents it was sent in rising order: the last one wins.
    let config = store.dir.path().join("rerank.toml");
    let listener_reply = |n: usize| {
        let results: Vec<Value> = (0..n)
            .map(|i| json!({"index": i, "relevance_score": 16f64.powi(i as i32)}))
            .collect();
        json!({"results": results}).to_string()
    };
    // First: how many candidates are sent? Ask with the reranker off.
    let args = [
        "--plan",
        "auto",
        "--question",
        "pii emails",
        "--explain",
        "--max-entities",
        "50",
    ];
    let probe = search(&store, &[&args[..], &["--rerank", "none"]].concat());
    let n = side(&probe, "entities")["counts"]["after_negatives"]
        .as_u64()
        .unwrap() as usize;
    let memories = side(&probe, "memories")["counts"]["after_negatives"]
        .as_u64()
        .unwrap() as usize;
    assert_eq!(
        memories, 0,
        "no memories in this store: nothing is sent for them"
    );
    let server = serve(vec![(200, listener_reply(n))]);
    std::fs::write(
        &config,
        format!("[semantic_search.reranker]\nprovider = \"http\"\nurl = \"{}/v1/rerank\"\nmodel = \"rr\"\n", server.url("")),
    )
    .unwrap();
    let r = search(
        &store,
        &[&args[..], &["--plan-config", config.to_str().unwrap()]].concat(),
    );
    assert_eq!(r["plan"]["reranker"], "http", "{}", r["warnings"]);
    let sent: Value = serde_json::from_str(&first_body(&server)).unwrap();
    let docs = sent["documents"].as_array().unwrap();
    assert_eq!(docs.len(), n);
    assert!(
        docs[0].as_str().unwrap().starts_with("TITLE: "),
        "shaped blocks: {}",
        docs[0]
    );
    let last_sent = docs[n - 1].as_str().unwrap();
    let top = &side(&r, "entities")["top"][0]["id"];
    assert!(
        last_sent.contains(&format!(
            "PATH: {}",
            top.as_str().unwrap().replacen('.', "/", 2)
        )),
        "{last_sent} vs {top}"
    );
    // A server that keeps failing: a warning, and the retrieval order.
    let server = serve(vec![
        (503, "{}".into()),
        (503, "{}".into()),
        (503, "{}".into()),
    ]);
    std::fs::write(
        &config,
        format!("[semantic_search.reranker]\nprovider = \"http\"\nurl = \"{}/rerank\"\nretries = 2\ntimeout_s = 2\n", server.url("")),
    )
    .unwrap();
    let r = search(
        &store,
        &[&args[..], &["--plan-config", config.to_str().unwrap()]].concat(),
    );
    assert!(
        r["warnings"].to_string().contains("planner: rerank failed"),
        "{}",
        r["warnings"]
    );
    assert_eq!(r["plan"]["reranker"], "none");
    assert_eq!(ids(&r, "entities"), ids(&probe, "entities"));
}

#[test]
fn an_llms_invalid_terms_are_gated_out_and_its_extra_keys_warned_about() {
    let store = loaded();
    let answer = r#"{"anchors": ["pii", "x"], "synonyms": ["drop table;", "data", "phone"],
        "negatives": {"hard": [], "soft": []}, "confidence": 0.9}"#;
    let server = serve(vec![(200, chat(answer))]);
    let url = server.url("");
    let env = [
        ("SLAYER_LLM_MODEL", "openai/m"),
        ("SLAYER_LLM_BASE_URL", url.as_str()),
    ];
    let r = search_env(
        &store,
        &[
            "--plan",
            "auto",
            "--question",
            "pii contacts",
            "--rerank",
            "none",
            "--explain",
        ],
        &env,
    );
    assert!(
        r["warnings"].to_string().contains("confidence"),
        "{}",
        r["warnings"]
    );
    let decisions = r["plan"]["plan"]["decisions"].as_array().unwrap();
    let reason = |term: &str| {
        let d = decisions.iter().find(|d| d["term"] == term).unwrap();
        assert_eq!(d["source"], "llm", "{d}");
        d["reason"].clone()
    };
    assert_eq!(reason("x"), "length");
    assert_eq!(reason("drop table;"), "charset");
    assert_eq!(reason("data"), "stoplist");
    assert_eq!(reason("pii"), Value::Null);
    assert_eq!(r["plan"]["sources"], json!(["llm"]));
    assert!(ids(&r, "entities").contains(&"mkt.customers".to_owned()));
}
