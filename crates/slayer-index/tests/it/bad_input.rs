//! Bad input: `line N: …` on stderr, exit 2, nothing written.

use predicates::str::contains;
use slayer_common::store::SCHEMA_VERSION;

use crate::support::TempStore;

fn rejects(input: &str, message: &str) {
    let s = TempStore::new();
    s.cmd(&["load"])
        .write_stdin(input)
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains(message))
        .stderr(contains("nothing was written"));
    assert!(
        !s.store.exists(),
        "a rejected load must not create the store"
    );
}

#[test]
fn each_kind_of_bad_line_is_named() {
    rejects("\n{\"kind\":\"widget\"}\n", "line 2: unknown kind 'widget'");
    rejects(
        "{\"kind\":\"datasource\"}",
        "line 1: datasource record: missing field `name`",
    );
    rejects(
        "{\"kind\":\"datasource\",\"name\":\"a.b\"}",
        "line 1: datasource record: field 'name' 'a.b' contains '.'",
    );
    rejects(
        "{\"kind\":\"model\",\"name\":\"o\",\"data_source\":\"d\",\"columns\":[{\"name\":\"a:b\"}]}",
        "line 1: model record 'o': field 'columns[0].name' 'a:b' contains ':'",
    );
    rejects(
        "{\"kind\":\"datasource\",\"name\":\"d\"}\n{oops",
        "line 2: invalid JSON at column 2",
    );
    rejects("[1,2]", "line 1: expected a JSON object");
    // A newline in a name would inject lines into the rendered doc.
    rejects(
        "{\"kind\":\"model\",\"name\":\"o\",\"data_source\":\"d\",\"columns\":[{\"name\":\"a\\nInjected line\"}]}",
        "line 1: model record 'o': field 'columns[0].name' 'a\\nInjected line' contains the control character U+000A",
    );
    rejects(
        "{\"kind\":\"model\",\"name\":\"o\",\"data_source\":\"d\",\"columns\":[{\"name\":\"a\",\"distinct_count\":-3}]}",
        "line 1: model record 'o': field 'columns[0].distinct_count': -3 is negative",
    );
    rejects(
        "{\"kind\":\"memory\",\"id\":\"1\",\"learning\":\"x\",\"created_at\":\"2026-01-01T00:00:00Z\"}",
        "line 1: memory records are written by `slayer-memory import`",
    );
}

#[test]
fn every_bad_line_is_reported_in_one_run() {
    let s = TempStore::new();
    let out = s
        .cmd(&["load"])
        .write_stdin(
            "{\"kind\":\"x\"}\n{\"kind\":\"datasource\",\"name\":\"ok\"}\n{\"kind\":\"y\"}\n",
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("line 1:") && stderr.contains("line 3:"),
        "{stderr}"
    );
}

#[test]
fn a_model_without_its_datasource_is_rejected_and_rolled_back() {
    let s = TempStore::new();
    s.cmd(&["load"])
        .write_stdin("{\"kind\":\"datasource\",\"name\":\"d\"}")
        .assert()
        .success();
    s.cmd(&["load"])
        .write_stdin("{\"kind\":\"datasource\",\"name\":\"e\"}\n{\"kind\":\"model\",\"name\":\"o\",\"data_source\":\"nope\"}")
        .assert()
        .code(2)
        .stderr(contains("line 2: model 'o' belongs to datasource 'nope'"));
    assert_eq!(
        s.stats_json()["datasources"],
        1,
        "the whole load was rolled back"
    );
}

#[test]
fn a_store_from_a_newer_slayer_is_refused() {
    let s = TempStore::new();
    s.cmd(&["load"]).write_stdin("").assert().success();
    rusqlite::Connection::open(&s.store)
        .unwrap()
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    s.cmd(&["stats"]).assert().code(1).stderr(contains(format!(
        "schema version {}, newer than this slayer understands ({SCHEMA_VERSION}); upgrade slayer",
        SCHEMA_VERSION + 1
    )));
}

#[test]
fn reading_a_missing_store_says_how_to_make_one() {
    TempStore::new()
        .cmd(&["stats"])
        .assert()
        .code(1)
        .stderr(contains("no store at"))
        .stderr(contains("slayer-index load"));
}

#[test]
fn exporting_an_unknown_datasource_is_bad_input_that_names_the_known_ones() {
    let s = TempStore::new();
    s.cmd(&["load"])
        .write_stdin("{\"kind\":\"datasource\",\"name\":\"shop\"}\n")
        .assert()
        .success();
    s.cmd(&["export", "--datasource", "nope"])
        .assert()
        .code(2)
        .stdout("")
        .stderr("Error: --datasource: no datasource 'nope' in the store; it holds: shop\n");
}

#[test]
fn only_an_absent_or_empty_file_becomes_a_store() {
    let s = TempStore::new();
    // Another program's database with no tables left in it is still its database.
    let conn = rusqlite::Connection::open(&s.store).unwrap();
    conn.execute_batch("CREATE TABLE t(x); DROP TABLE t;")
        .unwrap();
    drop(conn);
    let before = std::fs::read(&s.store).unwrap();
    assert!(!before.is_empty());
    s.cmd(&["load"])
        .write_stdin("{\"kind\":\"datasource\",\"name\":\"shop\"}\n")
        .assert()
        .code(1)
        .stderr(contains(
            "is not a slayer store (an empty SQLite database; slayer makes a store only of an absent or 0-byte file)",
        ));
    assert_eq!(std::fs::read(&s.store).unwrap(), before, "left as it was");

    // A 0-byte file (made by `touch`, or by a writer that died before its first commit) is
    // taken.
    std::fs::write(&s.store, b"").unwrap();
    s.cmd(&["load"])
        .write_stdin("{\"kind\":\"datasource\",\"name\":\"shop\"}\n")
        .assert()
        .success();
    assert_eq!(s.stats_json()["datasources"], 1);
}
