//! Review of agent memories through the real binaries: the store setting, proposed saves that
//! no search returns, `review`, `approve` and `reject`, and their errors.

use serde_json::Value;

use crate::support::{Out, TempStore};

/// The memory ids a search returns, in every bucket.
fn searched(s: &TempStore, args: &[&str]) -> Vec<String> {
    let out = s.run("slayer-search", args, &[], None);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = out.json();
    ["memories", "example_queries"]
        .iter()
        .flat_map(|b| r[*b].as_array().unwrap().clone())
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect()
}

fn ok(out: Out) -> Out {
    assert_eq!(out.code, 0, "{}", out.stderr);
    out
}

fn save(s: &TempStore, extra: &[&str], learning: &str) -> String {
    let mut args = vec!["save", "--learning", learning, "--entities", "shop.orders"];
    args.extend(extra);
    args.extend(["--format", "json"]);
    let out = ok(s.memory(&args, None));
    out.json()["memory_id"].as_str().unwrap().to_owned()
}

#[test]
fn a_store_has_no_review_by_default() {
    let s = TempStore::with_catalog();
    let id = save(&s, &["--agent", "etl"], "Cobalt orders ship late.");
    assert_eq!(searched(&s, &["--question", "cobalt"]), [id]);
    let out = ok(s.memory(&["review"], None));
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .contains("0 proposed memories; review of agent memories is off"),
        "{}",
        out.stderr
    );
}

#[test]
fn with_review_on_an_agent_s_memory_waits_for_approval() {
    let s = TempStore::with_catalog();
    let out = ok(s.memory(&["review", "--require", "on"], None));
    assert_eq!(
        out.stdout,
        "Review of agent memories: on (a memory saved by an agent is proposed and waits for approval).\n"
    );
    let out = ok(s.memory(&["review", "--require", "on", "--format", "json"], None));
    assert_eq!(out.json(), serde_json::json!({"memory_review": "on"}));

    let out = ok(s.memory(
        &[
            "save",
            "--agent",
            "etl",
            "--learning",
            "Cobalt orders ship late.",
            "--entities",
            "shop.orders.amount",
        ],
        None,
    ));
    assert_eq!(
        out.stdout,
        "Saved memory 1 as proposed: no search returns it until a person approves it (slayer-memory approve 1).\nResolved entities: shop.orders.amount\n"
    );
    let out = ok(s.memory(
        &[
            "save",
            "--agent",
            "etl",
            "--learning",
            "Cobalt ships by sea.",
            "--entities",
            "shop",
            "--format",
            "json",
        ],
        None,
    ));
    assert_eq!(out.json()["proposed"], true, "{}", out.stdout);
    // A person's save is not reviewed.
    let person = save(&s, &[], "Cobalt is a region code.");
    assert_eq!(person, "3");
    let plain = ok(s.memory(
        &[
            "save",
            "--learning",
            "x",
            "--entities",
            "shop",
            "--format",
            "json",
        ],
        None,
    ));
    assert!(plain.json().get("proposed").is_none(), "{}", plain.stdout);

    no_search_sees_a_proposal(&s);
    proposals_are_listed_shown_and_exported(&s);
    the_review_queue_lists_them_oldest_first(&s);
    approved_ones_are_searched_at_once(&s);

    // Off again: agents' saves are searched as they come.
    ok(s.memory(&["review", "--require", "off"], None));
    let id = save(&s, &["--agent", "etl"], "Cobalt again.");
    assert!(searched(&s, &["--question", "cobalt again"]).contains(&id));
}

/// No search sees a proposal: by text, by tags, named, expanded or by recency.
fn no_search_sees_a_proposal(s: &TempStore) {
    assert_eq!(searched(s, &["--question", "cobalt"]), ["3"]);
    assert!(!searched(s, &["--entity", "shop.orders.amount"]).contains(&"1".to_owned()));
    assert!(
        !searched(s, &["--entity", "memory:1", "--max-memories", "50"]).contains(&"1".to_owned())
    );
    assert!(!searched(s, &["--max-memories", "50"]).contains(&"1".to_owned()));
    let out = ok(s.run("slayer-search", &["--expand-ids", "1"], &[], None));
    assert_eq!(
        out.json()["warnings"],
        serde_json::json!(["expand_ids: no memory with id '1'."])
    );
}

/// Listed, shown and exported as proposed.
fn proposals_are_listed_shown_and_exported(s: &TempStore) {
    let list = ok(s.memory(&["list"], None)).stdout;
    assert!(list.contains("agent=etl proposed=true"), "{list}");
    let show = ok(s.memory(&["show", "1"], None)).stdout;
    assert!(
        show.contains("Standing: agent=etl, proposed=true"),
        "{show}"
    );
    let export = ok(s.memory(&["export"], None)).stdout;
    assert!(
        export
            .lines()
            .next()
            .unwrap()
            .ends_with(r#""agent":"etl","proposed":true}"#),
        "{export}"
    );
}

/// The review queue: oldest first, with entities and owners.
fn the_review_queue_lists_them_oldest_first(s: &TempStore) {
    let out = ok(s.memory(&["review", "--format", "jsonl"], None));
    let records: Vec<Value> = out.lines();
    let ids: Vec<&str> = records.iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["1", "2"]);
    assert_eq!(
        records[0]["entities"],
        serde_json::json!(["shop.orders.amount"])
    );
    assert_eq!(records[0]["agent"], "etl");
    assert_eq!(records[0]["learning"], "Cobalt orders ship late.");
    assert!(records[0]["created_at"].as_str().unwrap().starts_with("20"));
    assert!(
        out.stderr
            .contains("2 proposed memories; review of agent memories is on"),
        "{}",
        out.stderr
    );
    let text = ok(s.memory(&["review"], None)).stdout;
    assert!(text.starts_with("Memory 1\nCreated: "), "{text}");
    assert!(
        text.contains("Entities: shop.orders.amount\n\nCobalt orders ship late.\n"),
        "{text}"
    );
    assert!(
        ok(s.memory(&["review", "--agent", "other", "--format", "jsonl"], None))
            .stdout
            .is_empty()
    );
    assert_eq!(
        ok(s.memory(&["review", "--agent", "etl", "--format", "jsonl"], None))
            .lines()
            .len(),
        2
    );
}

/// Approved: searched at once, and out of the queue.
fn approved_ones_are_searched_at_once(s: &TempStore) {
    let out = ok(s.memory(&["approve", "1", "1"], None));
    assert_eq!(out.stdout, "Approved memory 1.\n");
    let mut found = searched(s, &["--question", "cobalt late"]);
    found.sort();
    assert_eq!(found, ["1", "3"]);
    assert!(searched(s, &["--entity", "shop.orders.amount"]).contains(&"1".to_owned()));
    let ids: Vec<String> = ok(s.memory(&["review", "--format", "jsonl"], None))
        .lines()
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["2"]);
    let out = ok(s.memory(&["approve", "2", "--format", "json"], None));
    assert_eq!(out.json(), serde_json::json!({"approved": ["2"]}));
}

#[test]
fn propose_is_explicit_and_reject_deletes_as_forget_does() {
    let s = TempStore::with_catalog();
    let out = ok(s.memory(
        &[
            "save",
            "--propose",
            "--id",
            "kb.guess",
            "--learning",
            "Umber refunds are rare.",
            "--entities",
            "shop.orders",
        ],
        None,
    ));
    assert!(
        out.stdout.starts_with("Saved memory kb.guess as proposed"),
        "{}",
        out.stdout
    );
    // Another memory links to the proposal; rejecting strips the link, as forget does.
    save(&s, &[], "Umber links.");
    ok(s.memory(
        &[
            "save",
            "--id",
            "linker",
            "--learning",
            "See the guess.",
            "--entities",
            "shop, memory:kb.guess",
        ],
        None,
    ));
    assert!(searched(&s, &["--question", "umber refunds"])
        .iter()
        .all(|id| id != "kb.guess"));
    let out = ok(s.memory(&["reject", "kb.guess"], None));
    assert_eq!(out.stdout, "Rejected memory kb.guess: deleted.\n");
    let out = s.memory(&["show", "kb.guess"], None);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let linker = ok(s.memory(&["show", "linker", "--format", "json"], None)).json();
    assert_eq!(linker["entities"], serde_json::json!(["shop"]));
    assert!(ok(s.memory(&["review"], None)).stdout.is_empty());
    let out = ok(s.memory(
        &[
            "save",
            "--propose",
            "--id",
            "p2",
            "--learning",
            "y",
            "--entities",
            "shop",
        ],
        None,
    ));
    assert!(out.stdout.contains("as proposed"));
    let out = ok(s.memory(&["reject", "p2", "--format", "json"], None));
    assert_eq!(out.json(), serde_json::json!({"rejected": ["p2"]}));
}

#[test]
fn a_bad_id_names_itself_and_nothing_is_done() {
    let s = TempStore::with_catalog();
    save(&s, &["--propose"], "Proposed one.");
    save(&s, &[], "Plain one.");
    for command in ["approve", "reject"] {
        let out = s.memory(&[command, "1", "nope", "2"], None);
        assert_eq!(out.code, 1, "{}", out.stderr);
        let done = if command == "approve" {
            "approved"
        } else {
            "rejected"
        };
        assert_eq!(
            out.stderr,
            format!(
                "Error: No memory with id 'nope'. Memory '2' is not proposed (nothing about it awaits review). Nothing was {done}; `slayer-memory review` lists the proposed memories.\n"
            )
        );
        assert_eq!(out.stdout, "");
        let out = s.memory(&[command, "a:b"], None);
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(
            out.stderr
                .contains("memory id 'a:b': forbidden character ':'"),
            "{}",
            out.stderr
        );
    }
    // Memory 1 is still proposed, and still there.
    let queue = ok(s.memory(&["review", "--format", "jsonl"], None)).lines();
    assert_eq!(queue.len(), 1);
    assert_eq!(queue[0]["id"], "1");
    // Usage: no ids, --require with a filter, a bad position.
    for args in [
        &["approve"][..],
        &["reject"],
        &["review", "--require", "on", "--agent", "a"],
        &["review", "--require", "maybe"],
    ] {
        let out = s.memory(args, None);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
    }
}
