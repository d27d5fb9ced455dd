//! `--plan auto` (docs/spec/planner.md §15) through the binary: the seed's worked example end to
//! end on a catalog with pii, email and phone columns and tmp/staging/test models; navigational
//! questions; the offline (PRF) expansion; the configuration file; the LLM and HTTP rerank
//! paths against in-process servers speaking the real wire formats; the response contract.

use serde_json::{json, Value};

use crate::support::{ids, models_dir, run, run_with_models, TempStore};

mod remote;

const CATALOG: &str = "crates/slayer-search/tests/fixtures/plan-catalog.jsonl";

fn loaded() -> TempStore {
    let store = TempStore::new();
    let out = run("slayer-index", &store.store, &["load", CATALOG], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    store
}

fn search_env(store: &TempStore, args: &[&str], env: &[(&str, &str)]) -> Value {
    let mut env = env.to_vec();
    env.push(("SLAYER_MODEL_DIR", "/nonexistent/slayer-models"));
    let out = store.run("slayer-search", args, &env, None);
    assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn search(store: &TempStore, args: &[&str]) -> Value {
    search_env(store, args, &[])
}

/// A planned search with the retrieval order as the reranker, explained.
fn planned(store: &TempStore, question: &str, extra: &[&str]) -> Value {
    let args = [
        &[
            "--plan",
            "auto",
            "--question",
            question,
            "--rerank",
            "none",
            "--explain",
        ][..],
        extra,
    ]
    .concat();
    search(store, &args)
}

/// The seed's LLM JSON after gating (§Examples).
const SEED_TERMS: &str = r#"{
  "anchors": ["pii", "email"],
  "phrases": ["phone number"],
  "synonyms": ["phone", "phone_number", "gdpr"],
  "negatives": {"hard": ["tmp", "sandbox"], "soft": ["dev", "test"],
                "exceptions": [{"negative": "test", "allow": ["ab test"]}]}
}"#;

const SEED_QUESTION: &str =
    "find pii tables with emails and phone numbers in snowflake marketing, not test";

fn side<'v>(r: &'v Value, side: &str) -> &'v Value {
    &r["plan"][side]
}

#[test]
fn the_seeds_worked_example_end_to_end() {
    let store = loaded();
    let r = search(
        &store,
        &[
            "--plan",
            "auto",
            "--question",
            SEED_QUESTION,
            "--inject",
            SEED_TERMS,
            "--rerank",
            "none",
            "--explain",
            "--max-entities",
            "50",
        ],
    );
    let entities = ids(&r, "entities");
    // Hard: the default name pattern drops tmp and staging models and everything under them.
    for gone in ["mkt.customers_tmp", "mkt.staging_contacts"] {
        assert!(
            !entities.iter().any(|e| e.starts_with(gone)),
            "{gone}: {entities:?}"
        );
    }
    let dropped: Vec<&str> = side(&r, "entities")["dropped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["id"].as_str().unwrap())
        .collect();
    assert!(
        dropped.contains(&"mkt.customers_tmp") && dropped.contains(&"mkt.staging_contacts"),
        "{dropped:?}"
    );
    // Soft: the test model is kept with its penalty (the seed's blend makes it a tie-breaker:
    // 0.05 × 0.5); the ab test is protected by its exception.
    let at = |id: &str| entities.iter().position(|e| e == id).unwrap_or(usize::MAX);
    assert!(at("mkt.customers") < at("mkt.test_users"), "{entities:?}");
    let top = side(&r, "entities")["top"].as_array().unwrap();
    let blended = |id: &str| top.iter().find(|t| t["id"] == id).cloned();
    let test_users = blended("mkt.test_users").expect("test_users is a candidate");
    assert_eq!(test_users["soft"], json!(["test"]));
    assert_eq!(test_users["penalty"], json!(0.5));
    if let Some(ab) = blended("mkt.ab_test_results") {
        assert_eq!(ab["penalty"], json!(0.0), "{ab}");
    }
    // The plan, with provenance, and the queries as run.
    let plan = &r["plan"]["plan"];
    assert_eq!(plan["anchors"][0]["text"], "pii");
    assert_eq!(plan["anchors"][0]["source"], "caller");
    assert_eq!(plan["phrases"][0]["tokens"], json!(["phone", "number"]));
    let a = &side(&r, "entities")["passA"];
    assert_eq!(
        a["query"],
        r#""pii email"~2 OR pii OR email OR "phone number"~2"#
    );
    let decisions = plan["decisions"].as_array().unwrap();
    let decision = |term: &str| {
        decisions
            .iter()
            .find(|d| d["term"] == term)
            .unwrap()
            .clone()
    };
    assert_eq!(
        decision("phone_number")["reason"],
        "duplicate",
        "phone_number is the phrase"
    );
    assert_eq!(decision("gdpr")["reason"], "no_match");
    let counts = &side(&r, "entities")["counts"];
    for key in ["passA", "passB", "merged", "after_negatives", "reranked"] {
        assert!(counts[key].is_u64(), "{key}: {counts}");
    }
    assert_eq!(
        counts["merged"].as_u64().unwrap() - counts["after_negatives"].as_u64().unwrap(),
        dropped.len() as u64
    );
    assert_eq!(r["plan"]["sources"], json!(["caller"]));
    for stage in [
        "classify",
        "expand",
        "gate",
        "passes",
        "negatives",
        "rerank",
        "blend",
    ] {
        assert!(
            r["plan"]["latency_ms"][stage].is_number(),
            "{stage}: {}",
            r["plan"]["latency_ms"]
        );
    }
}

#[test]
fn a_heavier_negatives_weight_buries_what_the_question_excludes() {
    let store = loaded();
    let config = store.dir.path().join("bury.toml");
    std::fs::write(
        &config,
        "[semantic_search.reranker]\nblend = { rerank = 0.85, anchors = 0.10, negatives = 0.5 }\n",
    )
    .unwrap();
    let args = [
        "--plan",
        "auto",
        "--question",
        SEED_QUESTION,
        "--inject",
        SEED_TERMS,
        "--rerank",
        "none",
        "--max-entities",
        "50",
    ];
    let seed_response = search(&store, &args);
    let buried_response = search(
        &store,
        &[&args[..], &["--plan-config", config.to_str().unwrap()]].concat(),
    );
    let (seed, buried) = (
        ids(&seed_response, "entities"),
        ids(&buried_response, "entities"),
    );
    let at = |list: &[String], id: &str| list.iter().position(|e| e == id).unwrap();
    // Its score falls further (the seed's weight already puts it below both clean pii tables).
    let score = |r: &Value, id: &str| {
        r["entities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .map(|h| h["score"].as_f64().unwrap())
            .unwrap()
    };
    assert!(
        score(&buried_response, "mkt.test_users") < score(&seed_response, "mkt.test_users") * 0.8,
        "{seed:?} → {buried:?}"
    );
    assert!(at(&buried, "mkt.test_users") >= at(&seed, "mkt.test_users"));
    assert!(
        at(&buried, "mkt.leads") < at(&buried, "mkt.test_users"),
        "{buried:?}"
    );
}

/// With the seed's blend, a soft negative's match falls below the clean matches beside it in
/// the final list, not only in the planner's pass: the blend's 0.05 × penalty left
/// `test_users` second, between the two clean pii tables, once the planned ranking was fused
/// again with model evidence. It stays in the list (soft), with the fraction it lost explained.
#[test]
fn a_soft_negative_falls_below_comparable_clean_matches_in_the_final_list() {
    let store = loaded();
    let r = search(
        &store,
        &[
            "--plan",
            "auto",
            "--question",
            "find pii tables with emails and phone numbers, not test",
            "--inject",
            SEED_TERMS,
            "--rerank",
            "none",
            "--explain",
            "--max-entities",
            "20",
        ],
    );
    let entities = ids(&r, "entities");
    let at = |id: &str| entities.iter().position(|e| e == id).unwrap();
    assert!(at("mkt.customers") < at("mkt.test_users"), "{entities:?}");
    assert!(at("mkt.leads") < at("mkt.test_users"), "{entities:?}");
    // The planner's own pass still ranks it first: the retrieval score dominates its blend.
    let top = side(&r, "entities")["top"].as_array().unwrap();
    assert_eq!(top[0]["id"], "mkt.test_users", "{top:?}");
    let hit = &r["entities"][at("mkt.test_users")];
    let explain = hit["explain"].as_array().unwrap();
    let buried = explain
        .iter()
        .find(|c| c["channel"] == "soft negative")
        .unwrap_or_else(|| panic!("{hit}"));
    assert_eq!(buried["raw_score"], json!(0.025));
    let others: f64 = explain
        .iter()
        .filter(|c| c["channel"] != "soft negative")
        .map(|c| c["contribution"].as_f64().unwrap())
        .sum();
    let score = hit["score"].as_f64().unwrap();
    assert!((score - others * 0.975).abs() < 1e-12, "{hit}");
    // A clean match carries no such share.
    let clean = &r["entities"][at("mkt.leads")];
    assert!(clean["explain"]
        .as_array()
        .unwrap()
        .iter()
        .all(|c| c["channel"] != "soft negative"));
}

#[test]
fn the_response_keeps_its_shape_and_the_plan_shows_only_with_explain() {
    let store = loaded();
    let planned = search(&store, &["--plan", "auto", "--question", SEED_QUESTION]);
    let plain = search(&store, &["--question", SEED_QUESTION]);
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(&planned), keys(&plain));
    assert_eq!(
        keys(&planned),
        [
            "memories",
            "example_queries",
            "entities",
            "resolved_input_entities",
            "warnings"
        ]
    );
    let off = search(&store, &["--plan", "off", "--question", SEED_QUESTION]);
    assert_eq!(off, plain, "off is the default");
}

#[test]
fn a_navigational_question_is_looked_up_exactly_without_expansion() {
    let store = loaded();
    for question in [
        "mkt.customers.phone_number",
        "customers.pii",
        "`refund_amount`?",
    ] {
        let r = search(
            &store,
            &["--plan", "auto", "--question", question, "--explain"],
        );
        let want = r["plan"]["navigational"]
            .as_str()
            .unwrap_or_else(|| panic!("{question}: {r}"));
        assert_eq!(ids(&r, "entities")[0], want, "{question}");
        assert!(r["plan"]["plan"]["anchors"].as_array().unwrap().is_empty());
    }
    let r = search(
        &store,
        &["--plan", "auto", "--question", "email", "--explain"],
    );
    assert!(
        r["plan"]["navigational"].is_null(),
        "email names several columns: {}",
        r["plan"]
    );
}

#[test]
fn without_terms_the_question_is_expanded_by_feedback_offline() {
    let store = loaded();
    let r = planned(&store, "money given back", &[]);
    assert_eq!(
        r["plan"]["sources"],
        json!(["query", "prf"]),
        "{}",
        r["plan"]
    );
    let synonyms = r["plan"]["plan"]["synonyms"].as_array().unwrap();
    assert!(
        synonyms.iter().all(|s| s["source"] == "prf"),
        "{synonyms:?}"
    );
    assert_eq!(ids(&r, "entities")[0], "mkt.refunds", "{r}");
    // The question's own negation becomes a soft negative.
    let r = search(
        &store,
        &[
            "--plan",
            "auto",
            "--question",
            "pii emails, not test",
            "--explain",
        ],
    );
    let soft = r["plan"]["plan"]["soft"].as_array().unwrap();
    assert!(
        soft.iter()
            .any(|s| s["text"] == "test" && s["source"] == "query"),
        "{soft:?}"
    );
}

#[test]
fn budgets_come_from_the_configuration_and_pass_b_tops_up() {
    let store = loaded();
    let config = store.dir.path().join("plan.toml");
    std::fs::write(
        &config,
        "[semantic_search]\nbudgets = { anchors = 1, synonyms = 1 }\n",
    )
    .unwrap();
    let config_arg = config.to_str().unwrap();
    let r = planned(
        &store,
        "pii data",
        &[
            "--plan-config",
            config_arg,
            "--inject",
            r#"{"anchors": ["pii"], "synonyms": ["phone"]}"#,
        ],
    );
    let s = side(&r, "entities");
    assert_eq!(s["passA"]["taken"], 1);
    assert!(s["passA"]["matched"].as_u64().unwrap() > 2);
    assert_eq!(
        s["passB"]["budget"], 0,
        "pass A overflowed: B is trimmed to half of 1"
    );
    assert_eq!(s["passB"]["adjusted"], "trimmed");
    std::fs::write(
        &config,
        "[semantic_search]\nbudgets = { anchors = 5, synonyms = 1 }\n",
    )
    .unwrap();
    let r = planned(
        &store,
        "refunds given",
        &[
            "--plan-config",
            config_arg,
            "--inject",
            r#"{"anchors": ["refund"], "synonyms": ["email"]}"#,
        ],
    );
    let s = side(&r, "entities");
    let a = s["passA"]["taken"].as_u64().unwrap();
    assert!(a < 5, "{s}");
    assert_eq!(s["passB"]["adjusted"], "top_up");
    assert_eq!(s["passB"]["budget"].as_u64().unwrap(), 1 + 5 - a);
}

#[test]
fn a_configuration_beside_the_store_is_read_and_an_unknown_key_is_an_error() {
    let store = loaded();
    std::fs::write(
        store.dir.path().join("slayer.toml"),
        "[semantic_search]\nmax_synonym = 3\n",
    )
    .unwrap();
    let out = store.run("slayer-search", &["--question", "pii"], &[], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("max_synonym") && out.stderr.contains("slayer.toml"),
        "{}",
        out.stderr
    );
    std::fs::write(
        store.dir.path().join("slayer.toml"),
        "[semantic_search.reranker]\nprovider = \"none\"\n",
    )
    .unwrap();
    let r = search(
        &store,
        &["--plan", "auto", "--question", "pii emails", "--explain"],
    );
    assert_eq!(r["plan"]["reranker"], "none");
}

#[test]
fn batch_lines_carry_plan_and_injected_terms() {
    let store = loaded();
    let lines = format!(
        "{}\n{}\n",
        json!({"question": SEED_QUESTION, "plan": "auto", "injected": serde_json::from_str::<Value>(SEED_TERMS).unwrap(), "rerank": "none", "explain": true}),
        json!({"question": SEED_QUESTION}),
    );
    let out = store.run(
        "slayer-search",
        &["--batch", "-", "--max-entities", "50"],
        &[("SLAYER_MODEL_DIR", "/nonexistent")],
        Some(&lines),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let responses = out.lines();
    assert_eq!(responses[0]["plan"]["sources"], json!(["caller"]));
    assert!(!ids(&responses[0], "entities").contains(&"mkt.customers_tmp".to_owned()));
    assert!(responses[1].get("plan").is_none());
    let bad = store.run(
        "slayer-search",
        &["--batch", "-"],
        &[],
        Some("{\"question\": \"x\", \"injected\": {\"anchor\": []}}\n"),
    );
    assert_eq!(bad.code, 1);
    assert!(
        bad.stdout.contains("unknown field `anchor`"),
        "{}",
        bad.stdout
    );
}

#[test]
fn a_bad_inject_is_a_usage_error() {
    let store = loaded();
    let out = store.run(
        "slayer-search",
        &["--question", "x", "--inject", "{\"anchors\": 3}"],
        &[],
        None,
    );
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--inject"), "{}", out.stderr);

    // From a file: the error names it, and a byte-order mark an editor wrote is no error.
    let file = store.dir.path().join("terms.json");
    let arg = format!("@{}", file.display());
    std::fs::write(&file, "{oops").unwrap();
    let out = store.run(
        "slayer-search",
        &["--question", "x", "--inject", &arg],
        &[],
        None,
    );
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        format!("Error: --inject {arg}: key must be a string at line 1 column 2\n")
    );
    std::fs::write(&file, "\u{feff}{\"anchors\": [\"refund\"]}").unwrap();
    let out = store.run(
        "slayer-search",
        &["--question", "x", "--inject", &arg],
        &[],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn the_local_reranker_reads_the_stored_embeddings_of_the_candidates() {
    let store = loaded();
    let models = models_dir();
    let out = run_with_models(
        "slayer-embed",
        &store.store,
        &["refresh", "--all"],
        None,
        &models,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run_with_models(
        "slayer-search",
        &store.store,
        &[
            "--plan",
            "auto",
            "--question",
            "money given back to buyers",
            "--explain",
        ],
        None,
        &models,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(r["plan"]["reranker"], "local", "{}", r["warnings"]);
    assert!(side(&r, "entities")["counts"]["reranked"].as_u64().unwrap() > 0);
    assert_eq!(ids(&r, "entities")[0], "mkt.refunds", "{r}");
    // Pass D brings the dense channel's best that no word of the question matched.
    let d = &side(&r, "entities")["passD"];
    assert_eq!(d["budget"], 60, "{d}");
    let lexical = side(&r, "entities")["counts"]["passA"].as_u64().unwrap()
        + side(&r, "entities")["counts"]["passB"].as_u64().unwrap();
    assert_eq!(
        side(&r, "entities")["counts"]["merged"].as_u64().unwrap(),
        lexical + d["taken"].as_u64().unwrap()
    );
    assert!(d["taken"].as_u64().unwrap() > 0, "{d}");
    // Without the model: a warning, and the retrieval order.
    let r = search(
        &store,
        &[
            "--plan",
            "auto",
            "--question",
            "money given back to buyers",
            "--explain",
        ],
    );
    assert_eq!(r["plan"]["reranker"], "none");
    assert!(
        r["warnings"]
            .to_string()
            .contains("planner: local rerank skipped"),
        "{}",
        r["warnings"]
    );
}

#[test]
fn memories_are_planned_too() {
    let store = loaded();
    let memories = [
        json!({"kind": "memory", "id": "1", "learning": "Email addresses in leads are pii; mask them before export."}),
        json!({"kind": "memory", "id": "2", "learning": "Test accounts use example.com emails."}),
        json!({"kind": "memory", "id": "3", "learning": "Orders ship in two days."}),
    ]
    .map(|m| m.to_string())
    .join("\n");
    let out = store.run(
        "slayer-memory",
        &["import", "-", "--no-embed"],
        &[],
        Some(&memories),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = planned(&store, "pii emails, not test", &[]);
    let got = ids(&r, "memories");
    assert_eq!(got[0], "1", "{r}");
    assert!(!got.contains(&"3".to_owned()));
    assert!(side(&r, "memories")["counts"]["merged"].as_u64().unwrap() >= 2);
}
