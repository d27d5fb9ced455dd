//! A scripted HTTP/1.1 server on 127.0.0.1 for the tests of every HTTP client of the project
//! (the embedding client here, the planner's LLM and rerank clients in slayer-search). Built
//! only with the `test-support` feature, which the crates' dev-dependencies turn on.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::Value;

/// A request as the server read it.
#[derive(Clone, Debug)]
pub struct Request {
    /// `POST`, `GET`, ...
    pub method: String,
    /// The path with its query.
    pub path: String,
    /// The headers in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body (UTF-8).
    pub body: String,
}

impl Request {
    /// The first header of that name, compared without case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; panics when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("the request body is JSON")
    }
}

/// A canned answer, sent after waiting its delay; `{authorization}` in the body is replaced by
/// the request's `Authorization` header (to test that echoed keys are scrubbed).
#[derive(Clone, Debug)]
pub struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    /// `body` as it is, with `status`.
    pub fn new(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.to_owned(),
            delay: Duration::ZERO,
        }
    }

    /// `body` as JSON, with `status`.
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::new(status, &body.to_string())
    }

    /// One more header.
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sent only after `delay` (timeout tests).
    pub fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

type Handler = dyn Fn(usize, &Request) -> Reply + Send + Sync;

/// The server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    /// Answers each request with what `handler` makes of it and its 0-based number.
    pub fn start(handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        let (seen, stopped) = (Arc::clone(&requests), Arc::clone(&stop));
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (seen, handler) = (Arc::clone(&seen), Arc::clone(&handler));
                // A thread per connection: a deliberately slow reply must not hold up the
                // client's retry on a new connection.
                thread::spawn(move || serve(stream, &seen, &*handler));
            }
        });
        Server {
            addr,
            requests,
            stop,
        }
    }

    /// Answers the n-th request with the n-th reply, and every later one with the last.
    pub fn replies(replies: Vec<Reply>) -> Server {
        assert!(!replies.is_empty(), "a scripted server needs a reply");
        Server::start(move |n, _| replies[n.min(replies.len() - 1)].clone())
    }

    /// `http://<address><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `http://<address>/v1`, an OpenAI-style base URL.
    pub fn base_url(&self) -> String {
        self.url("/v1")
    }

    /// The requests so far, in arrival order.
    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// How many requests arrived.
    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(mut stream: TcpStream, seen: &Mutex<Vec<Request>>, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_request(&stream) else {
        return;
    };
    let number = {
        let mut seen = seen.lock().unwrap();
        seen.push(request.clone());
        seen.len() - 1
    };
    let reply = handler(number, &request);
    thread::sleep(reply.delay);
    let auth = request.header("authorization").unwrap_or_default();
    let body = reply.body.replace("{authorization}", auth);
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reason(reply.status),
        body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    // The client may have given up already (timeout tests): a failed write is expected then.
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next()?.to_owned();
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let Some((name, value)) = line.trim_end().split_once(':') else {
            break;
        };
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let mut request = Request {
        method,
        path,
        headers,
        body: String::new(),
    };
    let length = request
        .header("content-length")
        .map_or(0, |v| v.parse().expect("a numeric Content-Length"));
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    request.body = String::from_utf8(body).ok()?;
    Some(request)
}

/// A local port that was just free and now has nobody listening: connecting is refused.
pub fn unused_address() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free local port")
}

/// The reason phrase (clients read the status code; the phrase is for people reading a trace).
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Scripted",
    }
}
