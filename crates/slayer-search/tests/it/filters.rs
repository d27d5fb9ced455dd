//! The datasource filter, hidden entities, stale tags and per-bucket invariance.

use serde_json::json;

use crate::support::{ids, strings, Fixture};

#[test]
fn a_datasource_is_a_namespace_not_a_prefix() {
    let f = Fixture::new();
    let r = f.search(&["--question", "sales revenue", "--datasource", "prod"]);
    assert_eq!(ids(&r, "memories"), ["4"]);
    assert!(
        ids(&r, "entities")
            .iter()
            .all(|e| e == "prod" || e.starts_with("prod.")),
        "{r}"
    );
    let r = f.search(&["--question", "sales revenue", "--datasource", "prod_v2"]);
    assert_eq!(ids(&r, "memories"), ["5"]);
    let r = f.search(&["--datasource", "prod"]);
    assert_eq!(
        ids(&r, "memories"),
        ["4"],
        "recency is filtered too; the untagged memory drops out"
    );
    let out = f.raw(&["--question", "x", "--datasource", "nope"], None);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr,
        "Error: datasource 'nope' not found; known: ['mydb', 'prod', 'prod_v2'].\n"
    );
}

#[test]
fn named_refs_outside_the_datasource_drop_with_warnings() {
    let f = Fixture::new();
    let r = f.search(&[
        "--entity",
        "prod_v2.sales.revenue",
        "--entity",
        "memory:5",
        "--entity",
        "prod.sales.revenue",
        "--datasource",
        "prod",
    ]);
    assert_eq!(ids(&r, "entities"), ["prod.sales.revenue"]);
    assert_eq!(ids(&r, "memories"), ["4"]);
    assert_eq!(
        strings(&r["warnings"]),
        [
            "memory:5 is not rooted at datasource 'prod'; dropped.",
            "entity 'prod_v2.sales.revenue' is not rooted at datasource 'prod'; dropped from entities bucket."
        ]
    );
}

#[test]
fn idf_comes_from_the_filtered_subset() {
    let f = Fixture::new();
    // Unrouted: a routed search would be the filtered one (docs/spec/fusion.md §8.7).
    let all = f.search(&[
        "--question",
        "revenue",
        "--explain",
        "--max-entities",
        "20",
        "--tuning",
        r#"{"routing": {"entities": 0}}"#,
    ]);
    let only = f.search(&[
        "--question",
        "revenue",
        "--explain",
        "--datasource",
        "prod",
        "--max-entities",
        "20",
    ]);
    let raw = |r: &serde_json::Value, id: &str| {
        r["entities"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .unwrap()["explain"][0]["raw_score"]
            .as_f64()
            .unwrap()
    };
    assert_ne!(
        raw(&all, "prod.sales.revenue"),
        raw(&only, "prod.sales.revenue")
    );
}

#[test]
fn hidden_entities_drop_but_their_tags_still_rank_memories() {
    let f = Fixture::new();
    let r = f.search(&[
        "--entity",
        "mydb.orders.secret",
        "--entity",
        "mydb.internal.x",
        "--entity",
        "mydb.internal",
    ]);
    assert_eq!(r["entities"], json!([]));
    assert_eq!(
        strings(&r["warnings"]),
        [
            "entity 'mydb.orders.secret' is on a hidden column; dropped from entities bucket.",
            "entity 'mydb.internal.x' is on a hidden model; dropped from entities bucket.",
            "entity 'mydb.internal' is on a hidden model; dropped from entities bucket."
        ]
    );
    let r = f.search(&["--question", "internal flag"]);
    assert!(!ids(&r, "entities").contains(&"mydb.orders.secret".to_owned()));
}

#[test]
fn stale_tags_are_ignored_without_write_back() {
    let f = Fixture::new();
    let r = f.search(&["--entity", "mydb.orders.quantity"]);
    assert_eq!(ids(&r, "example_queries"), ["6"]);
    assert_eq!(
        r["example_queries"][0]["matched_entities"],
        json!(["mydb.orders.quantity"])
    );
    // Removing the column leaves the tag in storage; search ignores it.
    let shown = f.memory(&["show", "6", "--format", "json"]);
    let m: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        m["entities"],
        json!(["mydb.orders.gone_col", "mydb.orders.quantity"])
    );
    let r = f.search(&["--entity", "memory:6", "--max-example-queries", "1"]);
    assert_eq!(
        r["example_queries"][0]["matched_entities"],
        json!(["memory:6"])
    );
}

#[test]
fn each_bucket_depends_only_on_its_own_cap() {
    let f = Fixture::new();
    let base = [
        "--entity",
        "orders.amount",
        "--entity",
        "orders.status",
        "--question",
        "revenue orders refunded dollars",
    ];
    let run = |m: &str, q: &str, e: &str| {
        let mut args: Vec<&str> = base.to_vec();
        args.extend([
            "--max-memories",
            m,
            "--max-example-queries",
            q,
            "--max-entities",
            e,
        ]);
        f.search(&args)
    };
    for m in ["0", "1", "3"] {
        let reference = run(m, "2", "5");
        for (q, e) in [("0", "0"), ("5", "1"), ("1", "10")] {
            assert_eq!(
                run(m, q, e)["memories"],
                reference["memories"],
                "memories with cap {m} moved when others changed"
            );
        }
    }
    for e in ["0", "2", "4"] {
        let reference = run("5", "2", e);
        for (m, q) in [("0", "0"), ("9", "9")] {
            assert_eq!(run(m, q, e)["entities"], reference["entities"]);
        }
    }
    // A smaller cap gives a prefix of a larger one.
    let small = run("1", "1", "2");
    let large = run("5", "5", "10");
    assert_eq!(
        small["entities"].as_array().unwrap()[..],
        large["entities"].as_array().unwrap()[..2]
    );
}

#[test]
fn names_in_warnings_are_quoted_as_python_repr_quotes_them() {
    // A backslash or a tab once came out raw ('a\b'); Python writes 'a\\b' and 'x\ty'.
    let f = Fixture::new();
    let r = f.search(&[
        "--entity",
        "no\\such",
        "--entity",
        "x\ty",
        "--max-entities",
        "0",
    ]);
    let warnings = strings(&r["warnings"]);
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("entity 'no\\\\such' dropped: ")),
        "{warnings:?}"
    );
    assert!(
        warnings
            .iter()
            .any(|w| w.starts_with("entity 'x\\ty' dropped: ")),
        "{warnings:?}"
    );
}

/// Without `--datasource`, a question whose first entities all lie under one datasource gets
/// the entities of the search filtered to it, and `--explain` says why; a question that two
/// datasources answer alike stays across datasources. Routing only replaces the entities, and
/// an explicit datasource is never routed.
#[test]
fn a_question_without_a_datasource_is_routed_when_one_clearly_leads() {
    let f = Fixture::new();
    let routed = f.search(&["--question", "order amount", "--explain"]);
    assert_eq!(routed["routing"]["routed"], "mydb", "{routed}");
    assert_eq!(
        routed["routing"]["why"],
        "only mydb has entities among the first 10"
    );
    let filtered = f.search(&["--question", "order amount", "--datasource", "mydb"]);
    assert_eq!(ids(&routed, "entities"), ids(&filtered, "entities"));
    let unrouted = f.search(&[
        "--question",
        "order amount",
        "--tuning",
        r#"{"routing": {"entities": 0}}"#,
    ]);
    assert_eq!(ids(&unrouted, "memories"), ids(&routed, "memories"));
    let close = f.search(&["--question", "sales revenue", "--explain"]);
    assert!(close["routing"].get("routed").is_none(), "{close}");
    let names: Vec<&str> = close["routing"]["datasources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["prod", "prod_v2", "mydb"]);
    // Close: each of the first two answers on its own, merged by score.
    assert_eq!(
        close["routing"]["split"],
        serde_json::json!(["prod", "prod_v2"])
    );
    let entities = ids(&close, "entities");
    assert!(
        entities.contains(&"prod.sales".to_owned())
            && entities.contains(&"prod_v2.sales".to_owned())
    );
    // Named entities stay in reach: a request that names one is not routed.
    let named = f.search(&[
        "--question",
        "order amount",
        "--entity",
        "prod.sales",
        "--explain",
    ]);
    assert!(named.get("routing").is_none(), "{named}");
    // No routing without --explain in the output, and none under an explicit datasource.
    assert!(f
        .search(&["--question", "order amount"])
        .get("routing")
        .is_none());
    assert!(filtered.get("routing").is_none());
}
