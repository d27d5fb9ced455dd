//! The schema answer (docs/spec/search.md §9.13) as an agent meets it: `--schema` (a flag, a batch
//! field, an MCP argument) returns the top models with their columns and the joins between
//! them, and the flat `entities` list stays as it was.

use serde_json::Value;

use crate::support::{run, store_with_catalog, workspace_root, TempStore};

const CATALOG: &str = r#"{"kind":"datasource","name":"shop"}
{"kind":"model","name":"orders","data_source":"shop","sql_table":"public.orders","columns":[{"name":"id","type":"INT"},{"name":"customer_id","type":"INT"},{"name":"amount","type":"DOUBLE","description":"Order total in euros."},{"name":"status","type":"TEXT","sampled_values":["paid","refunded","open","void"]},{"name":"placed_at","type":"TIMESTAMP"}],"measures":[{"name":"revenue","formula":"amount:sum","description":"Paid order totals."}]}
{"kind":"model","name":"customers","data_source":"shop","columns":[{"name":"id","type":"INT"},{"name":"name","type":"TEXT"},{"name":"country","type":"TEXT","description":"Where the customer lives."},{"name":"segment","type":"TEXT"}]}
{"kind":"model","name":"returns","data_source":"shop","columns":[{"name":"id","type":"INT"},{"name":"order_id","type":"INT"},{"name":"reason","type":"TEXT"}]}
{"kind":"model","name":"audit_log","data_source":"shop","columns":[{"name":"id","type":"INT"},{"name":"actor","type":"TEXT"}]}
"#;

fn store() -> TempStore {
    let store = store_with_catalog(CATALOG);
    let out = run(
        "slayer-memory",
        &store.store,
        &[
            "save",
            "--learning",
            "Revenue by country: segment B2B customers are billed yearly.",
            "--entities",
            "shop.customers.segment",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    store
}

fn search(store: &TempStore, args: &[&str]) -> Value {
    let args = [&["--channels", "entities,text"], args].concat();
    let out = run("slayer-search", &store.store, &args, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn columns(schema: &Value) -> Vec<(String, String)> {
    schema["models"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["columns"].as_array().unwrap().iter())
        .map(|c| {
            (
                c["id"].as_str().unwrap().to_owned(),
                c["why"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

const QUESTION: &str = "revenue of paid orders by customer country";

#[test]
fn the_schema_answer_gives_models_their_columns_and_how_they_join() {
    let store = store();
    let plain = search(&store, &["--question", QUESTION]);
    assert!(plain.get("schema").is_none(), "only when asked: {plain}");
    let r = search(&store, &["--question", QUESTION, "--schema"]);
    assert_eq!(
        r["entities"], plain["entities"],
        "the flat list is unchanged"
    );
    let schema = &r["schema"];
    let models: Vec<&str> = schema["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(models[..2], ["shop.orders", "shop.customers"], "{schema}");
    let columns = columns(schema);
    let why = |id: &str| {
        columns
            .iter()
            .find(|(c, _)| c == id)
            .map(|(_, w)| w.as_str())
            .unwrap_or_else(|| panic!("{id} missing from {schema}"))
    };
    assert_eq!(why("shop.customers.country"), "question");
    assert_eq!(why("shop.customers.segment"), "memory", "{r}");
    assert_eq!(why("shop.orders.customer_id"), "join");
    assert_eq!(why("shop.customers.id"), "join");
    // The join names both columns, and how it was found: the catalog declares none.
    assert!(
        schema["joins"]
            .as_array()
            .unwrap()
            .iter()
            .any(|j| j["from"] == "shop.orders.customer_id"
                && j["to"] == "shop.customers.id"
                && j["how"] == "reference"),
        "{schema}"
    );
    // Types, descriptions, values and formulas come from the full model.
    let orders = &schema["models"][0];
    assert_eq!(orders["sql_table"], "public.orders");
    let status = orders["columns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "shop.orders.status")
        .expect("status ranks for `paid`");
    assert_eq!(status["type"], "TEXT");
    assert_eq!(
        status["values"],
        serde_json::json!(["paid", "refunded", "open"])
    );
}

#[test]
fn its_size_is_bounded_and_the_bounds_are_checked() {
    let store = store();
    let r = search(
        &store,
        &[
            "--question",
            QUESTION,
            "--schema",
            "--schema-models",
            "1",
            "--schema-columns",
            "2",
        ],
    );
    let schema = &r["schema"];
    assert_eq!(schema["models"].as_array().unwrap().len(), 1, "{schema}");
    assert!(schema["joins"].as_array().unwrap().is_empty());
    assert_eq!(columns(schema).len(), 2, "{schema}");
    for (flag, value) in [("--schema-models", "0"), ("--schema-columns", "501")] {
        let out = run(
            "slayer-search",
            &store.store,
            &["--question", QUESTION, "--schema", flag, value],
            None,
        );
        assert_eq!(out.code, 2, "{flag} {value}: {}", out.stderr);
        assert!(
            out.stderr.contains(&flag[2..].replace('-', "_")),
            "{}",
            out.stderr
        );
    }
    let out = run(
        "slayer-search",
        &store.store,
        &["--question", QUESTION, "--schema-models", "2"],
        None,
    );
    assert_eq!(
        out.code, 2,
        "--schema-models needs --schema: {}",
        out.stderr
    );
}

#[test]
fn a_batch_line_asks_for_it_too_and_its_text_form_is_the_golden_one() {
    let store = store();
    let line = format!(
        r#"{{"question": "{QUESTION}", "schema": true, "channels": ["entities", "text"]}}"#
    );
    let out = run(
        "slayer-search",
        &store.store,
        &["--batch", "-"],
        Some(&line),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(
        r["schema"],
        search(&store, &["--question", QUESTION, "--schema"])["schema"]
    );
    let out = run(
        "slayer-search",
        &store.store,
        &[
            "--question",
            QUESTION,
            "--schema",
            "--channels",
            "entities,text",
            "--max-memories",
            "0",
            "--max-example-queries",
            "0",
            "--max-entities",
            "0",
            "--format",
            "text",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let path = workspace_root().join("crates/slayer-search/tests/golden/schema.txt");
    if std::env::var_os("UPDATE_GOLDENS").is_some() {
        std::fs::write(&path, &out.stdout).unwrap();
    }
    let golden = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {}; run with UPDATE_GOLDENS=1", path.display()));
    assert_eq!(out.stdout, golden, "UPDATE_GOLDENS=1 rewrites it");
}

/// Two tables that each keep their own marketplace id (`mcmid`) and join by a reference
/// (`cards.setcode` = `sets.code`): the answer joins them by the reference alone, and in the
/// flat list the connecting-key evidence goes to the reference's columns, not to the ids.
#[test]
fn a_shared_key_name_beside_a_reference_is_not_the_join() {
    let store = store_with_catalog(
        r#"{"kind":"datasource","name":"cg"}
{"kind":"model","name":"cards","data_source":"cg","columns":[{"name":"id","type":"INT"},{"name":"name","type":"TEXT"},{"name":"manacost","type":"TEXT","description":"Mana cost of the card."},{"name":"setcode","type":"TEXT"},{"name":"mcmid","type":"INT"}]}
{"kind":"model","name":"sets","data_source":"cg","columns":[{"name":"id","type":"INT"},{"name":"code","type":"TEXT"},{"name":"name","type":"TEXT","description":"Name of the set."},{"name":"mcmid","type":"INT"}]}
"#,
    );
    let r = search(
        &store,
        &[
            "--question",
            "mana cost of the cards in the set named Coldsnap",
            "--schema",
            "--explain",
            "--max-entities",
            "20",
        ],
    );
    let joins: Vec<(&str, &str, &str)> = r["schema"]["joins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| {
            (
                j["from"].as_str().unwrap(),
                j["to"].as_str().unwrap(),
                j["how"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        joins,
        [("cg.cards.setcode", "cg.sets.code", "reference")],
        "{r}"
    );
    let joined: Vec<&str> = r["entities"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["explain"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["channel"] == "join")
        })
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(joined.len(), 2, "{r}");
    assert!(joined.contains(&"cg.cards.setcode") && joined.contains(&"cg.sets.code"));
}

#[test]
fn by_default_the_schema_answer_holds_a_dozen_tables_within_its_column_budget() {
    // Ten tables a question names, each with four columns: the default answer (12 models, 38
    // columns) holds all ten and stays within its column budget (7 models used to leave three
    // out).
    let mut catalog = String::from("{\"kind\":\"datasource\",\"name\":\"w\"}\n");
    let names = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    ];
    for name in names {
        catalog.push_str(&format!(
            "{{\"kind\":\"model\",\"name\":\"{name}\",\"data_source\":\"w\",\"columns\":[{{\"name\":\"id\",\"type\":\"INT\"}},{{\"name\":\"{name}_code\",\"type\":\"TEXT\"}},{{\"name\":\"{name}_note\",\"type\":\"TEXT\"}},{{\"name\":\"{name}_size\",\"type\":\"INT\"}}]}}\n"
        ));
    }
    let store = store_with_catalog(&catalog);
    let question = format!("compare {}", names.join(" and "));
    let r = search(&store, &["--question", &question, "--schema"]);
    let models: Vec<&str> = r["schema"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(models.len(), 10, "{r:#}");
    assert!(columns(&r["schema"]).len() <= 38, "{r:#}");
}
