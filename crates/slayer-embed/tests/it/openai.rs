//! Whole-client tests against a scripted HTTP/1.1 server running in this process.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use slayer_embed::openai::{OpenAiClient, OpenAiConfig};

const KEY: &str = "sk-test-0123456789abcdef";
const MODEL: &str = "text-embedding-3-small";

/// One request as the server saw it.
#[derive(Clone, Debug)]
pub(crate) struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).expect("request body is JSON")
    }

    pub(crate) fn inputs(&self) -> Vec<String> {
        self.json()["input"]
            .as_array()
            .expect("input is an array")
            .iter()
            .map(|v| v.as_str().expect("input items are strings").to_owned())
            .collect()
    }
}

/// What the server answers, after waiting `delay`.
pub(crate) struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    delay: Duration,
}

impl Reply {
    pub(crate) fn json(status: u16, body: Value) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: body.to_string(),
            delay: Duration::ZERO,
        }
    }

    pub(crate) fn error(status: u16, message: &str) -> Reply {
        Reply::json(
            status,
            json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}),
        )
    }

    /// A well-formed answer to `request`, with `data` reversed so that order must come from `index`.
    pub(crate) fn embeddings(request: &Request) -> Reply {
        let data: Vec<Value> = request
            .inputs()
            .iter()
            .enumerate()
            .rev()
            .map(|(index, text)| {
                json!({"object": "embedding", "index": index, "embedding": fake_embedding(text)})
            })
            .collect();
        Reply::json(
            200,
            json!({"object": "list", "data": data, "model": MODEL,
                   "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
        )
    }

    pub(crate) fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    fn after(mut self, delay: Duration) -> Reply {
        self.delay = delay;
        self
    }
}

/// Identifies its text exactly, so a vector landing in the wrong slot is caught.
fn fake_embedding(text: &str) -> Vec<f32> {
    text.bytes().map(f32::from).collect()
}

type Handler = dyn Fn(usize, &Request) -> Reply + Send + Sync;

/// Scripted server: `handler` gets the 0-based request number and the request.
pub(crate) struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Request>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    pub(crate) fn start(
        handler: impl Fn(usize, &Request) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let handler: Arc<Handler> = Arc::new(handler);
        {
            let requests = Arc::clone(&requests);
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let requests = Arc::clone(&requests);
                    let handler = Arc::clone(&handler);
                    // One thread per connection: a deliberately slow reply must not hold up
                    // the client's retry on a new connection.
                    thread::spawn(move || serve(stream, &requests, &*handler));
                }
            });
        }
        Server {
            addr,
            requests,
            stop,
        }
    }

    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub(crate) fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve(stream: TcpStream, requests: &Mutex<Vec<Request>>, handler: &Handler) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let Some(request) = read_request(&stream) else {
        return;
    };
    let number = {
        let mut requests = requests.lock().unwrap();
        requests.push(request.clone());
        requests.len() - 1
    };
    let reply = handler(number, &request);
    thread::sleep(reply.delay);
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reason(reply.status),
        reply.body.len()
    );
    for (name, value) in &reply.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut stream = stream;
    // The client may have given up (timeout tests); a failed write is expected then.
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(reply.body.as_bytes());
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
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| {
            v.parse::<usize>().expect("numeric Content-Length")
        });
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body: String::from_utf8(body).expect("UTF-8 body"),
    })
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Whatever",
    }
}

fn config(server: &Server) -> OpenAiConfig {
    OpenAiConfig {
        base_url: server.base_url(),
        api_key: Some(KEY.to_owned()),
        model: MODEL.to_owned(),
        timeout: Duration::from_secs(5),
        max_retries: 4,
        backoff: Duration::from_millis(2),
    }
}

fn client(config: OpenAiConfig) -> OpenAiClient {
    OpenAiClient::new(config).expect("client")
}

fn assert_embedded(results: &[Result<Vec<f32>, String>], texts: &[&str]) {
    assert_eq!(results.len(), texts.len());
    for (result, text) in results.iter().zip(texts) {
        assert_eq!(result.as_ref(), Ok(&fake_embedding(text)), "text {text:?}");
    }
}

#[test]
fn batch_comes_back_in_input_order_from_one_request() {
    let server = Server::start(|_, request| Reply::embeddings(request));
    let client = client(config(&server));
    let texts = ["alpha", "b", "gamma ray"];

    let results = client.embed(&texts);

    assert_embedded(&results, &texts);
    assert_eq!(server.count(), 1);
    assert_eq!(client.requests_sent(), 1);
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.json(), json!({"model": MODEL, "input": texts}));
    assert_eq!(
        request.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert!(request
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/json")));
}

#[test]
fn rate_limit_is_retried() {
    let server = Server::start(|n, request| {
        if n < 2 {
            Reply::error(429, "Rate limit reached").with_header("Retry-After", "0")
        } else {
            Reply::embeddings(request)
        }
    });
    let client = client(config(&server));

    let results = client.embed(&["one", "two"]);

    assert_embedded(&results, &["one", "two"]);
    assert_eq!(server.count(), 3);
    assert_eq!(client.requests_sent(), 3);
}

#[test]
fn retry_after_is_honoured() {
    let server = Server::start(|n, request| {
        if n == 0 {
            Reply::error(429, "Rate limit reached").with_header("Retry-After", "1")
        } else {
            Reply::embeddings(request)
        }
    });
    let client = client(config(&server));

    let started = Instant::now();
    let results = client.embed(&["one"]);

    assert_embedded(&results, &["one"]);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.count(), 2);
}

#[test]
fn server_error_is_retried() {
    let server = Server::start(|n, request| {
        if n == 0 {
            Reply::error(500, "The server had an error")
        } else {
            Reply::embeddings(request)
        }
    });
    let client = client(config(&server));

    let results = client.embed(&["one", "two"]);

    assert_embedded(&results, &["one", "two"]);
    assert_eq!(server.count(), 2);
}

#[test]
fn exhausted_retries_fail_every_slot() {
    let server = Server::start(|_, _| Reply::error(503, "overloaded"));
    let client = client(OpenAiConfig {
        max_retries: 2,
        ..config(&server)
    });

    let results = client.embed(&["one", "two"]);

    assert_eq!(server.count(), 3);
    for result in results {
        let message = result.unwrap_err();
        assert!(message.contains("HTTP 503: overloaded"), "{message}");
        assert!(message.contains("3 attempts"), "{message}");
    }
}

#[test]
fn timeout_is_retried() {
    let server = Server::start(|n, request| {
        let reply = Reply::embeddings(request);
        if n == 0 {
            reply.after(Duration::from_secs(1))
        } else {
            reply
        }
    });
    let client = client(OpenAiConfig {
        timeout: Duration::from_millis(300),
        ..config(&server)
    });

    let results = client.embed(&["one", "two"]);

    assert_embedded(&results, &["one", "two"]);
    assert_eq!(server.count(), 2);
}

#[test]
fn timeout_without_retries_fails_every_slot() {
    let server =
        Server::start(|_, request| Reply::embeddings(request).after(Duration::from_secs(1)));
    let client = client(OpenAiConfig {
        timeout: Duration::from_millis(300),
        max_retries: 0,
        ..config(&server)
    });

    let results = client.embed(&["one", "two"]);

    assert_eq!(results.len(), 2);
    for result in results {
        let message = result.unwrap_err();
        assert!(message.contains("timed out"), "{message}");
    }
    assert_eq!(client.requests_sent(), 1);
}

#[test]
fn connection_errors_are_retried() {
    // A port that was just free and now has nobody listening.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let client = client(OpenAiConfig {
        base_url: format!("http://{addr}/v1"),
        api_key: Some(KEY.to_owned()),
        model: MODEL.to_owned(),
        timeout: Duration::from_secs(5),
        max_retries: 1,
        backoff: Duration::from_millis(2),
    });

    let results = client.embed(&["one"]);

    assert_eq!(client.requests_sent(), 2);
    let message = results[0].clone().unwrap_err();
    assert!(message.contains("request failed"), "{message}");
    assert!(message.contains("2 attempts"), "{message}");
}

#[test]
fn bad_request_isolates_the_bad_text() {
    let server = Server::start(|_, request| {
        if request.inputs().iter().any(|text| text.contains("BAD")) {
            Reply::error(400, "input contains a forbidden word")
        } else {
            Reply::embeddings(request)
        }
    });
    let client = client(config(&server));
    let owned: Vec<String> = (0..32)
        .map(|i| {
            if i == 17 {
                format!("text {i} BAD")
            } else {
                format!("text {i}")
            }
        })
        .collect();
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();

    let results = client.embed(&texts);

    assert_eq!(results.len(), 32);
    for (i, (result, text)) in results.iter().zip(&texts).enumerate() {
        if i == 17 {
            let message = result.clone().unwrap_err();
            assert!(
                message.contains("HTTP 400: input contains a forbidden word"),
                "{message}"
            );
        } else {
            assert_eq!(result.as_ref(), Ok(&fake_embedding(text)), "text {text:?}");
        }
    }
    assert_eq!(server.count(), 1 + 32);
    let requests = server.requests();
    assert_eq!(requests[0].inputs().len(), 32);
    assert!(requests[1..].iter().all(|r| r.inputs().len() == 1));
}

#[test]
fn bad_request_for_a_single_text_is_not_repeated() {
    let server = Server::start(|_, _| Reply::error(400, "input too long"));
    let client = client(config(&server));

    let results = client.embed(&["one"]);

    assert_eq!(results, vec![Err("HTTP 400: input too long".to_owned())]);
    assert_eq!(server.count(), 1);
}

#[test]
fn unauthorized_fails_at_once_without_leaking_the_key() {
    let server =
        Server::start(|_, _| Reply::error(401, &format!("Incorrect API key provided: {KEY}.")));
    let config = config(&server);
    assert!(!format!("{config:?}").contains(KEY));
    let client = client(config);
    assert!(!format!("{client:?}").contains(KEY));

    let results = client.embed(&["one", "two", "three"]);

    assert_eq!(results.len(), 3);
    for result in results {
        let message = result.unwrap_err();
        assert!(message.contains("401"), "{message}");
        assert!(message.contains("Incorrect API key provided"), "{message}");
        assert!(!message.contains(KEY), "{message}");
    }
    assert_eq!(server.count(), 1);
}

#[test]
fn other_client_errors_are_not_retried() {
    let server = Server::start(|_, _| Reply::json(404, json!({"detail": "Not Found"})));
    let client = client(config(&server));

    let results = client.embed(&["one", "two"]);

    assert_eq!(
        results,
        vec![Err("HTTP 404: Not Found".to_owned()); 2],
        "every slot gets the same error"
    );
    assert_eq!(server.count(), 1);
}

#[test]
fn malformed_response_fails_every_slot() {
    let server = Server::start(|_, _| Reply {
        status: 200,
        headers: Vec::new(),
        body: "not json".to_owned(),
        delay: Duration::ZERO,
    });
    let client = client(config(&server));

    let results = client.embed(&["one", "two"]);

    for result in results {
        let message = result.unwrap_err();
        assert!(
            message.contains("malformed embeddings response"),
            "{message}"
        );
    }
    assert_eq!(server.count(), 1);
}

#[test]
fn wrong_number_of_embeddings_fails_every_slot() {
    let server = Server::start(|_, _| {
        Reply::json(
            200,
            json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5]}]}),
        )
    });
    let client = client(config(&server));

    let results = client.embed(&["one", "two"]);

    for result in results {
        let message = result.unwrap_err();
        assert!(
            message.contains("expected 2 embeddings, got 1"),
            "{message}"
        );
    }
    assert_eq!(server.count(), 1);
}

#[test]
fn trailing_slash_and_missing_key_are_handled() {
    let server = Server::start(|_, request| Reply::embeddings(request));
    let client = client(OpenAiConfig {
        base_url: format!("{}/", server.base_url()),
        api_key: None,
        ..config(&server)
    });

    let results = client.embed(&["one"]);

    assert_embedded(&results, &["one"]);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.header("authorization"), None);
}

#[test]
fn empty_batch_sends_nothing() {
    let server = Server::start(|_, request| Reply::embeddings(request));
    let client = client(config(&server));

    assert!(client.embed(&[]).is_empty());
    assert_eq!(client.requests_sent(), 0);
}

#[test]
fn check_requires_a_key_only_for_openai() {
    let settings = |base_url: &str, api_key: Option<&str>| OpenAiConfig {
        base_url: base_url.to_owned(),
        api_key: api_key.map(str::to_owned),
        model: MODEL.to_owned(),
        timeout: Duration::from_secs(1),
        max_retries: 0,
        backoff: Duration::from_millis(1),
    };
    let openai = |api_key| client(settings("https://api.openai.com/v1", api_key));
    assert_eq!(
        openai(None).check(),
        Err("OPENAI_API_KEY is not set".to_owned())
    );
    assert!(openai(Some("")).check().is_err());
    assert_eq!(openai(Some(KEY)).check(), Ok(()));

    let local = client(settings("http://127.0.0.1:8080/v1", None));
    assert_eq!(local.check(), Ok(()));
}

#[test]
fn invalid_base_url_is_rejected() {
    let config = OpenAiConfig {
        base_url: "not a url".to_owned(),
        ..OpenAiConfig::from_env(MODEL)
    };
    assert!(OpenAiClient::new(config).is_err());
}

#[test]
fn a_base_url_with_a_query_keeps_it_after_the_path_and_never_shows_its_values() {
    let server = Server::start(|_, _| Reply::error(503, "overloaded"));
    let base = format!(
        "{}?api-version=2024-06-01&key=QUERYSECRET",
        server.base_url().replace("http://", "http://tok3n@")
    );
    let queried = client(OpenAiConfig {
        base_url: base,
        max_retries: 0,
        ..config(&server)
    });
    let results = queried.embed(&["one"]);
    assert_eq!(
        server.requests()[0].path,
        "/v1/embeddings?api-version=2024-06-01&key=QUERYSECRET",
        "the path is joined, the query kept"
    );
    let message = results[0].clone().unwrap_err();
    assert!(
        !message.contains("QUERYSECRET") && !message.contains("tok3n"),
        "{message}"
    );

    // A refused connection quotes the URL in reqwest's error chain: masked there too.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let refused = client(OpenAiConfig {
        base_url: format!("http://user:PASSW0RD@{addr}/v1?key=QUERYSECRET"),
        max_retries: 0,
        ..config(&server)
    });
    let message = refused.embed(&["one"])[0].clone().unwrap_err();
    assert!(
        !message.contains("QUERYSECRET") && !message.contains("PASSW0RD"),
        "{message}"
    );
    let bad = OpenAiClient::new(OpenAiConfig {
        base_url: "ftp://u:PASSW0RD@host/v1?key=QUERYSECRET".into(),
        ..config(&server)
    })
    .unwrap_err();
    assert_eq!(
        bad,
        "invalid embedding base URL: ftp://***:***@host/v1?key=*** is not an http(s) URL"
    );
}
