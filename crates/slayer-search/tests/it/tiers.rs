//! Memory tiers, scoping, the confidence floor, soft deletes and `expand_ids` (docs/spec/search.md
//! §9.11, docs/spec/search.md §9.11), on the real binaries.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::support::{ids, run_with_models, strings, Fixture, TempStore};

/// One memory of each tier, each holding a word no other memory has, tagged in mydb.
const TIERS: [(&str, &str); 7] = [
    ("observation", "zircon"),
    ("lesson", "quartz"),
    ("semantic", "basalt"),
    ("procedural", "granite"),
    ("crystal", "obsidian"),
    ("insight", "marble"),
    ("facet", "pumice"),
];

fn tiered(tier: &str, word: &str) -> String {
    let tier_field = if tier == "lesson" {
        String::new()
    } else {
        format!(r#","tier":"{tier}""#)
    };
    format!(
        r#"{{"kind":"memory","learning":"The {word} column of orders is audited weekly.","entities":["mydb.orders"],"created_at":"2026-02-01T00:00:00Z"{tier_field}}}"#
    )
}

fn with_tiers() -> Fixture {
    let f = Fixture::new();
    let lines: Vec<String> = TIERS.iter().map(|(t, w)| tiered(t, w)).collect();
    f.raw_memory_import(&lines.join("\n"));
    f
}

fn hits(r: &Value) -> Vec<Value> {
    let mut all: Vec<Value> = r["memories"].as_array().unwrap().clone();
    all.extend(r["example_queries"].as_array().unwrap().iter().cloned());
    all
}

#[test]
fn each_tier_is_found_by_what_only_it_holds_and_ids_carry_the_tier_prefix() {
    let f = with_tiers();
    for (tier, word) in TIERS {
        let r = f.search(&["--question", word, "--channels", "entities,text"]);
        let found = hits(&r);
        assert_eq!(found.len(), 1, "{tier}: {r}");
        assert_eq!(found[0]["tier"], tier, "{r}");
        let id = found[0]["id"].as_str().unwrap();
        let prefix = match tier {
            "observation" => "obs_",
            "semantic" => "sem_",
            "procedural" => "proc_",
            "crystal" => "crys_",
            "insight" => "ins_",
            "facet" => "fac_",
            _ => "",
        };
        if prefix.is_empty() {
            assert!(id.bytes().all(|b| b.is_ascii_digit()), "{id}");
        } else {
            assert_eq!(id, format!("{prefix}1"));
        }
    }
    // A tier not selected is not searched; SLAYER_HIGH_ORDER_SEARCH=false keeps lessons only.
    let r = f.search(&["--question", "basalt", "--tiers", "lesson,crystal"]);
    assert!(hits(&r).is_empty(), "{r}");
    let out = f.run(
        "slayer-search",
        &["--question", "basalt quartz", "--channels", "text"],
        &[("SLAYER_HIGH_ORDER_SEARCH", "false")],
        None,
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let found: Vec<Value> = hits(&out.json());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["tier"], "lesson");
    // Every tier in one search: each word's memory comes back, once.
    let all: Vec<&str> = TIERS.iter().map(|(_, w)| *w).collect();
    let r = f.search(&["--question", &all.join(" "), "--max-memories", "20"]);
    let mut tiers: Vec<String> = hits(&r)
        .iter()
        .map(|h| h["tier"].as_str().unwrap().to_owned())
        .collect();
    tiers.sort();
    let mut want: Vec<String> = TIERS.iter().map(|(t, _)| t.to_string()).collect();
    want.sort();
    assert_eq!(tiers, want, "{r}");
}

#[test]
fn the_confidence_floor_skips_untrusted_entries_and_soft_deletes_never_appear() {
    let f = Fixture::new();
    f.raw_memory_import(
        r#"{"kind":"memory","id":"low","learning":"Shipping weight is in grams.","entities":["mydb.orders"],"created_at":"2026-02-01T00:00:00Z","confidence":0.2}
{"kind":"memory","id":"gone","learning":"Shipping zones changed in May.","entities":["mydb.orders"],"created_at":"2026-02-01T00:00:00Z"}"#,
    );
    let shipping = ["--question", "shipping", "--channels", "entities,text"];
    let found = |r: &Value| -> Vec<String> {
        let mut ids = ids(r, "memories");
        ids.sort();
        ids
    };
    assert_eq!(found(&f.search(&shipping)), ["gone"]);
    let mut lower = shipping.to_vec();
    lower.extend(["--confidence-floor", "0.1"]);
    assert_eq!(found(&f.search(&lower)), ["gone", "low"]);
    let out = f.run(
        "slayer-search",
        &shipping,
        &[("SLAYER_CONFIDENCE_FLOOR", "0.15")],
        None,
    );
    assert_eq!(found(&out.json()), ["gone", "low"]);
    // A floor is a confidence: one outside 0..=1 would hide every memory, so it is refused.
    for floor in ["5", "-0.1"] {
        let mut bad = shipping.to_vec();
        bad.extend(["--confidence-floor", floor]);
        let out = f.run("slayer-search", &bad, &[], None);
        assert_eq!(out.code, 2, "{}", out.stderr);
        assert!(
            out.stderr.contains(&format!(
                "confidence_floor must be a number from 0 to 1, not {floor}"
            )),
            "{}",
            out.stderr
        );
    }
    // Recency and named refs obey the floor too.
    let r = f.search(&["--max-memories", "50"]);
    assert!(!ids(&r, "memories").contains(&"low".to_owned()), "{r}");

    let out = f.memory(&["forget", "--soft", "gone"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "Soft-deleted memory gone.\n");
    assert!(found(&f.search(&lower)) == ["low"]);
    let r = f.search(&["--entity", "memory:gone", "--max-memories", "50"]);
    assert!(!ids(&r, "memories").contains(&"gone".to_owned()), "{r}");
    let r = f.search(&["--expand-ids", "gone"]);
    assert_eq!(
        strings(&r["warnings"]),
        ["expand_ids: no memory with id 'gone'."]
    );
    // Kept in the store and in exports, and restored by importing it without the flag.
    let export = f.memory(&["export"]).stdout;
    let line = export
        .lines()
        .find(|l| l.contains(r#""id":"gone""#))
        .unwrap();
    assert!(line.ends_with(r#","deleted":true}"#), "{line}");
    f.raw_memory_import(&line.replace(r#","deleted":true"#, ""));
    assert_eq!(found(&f.search(&lower)), ["gone", "low"]);
}

/// Two projects, two agents each, plus shared memories. A scoped search must give exactly
/// the ids and scores that an unscoped search gives on a store holding only what the scope
/// may see: nothing outside it is returned, counted or moves a score.
#[test]
fn a_scoped_search_equals_a_search_of_a_store_holding_only_the_scope() {
    let owners = [
        (None, None),
        (Some("p1"), None),
        (Some("p1"), Some("a1")),
        (Some("p1"), Some("a2")),
        (Some("p2"), None),
        (Some("p2"), Some("a1")),
        (None, Some("a2")),
    ];
    let words = ["revenue", "refund", "orders", "customer", "email", "status"];
    let mut lines = Vec::new();
    for (i, (project, agent)) in owners.iter().enumerate() {
        for (j, word) in words.iter().enumerate() {
            let tier = ["lesson", "semantic", "crystal"][(i + j) % 3];
            let mut m = json!({
                "kind": "memory",
                "id": format!("m{i}_{j}"),
                "learning": format!("{word} note {i} {j}: {} of {}", words[(i * j) % 6], words[(i + 2 * j) % 6]),
                "entities": [format!("mydb.orders.{}", ["amount", "status"][j % 2])],
                "created_at": "2026-02-01T00:00:00Z",
                "tier": tier,
            });
            if let Some(p) = project {
                m["project"] = json!(p);
            }
            if let Some(a) = agent {
                m["agent"] = json!(a);
            }
            lines.push((project, agent, m.to_string()));
        }
    }
    let full = Fixture::new();
    let all: Vec<&str> = lines.iter().map(|(_, _, l)| l.as_str()).collect();
    full.raw_memory_import(&all.join("\n"));
    let embed = |f: &Fixture| {
        let out = f.with_model("slayer-embed", &["refresh", "--all"], None);
        assert_eq!(out.code, 0, "{}", out.stderr);
    };
    embed(&full);
    for (project, agent) in [("p1", "a1"), ("p2", "a1"), ("p1", "a2")] {
        let visible: Vec<&str> = lines
            .iter()
            .filter(|(p, a, _)| p.is_none_or(|p| p == project) && a.is_none_or(|a| a == agent))
            .map(|(_, _, l)| l.as_str())
            .collect();
        let only = Fixture::new();
        only.raw_memory_import(&visible.join("\n"));
        embed(&only);
        for question in ["revenue refund", "customer email status", "orders"] {
            let common = [
                "--question",
                question,
                "--entity",
                "mydb.orders.amount",
                "--max-memories",
                "100",
                "--max-example-queries",
                "100",
                "--max-entities",
                "20",
            ];
            let mut scoped = common.to_vec();
            scoped.extend(["--project", project, "--agent", agent]);
            let a = full.dense_search(&scoped);
            let b = only.dense_search(&common);
            // Equal to within 1e-3: the scoped index's statistics sum field lengths as tantivy
            // stores them (quantised past a few dozen tokens) where an unscoped one reads the
            // exact total, as the datasource filter always has. A leak moves scores far more.
            let scores = |r: &Value, bucket: &str| -> BTreeMap<String, f64> {
                r[bucket]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| {
                        (
                            h["id"].as_str().unwrap().to_owned(),
                            h["score"].as_f64().unwrap(),
                        )
                    })
                    .collect()
            };
            for bucket in ["memories", "entities"] {
                let (sa, sb) = (scores(&a, bucket), scores(&b, bucket));
                let what = format!("{project}/{agent} {question:?} {bucket}: {sa:?} vs {sb:?}");
                assert!(sa.keys().eq(sb.keys()), "{what}");
                for (x, y) in sa.values().zip(sb.values()) {
                    assert!((x - y).abs() <= 1e-3 * x.abs().max(1.0), "{what}");
                }
            }
            assert!(!scores(&a, "memories").is_empty());
        }
    }
}

#[test]
fn expand_ids_returns_any_mix_of_tiers_and_show_takes_many_ids() {
    let f = with_tiers();
    f.raw_memory_import(
        r#"{"kind":"memory","id":"theirs","learning":"Private note.","entities":["mydb"],"created_at":"2026-02-01T00:00:00Z","agent":"b"}"#,
    );
    let r = f.search(&[
        "--expand-ids",
        "crys_1,sem_1,obs_1,nope,theirs",
        "--agent",
        "a",
    ]);
    let expanded: Vec<(String, String)> = r["expanded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["id"].as_str().unwrap().to_owned(),
                m["tier"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        expanded,
        [
            ("crys_1".to_owned(), "crystal".to_owned()),
            ("sem_1".to_owned(), "semantic".to_owned()),
            ("obs_1".to_owned(), "observation".to_owned()),
        ]
    );
    assert!(r["expanded"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("The obsidian column"));
    // Not found and not yours read the same; no recency search runs.
    assert_eq!(
        strings(&r["warnings"]),
        [
            "expand_ids: no memory with id 'nope'.",
            "expand_ids: no memory with id 'theirs'."
        ]
    );
    assert!(ids(&r, "memories").is_empty());
    // A named reference to another agent's memory reads as one to no memory at all.
    let theirs = f.search(&["--entity", "memory:theirs", "--agent", "a"]);
    let nothing = f.search(&["--entity", "memory:nothing", "--agent", "a"]);
    assert_eq!(theirs["resolved_input_entities"], json!([]));
    assert_eq!(
        strings(&theirs["warnings"])[0],
        strings(&nothing["warnings"])[0].replace("nothing", "theirs")
    );
    let own = f.search(&["--entity", "memory:theirs", "--agent", "b"]);
    assert_eq!(own["resolved_input_entities"], json!(["memory:theirs"]));
    let out = f.memory(&["show", "sem_1", "1", "--format", "jsonl"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(shown[0]["tier"], "semantic");
    assert_eq!(shown[1]["id"], "1");
    assert!(
        shown[1].get("tier").is_none(),
        "a lesson's tier is left out"
    );
}

#[test]
fn tiered_memories_round_trip_through_export_and_import_byte_for_byte() {
    let f = with_tiers();
    f.raw_memory_import(
        r#"{"kind":"memory","id":"x","learning":"Owned.","entities":["mydb"],"created_at":"2026-02-01T00:00:00Z","tier":"insight","confidence":0.75,"strength":0.5,"project":"p","agent":"a","deleted":true}"#,
    );
    let first = f.memory(&["export"]).stdout;
    let other = TempStore::new();
    let out = run_with_models(
        "slayer-memory",
        &other.store,
        &["import", "-"],
        Some(&first),
        std::path::Path::new("/nonexistent"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let again = run_with_models(
        "slayer-memory",
        &other.store,
        &["export"],
        None,
        std::path::Path::new("/nonexistent"),
    );
    assert_eq!(first, again.stdout);
    assert!(first.contains(r#""tier":"insight","confidence":0.75,"strength":0.5,"project":"p","agent":"a","deleted":true}"#), "{first}");
    // Bad values name their field and change nothing.
    let bad = f.run(
        "slayer-memory",
        &["import", "-"],
        &[],
        Some(r#"{"kind":"memory","learning":"x","entities":["mydb"],"confidence":1.5}"#),
    );
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr
            .contains("field 'confidence': confidence must be a number from 0 to 1; got 1.5"),
        "{}",
        bad.stderr
    );
    let bad = f.run(
        "slayer-memory",
        &["import", "-"],
        &[],
        Some(r#"{"kind":"memory","learning":"x","entities":["mydb"],"tier":"myth"}"#),
    );
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("unknown variant `myth`"),
        "{}",
        bad.stderr
    );
}

/// Issue 49: the planner's gating and feedback statistics are the scope's. A session locked
/// to project alpha plans exactly as on a store holding only what alpha may see, though
/// project beta's memory is the only one holding a word of the question.
#[test]
fn a_planned_search_counts_only_what_its_scope_may_see() {
    let memory = |id: &str, learning: &str, project: &str| {
        json!({"kind": "memory", "id": id, "learning": learning, "project": project,
            "entities": ["mydb.orders.amount"], "created_at": "2026-02-01T00:00:00Z"})
        .to_string()
    };
    let alpha = [
        memory("a1", "Refund amounts are posted weekly.", "alpha"),
        memory(
            "a2",
            "Refund amount by customer region lives in orders.",
            "alpha",
        ),
        memory("a3", "Order status moves from placed to shipped.", "alpha"),
    ];
    let beta = [
        memory("b1", "Zephyr refunds come from the legacy system.", "beta"),
        memory("b2", "Refund amount status for zephyr accounts.", "beta"),
    ];
    let full = Fixture::new();
    full.raw_memory_import(&[alpha.join("\n"), beta.join("\n")].join("\n"));
    let only = Fixture::new();
    only.raw_memory_import(&alpha.join("\n"));
    let plan_args = [
        "--plan",
        "auto",
        "--question",
        "zephyr refund amounts by status",
        "--explain",
    ];
    let mut scoped = plan_args.to_vec();
    scoped.extend(["--project", "alpha"]);
    let a = full.search(&scoped);
    let b = only.search(&plan_args);
    assert_eq!(
        a["plan"]["plan"], b["plan"]["plan"],
        "the gated plan, with its df"
    );
    assert_eq!(a["plan"]["decisions"], b["plan"]["decisions"]);
    assert_eq!(ids(&a, "memories"), ids(&b, "memories"));
    let zephyr = a["plan"]["plan"]["anchors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["text"] == "zephyr")
        .cloned()
        .unwrap_or_default();
    assert!(zephyr.is_null() || zephyr["df"] == 0, "{zephyr}");
}
