//! Issue 50 on a PostgreSQL store: `load --sync`, `ingest`, `--dry-run` and the shrink guard
//! behave as on a file, a re-run with nothing changed writes nothing, and a sync killed while
//! it holds the store's write lock leaves the store as it was.

use std::process::Stdio;

use super::{kill_while_writing, memory_count, Host, TeamDb};

fn changes(db: &TeamDb<'_>) -> String {
    db.server
        .query(&db.name, "SELECT coalesce(max(seq), 0) FROM slayer.changes")
}

#[test]
fn load_sync_and_ingest_converge_a_server_store() {
    let db = TeamDb::new("team_sync");
    let url = db.url();
    let host = Host::new();
    host.load_shop(&url);
    let out = host.ok(&url, "slayer-memory", &["ingest", "examples/kb"], None);
    assert!(
        out.stderr
            .contains("(5 added, 0 changed, 0 removed, 0 unchanged)"),
        "{}",
        out.stderr
    );
    let export = host
        .ok(
            &url,
            "slayer-index",
            &["export", "--datasource", "shop"],
            None,
        )
        .stdout;
    // Nothing changed: the change log does not move.
    let before = changes(&db);
    host.ok(&url, "slayer-memory", &["ingest", "examples/kb"], None);
    host.ok(
        &url,
        "slayer-index",
        &["load", "--sync", "-"],
        Some(&export),
    );
    assert_eq!(
        changes(&db),
        before,
        "a re-run with nothing changed writes nothing"
    );
    let without_stores: String = export
        .lines()
        .filter(|l| !l.contains("\"name\":\"stores\""))
        .map(|l| format!("{l}\n"))
        .collect();
    let dry = host.ok(
        &url,
        "slayer-index",
        &["load", "--sync", "--dry-run", "-"],
        Some(&without_stores),
    );
    assert!(
        dry.stdout
            .contains("\"change\":\"removed\",\"id\":\"shop.stores\""),
        "{}",
        dry.stdout
    );
    assert_eq!(changes(&db), before, "a dry run writes nothing");
    let out = host.ok(
        &url,
        "slayer-index",
        &["load", "--sync", "-"],
        Some(&without_stores),
    );
    assert!(
        out.stderr.contains("1 removed, 6 unchanged"),
        "{}",
        out.stderr
    );
    let models = db
        .server
        .query(&db.name, "SELECT count(*) FROM slayer.models");
    assert_eq!(models, "6");
    let first = format!("{}\n", export.lines().next().unwrap());
    let refused = host.run(&url, "slayer-index", &["load", "--sync", "-"], Some(&first));
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains("more than half"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_sync_killed_holding_the_write_lock_changes_nothing() {
    let db = TeamDb::new("team_sync_kill");
    let url = db.url();
    let host = Host::new();
    host.load_shop(&url);
    let lines = |n: usize, tag: &str| -> String {
        (0..n)
            .map(|i| format!("{{\"kind\": \"memory\", \"id\": \"bulk.{i}\", \"learning\": \"note {i} {tag}\", \"entities\": [\"shop.orders\"]}}\n"))
            .collect()
    };
    host.ok(
        &url,
        "slayer-memory",
        &["import", "-"],
        Some(&lines(3000, "old")),
    );
    let new = lines(20_000, "new");
    let child = host
        .process(
            &url,
            "slayer-memory",
            &["import", "-", "--sync", "bulk.", "--allow-shrink"],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    kill_while_writing(&db, child, new);
    assert_eq!(memory_count(&db), 3000, "a killed sync writes nothing");
    let renewed = db.server.query(
        &db.name,
        "SELECT count(*) FROM slayer.memories WHERE data LIKE '%new%'",
    );
    assert_eq!(renewed, "0");
}
