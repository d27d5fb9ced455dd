//! Issue 49's second hardening pass of `slayer-search mcp`: HTTP sessions that expire, the
//! Origin check, JSON-RPC error shapes over HTTP, and saves that honour SLAYER_NO_EMBED.

use std::io::Write as _;
use std::process::Stdio;

use serde_json::json;

use crate::mcp::{initialize, start_http};
use crate::support::Fixture;

/// Issue 49: a session the client abandons (no DELETE) is closed after --session-idle.
#[test]
fn http_sessions_nobody_closes_expire_after_the_idle_time() {
    use std::io::Read;
    use std::net::TcpStream;
    let f = Fixture::new();
    let token = "a-long-enough-secret-token";
    let (mut child, addr) = start_http(&f, token, &["--session-idle", "1"]);
    let post = |session: Option<&str>, body: &str| -> String {
        let mut s = TcpStream::connect(&addr).unwrap();
        let session = session
            .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
            .unwrap_or_default();
        write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             {session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        reply
    };
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let reply = post(None, init);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let id = reply
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').unwrap().1.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in {reply}"));
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    assert!(post(Some(&id), list).starts_with("HTTP/1.1 200"));
    // What is not one JSON-RPC message gets stdio's JSON-RPC error, as JSON (issue 49).
    for (body, code) in [
        ("{not json", "-32700"),
        (r#"[{"jsonrpc":"2.0","id":3,"method":"ping"}]"#, "-32600"),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#,
            "-32602",
        ),
    ] {
        let reply = post(Some(&id), body);
        assert!(reply.starts_with("HTTP/1.1 400"), "{body}: {reply}");
        assert!(
            reply.contains(&format!("\"code\":{code}")),
            "{body}: {reply}"
        );
    }
    // A page of another site (its Origin) is refused, whatever the token (issue 49).
    let mut s = TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Origin: http://evil.example\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{init}",
        init.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 403"), "{reply}");
    std::thread::sleep(std::time::Duration::from_millis(2600));
    let reply = post(Some(&id), list);
    assert!(
        reply.starts_with("HTTP/1.1 404"),
        "an expired session is gone: {reply}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Issue 49: `SLAYER_NO_EMBED=1` holds for the server's saves as for `slayer-memory save`.
#[test]
fn save_memory_does_not_embed_when_embedding_is_turned_off() {
    let f = Fixture::new();
    let save = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "save_memory", "arguments": {"learning": "Refunds post weekly.",
        "entities": ["mydb.orders"], "id": "quiet"}}})
    .to_string();
    let embedded = |env_off: &str| {
        let mut child = crate::kit::command("slayer-search")
            .env("SLAYER_MODEL_DIR", crate::support::models_dir())
            .env("SLAYER_NO_EMBED", env_off)
            .args(["mcp", "--store"])
            .arg(&f.store)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        writeln!(stdin, "{}", initialize("2025-06-18")).unwrap();
        writeln!(stdin, "{save}").unwrap();
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(stdout.contains("\"isError\":false"), "{stdout}");
        let conn = rusqlite::Connection::open(&f.store).unwrap();
        conn.query_row(
            "SELECT count(*) FROM embeddings WHERE canonical_id = 'memory:quiet'",
            [],
            |r| r.get::<_, i64>(0),
        )
        .unwrap()
    };
    assert_eq!(embedded("1"), 0, "turned off: no embedding row");
    assert_eq!(embedded("0"), 1, "on: the save embeds");
}
