//! The ranking levers of docs/spec/channels.md §6.1 and docs/spec/fusion.md §8.6 as a user
//! meets them: names in any convention match the words of a question, a name outweighs a
//! sentence of description, and the table whose columns match leads them.

use serde_json::Value;

use crate::support::{ids, run, store_with_catalog, TempStore};

const CATALOG: &str = r#"{"kind":"datasource","name":"w"}
{"kind":"model","name":"Customers","data_source":"w","columns":[{"name":"CustId"},{"name":"AvgOrderValue"},{"name":"notes","description":"What the customer said about an order, its value, and the average delivery."}]}
{"kind":"model","name":"shipments","data_source":"w","columns":[{"name":"id"},{"name":"carrier","description":"Which carrier ships the order."}]}
{"kind":"model","name":"shops","data_source":"w","columns":[{"name":"café_name","label":"Storefront"}]}
{"kind":"model","name":"fin","data_source":"w","columns":[{"name":"amount","type":"DOUBLE"}],"measures":[{"name":"noted","formula":"count(*)","description":"Turnover notes."},{"name":"booked","formula":"amount:sum","description":"Booked revenue.\nSynonyms: turnover, sales."}]}
"#;

fn loaded() -> TempStore {
    store_with_catalog(CATALOG)
}

fn search(store: &TempStore, args: &[&str]) -> Value {
    let args = [&["--channels", "entities,text"], args].concat();
    let out = run("slayer-search", &store.store, &args, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

#[test]
fn a_camel_case_name_matches_the_words_of_a_question_and_its_table_leads() {
    let store = loaded();
    let r = search(&store, &["--question", "What is the avg order value?"]);
    let entities = ids(&r, "entities");
    assert_eq!(entities[0], "w.Customers", "{r}");
    // The column named by the words outranks the one whose description merely uses them.
    let at = |id: &str| entities.iter().position(|e| e == id).unwrap();
    assert!(
        at("w.Customers.AvgOrderValue") < at("w.Customers.notes"),
        "{r}"
    );
}

#[test]
fn a_question_that_is_an_entity_name_or_path_wins_outright() {
    let store = loaded();
    for question in [
        "AvgOrderValue",
        "customers.avgordervalue?",
        "`w.Customers.AvgOrderValue`",
    ] {
        let r = search(&store, &["--question", question]);
        assert_eq!(
            ids(&r, "entities")[0],
            "w.Customers.AvgOrderValue",
            "{question}: {r}"
        );
    }
}

#[test]
fn the_levers_can_be_turned_off_to_see_the_plain_ranking() {
    let store = loaded();
    let off = r#"{"model_evidence": {"models": 0}, "name_weight": 0}"#;
    let r = search(
        &store,
        &[
            "--question",
            "What is the avg order value?",
            "--tuning",
            off,
        ],
    );
    // Without evidence the model doc, which names no column words of the question, is not first.
    assert_ne!(ids(&r, "entities")[0], "w.Customers", "{r}");
}

#[test]
fn accents_fold_and_labels_count_as_names() {
    let store = loaded();
    let r = search(&store, &["--question", "cafe name", "--max-entities", "2"]);
    assert_eq!(ids(&r, "entities"), ["w.shops", "w.shops.café_name"], "{r}");
    let r = search(&store, &["--question", "storefront", "--max-entities", "2"]);
    assert_eq!(ids(&r, "entities"), ["w.shops", "w.shops.café_name"], "{r}");
}

#[test]
fn synonyms_count_as_names() {
    // Apache Ossie's `ai_context` synonyms reach the doc as a `Synonyms:` line
    // (docs/spec/importers.md §17.4): the `name` field holds them, so the measure they name
    // outranks one whose description merely uses the word.
    let store = loaded();
    let place = |tuning: &str| {
        let r = search(
            &store,
            &[
                "--question",
                "turnover",
                "--max-entities",
                "10",
                "--tuning",
                tuning,
            ],
        );
        let entities = ids(&r, "entities");
        let at = |id: &str| entities.iter().position(|e| e == id).unwrap();
        (at("w.fin.booked"), at("w.fin.noted"), r)
    };
    let (booked, noted, r) = place("{}");
    assert!(booked < noted, "{r}");
    // Without the name field the shorter doc that only uses the word leads: the synonym is
    // what lifts `booked`.
    let (booked, noted, r) = place(r#"{"name_weight": 0}"#);
    assert!(noted < booked, "{r}");
}

#[test]
fn a_question_of_stopwords_only_ranks_nothing() {
    let store = loaded();
    let r = search(&store, &["--question", "Which of these are the ones?"]);
    assert_eq!(ids(&r, "entities"), Vec::<String>::new(), "{r}");
}
