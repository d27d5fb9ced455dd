//! The line between the client and the MCP SDK. Every line the client sends is checked here
//! first, so a message the SDK would drop in silence (malformed or truncated JSON, nesting past
//! serde's 128 levels, a line over `limits.request_bytes`) or answer with the wrong error gets
//! the JSON-RPC 2.0 error the specification names, with the request's `id`, or `"id": null`
//! where none can be read. The SDK sees only well-formed messages. One task writes stdout, so
//! the SDK's replies and these errors never interleave within a line.

use std::io::Write as _;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use slayer_common::jsonl::{read_line_within, Line};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, Notify};

/// JSON-RPC's error codes.
pub const PARSE_ERROR: i64 = -32700;
/// The message is JSON but not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// A method's parameters are missing or of the wrong shape.
pub const INVALID_PARAMS: i64 = -32602;

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// A well-formed message: the SDK handles it.
    Forward,
    /// Not one: this error response goes back instead.
    Reply(Value),
}

/// A JSON-RPC error response.
pub fn error_response(id: Value, code: i64, message: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Checks one line (without its newline) as a JSON-RPC 2.0 message.
pub fn check(line: &str) -> Verdict {
    let value: Value = match serde_json::from_str(line) {
        Ok(value) => value,
        Err(e) => {
            return Verdict::Reply(error_response(
                Value::Null,
                PARSE_ERROR,
                format!("Parse error: {e}"),
            ))
        }
    };
    let invalid = |id: Value, why: &str| {
        Verdict::Reply(error_response(
            id,
            INVALID_REQUEST,
            format!("Invalid Request: {why}"),
        ))
    };
    let message = match value {
        Value::Object(message) => message,
        Value::Array(_) => {
            return invalid(
                Value::Null,
                "JSON-RPC batches are not supported; send one message per line",
            )
        }
        _ => return invalid(Value::Null, "a message is a JSON object"),
    };
    let id = match message.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_) | Value::Null)) => Some(id.clone()),
        Some(_) => return invalid(Value::Null, "\"id\" must be a string, a number or null"),
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if message.get("jsonrpc") != Some(&json!("2.0")) {
        return invalid(reply_id, "\"jsonrpc\" must be \"2.0\"");
    }
    match message.get("method") {
        Some(Value::String(method)) => {
            if method == "tools/call" && id.is_some() {
                if let Err(why) = tool_call_params(message.get("params")) {
                    return Verdict::Reply(error_response(
                        reply_id,
                        INVALID_PARAMS,
                        format!("Invalid params: {why}"),
                    ));
                }
            }
            Verdict::Forward
        }
        Some(_) => invalid(reply_id, "\"method\" must be a string"),
        None if id.is_some()
            && (message.contains_key("result") || message.contains_key("error")) =>
        {
            Verdict::Forward
        }
        None => invalid(
            reply_id,
            "a message has a \"method\" (a request or notification) or a \"result\" or \"error\" with an \"id\" (a response)",
        ),
    }
}

/// The top-level `"id"` of a message from its first bytes (the rest of an over-long line is
/// never held), so the error names the request it answers; `None` when the bytes end first.
fn leading_id(head: &[u8]) -> Option<Value> {
    let (start, end) = top_level_value(head, b"\"id\"")?;
    serde_json::from_slice(&head[start..end]).ok()
}

/// Whether a message has each of `keys` at its top level.
fn has_keys(message: &[u8], keys: &[&[u8]]) -> bool {
    keys.iter().all(|key| value_start(message, key).is_some())
}

/// A request from the client (an `id` and a `method`), which the server owes an answer.
fn is_request(message: &[u8]) -> bool {
    has_keys(message, &[b"\"id\"", b"\"method\""])
}

/// The server's answer to a request (an `id` and a `result` or an `error`).
fn is_response(message: &[u8]) -> bool {
    has_keys(message, &[b"\"id\""])
        && (has_keys(message, &[b"\"result\""]) || has_keys(message, &[b"\"error\""]))
}

/// Where the value of the top-level `key` (quoted, as it is written) lies in a JSON object's
/// bytes; `None` when it has none, or the bytes end first.
fn top_level_value(head: &[u8], key: &[u8]) -> Option<(usize, usize)> {
    let start = value_start(head, key)?;
    Some((start, value_end(head, start)?))
}

/// Where the value of the top-level `key` starts: the values before it are read past, its own
/// is not (an answer's `result` may be megabytes).
fn value_start(head: &[u8], key: &[u8]) -> Option<usize> {
    let mut at = skip_space(head, 0);
    if head.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    loop {
        at = skip_space(head, at);
        let key_end = string_end(head, at)?;
        let found = &head[at..=key_end];
        at = skip_space(head, key_end + 1);
        if head.get(at) != Some(&b':') {
            return None;
        }
        at = skip_space(head, at + 1);
        if found == key {
            return Some(at);
        }
        at = skip_space(head, value_end(head, at)?);
        if head.get(at) != Some(&b',') {
            return None;
        }
        at += 1;
    }
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while bytes.get(at).is_some_and(u8::is_ascii_whitespace) {
        at += 1;
    }
    at
}

/// The index of the quote closing the string that opens at `at`.
fn string_end(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// One past the end of the JSON value that starts at `at`.
fn value_end(bytes: &[u8], at: usize) -> Option<usize> {
    match bytes.get(at)? {
        b'"' => string_end(bytes, at).map(|end| end + 1),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut i = at;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => i = string_end(bytes, i)?,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(i + 1);
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            None
        }
        _ => {
            let end = bytes[at..]
                .iter()
                .position(|b| matches!(b, b',' | b'}' | b']') || b.is_ascii_whitespace())?;
            Some(at + end)
        }
    }
}

/// `tools/call`'s params: an object with a string `name` and, if any, object `arguments`.
fn tool_call_params(params: Option<&Value>) -> Result<(), &'static str> {
    let Some(Value::Object(params)) = params else {
        return Err("tools/call needs \"params\", an object with the tool's \"name\"");
    };
    if !matches!(params.get("name"), Some(Value::String(_))) {
        return Err("tools/call needs \"params.name\", the tool's name as a string");
    }
    match params.get("arguments") {
        None | Some(Value::Object(_)) | Some(Value::Null) => Ok(()),
        Some(_) => Err("\"params.arguments\" must be an object of the tool's arguments"),
    }
}

/// The client's side of the SDK's transport: the lines that pass [`check`] go in, what the SDK
/// writes comes out on stdout with the replies of this module. Returns the SDK's end of the
/// pipe, and the stdout writer, which ends once the client has closed stdin and the SDK its
/// end of the pipe, everything written.
pub fn connect(
    request_bytes: usize,
) -> std::io::Result<(tokio::io::DuplexStream, tokio::task::JoinHandle<()>)> {
    let (sdk_end, our_end) = tokio::io::duplex(256 * 1024);
    let (from_sdk, mut to_sdk) = tokio::io::split(our_end);
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let (in_tx, mut in_rx) = mpsc::channel::<(String, bool)>(16);
    let answers = Arc::new(Answers::default());

    // stdout: one writer, whole lines; an empty one (sent after a drain) ends it.
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            if line.is_empty()
                || stdout.write_all(&line).await.is_err()
                || stdout.flush().await.is_err()
            {
                break;
            }
        }
    });
    // The SDK's messages, line by line, onto stdout; its answers counted once written out.
    let sdk_out = out_tx.clone();
    let answered = answers.clone();
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(from_sdk);
        loop {
            let mut line = Vec::new();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let response = is_response(&line);
                    if sdk_out.send(line).is_err() {
                        break;
                    }
                    if response {
                        answered.answered();
                    }
                }
            }
        }
        if slayer_common::shutdown::requested() {
            let _ = sdk_out.send(Vec::new());
        }
    });
    // The checked lines into the SDK; end of input closes its side. SIGTERM or SIGINT stops
    // taking requests: those not yet handed over are refused, the SDK's answers to those it
    // has are written out, then its side is closed and the session ends (docs/spec/limits.md §16.9).
    let refuse = out_tx.clone();
    let mut stop = Stop::new()?;
    tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                () = stop.signalled() => {
                    in_rx.close();
                    while let Some((line, request)) = in_rx.recv().await {
                        if request {
                            refuse_shutting_down(&refuse, &line);
                        }
                    }
                    answers.all_answered().await;
                    break;
                }
                line = async {
                    answers.room().await;
                    in_rx.recv().await
                } => match line {
                    Some((line, request)) => {
                        if request {
                            answers.forwarded();
                        }
                        if to_sdk.write_all(line.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    None => break,
                },
            }
        }
        let _ = to_sdk.shutdown().await;
    });
    // stdin is read on a thread of its own (blocking reads, at most `request_bytes` held).
    std::thread::Builder::new()
        .name("mcp-stdin".into())
        .spawn(move || read_stdin(&in_tx, &out_tx, request_bytes))?;
    Ok((sdk_end, writer))
}

/// The client's lines from stdin: each checked ([`check`]); a well-formed message goes to the
/// SDK (with whether it is a request owed an answer), anything else is answered here.
fn read_stdin(
    in_tx: &mpsc::Sender<(String, bool)>,
    out_tx: &mpsc::UnboundedSender<Vec<u8>>,
    request_bytes: usize,
) {
    let reply = |value: Value| {
        let mut line = value.to_string().into_bytes();
        line.push(b'\n');
        let _ = out_tx.send(line);
    };
    let mut stdin = std::io::stdin().lock();
    loop {
        let line = match read_line_within(&mut stdin, request_bytes) {
            Ok(Line::End) => return,
            Ok(line) => line,
            Err(e) => {
                let _ = writeln!(
                    std::io::stderr(),
                    "slayer-search mcp: cannot read stdin: {e}"
                );
                return;
            }
        };
        let text = match line {
            Line::Text(bytes) => String::from_utf8(bytes),
            Line::TooLong { head } => {
                reply(error_response(
                    leading_id(&head).unwrap_or(Value::Null),
                    INVALID_REQUEST,
                    format!(
                        "Invalid Request: a message is at most {request_bytes} bytes (limits.request_bytes in slayer.toml)"
                    ),
                ));
                continue;
            }
            Line::End => return,
        };
        let Ok(mut text) = text else {
            reply(error_response(
                Value::Null,
                PARSE_ERROR,
                "Parse error: the message is not valid UTF-8".into(),
            ));
            continue;
        };
        let message = text
            .trim_start_matches('\u{feff}')
            .trim_end_matches(['\n', '\r']);
        if message.trim().is_empty() {
            continue;
        }
        match check(message) {
            Verdict::Forward => {
                let request = is_request(message.as_bytes());
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                if in_tx.blocking_send((text, request)).is_err() {
                    return;
                }
            }
            Verdict::Reply(value) => reply(value),
        }
    }
}

/// JSON-RPC's code for an error of the server's own: here, a request that came after SIGTERM.
pub const SHUTTING_DOWN: i64 = -32000;

/// Requests handed to the SDK at once: calls run one at a time on the store thread, so more
/// would only wait there, taken and owed an answer when a signal comes.
const IN_FLIGHT: usize = 8;

/// Requests handed to the SDK and answers it wrote out, to wait for the last answer.
#[derive(Default)]
struct Answers {
    forwarded: AtomicUsize,
    answered: AtomicUsize,
    changed: Notify,
}

impl Answers {
    fn forwarded(&self) {
        self.forwarded.fetch_add(1, Ordering::SeqCst);
    }

    fn answered(&self) {
        self.answered.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_one();
    }

    /// Until fewer than [`IN_FLIGHT`] requests handed over wait for their answers: the SDK
    /// holds no more than that, so a signal leaves the rest untaken (and refused).
    async fn room(&self) {
        while self.forwarded.load(Ordering::SeqCst)
            >= self.answered.load(Ordering::SeqCst) + IN_FLIGHT
        {
            let _ = tokio::time::timeout(Duration::from_millis(50), self.changed.notified()).await;
        }
    }

    /// Until every request handed over has its answer written out (the drain bounds it).
    async fn all_answered(&self) {
        while self.answered.load(Ordering::SeqCst) < self.forwarded.load(Ordering::SeqCst) {
            let _ = tokio::time::timeout(Duration::from_millis(50), self.changed.notified()).await;
        }
    }
}

/// SIGTERM or SIGINT, as a future.
struct Stop {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
}

impl Stop {
    fn new() -> std::io::Result<Stop> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Stop {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
        })
    }

    async fn signalled(&mut self) {
        tokio::select! {
            _ = self.terminate.recv() => {}
            _ = self.interrupt.recv() => {}
        }
    }
}

/// The error a request gets that came after SIGTERM or SIGINT, under its id.
fn refuse_shutting_down(out: &mpsc::UnboundedSender<Vec<u8>>, line: &str) {
    let id = leading_id(line.as_bytes()).unwrap_or(Value::Null);
    let mut reply = error_response(
        id,
        SHUTTING_DOWN,
        "the server is shutting down (SIGTERM or SIGINT); send the request to a new session".into(),
    )
    .to_string()
    .into_bytes();
    reply.push(b'\n');
    let _ = out.send(reply);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_and_id(line: &str) -> Option<(i64, Value)> {
        match check(line) {
            Verdict::Forward => None,
            Verdict::Reply(v) => Some((v["error"]["code"].as_i64().unwrap(), v["id"].clone())),
        }
    }

    #[test]
    fn requests_and_answers_are_told_by_their_top_level_keys() {
        assert!(is_request(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call"}"#
        ));
        assert!(!is_request(
            br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#
        ));
        assert!(is_response(
            br#"{"jsonrpc":"2.0","id":3,"result":{"method":"x","id":1}}"#
        ));
        assert!(is_response(br#"{"id":"a","error":{"code":-32000}}"#));
        assert!(!is_response(br#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#));
        // A result is not read past to find the key: an unfinished one still counts.
        assert!(is_response(
            br#"{"jsonrpc":"2.0","id":3,"result":{"content":["#
        ));
    }

    #[test]
    fn an_over_long_message_is_answered_under_the_id_its_first_bytes_hold() {
        let head = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","nested":{"id":9}},"id":"r-7","more":"#;
        assert_eq!(leading_id(head), Some(json!("r-7")));
        assert_eq!(
            leading_id(br#" { "id" : 12 , "params": {"#),
            Some(json!(12))
        );
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","params":{"learning":"xxxxx"#),
            None
        );
        assert_eq!(
            leading_id(br#"{"a":"\"id\":3","id":null}"#),
            Some(Value::Null)
        );
        assert_eq!(leading_id(b"[1,2"), None);
    }

    #[test]
    fn well_formed_messages_pass() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"search","arguments":{"question":"x"}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_datasources"}}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{}}"#,
        ] {
            assert_eq!(check(line), Verdict::Forward, "{line}");
        }
    }

    #[test]
    fn each_broken_message_gets_the_error_the_specification_names() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        for (line, code, id) in [
            ("{not json", PARSE_ERROR, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"ping""#,
                PARSE_ERROR,
                Value::Null,
            ),
            (&deep, PARSE_ERROR, Value::Null),
            ("[]", INVALID_REQUEST, Value::Null),
            ("42", INVALID_REQUEST, Value::Null),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
                INVALID_REQUEST,
                Value::Null,
            ),
            (
                r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#,
                INVALID_REQUEST,
                json!(8),
            ),
            (
                r#"{"jsonrpc":"2.0","id":9,"method":5}"#,
                INVALID_REQUEST,
                json!(9),
            ),
            (r#"{"jsonrpc":"2.0","id":10}"#, INVALID_REQUEST, json!(10)),
            (
                r#"{"jsonrpc":"2.0","id":11,"method":"tools/call"}"#,
                INVALID_PARAMS,
                json!(11),
            ),
            (
                r#"{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"search","arguments":[1]}}"#,
                INVALID_PARAMS,
                json!(12),
            ),
            (
                r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":"search"}"#,
                INVALID_PARAMS,
                json!("x"),
            ),
        ] {
            assert_eq!(
                code_and_id(line),
                Some((code, id)),
                "{}",
                &line[..line.len().min(60)]
            );
        }
    }
}
