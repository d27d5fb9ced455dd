//! Client for OpenAI-compatible `/embeddings` endpoints (OpenAI itself, or a local server
//! speaking the same protocol), over blocking HTTP.

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::{StatusCode, Url};
use serde::{Deserialize, Serialize};

use crate::http::{error_chain, retry_after, truncate};
use crate::EmbedResult;

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const OPENAI_HOST: &str = "api.openai.com";
const BASE_URL_VAR: &str = "SLAYER_EMBEDDING_BASE_URL";
const API_KEY_VAR: &str = "OPENAI_API_KEY";
/// Upper bound on any single wait between retries, so a hostile or confused server cannot
/// stall a caller for minutes with a large `Retry-After`.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);
/// Error bodies that are not JSON (proxy HTML pages, plain text) are quoted only this far.
const MAX_DETAIL_CHARS: usize = 200;
use crate::http::REDACTED;

/// Settings of an OpenAI-compatible endpoint.
#[derive(Clone)]
pub struct OpenAiConfig {
    /// Endpoint root such as `https://api.openai.com/v1`; requests go to `{base_url}/embeddings`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set and non-empty.
    pub api_key: Option<String>,
    /// Model name as the endpoint knows it, e.g. `text-embedding-3-small`.
    pub model: String,
    /// Limit on each HTTP request as a whole (connect, send, and read the body).
    pub timeout: Duration,
    /// How many times a transiently failed request is repeated before giving up.
    pub max_retries: u32,
    /// Wait before the first retry, doubled for each later one; a `Retry-After` header wins.
    pub backoff: Duration,
}

impl OpenAiConfig {
    /// From the environment: `SLAYER_EMBEDDING_BASE_URL` (default `https://api.openai.com/v1`)
    /// and `OPENAI_API_KEY`; empty variables count as unset.
    pub fn from_env(model: &str) -> OpenAiConfig {
        let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        OpenAiConfig {
            base_url: var(BASE_URL_VAR).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            api_key: var(API_KEY_VAR),
            model: model.to_owned(),
            timeout: Duration::from_secs(30),
            max_retries: 4,
            backoff: Duration::from_millis(500),
        }
    }

    fn key(&self) -> Option<&str> {
        self.api_key.as_deref().filter(|k| !k.is_empty())
    }
}

// Written by hand rather than derived so that logging a config never leaks the key.
impl fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("model", &self.model)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// Blocking client for an OpenAI-compatible embeddings endpoint.
///
/// It owns a `reqwest` blocking client, which runs its own internal runtime: create, use and
/// drop it outside of any async runtime. It is `Sync`, so one client can serve many threads.
#[derive(Debug)]
pub struct OpenAiClient {
    http: Client,
    config: OpenAiConfig,
    url: Url,
    requests: AtomicUsize,
}

impl OpenAiClient {
    /// Builds a client; fails when the base URL is not an http(s) URL or the HTTP client
    /// cannot be set up.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiClient, String> {
        let url = crate::http::endpoint(&config.base_url, "embeddings")
            .map_err(|e| format!("invalid embedding base URL: {e}"))?;
        let http = Client::builder()
            .timeout(config.timeout)
            .user_agent(concat!(
                env!("CARGO_PKG_NAME"),
                "/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
        Ok(OpenAiClient {
            http,
            config,
            url,
            requests: AtomicUsize::new(0),
        })
    }

    /// Whether the provider can be used at all, without a network call: fails when the base
    /// URL is api.openai.com and no key is set. Local servers often need no key, so those pass.
    pub fn check(&self) -> Result<(), String> {
        let official = self
            .url
            .host_str()
            .is_some_and(|host| host.eq_ignore_ascii_case(OPENAI_HOST));
        if official && self.config.key().is_none() {
            return Err(format!("{API_KEY_VAR} is not set"));
        }
        Ok(())
    }

    /// Embeds a batch in one request; results come back in input order.
    ///
    /// Rate limits (429), server errors (5xx), timeouts and connection errors are retried
    /// with exponential backoff, up to `max_retries` times. An HTTP 400 for a batch of more
    /// than one text is answered by sending each text alone, so one bad text only fails its
    /// own slot. Any other failure gives every slot the same message. Messages carry the HTTP
    /// status and the server's explanation where there is one, e.g. `HTTP 400: input too
    /// long`, and never the API key. The endpoint's own limit on inputs per request (2048 for
    /// OpenAI) is the caller's to respect.
    pub fn embed(&self, texts: &[&str]) -> Vec<EmbedResult> {
        if texts.is_empty() {
            return Vec::new();
        }
        match self.request(texts) {
            Ok(vectors) => vectors.into_iter().map(Ok).collect(),
            Err(failure) if failure.is_bad_request() && texts.len() > 1 => texts
                .iter()
                .map(|text| match self.request(&[text]) {
                    Ok(mut vectors) => Ok(vectors.swap_remove(0)),
                    Err(failure) => Err(self.message(&failure)),
                })
                .collect(),
            Err(failure) => vec![Err(self.message(&failure)); texts.len()],
        }
    }

    /// How many HTTP requests this client has sent, retries included.
    pub fn requests_sent(&self) -> usize {
        self.requests.load(Ordering::Relaxed)
    }

    /// Sends one batch, retrying transient failures; on success there is exactly one vector
    /// per text, in input order.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Failure> {
        let mut retries = 0;
        loop {
            let failure = match self.send(texts) {
                Ok(vectors) => return Ok(vectors),
                Err(failure) => failure,
            };
            if !failure.is_transient() {
                return Err(failure);
            }
            if retries >= self.config.max_retries {
                // Without retries the plain cause reads better than "gave up after 1 attempt".
                return Err(if retries == 0 {
                    failure
                } else {
                    Failure::Exhausted {
                        last: Box::new(failure),
                        attempts: retries + 1,
                    }
                });
            }
            thread::sleep(self.delay(retries, failure.retry_after()));
            retries += 1;
        }
    }

    /// One HTTP exchange, no retries.
    fn send(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, Failure> {
        // Counted before sending so that attempts which time out or fail to connect show up.
        self.requests.fetch_add(1, Ordering::Relaxed);
        let mut request = self.http.post(self.url.clone()).json(&EmbeddingRequest {
            model: &self.config.model,
            input: texts,
        });
        if let Some(key) = self.config.key() {
            // bearer_auth marks the header sensitive, which keeps it out of Debug output.
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| self.transport_failure(e))?;
        let status = response.status();
        let retry_after = retry_after(response.headers(), MAX_RETRY_DELAY);
        let body = response.text().map_err(|e| self.transport_failure(e))?;
        if !status.is_success() {
            return Err(Failure::Status {
                status: status.as_u16(),
                detail: error_detail(status, &body),
                retry_after,
            });
        }
        parse_embeddings(&body, texts.len())
    }

    fn transport_failure(&self, error: reqwest::Error) -> Failure {
        if error.is_timeout() {
            Failure::Timeout(self.config.timeout)
        } else if error.is_builder() || error.is_redirect() {
            // Repeating a request that could not be built or was redirected in a loop
            // would fail the same way.
            Failure::Invalid(error_chain(&error))
        } else {
            Failure::Transport(error_chain(&error))
        }
    }

    /// Wait before retry number `retries + 1`: the server's hint if it gave one, else
    /// `backoff * 2^retries`, never more than `MAX_RETRY_DELAY`.
    fn delay(&self, retries: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or_else(|| {
                self.config
                    .backoff
                    .saturating_mul(2u32.saturating_pow(retries))
            })
            .min(MAX_RETRY_DELAY)
    }

    /// The failure as shown to callers; servers and error chains may echo the key (a
    /// misconfigured proxy, an "incorrect API key: ..." reply), so it is scrubbed here.
    fn message(&self, failure: &Failure) -> String {
        crate::http::scrub(&failure.to_string(), Some(&self.url), self.config.key())
    }
}

/// Why one request failed; kept structured so retry and fallback decisions need not parse text.
#[derive(Debug, thiserror::Error)]
enum Failure {
    #[error("HTTP {status}: {detail}")]
    Status {
        status: u16,
        detail: String,
        retry_after: Option<Duration>,
    },
    #[error("request timed out (timeout {0:?})")]
    Timeout(Duration),
    #[error("request failed: {0}")]
    Transport(String),
    #[error("invalid request: {0}")]
    Invalid(String),
    #[error("malformed embeddings response: {0}")]
    Malformed(String),
    #[error("{last} (gave up after {attempts} attempts)")]
    Exhausted { last: Box<Failure>, attempts: u32 },
}

impl Failure {
    fn is_transient(&self) -> bool {
        match self {
            // 408 is the server reporting a timeout of its own.
            Failure::Status { status, .. } => matches!(status, 408 | 429 | 500..=599),
            Failure::Timeout(_) | Failure::Transport(_) => true,
            Failure::Invalid(_) | Failure::Malformed(_) | Failure::Exhausted { .. } => false,
        }
    }

    fn is_bad_request(&self) -> bool {
        matches!(self, Failure::Status { status: 400, .. })
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            Failure::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

#[derive(Serialize)]
struct EmbeddingRequest<'a> {
    model: &'a str,
    input: &'a [&'a str],
}

#[derive(Deserialize)]
struct EmbeddingResponse {
    data: Vec<EmbeddingData>,
}

#[derive(Deserialize)]
struct EmbeddingData {
    index: usize,
    embedding: Vec<f32>,
}

/// Puts the response's vectors in input order; the API does not promise to return `data`
/// sorted, and a server that answers with the wrong count must not shift vectors onto the
/// wrong texts.
fn parse_embeddings(body: &str, expected: usize) -> Result<Vec<Vec<f32>>, Failure> {
    let response: EmbeddingResponse =
        serde_json::from_str(body).map_err(|e| Failure::Malformed(e.to_string()))?;
    if response.data.len() != expected {
        return Err(Failure::Malformed(format!(
            "expected {expected} embeddings, got {}",
            response.data.len()
        )));
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for item in response.data {
        let slot = slots
            .get_mut(item.index)
            .filter(|slot| slot.is_none())
            .ok_or_else(|| {
                Failure::Malformed(format!("index {} is out of range or repeated", item.index))
            })?;
        *slot = Some(item.embedding);
    }
    // As many items as slots, each in a distinct slot: every slot is filled.
    Ok(slots.into_iter().flatten().collect())
}

/// The server's explanation of an error status: OpenAI's `error.message`, the looser shapes
/// some compatible servers use, or the start of a non-JSON body; the reason phrase if none.
fn error_detail(status: StatusCode, body: &str) -> String {
    let from_json = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|value| {
            let error = value.get("error");
            error
                .and_then(|e| e.get("message"))
                .or(error)
                .or_else(|| value.get("message"))
                .or_else(|| value.get("detail"))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        });
    let detail = from_json.unwrap_or_else(|| {
        let body = body.trim();
        if body.starts_with('{') {
            // JSON without a recognisable message: quoting it would only add noise.
            String::new()
        } else {
            truncate(body, MAX_DETAIL_CHARS)
        }
    });
    if detail.trim().is_empty() {
        status
            .canonical_reason()
            .unwrap_or("unexpected status")
            .to_owned()
    } else {
        detail
    }
}
