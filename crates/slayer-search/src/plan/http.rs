//! The one blocking JSON POST the planner's HTTP clients share ([`Post`], used by
//! [`super::http_rerank`] and [`super::llm`]): retries on 429, 5xx and connection errors
//! (`Retry-After` honoured, capped at 5 s), no retry on a timeout (its cost is already the
//! whole timeout), and failure messages on one line that never hold the API key. Blocking: call
//! it from a plain thread, never from inside an async runtime.

use std::fmt::Display;
use std::thread;
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::header::HeaderMap;
use reqwest::{StatusCode, Url};
use serde_json::Value;
use slayer_embed::http::error_chain;

/// Upper bound on any wait between retries, `Retry-After` included.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);
/// Server explanations of an error status are quoted only this far.
const MAX_DETAIL_CHARS: usize = 160;
pub(crate) use slayer_embed::http::REDACTED;

/// One JSON POST with the planner's retry, timeout and redaction rules.
pub(crate) struct Post<'a> {
    /// The endpoint, in full.
    pub(crate) url: &'a str,
    /// Bearer key; an empty one counts as none.
    pub(crate) api_key: Option<&'a str>,
    /// Limit on each attempt as a whole.
    pub(crate) timeout: Duration,
    /// Retries after the first attempt (429, 5xx, connection errors only).
    pub(crate) max_retries: u32,
    /// First wait; doubled per retry.
    pub(crate) backoff: Duration,
}

impl Post<'_> {
    /// Sends `body`, retrying transient failures; the body of the first 2xx answer.
    pub(crate) fn send(&self, body: &Value) -> Result<String, Failure> {
        let url = Url::parse(self.url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                Failure::Invalid(format!(
                    "{} is not an http(s) URL",
                    slayer_common::secrets::masked_url(self.url)
                ))
            })?;
        let http = Client::builder()
            .timeout(self.timeout)
            .user_agent(concat!(
                env!("CARGO_PKG_NAME"),
                "/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .map_err(|e| Failure::Invalid(format!("cannot set up the HTTP client: {e}")))?;
        let mut retries = 0;
        loop {
            let failure = match self.attempt(&http, &url, body) {
                Ok(text) => return Ok(text),
                Err(failure) => failure,
            };
            if !failure.is_transient() {
                return Err(failure);
            }
            if retries >= self.max_retries {
                return Err(if retries == 0 {
                    failure
                } else {
                    Failure::Exhausted {
                        last: Box::new(failure),
                        attempts: retries + 1,
                    }
                });
            }
            thread::sleep(delay(self.backoff, retries, failure.retry_after()));
            retries += 1;
        }
    }

    fn attempt(&self, http: &Client, url: &Url, body: &Value) -> Result<String, Failure> {
        let mut request = http.post(url.clone()).json(body);
        if let Some(key) = self.key() {
            // bearer_auth marks the header sensitive, which keeps it out of Debug output.
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| self.transport(&e))?;
        let status = response.status();
        let retry_after = retry_after(response.headers());
        let text = response.text().map_err(|e| self.transport(&e))?;
        if status.is_success() {
            Ok(text)
        } else {
            Err(Failure::Status {
                status: status.as_u16(),
                detail: error_detail(status, &text),
                retry_after,
            })
        }
    }

    fn transport(&self, error: &reqwest::Error) -> Failure {
        if error.is_timeout() {
            Failure::Timeout(self.timeout)
        } else if error.is_builder() || error.is_redirect() {
            Failure::Invalid(error_chain(error))
        } else {
            Failure::Transport(error_chain(error))
        }
    }

    fn key(&self) -> Option<&str> {
        self.api_key.filter(|k| !k.is_empty())
    }

    /// `prefix` and `why` as one line without the key or the URL's secrets: servers echo
    /// headers and error chains quote URLs, so they are scrubbed from whatever came back.
    pub(crate) fn message(&self, prefix: &str, why: impl Display) -> String {
        let url = Url::parse(self.url).ok();
        one_line(&slayer_embed::http::scrub(
            &format!("{prefix}{why}"),
            url.as_ref(),
            self.key(),
        ))
    }
}

/// Why a request failed, structured so that the retry decision needs no text parsing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Failure {
    #[error("HTTP {status}: {detail}")]
    Status {
        status: u16,
        detail: String,
        retry_after: Option<Duration>,
    },
    #[error("the request timed out after {0:?}")]
    Timeout(Duration),
    #[error("the request failed: {0}")]
    Transport(String),
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("{last} (gave up after {attempts} attempts)")]
    Exhausted { last: Box<Failure>, attempts: u32 },
}

impl Failure {
    fn is_transient(&self) -> bool {
        match self {
            Failure::Status { status, .. } => matches!(status, 429 | 500..=599),
            Failure::Transport(_) => true,
            Failure::Timeout(_) | Failure::Invalid(_) | Failure::Exhausted { .. } => false,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// Wait before retry number `retries + 1`: the server's hint, else `backoff * 2^retries`;
/// never more than [`MAX_RETRY_DELAY`].
fn delay(backoff: Duration, retries: u32, retry_after: Option<Duration>) -> Duration {
    retry_after
        .unwrap_or_else(|| backoff.saturating_mul(2u32.saturating_pow(retries)))
        .min(MAX_RETRY_DELAY)
}

/// The server's retry hint, at most [`MAX_RETRY_DELAY`].
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    slayer_embed::http::retry_after(headers, MAX_RETRY_DELAY)
}

/// The server's explanation: `error.message`, `error`, `message` or `detail` of a JSON
/// body, or the start of a non-JSON one; the reason phrase when there is none.
fn error_detail(status: StatusCode, body: &str) -> String {
    let from_json = serde_json::from_str::<Value>(body).ok().map(|value| {
        let error = value.get("error");
        error
            .and_then(|e| e.get("message"))
            .or(error)
            .or_else(|| value.get("message"))
            .or_else(|| value.get("detail"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    });
    let detail = one_line(&from_json.unwrap_or_else(|| body.to_owned()));
    if detail.is_empty() {
        status
            .canonical_reason()
            .unwrap_or("unexpected status")
            .to_owned()
    } else {
        truncate(&detail, MAX_DETAIL_CHARS)
    }
}

/// Whitespace runs, line breaks included, as single spaces.
pub(crate) fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub(crate) use slayer_embed::http::truncate;

/// A scripted HTTP/1.1 server on 127.0.0.1 for this module's and `llm`'s tests.
#[cfg(test)]
pub(crate) mod test_server {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::{SocketAddr, TcpListener, TcpStream};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex};
    use std::thread;
    use std::time::Duration;

    use serde_json::Value;

    /// A request as the server read it.
    #[derive(Clone, Debug)]
    pub(crate) struct Request {
        pub(crate) path: String,
        pub(crate) headers: Vec<(String, String)>,
        pub(crate) body: String,
    }

    impl Request {
        pub(crate) fn header(&self, name: &str) -> Option<&str> {
            let mut found = self
                .headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case(name));
            found.next().map(|(_, v)| v.as_str())
        }

        pub(crate) fn json(&self) -> Value {
            serde_json::from_str(&self.body).expect("the request body is JSON")
        }
    }

    /// A canned answer; `{authorization}` in the body is replaced by the request's header.
    #[derive(Clone)]
    pub(crate) struct Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
        delay: Duration,
    }

    impl Reply {
        pub(crate) fn new(status: u16, body: &str) -> Reply {
            let (headers, delay) = (Vec::new(), Duration::ZERO);
            let body = body.to_owned();
            Reply {
                status,
                headers,
                body,
                delay,
            }
        }

        pub(crate) fn json(status: u16, body: &Value) -> Reply {
            Reply::new(status, &body.to_string())
        }

        pub(crate) fn header(mut self, name: &str, value: &str) -> Reply {
            self.headers.push((name.to_owned(), value.to_owned()));
            self
        }

        pub(crate) fn after(mut self, delay: Duration) -> Reply {
            self.delay = delay;
            self
        }
    }

    /// Answers the n-th request with the n-th reply, and every later one with the last.
    pub(crate) struct Server {
        addr: SocketAddr,
        requests: Arc<Mutex<Vec<Request>>>,
        stop: Arc<AtomicBool>,
    }

    impl Server {
        pub(crate) fn start(replies: Vec<Reply>) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("local address");
            let requests = Arc::new(Mutex::new(Vec::new()));
            let stop = Arc::new(AtomicBool::new(false));
            let (seen, stopped) = (Arc::clone(&requests), Arc::clone(&stop));
            thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopped.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let (seen, replies) = (Arc::clone(&seen), replies.clone());
                    // A thread per connection: a slow reply must not hold up a retry.
                    thread::spawn(move || serve(stream, &seen, &replies));
                }
            });
            Server {
                addr,
                requests,
                stop,
            }
        }

        pub(crate) fn url(&self, path: &str) -> String {
            format!("http://{}{path}", self.addr)
        }

        pub(crate) fn requests(&self) -> Vec<Request> {
            self.requests.lock().unwrap().clone()
        }
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.stop.store(true, Ordering::SeqCst);
            // Wakes the accept loop so that it sees the flag.
            let _ = TcpStream::connect(self.addr);
        }
    }

    fn serve(mut stream: TcpStream, seen: &Mutex<Vec<Request>>, replies: &[Reply]) {
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let Some(request) = read_request(&stream) else {
            return;
        };
        let number = {
            let mut seen = seen.lock().unwrap();
            seen.push(request.clone());
            seen.len() - 1
        };
        let reply = &replies[number.min(replies.len() - 1)];
        thread::sleep(reply.delay);
        let auth = request.header("authorization").unwrap_or_default();
        let body = reply.body.replace("{authorization}", auth);
        let mut head = format!(
            "HTTP/1.1 {} Scripted\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
            reply.status,
            body.len()
        );
        for (name, value) in &reply.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        // The client may have given up already (timeout tests).
        let _ = stream.write_all(head.as_bytes());
        let _ = stream.write_all(body.as_bytes());
    }

    fn read_request(stream: &TcpStream) -> Option<Request> {
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let path = line.split_whitespace().nth(1)?.to_owned();
        let mut headers = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line).ok()?;
            let Some((name, value)) = line.trim_end().split_once(':') else {
                break;
            };
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
        let request = Request {
            path,
            headers,
            body: String::new(),
        };
        let length = request
            .header("content-length")
            .map_or(0, |v| v.parse().unwrap());
        let mut body = vec![0; length];
        reader.read_exact(&mut body).ok()?;
        let body = String::from_utf8(body).ok()?;
        Some(Request { body, ..request })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_read_and_capped() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "100".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(MAX_RETRY_DELAY));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let backoff = Duration::from_millis(300);
        assert_eq!(delay(backoff, 1, None), Duration::from_millis(600));
        assert_eq!(delay(backoff, 30, None), MAX_RETRY_DELAY);
        assert_eq!(delay(backoff, 0, Some(Duration::ZERO)), Duration::ZERO);
    }
}
