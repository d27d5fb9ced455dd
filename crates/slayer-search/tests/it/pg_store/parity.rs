//! A store on a server answers as a file does; moving between them; refusals.

use serde_json::Value;

use super::*;
use crate::kit;

#[test]
fn export_and_import_round_trip_between_sqlite_and_postgresql() {
    let db = TeamDb::new("team_trip");
    let url = db.url();
    let host = Host::new();
    let file = kit::TempStore::new();
    let sqlite = file.store.to_str().unwrap().to_owned();
    host.load_shop(&sqlite);
    for (learning, entities, extra) in [
        ("orders ship from two stores", "shop.orders", vec![]),
        (
            "never join payments on order_id twice",
            "shop.payments,shop.orders",
            vec!["--tier", "procedural"],
        ),
        (
            "customers churn after 90 days",
            "shop.customers",
            vec!["--confidence", "0.4"],
        ),
    ] {
        let mut args = vec!["save", "--learning", learning, "--entities", entities];
        args.extend(extra);
        host.ok(&sqlite, "slayer-memory", &args, None);
    }
    let catalog_out = host.ok(&sqlite, "slayer-index", &["export"], None).stdout;
    let memories_out = host.ok(&sqlite, "slayer-memory", &["export"], None).stdout;
    host.ok(&url, "slayer-index", &["load", "-"], Some(&catalog_out));
    host.ok(&url, "slayer-memory", &["import", "-"], Some(&memories_out));
    assert_eq!(
        host.ok(&url, "slayer-index", &["export"], None).stdout,
        catalog_out
    );
    assert_eq!(
        host.ok(&url, "slayer-memory", &["export"], None).stdout,
        memories_out
    );
    // And back into a new file.
    let back = kit::TempStore::new();
    let back_path = back.store.to_str().unwrap().to_owned();
    host.ok(
        &back_path,
        "slayer-index",
        &["load", "-"],
        Some(&catalog_out),
    );
    host.ok(
        &back_path,
        "slayer-memory",
        &["import", "-"],
        Some(&memories_out),
    );
    assert_eq!(
        host.ok(&back_path, "slayer-memory", &["export"], None)
            .stdout,
        memories_out
    );
    // The same question, the same answer, file or server.
    assert_eq!(
        host.search(&sqlite, "order churn"),
        host.search(&url, "order churn")
    );
}

/// What `every_command_answers_on_a_server_as_on_a_file` runs against both stores, in order:
/// binary, arguments, stdin.
const COMMAND_SCRIPT: &[(&str, &[&str], Option<&str>)] = &[
    (
        "slayer-index",
        &["import-slayer", "examples/shop/slayer"],
        None,
    ),
    (
        "slayer-memory",
        &[
            "import",
            "crates/slayer-search/tests/fixtures/memories.jsonl",
        ],
        None,
    ),
    (
        "slayer-index",
        &["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"],
        None,
    ),
    (
        "slayer-memory",
        &[
            "save",
            "--format",
            "json",
            "--learning",
            "refunds post late",
            "--entities",
            "shop.orders,mydb.orders",
            "--tier",
            "procedural",
            "--confidence",
            "0.7",
            "--project",
            "billing",
            "--agent",
            "ci",
        ],
        None,
    ),
    (
        "slayer-memory",
        &[
            "save",
            "--format",
            "json",
            "--id",
            "tmp",
            "--learning",
            "scratch note",
            "--entities",
            "shop.stores",
        ],
        None,
    ),
    ("slayer-memory", &["forget", "--soft", "tmp"], None),
    ("slayer-memory", &["forget", "42"], None),
    // Review of agent memories: proposals no search returns until approved.
    ("slayer-memory", &["review", "--require", "on"], None),
    (
        "slayer-memory",
        &[
            "save",
            "--format",
            "json",
            "--id",
            "pending",
            "--agent",
            "ci",
            "--learning",
            "cobalt refunds settle weekly",
            "--entities",
            "shop.orders",
        ],
        None,
    ),
    (
        "slayer-memory",
        &[
            "save",
            "--id",
            "doubt",
            "--propose",
            "--learning",
            "cobalt refunds are rare",
            "--entities",
            "shop.orders",
        ],
        None,
    ),
    ("slayer-search", &["--question", "cobalt refunds"], None),
    ("slayer-memory", &["review", "--format", "jsonl"], None),
    ("slayer-memory", &["approve", "pending", "nope"], None),
    ("slayer-memory", &["approve", "pending"], None),
    ("slayer-memory", &["reject", "doubt"], None),
    ("slayer-memory", &["review", "--require", "off"], None),
    ("slayer-search", &["--question", "cobalt refunds"], None),
    ("slayer-memory", &["list", "--format", "json"], None),
    (
        "slayer-memory",
        &[
            "list",
            "--entity",
            "shop.orders",
            "--tiers",
            "procedural",
            "--deleted",
        ],
        None,
    ),
    ("slayer-memory", &["show", "tmp", "1"], None),
    (
        "slayer-index",
        &["show", "shop.orders", "mydb.orders.amount"],
        None,
    ),
    ("slayer-index", &["remove", "shop.supplies"], None),
    ("slayer-index", &["export"], None),
    ("slayer-memory", &["export"], None),
    ("slayer-embed", &["status", "--format", "json"], None),
    ("slayer-search", &["--question", "refunds on orders"], None),
    (
        "slayer-search",
        &[
            "--entity",
            "shop.orders",
            "--tiers",
            "procedural,lesson",
            "--project",
            "billing",
        ],
        None,
    ),
    (
        "slayer-search",
        &["--batch", "-"],
        Some("{\"question\": \"order amount\"}\n{\"entities\": [\"mydb.orders\"]}\n"),
    ),
    (
        "slayer-search",
        &["--plan", "auto", "--question", "customer emails, not test"],
        None,
    ),
];

#[test]
fn every_command_answers_on_a_server_as_on_a_file() {
    let db = TeamDb::new("team_commands");
    let url = db.url();
    let host = Host::new();
    let file = kit::TempStore::new();
    let sqlite = file.store.to_str().unwrap().to_owned();
    for (bin, args, stdin) in COMMAND_SCRIPT {
        let on_file = host.run(&sqlite, bin, args, *stdin);
        let on_server = host.run(&url, bin, args, *stdin);
        assert_eq!(
            (on_file.code, without_write_times(&on_file.stdout)),
            (on_server.code, without_write_times(&on_server.stdout)),
            "{bin} {args:?}: file: {}\nserver: {}",
            on_file.stderr,
            on_server.stderr
        );
    }
    // stats differs only in the store it names and where its caches are.
    let mut on_file = host
        .ok(
            &sqlite,
            "slayer-index",
            &["stats", "--format", "json"],
            None,
        )
        .json();
    let mut on_server = host
        .ok(&url, "slayer-index", &["stats", "--format", "json"], None)
        .json();
    for v in [&mut on_file, &mut on_server] {
        v["store"] = Value::Null;
        v["schema_version"] = Value::Null;
        v["index"]["path"] = Value::Null;
    }
    assert_eq!(on_file, on_server);
}

/// Review of agent memories on a server store: a proposal is seen by no host's search (each
/// with its own caches) until a person approves it; a rejected one is gone from the store.
#[test]
fn a_proposal_waits_for_approval_on_every_host() {
    let db = TeamDb::new("team_review");
    let url = db.url();
    let (host, other) = (Host::new(), Host::new());
    host.load_shop(&url);
    let on = host.ok(&url, "slayer-memory", &["review", "--require", "on"], None);
    assert!(
        on.stdout.starts_with("Review of agent memories: on"),
        "{}",
        on.stdout
    );
    let saved = host.ok(
        &url,
        "slayer-memory",
        &[
            "save",
            "--format",
            "json",
            "--agent",
            "etl",
            "--learning",
            "cobalt refunds settle weekly",
            "--entities",
            "shop.orders",
        ],
        None,
    );
    let id = saved.json()["memory_id"].as_str().unwrap().to_owned();
    assert_eq!(saved.json()["proposed"], true);
    for h in [&host, &other] {
        assert!(!memory_ids(&h.search(&url, "cobalt refunds")).contains(&id));
    }
    let queue = host.ok(
        &url,
        "slayer-memory",
        &["review", "--format", "jsonl"],
        None,
    );
    let queued: Vec<Value> = queue.lines();
    assert_eq!(queued.len(), 1, "{}", queue.stdout);
    assert_eq!(queued[0]["id"], id.as_str());
    assert_eq!(queued[0]["entities"], serde_json::json!(["shop.orders"]));
    other.ok(&url, "slayer-memory", &["approve", &id], None);
    for h in [&host, &other] {
        assert!(memory_ids(&h.search(&url, "cobalt refunds")).contains(&id));
    }
    let before = memory_count(&db);
    host.ok(
        &url,
        "slayer-memory",
        &[
            "save",
            "--propose",
            "--id",
            "doubt",
            "--learning",
            "x",
            "--entities",
            "shop",
        ],
        None,
    );
    let out = host.run(&url, "slayer-memory", &["reject", "doubt", &id], None);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr
            .contains(&format!("Memory '{id}' is not proposed")),
        "{}",
        out.stderr
    );
    assert_eq!(memory_count(&db), before + 1, "nothing was rejected");
    host.ok(&url, "slayer-memory", &["reject", "doubt"], None);
    assert_eq!(memory_count(&db), before);
}

#[test]
fn a_schema_holding_something_else_is_refused_and_left_alone() {
    let db = TeamDb::new("team_foreign");
    db.server.psql(
        &db.name,
        &format!("CREATE SCHEMA app AUTHORIZATION {WRITER}; CREATE TABLE app.users (id int); ALTER TABLE app.users OWNER TO {WRITER};"),
    );
    let url = db.url_as(WRITER, WRITER_PASSWORD, Some("app"));
    let host = Host::new();
    let out = host.run(
        &url,
        "slayer-memory",
        &["save", "--learning", "x", "--entities", "shop.orders"],
        None,
    );
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not a slayer store"), "{}", out.stderr);
    let tables = db.server.query(
        &db.name,
        "SELECT string_agg(table_name, ',') FROM information_schema.tables WHERE table_schema = 'app'",
    );
    assert_eq!(tables, "users");
    // A reader of a store that is not there is told so, and nothing is made.
    let missing = db.url_as(WRITER, WRITER_PASSWORD, Some("nothing_here"));
    let out = host.run(&missing, "slayer-search", &["--question", "x"], None);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("no store"), "{}", out.stderr);
}

#[test]
fn the_python_sdk_drives_the_mcp_server_on_a_postgresql_store() {
    let db = TeamDb::new("team_mcp");
    let url = db.url();
    let host = Host::new();
    host.ok(
        &url,
        "slayer-index",
        &["load", "crates/slayer-search/tests/fixtures/catalog.jsonl"],
        None,
    );
    host.ok(
        &url,
        "slayer-memory",
        &[
            "import",
            "crates/slayer-search/tests/fixtures/memories.jsonl",
        ],
        None,
    );
    let update = host.cache.path().join("shipments.jsonl");
    std::fs::write(
        &update,
        r#"{"kind":"model","name":"shipments","data_source":"mydb","sql_table":"shipments","description":"Warehouse shipments by carrier.","columns":[{"name":"carrier","type":"TEXT","description":"The shipping carrier."}]}"#,
    )
    .unwrap();
    let mut client = crate::mcp::sdk_script("mcp_client.py");
    client
        .arg(kit::bin_dir())
        .arg(&url)
        .arg(&update)
        .env("SLAYER_CACHE_DIR", host.cache.path())
        .env("SLAYER_NO_EMBED", "1");
    crate::mcp::assert_sdk_ok(client, "the MCP client");
}
