//! Issue 49's second hardening pass of `slayer-search mcp`: HTTP sessions that expire, the
//! Origin check, JSON-RPC error shapes over HTTP, and saves that honour SLAYER_NO_EMBED.

use std::io::Write as _;

use serde_json::{json, Value};

use crate::mcp::{initialize, session_with, start_http};
use crate::support::Fixture;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// The head of a POST to the server at `addr`, up to the blank line.
fn post_head(addr: &str, token: &str, session: Option<&str>, length: usize) -> String {
    let session = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         {session}Content-Length: {length}\r\nConnection: close\r\n\r\n"
    )
}

/// POSTs `body` on a connection of its own and reads the whole reply.
fn post(addr: &str, token: &str, session: Option<&str>, body: &str) -> String {
    use std::io::Read;
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(s, "{}{body}", post_head(addr, token, session, body.len())).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply
}

/// The `Mcp-Session-Id` of an initialize reply.
fn session_of(reply: &str) -> String {
    reply
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .starts_with("mcp-session-id:")
                .then(|| l.split_once(':').unwrap().1.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in {reply}"))
}

/// Issue 49: a session the client abandons (no DELETE) is closed after --session-idle.
#[test]
fn http_sessions_nobody_closes_expire_after_the_idle_time() {
    use std::io::Read;
    use std::net::TcpStream;
    let f = Fixture::new();
    let token = "a-long-enough-secret-token";
    let (mut child, addr) = start_http(&f, token, &["--session-idle", "1"]);
    let post = |session: Option<&str>, body: &str| post(&addr, token, session, body);
    let reply = post(None, INIT);
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let id = session_of(&reply);
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
         Connection: close\r\n\r\n{INIT}",
        INIT.len()
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
        let models = crate::support::models_dir();
        let replies = session_with(
            &f,
            &[initialize("2025-06-18"), save.clone()],
            &[
                ("SLAYER_MODEL_DIR", models.to_str().unwrap()),
                ("SLAYER_NO_EMBED", env_off),
            ],
        );
        let stdout = Value::Array(replies).to_string();
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

/// A save of memory `id` sent over a new connection of a new session, its body cut in half:
/// the connection, and the rest of the body to send when the test is ready.
fn half_sent_save(addr: &str, token: &str, id: &str) -> (std::net::TcpStream, String) {
    let session = session_of(&post(addr, token, None, INIT));
    let save = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "save_memory", "arguments": {"learning": "Refunds post weekly.",
        "entities": ["mydb.orders"], "id": id}}})
    .to_string();
    let (first, rest) = save.split_at(save.len() / 2);
    let mut under_way = std::net::TcpStream::connect(addr).unwrap();
    write!(
        under_way,
        "{}{first}",
        post_head(addr, token, Some(&session), save.len())
    )
    .unwrap();
    under_way.flush().unwrap();
    (under_way, rest.to_owned())
}

/// Issue 49: SIGTERM stops taking connections and requests, but a request under way (here a
/// save whose body is still arriving) is answered in full before the server exits 0, so a
/// client never retries a committed save. An idle open connection does not hold it up.
#[test]
fn sigterm_answers_the_requests_under_way_then_exits() {
    use std::io::Read;
    use std::net::TcpStream;
    use std::time::{Duration, Instant};
    let f = Fixture::new();
    let token = "a-long-enough-secret-token";
    let (mut child, addr) = start_http(&f, token, &[]);
    let (mut under_way, rest) = half_sent_save(&addr, token, "in-flight");
    let _idle = TcpStream::connect(&addr).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let stopped = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        TcpStream::connect(&addr).is_err(),
        "a stopping server takes no new connection"
    );
    assert!(
        child.try_wait().unwrap().is_none(),
        "the server waits for the reply under way"
    );
    under_way.write_all(rest.as_bytes()).unwrap();
    let mut reply = String::new();
    under_way.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("\"isError\":false"), "{reply}");
    assert!(reply.contains("in-flight"), "{reply}");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(8),
            "the server exits once the reply is sent"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    let conn = rusqlite::Connection::open(&f.store).unwrap();
    let saved: i64 = conn
        .query_row(
            "SELECT count(*) FROM memories WHERE id = 'in-flight'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(saved, 1);
}

/// `--drain` bounds how long a stopping HTTP server waits for the replies under way, past the
/// 10 s it once waited whatever the flag said: a save whose body arrives 11 s after SIGTERM is
/// still answered under `--drain 30`, and the server then exits 0.
#[test]
fn the_drain_flag_bounds_the_http_servers_wait() {
    use std::io::Read;
    use std::time::Duration;
    let f = Fixture::new();
    let token = "a-long-enough-secret-token";
    let (mut child, addr) = start_http(&f, token, &["--drain", "30"]);
    let (mut under_way, rest) = half_sent_save(&addr, token, "slow-client");
    std::thread::sleep(Duration::from_millis(300));
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    std::thread::sleep(Duration::from_secs(11));
    assert!(
        child.try_wait().unwrap().is_none(),
        "the server still waits for the reply under way"
    );
    under_way.write_all(rest.as_bytes()).unwrap();
    let mut reply = String::new();
    under_way.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("slow-client"), "{reply}");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
