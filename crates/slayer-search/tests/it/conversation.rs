//! Memories from conversations (issue 63): event times and sessions saved, imported and
//! returned, the time rules (docs/spec/fusion.md §8.10), session neighbours (§8.11) and
//! supersession (docs/spec/search.md §9.14), on the real binaries.

use serde_json::{json, Value};

use crate::support::{ids, Fixture};

/// A short conversation saved a turn at a time: one session, in order, each turn dated.
fn conversation() -> Fixture {
    let f = Fixture::new();
    let turns = [
        (
            "t1",
            "Caroline: How did the kids like the museum trip?",
            "2023-07-06",
        ),
        (
            "t2",
            "Melanie: They loved the dinosaur bones and want to go back.",
            "2023-07-06",
        ),
        ("t3", "Caroline: I went hiking in the hills.", "2023-07-06"),
        (
            "t4",
            "Melanie: We went camping by the lake last weekend, kids loved it.",
            "2023-06-27",
        ),
        (
            "t5",
            "Melanie: Camping gear is stacked in the garage now.",
            "2023-03-02",
        ),
    ];
    let lines: Vec<String> = turns
        .iter()
        .enumerate()
        .map(|(i, (id, text, day))| {
            let session = if *id == "t4" || *id == "t5" {
                "s0"
            } else {
                "s1"
            };
            json!({"kind": "memory", "id": id, "learning": text, "entities": [],
                   "created_at": format!("2024-01-01T00:00:0{i}Z"),
                   "event_time": day, "session": session})
            .to_string()
        })
        .collect();
    f.raw_memory_import(&lines.join("\n"));
    f
}

/// The memory ids a text-channel search gives, with more flags.
fn ask(f: &Fixture, question: &str, more: &[&str]) -> Vec<String> {
    let mut args = vec!["--question", question, "--channels", "text"];
    args.extend(more);
    ids(&f.search(&args), "memories")
}

fn place(list: &[String], id: &str) -> usize {
    list.iter()
        .position(|x| x == id)
        .unwrap_or_else(|| panic!("{id} not in {list:?}"))
}

fn memories(r: &Value) -> Vec<Value> {
    r["memories"].as_array().unwrap().clone()
}

#[test]
fn an_event_time_and_session_are_imported_exported_and_returned_on_hits() {
    let f = conversation();
    let r = f.search(&["--question", "dinosaur bones", "--channels", "text"]);
    let hit = &memories(&r)[0];
    assert_eq!(hit["id"], "t2", "{r}");
    assert_eq!(hit["event_time"], "2023-07-06");
    assert_eq!(hit["session"], "s1");
    let exported = f.memory(&["export"]).stdout;
    let t2 = exported
        .lines()
        .find(|l| l.contains(r#""id":"t2""#))
        .unwrap();
    assert!(
        t2.ends_with(r#""event_time":"2023-07-06","session":"s1"}"#),
        "{t2}"
    );
    // A memory saved without them has neither, in a hit or in the export.
    let out = f.memory(&[
        "save",
        "--learning",
        "plain note on zebras",
        "--entities",
        "mydb",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = f.search(&["--question", "zebras", "--channels", "text"]);
    let hit = &memories(&r)[0];
    assert!(
        hit.get("event_time").is_none() && hit.get("session").is_none(),
        "{r}"
    );
    // The text form shows the event time.
    let text = f.raw(
        &[
            "--question",
            "dinosaur bones",
            "--channels",
            "text",
            "--format",
            "text",
        ],
        None,
    );
    assert!(
        text.stdout.contains("M t2 [2023-07-06] (score="),
        "{}",
        text.stdout
    );
}

#[test]
fn save_takes_an_event_time_and_refuses_one_that_is_not_a_time() {
    let f = Fixture::new();
    let out = f.memory(&[
        "save",
        "--learning",
        "Tim moved to Berlin",
        "--entities",
        "mydb",
        "--event-time",
        "2023-05",
        "--session",
        "chat-9",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let r = f.search(&["--question", "Berlin", "--channels", "text"]);
    assert_eq!(memories(&r)[0]["event_time"], "2023-05", "{r}");
    let out = f.memory(&[
        "save",
        "--learning",
        "x",
        "--entities",
        "mydb",
        "--event-time",
        "May 2023",
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("'May 2023' is not an event time; write a year (2023), a month (2023-05)"),
        "{}",
        out.stderr
    );
    // A session is a name, within limits.name_bytes.
    let long = "s".repeat(2000);
    let out = f.memory(&[
        "save",
        "--learning",
        "x",
        "--entities",
        "mydb",
        "--session",
        &long,
    ]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("session") && out.stderr.contains("2000 bytes"),
        "{}",
        out.stderr
    );
    let bad = r#"{"kind":"memory","id":"b","learning":"x","entities":[],"created_at":"2024-01-01T00:00:00Z","event_time":"yesterday"}"#;
    let out = crate::support::run("slayer-memory", &f.store, &["import", "-"], Some(bad));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("line 1: field 'event_time': 'yesterday' is not an event time"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_question_naming_a_month_ranks_that_month_first() {
    let f = conversation();
    let q = "What about camping in June 2023?";
    let ask = |tuning: &str| ask(&f, q, &["--tuning", tuning]);
    // Off, the word match decides: t5 says "camping" in fewer words; on, t4 of June passes it.
    let off = ask(r#"{"time_weight": 0, "neighbour_weight": 0}"#);
    assert!(place(&off, "t5") < place(&off, "t4"), "{off:?}");
    let on = ask(r#"{"neighbour_weight": 0}"#);
    assert!(place(&on, "t4") < place(&on, "t5"), "{on:?}");
    let explained = f.search(&[
        "--question",
        "What about camping in June 2023?",
        "--channels",
        "text",
        "--explain",
    ]);
    let first = &memories(&explained)[0];
    let channels: Vec<&str> = first["explain"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["channel"].as_str().unwrap())
        .collect();
    assert!(channels.contains(&"time"), "{first}");
}

#[test]
fn a_when_question_favours_the_memory_that_states_a_time_and_as_of_is_checked() {
    let f = conversation();
    let q = "When did Melanie go camping?";
    let ask = |tuning: &str| ask(&f, q, &["--as-of", "2024-01-01", "--tuning", tuning]);
    let off = ask(r#"{"time_weight": 0, "neighbour_weight": 0}"#);
    assert!(place(&off, "t5") < place(&off, "t4"), "{off:?}");
    // t4 says "last weekend".
    let on = ask(r#"{"neighbour_weight": 0}"#);
    assert!(place(&on, "t4") < place(&on, "t5"), "{on:?}");
    // A time past the calendar names no period; the search answers.
    for q in [
        "What was said 99999999999 years ago?",
        "What happened after May 2023?",
    ] {
        let r = f.search(&["--question", q, "--channels", "text"]);
        assert!(r["memories"].is_array(), "{r}");
    }
    let out = f.raw(&["--question", "when", "--as-of", "01/02/2024"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("as_of must be a day written YYYY-MM-DD, not '01/02/2024'"),
        "{}",
        out.stderr
    );
    // Refused with entities alone too.
    let out = f.raw(&["--entity", "mydb.orders", "--as-of", "yesterday"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("as_of must be a day"), "{}", out.stderr);
}

#[test]
fn the_memory_saved_after_a_hit_comes_beside_it() {
    let f = conversation();
    let ask = |tuning: &str| ask(&f, "museum trip", &["--tuning", tuning]);
    // Only t1 holds the words; its reply t2 comes beside it from the session.
    assert_eq!(ask(r#"{"neighbour_weight": 0}"#), ["t1"]);
    assert_eq!(ask("{}"), ["t1", "t2"]);
    // A cap of one keeps the hit alone; a neighbour in another session never comes.
    assert_eq!(
        self::ask(&f, "museum trip", &["--max-memories", "1"]),
        ["t1"]
    );
}

#[test]
fn a_newer_note_on_the_same_column_supersedes_the_older() {
    let f = Fixture::new();
    let lines = [
        json!({"kind": "memory", "id": "old", "learning": "orders amount is stored in cents",
               "entities": ["mydb.orders"], "created_at": "2023-01-01T00:00:00Z"}),
        json!({"kind": "memory", "id": "new",
               "learning": "orders amount is stored in dollars since the migration",
               "entities": ["mydb.orders"], "created_at": "2023-06-01T00:00:00Z"}),
        json!({"kind": "memory", "id": "other", "learning": "orders amount excludes tax",
               "entities": ["mydb.orders"], "created_at": "2024-01-01T00:00:00Z"}),
    ];
    let text: Vec<String> = lines.iter().map(Value::to_string).collect();
    f.raw_memory_import(&text.join("\n"));
    let r = f.search(&[
        "--question",
        "orders amount stored cents",
        "--channels",
        "text",
    ]);
    let hits = memories(&r);
    let order: Vec<String> = hits
        .iter()
        .map(|h| h["id"].as_str().unwrap().to_owned())
        .collect();
    // The newer takes the older's place (before it), and "excludes tax" says something else.
    assert!(place(&order, "new") < place(&order, "old"), "{r}");
    let old = hits.iter().find(|h| h["id"] == "old").unwrap();
    assert_eq!(old["superseded_by"], "new", "{r}");
    for h in hits.iter().filter(|h| h["id"] != "old") {
        assert!(h.get("superseded_by").is_none(), "{h}");
    }
    // A question about a named time asks what held then: the older is marked, not moved.
    let then = f.search(&[
        "--question",
        "orders amount stored cents in January 2023",
        "--channels",
        "text",
        "--explain",
    ]);
    let old = memories(&then)
        .into_iter()
        .find(|h| h["id"] == "old")
        .unwrap();
    assert_eq!(old["superseded_by"], "new", "{then}");
    let moved = old["explain"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["channel"] == "superseded");
    assert!(!moved, "{old}");
    // Supersession reads a fixed head, so a smaller cap still gives a prefix.
    for cap in ["1", "2", "3"] {
        let capped = f.search(&[
            "--question",
            "orders amount stored cents",
            "--channels",
            "text",
            "--max-memories",
            cap,
        ]);
        let n: usize = cap.parse().unwrap();
        assert_eq!(memories(&capped), hits[..n], "cap {cap}");
    }
}

/// The README's conversation (examples/conversation.sh), run as a user runs it.
#[test]
fn the_readme_conversation_answers_now_then_and_through_a_neighbour() {
    let out = std::process::Command::new("bash")
        .arg(crate::support::workspace_root().join("examples/conversation.sh"))
        .env("SLAYER_BIN", crate::kit::bin_dir())
        .env("SLAYER_MODEL_DIR", crate::support::models_dir())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answers: Vec<&str> = stdout.split("$ slayer-search").skip(1).collect();
    assert_eq!(answers.len(), 4, "{stdout}");
    let first = |answer: &str| {
        answer
            .lines()
            .find(|l| l.starts_with("  M "))
            .unwrap_or_default()
            .to_owned()
    };
    // Now: the newer note first, the older marked.
    assert!(
        first(answers[0]).starts_with("  M 5 [2024-03] (score="),
        "{stdout}"
    );
    assert!(
        answers[0].contains("M 4 [2023-11] (superseded by 5)"),
        "{stdout}"
    );
    // Then: November's note first.
    assert!(first(answers[1]).starts_with("  M 4 [2023-11]"), "{stdout}");
    // Through a neighbour: the reply saved after the dashboard note names the city.
    assert!(answers[3].contains("Lisbon"), "{stdout}");
}

/// A knowledge-base page's front matter gives the event time and session (`date:`, `session:`).
#[test]
fn an_ingested_page_carries_its_date_and_session() {
    let f = Fixture::new();
    let kb = tempfile::tempdir().unwrap();
    std::fs::write(
        kb.path().join("moves.md"),
        "---\ndate: 2023-05\nsession: standup-3\n---\nTim moved the nightly load to 4am.\n",
    )
    .unwrap();
    std::fs::write(
        kb.path().join("bad.md"),
        "---\ndate: last spring\n---\nNever read.\n",
    )
    .unwrap();
    let out = crate::support::run(
        "slayer-memory",
        &f.store,
        &["ingest", kb.path().to_str().unwrap()],
        None,
    );
    assert!(
        out.stderr.contains("'last spring' is not an event time"),
        "{}",
        out.stderr
    );
    let r = f.search(&["--question", "nightly load 4am", "--channels", "text"]);
    let hit = &memories(&r)[0];
    assert_eq!(hit["id"], "kb.moves", "{r}");
    assert_eq!(hit["event_time"], "2023-05");
    assert_eq!(hit["session"], "standup-3");
}
