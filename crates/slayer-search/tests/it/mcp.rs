//! `slayer-search mcp`: driven by the official MCP Python SDK (a real client), and on the wire
//! by hand for what a client library never sends (bad JSON, bad messages, old versions).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::kit::{bin_dir, workspace_root};
use crate::support::Fixture;

/// The Python with the `mcp` SDK that `scripts/fetch-mcp-client.sh` installs.
pub(crate) fn sdk_python() -> PathBuf {
    if let Some(python) = std::env::var_os("SLAYER_MCP_PYTHON") {
        return python.into();
    }
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache"));
    let python = cache.join("slayer/mcp-client/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/fetch-mcp-client.sh (it installs the MCP Python SDK into \
         that virtual environment), or point SLAYER_MCP_PYTHON at a Python that has `mcp`",
        python.display()
    );
    python
}

/// `tests/<script>` of slayer-search, run by the SDK's Python: the caller adds its arguments.
pub(crate) fn sdk_script(script: &str) -> Command {
    let mut command = Command::new(sdk_python());
    command.arg(
        workspace_root()
            .join("crates/slayer-search/tests")
            .join(script),
    );
    command
}

/// Runs an SDK script and asserts it succeeded, saying `ok` last.
pub(crate) fn assert_sdk_ok(mut command: Command, what: &str) {
    let out = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.trim_end().ends_with("ok"),
        "{what} failed:\n{stderr}\n{stdout}"
    );
}

#[test]
fn the_python_sdk_drives_the_server() {
    let f = Fixture::new();
    let update = f.dir.path().join("shipments.jsonl");
    std::fs::write(
        &update,
        r#"{"kind":"model","name":"shipments","data_source":"mydb","sql_table":"shipments","description":"Warehouse shipments by carrier.","columns":[{"name":"carrier","type":"TEXT","description":"The shipping carrier."}]}"#,
    )
    .unwrap();
    let mut client = sdk_script("mcp_client.py");
    client.arg(bin_dir()).arg(&f.store).arg(&update);
    assert_sdk_ok(client, "the MCP client");
}

/// `tools/list` and the instructions, whole: what a model reads to pick a tool, pinned so a
/// change to any description or argument is seen in review. `UPDATE_GOLDENS=1` rewrites it.
#[test]
fn the_tool_listing_is_the_golden_one() {
    let f = Fixture::new();
    let replies = session(
        &f,
        &[
            initialize("2025-06-18"),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
        ],
    );
    let listing = json!({
        "instructions": reply(&replies, 1)["result"]["instructions"],
        "tools": reply(&replies, 2)["result"]["tools"],
    });
    let actual = serde_json::to_string_pretty(&listing).unwrap() + "\n";
    let path = workspace_root().join("crates/slayer-search/tests/golden/mcp-tools.json");
    if std::env::var_os("UPDATE_GOLDENS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|_| panic!("missing {}; run with UPDATE_GOLDENS=1", path.display()));
    assert_eq!(
        actual, expected,
        "tools/list differs from the golden (UPDATE_GOLDENS=1 rewrites it)"
    );
}

/// Runs one mode of `tests/mcp_sessions.py` (the SDK driving servers started with flags) on
/// the fixture store.
fn sessions(mode: &str) {
    let f = Fixture::new();
    let mut client = sdk_script("mcp_sessions.py");
    client
        .args([mode, bin_dir().to_str().unwrap()])
        .arg(&f.store);
    assert_sdk_ok(client, &format!("mcp_sessions.py {mode}"));
}

#[test]
fn a_session_scope_is_narrowed_by_calls_and_never_widened() {
    sessions("scope");
}

#[test]
fn a_read_only_session_offers_no_tool_that_writes() {
    sessions("read-only");
}

#[test]
fn the_http_transport_serves_the_sdk_client_with_the_token_and_refuses_others() {
    sessions("http");
}

#[test]
fn http_does_not_start_without_a_token_or_beyond_loopback_unasked() {
    let f = Fixture::new();
    let start = |args: &[&str], token: Option<&str>| {
        let mut cmd = crate::kit::command("slayer-search");
        cmd.env_remove("SLAYER_MCP_TOKEN")
            .args(["mcp", "--store"])
            .arg(&f.store)
            .args(args)
            .stdin(Stdio::null());
        if let Some(token) = token {
            cmd.env("SLAYER_MCP_TOKEN", token);
        }
        crate::kit::output(cmd, None)
    };
    let long = "a-long-enough-secret-token";
    let out = start(&["--http", "127.0.0.1:0"], None);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        "Error: --http needs a bearer token: set SLAYER_MCP_TOKEN or give --token-file PATH (at \
         least 16 characters, e.g. from `openssl rand -hex 32`)\n"
    );
    let out = start(&["--http", "127.0.0.1:0"], Some("  short-secret \n"));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("SLAYER_MCP_TOKEN is 12 characters; at least 16"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("short-secret"), "{}", out.stderr);
    let empty = f.dir.path().join("token");
    std::fs::write(&empty, "\n").unwrap();
    let out = start(
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            empty.to_str().unwrap(),
        ],
        Some(long),
    );
    assert_eq!(
        out.code, 2,
        "the file wins over the variable: {}",
        out.stderr
    );
    assert!(out.stderr.contains("is 0 characters"), "{}", out.stderr);
    // Issue 49: two lines are refused at start, not on every request.
    std::fs::write(&empty, format!("{long}\n{long}-second\n")).unwrap();
    let out = start(
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            empty.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .contains("holds more than one line or a space; it must be one token alone"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains(long),
        "the token is never shown: {}",
        out.stderr
    );
    let out = start(
        &[
            "--http",
            "127.0.0.1:0",
            "--token-file",
            "/nonexistent/token",
        ],
        None,
    );
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr
            .starts_with("Error: --token-file /nonexistent/token: cannot read it"),
        "{}",
        out.stderr
    );
    for addr in ["0.0.0.0:0", "[::]:0", "192.0.2.1:8931"] {
        let out = start(&["--http", addr], Some(long));
        assert_eq!(out.code, 2, "{addr}: {}", out.stderr);
        assert!(
            out.stderr.contains(&format!(
                "--http {addr} would listen beyond this machine; give a loopback address"
            )),
            "{}",
            out.stderr
        );
    }
    let out = start(&["--allow-remote"], Some(long));
    assert_eq!(out.code, 2, "--allow-remote needs --http: {}", out.stderr);
}

/// Writes `lines` to a fresh server, closes stdin and returns every stdout line as JSON (each
/// must be one), after checking the server exited 0.
fn session(f: &Fixture, lines: &[String]) -> Vec<Value> {
    session_with(
        f,
        lines,
        &[("SLAYER_MODEL_DIR", "/nonexistent/slayer-models")],
    )
}

/// [`session`] with the server's environment `env`.
pub(crate) fn session_with(f: &Fixture, lines: &[String], env: &[(&str, &str)]) -> Vec<Value> {
    let mut child = crate::kit::command("slayer-search")
        .envs(env.iter().copied())
        .args(["mcp", "--store"])
        .arg(&f.store)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdin EOF ends the server: {stderr}"
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout is not protocol: {l}: {e}"))
        })
        .collect()
}

pub(crate) fn initialize(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"}}})
    .to_string()
}

fn reply(replies: &[Value], id: i64) -> &Value {
    replies
        .iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no reply to {id} in {replies:?}"))
}

#[test]
fn the_protocol_version_is_negotiated() {
    let f = Fixture::new();
    let old = session(&f, &[initialize("2024-11-05")]);
    assert_eq!(reply(&old, 1)["result"]["protocolVersion"], "2024-11-05");
    assert_eq!(
        reply(&old, 1)["result"]["serverInfo"]["name"],
        "slayer-search"
    );
    // A version the server does not know: it answers with one it speaks.
    let unknown = session(&f, &[initialize("1999-01-01")]);
    let offered = reply(&unknown, 1)["result"]["protocolVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(offered.as_str() >= "2025-06-18", "{offered}");
}

#[test]
fn bad_messages_get_protocol_errors_and_the_server_goes_on() {
    let f = Fixture::new();
    let call = |id: i64, name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}})
        .to_string()
    };
    let replies = session(
        &f,
        &[
            initialize("2025-06-18"),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            // Not JSON, truncated, nested past serde's 128 levels: Parse error, id null.
            "this is not json".into(),
            r#"{"jsonrpc": "2.0", "id": 20, "method": "ping""#.into(),
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            // JSON, but not a JSON-RPC message: Invalid Request, with its id (or null).
            json!({"jsonrpc": "2.0", "id": 2, "method": 42}).to_string(),
            json!({"jsonrpc": "2.0", "method": 42}).to_string(),
            // tools/call without params, or with arguments that are not an object.
            json!({"jsonrpc": "2.0", "id": 21, "method": "tools/call"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 22, "method": "tools/call",
                   "params": {"name": "search", "arguments": "question"}})
            .to_string(),
            // Over limits.request_bytes: refused unread, under the id its first bytes hold.
            json!({"jsonrpc": "2.0", "id": 23, "method": "tools/call",
                   "params": {"name": "search", "arguments": {"question": "q".repeat(2 << 20)}}})
            .to_string(),
            json!({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}).to_string(),
            call(4, "no_such_tool", json!({})),
            call(
                5,
                "search",
                json!({"question": "order amount", "datasource": "nope"}),
            ),
            call(
                6,
                "search",
                json!({"question": "order amount", "max_results": 2}),
            ),
            json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}).to_string(),
        ],
    );
    let unread: Vec<&Value> = replies.iter().filter(|r| r["id"].is_null()).collect();
    let codes: Vec<&Value> = unread.iter().map(|r| &r["error"]["code"]).collect();
    assert_eq!(codes, [-32700, -32700, -32700, -32600], "{unread:?}");
    for r in &unread {
        assert!(r.as_object().unwrap().contains_key("id"), "{r}");
        assert!(r["error"]["message"].is_string(), "{r}");
    }
    assert_eq!(reply(&replies, 2)["error"]["code"], -32600);
    assert!(
        !replies.iter().any(|r| r["id"] == 20),
        "a truncated line is not run"
    );
    assert_eq!(reply(&replies, 21)["error"]["code"], -32602);
    assert_eq!(reply(&replies, 22)["error"]["code"], -32602);
    assert_eq!(
        reply(&replies, 23)["error"]["message"],
        "Invalid Request: a message is at most 1048576 bytes (limits.request_bytes in slayer.toml)"
    );
    assert_eq!(reply(&replies, 3)["error"]["code"], -32601);
    assert_eq!(reply(&replies, 4)["error"]["code"], -32602);
    let tool_error = &reply(&replies, 5)["result"];
    assert_eq!(tool_error["isError"], true);
    assert_eq!(
        tool_error["content"][0]["text"],
        "datasource 'nope' not found; known: ['mydb', 'prod', 'prod_v2']."
    );
    let found = &reply(&replies, 6)["result"];
    assert_eq!(found["isError"], false);
    let results = found["structuredContent"]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(reply(&replies, 7)["result"], json!({}));
}

#[test]
fn results_interleave_the_buckets_and_a_smaller_cap_is_a_prefix() {
    let f = Fixture::new();
    let search = |id: i64, max: i64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search",
            "arguments": {"question": "orders amount revenue paid", "entities": ["mydb.orders"],
                          "max_results": max, "channels": ["entities", "text"]}}})
        .to_string()
    };
    let replies = session(&f, &[initialize("2025-06-18"), search(2, 9), search(3, 4)]);
    let hits = |id| reply(&replies, id)["result"]["structuredContent"]["results"].clone();
    let all = hits(2);
    let few = hits(3);
    assert_eq!(few.as_array().unwrap()[..], all.as_array().unwrap()[..4]);
    // Round robin: a memory, an example query, an entity, while each bucket lasts.
    let kinds: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(
            |h| match (h["kind"].as_str().unwrap(), h["query"].is_null()) {
                ("memory", true) => "M",
                ("memory", false) => "Q",
                _ => "E",
            },
        )
        .collect();
    assert_eq!(&kinds[..3], ["M", "Q", "E"], "{all}");
}

#[test]
fn the_search_tool_answers_with_the_schema_when_asked() {
    let f = Fixture::new();
    let search = |id: i64, schema: bool| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search",
            "arguments": {"question": "orders amount revenue paid", "schema": schema,
                          "schema_models": 2, "channels": ["entities", "text"]}}})
        .to_string()
    };
    let replies = session(
        &f,
        &[initialize("2025-06-18"), search(2, true), search(3, false)],
    );
    let result = &reply(&replies, 2)["result"];
    let schema = &result["structuredContent"]["schema"];
    let models = schema["models"].as_array().expect("a schema answer");
    assert!(!models.is_empty() && models.len() <= 2, "{schema}");
    assert!(
        models[0]["columns"]
            .as_array()
            .is_some_and(|c| !c.is_empty()),
        "{schema}"
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("Schema ("), "{text}");
    assert!(reply(&replies, 3)["result"]["structuredContent"]
        .get("schema")
        .is_none());
}

#[test]
fn the_search_tool_gives_the_card_of_a_measure_that_leads() {
    let f = Fixture::new();
    let search = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "search",
        "arguments": {"question": "total revenue", "channels": ["entities", "text"]}}})
    .to_string();
    let replies = session(&f, &[initialize("2025-06-18"), search]);
    let result = &reply(&replies, 2)["result"];
    let answer = &result["structuredContent"]["answer"];
    assert_eq!(answer["id"], "mydb.orders.revenue", "{result}");
    assert_eq!(answer["model"], "mydb.orders", "{result}");
    assert!(answer["group_by"]
        .as_array()
        .is_some_and(|g| g.iter().any(|c| c["path"] == "status")));
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("\nAnswer: mydb.orders.revenue\n  Model: mydb.orders\n"),
        "{text}"
    );
}

#[test]
fn save_memory_takes_an_event_time_and_session_and_search_returns_them() {
    let f = Fixture::new();
    let save = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "save_memory",
        "arguments": {"learning": "Ben moved the refunds dashboard to Lisbon",
                      "entities": ["mydb"], "event_time": "2024-03", "session": "call-7"}}})
    .to_string();
    let search = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "search",
        "arguments": {"question": "Lisbon dashboard", "channels": ["entities", "text"]}}})
    .to_string();
    let bad = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "save_memory",
        "arguments": {"learning": "x", "entities": ["mydb"], "event_time": "last week"}}})
    .to_string();
    let replies = session(&f, &[initialize("2025-06-18"), save, search, bad]);
    let hits = &reply(&replies, 3)["result"]["structuredContent"]["results"];
    let hit = hits
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["kind"] == "memory")
        .unwrap();
    assert_eq!(hit["event_time"], "2024-03", "{hits}");
    assert_eq!(hit["session"], "call-7", "{hits}");
    let refused = &reply(&replies, 4)["result"];
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("'last week' is not an event time"),
        "{refused}"
    );
}

#[test]
fn the_search_tool_plans_with_the_callers_terms() {
    let f = Fixture::new();
    let search = |id: i64, args: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search", "arguments": args}})
        .to_string()
    };
    let planned = json!({"question": "order amounts", "plan": "auto", "explain": true,
        "injected": {"anchors": ["amount"], "synonyms": ["revenue"]}});
    let bad = json!({"question": "x", "plan": "auto", "injected": {"anchor": ["amount"]}});
    let replies = session(
        &f,
        &[initialize("2025-06-18"), search(2, planned), search(3, bad)],
    );
    let result = &reply(&replies, 2)["result"];
    assert_eq!(result["isError"], false, "{result}");
    let plan = &result["structuredContent"]["plan"];
    assert_eq!(plan["sources"], json!(["caller"]), "{plan}");
    assert_eq!(plan["plan"]["anchors"][0]["text"], "amount");
    assert!(!result["structuredContent"]["results"]
        .as_array()
        .unwrap()
        .is_empty());
    let result = &reply(&replies, 3)["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(result.to_string().contains("anchor"), "{result}");
}

#[test]
fn show_of_a_metric_tells_its_model_formula_filter_and_every_grouping() {
    // A dbt project's metric, imported: what dbt-mcp's get_dimensions answers, in one call.
    let f = Fixture::new();
    let mut import = crate::kit::command("slayer-index");
    import.env("SLAYER_STORE", &f.store).args([
        "import",
        "dbt",
        "tests/fixtures/dbt/legacy",
        "--load",
        "-q",
    ]);
    assert_eq!(crate::kit::output(import, None).code, 0);
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "show", "arguments": {"ids": ["shop.orders.completed_revenue"]}}});
    let replies = session(
        &f,
        &[
            initialize("2025-06-18"),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
            call.to_string(),
        ],
    );
    let result = &reply(&replies, 2)["result"];
    let card = &result["structuredContent"]["docs"][0]["measure"];
    assert_eq!(card["model"], "shop.orders");
    assert_eq!(card["formula"], "sum(completed_revenue_filtered)");
    assert_eq!(
        card["filters"],
        json!(["completed_revenue_filtered: status = 'completed'"])
    );
    assert_eq!(card["time_dimension"], "ordered_at");
    let paths: Vec<&str> = card["group_by"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["path"].as_str().unwrap())
        .collect();
    for expected in [
        "status",
        "ordered_at",
        "order_id",
        "customers.tier",
        "customers.customer_id",
    ] {
        assert!(paths.contains(&expected), "{expected} in {paths:?}");
    }
    assert!(
        !paths.contains(&"completed_revenue_filtered"),
        "hidden leaves are not groupings"
    );
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("Filters: completed_revenue_filtered: status = 'completed'\n"),
        "{text}"
    );
    assert!(
        text.contains("Group by: ordered_at, status, is_large, order_id (key), "),
        "{text}"
    );
}

/// `slayer-search mcp --http 127.0.0.1:0` on the fixture store with `token` and `extra` flags:
/// the process and the address it listens on.
pub(crate) fn start_http(
    f: &Fixture,
    token: &str,
    extra: &[&str],
) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = crate::kit::command("slayer-search")
        .env("SLAYER_MCP_TOKEN", token)
        .args(["mcp", "--store"])
        .arg(&f.store)
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    (child, addr)
}

/// The HTTP server serves at most 64 connections at once: the next waits until one closes, so
/// idle clients cannot grow its memory without bound.
#[test]
fn http_serves_a_bounded_number_of_connections_and_the_next_when_one_closes() {
    use std::io::Read;
    use std::net::TcpStream;
    use std::time::Duration;
    let f = Fixture::new();
    let (mut child, addr) = start_http(&f, "a-long-enough-secret-token", &[]);
    let idle: Vec<TcpStream> = (0..64)
        .map(|_| TcpStream::connect(&addr).unwrap())
        .collect();
    let mut next = TcpStream::connect(&addr).unwrap();
    write!(
        next,
        "GET /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    next.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut buf = [0u8; 64];
    assert!(
        next.read(&mut buf).is_err(),
        "the 65th connection waits while 64 are open"
    );
    drop(idle);
    next.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut reply = String::new();
    next.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 401"), "{reply}");
    child.kill().unwrap();
    child.wait().unwrap();
}
