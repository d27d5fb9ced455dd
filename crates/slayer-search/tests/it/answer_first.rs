//! Answer first (docs/spec/fusion.md §8.9) on a real dbt project (the metric-lookup benchmark's
//! `dbt_jaffle`, imported as a user would): a metric question gets the measure at rank 1, its
//! near rivals and its model next and the measure's card beside the entities; other questions
//! keep their tables first; `answer_head: 0` gives back the evidence's order.

use serde_json::Value;

use crate::support::{run, workspace_root, TempStore};

/// A project of the metric-lookup benchmark (tests/fixtures/metric-eval), imported as a user
/// would.
fn imported(format: &str, project: &str, datasource: &str) -> TempStore {
    let store = TempStore::new();
    let project = workspace_root()
        .join("tests/fixtures/metric-eval")
        .join(project);
    let out = run(
        "slayer-index",
        &store.store,
        &[
            "-q",
            "import",
            format,
            project.to_str().unwrap(),
            "--datasource",
            datasource,
            "--load",
        ],
        None,
    );
    // Exit 1: an upstream project may hold an invalid entity, named on stderr; the rest loads.
    assert!(out.code <= 1, "{}", out.stderr);
    store
}

fn jaffle() -> TempStore {
    imported("dbt", "dbt_jaffle", "jaffle")
}

fn search(store: &TempStore, question: &str, extra: &[&str]) -> Value {
    let args = [
        &[
            "--question",
            question,
            "--channels",
            "entities,text",
            "--explain",
            "--format",
            "json",
        ][..],
        extra,
    ]
    .concat();
    let out = run("slayer-search", &store.store, &args, None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap()
}

fn ids(response: &Value) -> Vec<&str> {
    response["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect()
}

#[test]
fn a_metric_question_gets_its_measure_first_with_the_card_to_query_it() {
    let store = jaffle();
    let r = search(&store, "how many large orders", &[]);
    // The measure, then the next measures that match the question as well as its model
    // does, then the model.
    let top = ids(&r);
    assert_eq!(top[0], "jaffle.orders.large_orders", "{r:#}");
    let model = top.iter().position(|id| *id == "jaffle.orders");
    assert!(model.is_some_and(|m| (1..=3).contains(&m)), "{r:#}");
    assert!(top[1..model.unwrap()]
        .iter()
        .all(|id| id.starts_with("jaffle.orders.")));
    assert_eq!(r["intent"]["kind"], "metric");
    assert_eq!(r["intent"]["why"], "the question says \"how many\"");
    // The lifted measure says why it leads, and the scores stay in order.
    let first = &r["entities"][0];
    assert!(first["explain"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["channel"] == "answer"));
    let scores: Vec<f64> = r["entities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["score"].as_f64().unwrap())
        .collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // The card: what an agent needs to query the measure without a second call.
    let answer = &r["answer"];
    assert_eq!(answer["id"], "jaffle.orders.large_orders");
    assert_eq!(answer["model"], "jaffle.orders");
    assert!(
        !answer["formula"].as_str().unwrap().is_empty(),
        "{answer:#}"
    );
    let group_by = answer["group_by"].as_array().unwrap();
    assert!(!group_by.is_empty() && group_by.len() <= 30, "{answer:#}");
    assert!(
        group_by.iter().any(|g| g["path"] == "ordered_at"),
        "{answer:#}"
    );
}

#[test]
fn the_text_form_shows_the_card() {
    let store = jaffle();
    let out = run(
        "slayer-search",
        &store.store,
        &[
            "--question",
            "how many large orders",
            "--channels",
            "entities,text",
            "--format",
            "text",
        ],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("\nAnswer: jaffle.orders.large_orders\n  Model: jaffle.orders\n  Formula: "),
        "{}",
        out.stdout
    );
}

#[test]
fn a_question_about_data_keeps_tables_first_and_no_card() {
    let store = jaffle();
    let r = search(&store, "which tables hold customer names", &[]);
    assert_eq!(r["intent"]["kind"], "catalog");
    let first = &r["entities"][0];
    assert_eq!(first["kind"], "model", "{r:#}");
    assert!(r.get("answer").is_none());
}

#[test]
fn a_head_of_zero_gives_back_the_evidence_order() {
    let store = jaffle();
    let arranged = search(&store, "how many large orders", &[]);
    let plain = search(
        &store,
        "how many large orders",
        &["--tuning", r#"{"answer_head": 0}"#],
    );
    assert!(plain.get("intent").is_none());
    assert_eq!(plain["entities"][0]["kind"], "model", "{plain:#}");
    // The same entities, the measure lifted out of the evidence's order.
    let mut a = ids(&arranged);
    let mut p = ids(&plain);
    assert!(p.contains(&"jaffle.orders.large_orders") || p.len() == 5);
    a.sort_unstable();
    p.sort_unstable();
    assert_ne!(a, p, "the head was arranged");
}

/// Cube's public Stripe schema (the benchmark's `cube_stripe`).
fn stripe() -> TempStore {
    imported("cube", "cube_stripe", "stripe")
}

#[test]
fn a_measure_named_in_jargon_is_found_by_plain_words() {
    // `expansionMrr` says neither "upsell" nor "upgrading"; the plain words of its name's
    // jargon in its `related` field do (slayer-index/src/reporting_terms.rs).
    let store = stripe();
    let r = search(
        &store,
        "upsell revenue from existing customers upgrading their plan",
        &[],
    );
    assert_eq!(
        ids(&r)[..2],
        [
            "stripe.StripeSaaSMetrics.expansionMrr",
            "stripe.StripeSaaSMetrics"
        ],
        "{r:#}"
    );
    // "downgrades" is `contraction`'s plain word: the measure reaches the head.
    let r = search(&store, "revenue lost to downgrades", &[]);
    let ids = ids(&r);
    assert!(
        ids[..4].contains(&"stripe.StripeSaaSMetrics.contractionMrr"),
        "{r:#}"
    );
}

#[test]
fn a_cube_s_count_answers_how_many_of_the_cube() {
    // `count` says only "count"; its cube's name says "Stripe customers", and so the question
    // does. `activeCustomers` says "customers" too, but it is not the cube's own figure.
    let store = stripe();
    let r = search(&store, "how many customers do we have in Stripe?", &[]);
    assert_eq!(ids(&r)[0], "stripe.StripeCustomers.count", "{r:#}");
}

#[test]
fn a_sum_of_ones_is_a_count_and_a_measure_named_as_another_computes_what_it_does() {
    // dbt writes a count as `agg: sum` of `expr: 1` (`order_count` = `sum(order_count_col)`,
    // the column's SQL `1`), and the `orders` metric as the name `order_count`: both count
    // orders, so both lead a "how many orders" question, ahead of sums of amounts.
    let store = jaffle();
    let r = search(&store, "how many orders did we get yesterday?", &[]);
    assert_eq!(
        ids(&r)[..2],
        ["jaffle.orders.orders", "jaffle.orders.order_count"],
        "{r:#}"
    );
}

#[test]
fn a_measure_over_a_filtered_helper_column_is_found_by_its_filter() {
    // Importers write a filtered measure as an aggregation of a hidden helper column that holds
    // the filter (`count(flagged_filtered)`, the column's filter `priority = 'urgent'`): what
    // the formula reads is indexed with the measure, so the filter's words find it.
    let store = crate::support::store_with_catalog(concat!(
        r#"{"kind":"datasource","name":"crm","type":"sqlite","database":"crm.db"}"#,
        "\n",
        r#"{"kind":"model","name":"cases","data_source":"crm","columns":[{"name":"id","type":"INT","primary_key":true},{"name":"priority","type":"TEXT"},{"name":"flagged_filtered","type":"INT","sql":"id","filter":"priority = 'urgent'","hidden":true},{"name":"open_filtered","type":"INT","sql":"id","filter":"state = 'open'","hidden":true}],"measures":[{"name":"flagged_cases","formula":"count(flagged_filtered)"},{"name":"open_cases","formula":"count(open_filtered)"},{"name":"case_count","formula":"count(id)"}]}"#,
        "\n"
    ));
    let r = search(&store, "how many urgent cases came in?", &[]);
    assert_eq!(ids(&r)[0], "crm.cases.flagged_cases", "{r:#}");
    // The helper column stays hidden, and the doc shows the formula, not the helper's SQL.
    let card = &r["entities"][0]["text"];
    assert_eq!(
        card,
        "Measure: crm.cases.flagged_cases\nFormula: count(flagged_filtered)"
    );
}
