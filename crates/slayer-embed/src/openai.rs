//! Client for OpenAI-compatible `/embeddings` endpoints (OpenAI itself, or a local server
//! speaking the same protocol), over the shared blocking [`crate::http::Client`].

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::http::{Client, EndpointError, HttpError, Settings, REDACTED};
use crate::{EmbedResult, NotEmbedded};

const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
const OPENAI_HOST: &str = "api.openai.com";
const BASE_URL_VAR: &str = slayer_common::env::EMBEDDING_BASE_URL;
const API_KEY_VAR: &str = "OPENAI_API_KEY";
/// Upper bound on any single wait between retries, so a hostile or confused server cannot
/// stall a caller for minutes with a large `Retry-After`.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);
/// Server explanations of an error status are quoted only this far.
const MAX_DETAIL_CHARS: usize = 200;
/// Rate limits, server errors and the server's own timeout (408) are worth another try.
const RETRY_STATUSES: &[std::ops::RangeInclusive<u16>] = &[408..=408, 429..=429, 500..=599];

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

    /// The embedding client's retry policy: a batch job can wait, so timeouts and 408s are
    /// retried along with rate limits, server errors and connection errors.
    fn http_settings(&self) -> Settings {
        Settings {
            timeout: self.timeout,
            max_retries: self.max_retries,
            backoff: self.backoff,
            max_delay: MAX_RETRY_DELAY,
            retry_statuses: RETRY_STATUSES,
            retry_timeouts: true,
            max_detail_chars: MAX_DETAIL_CHARS,
        }
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

/// Why the embeddings endpoint cannot be used, or why one request failed. Its texts never hold
/// the API key or the URL's secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenAiError {
    /// The base URL cannot name an endpoint.
    #[error("invalid embedding base URL: {0}")]
    BaseUrl(#[source] EndpointError),
    /// The base URL is OpenAI's and no key is set.
    #[error("{} is not set", API_KEY_VAR)]
    MissingKey,
    /// The request failed (after the retries its policy allows).
    #[error(transparent)]
    Http(#[from] HttpError),
    /// A 2xx answer that is not one embedding per text.
    #[error("malformed embeddings response: {0}")]
    Malformed(String),
}

/// Blocking client for an OpenAI-compatible embeddings endpoint. Like the
/// [`crate::http::Client`] it wraps, create, use and drop it outside of any async runtime; one
/// client can serve many threads.
#[derive(Debug)]
pub struct OpenAiClient {
    http: Client,
    model: String,
}

impl OpenAiClient {
    /// Builds a client; fails when the base URL is not an http(s) URL or the HTTP client
    /// cannot be set up.
    pub fn new(config: OpenAiConfig) -> Result<OpenAiClient, OpenAiError> {
        let url =
            crate::http::endpoint(&config.base_url, "embeddings").map_err(OpenAiError::BaseUrl)?;
        let http = Client::new(url, config.api_key.clone(), config.http_settings())?;
        Ok(OpenAiClient {
            http,
            model: config.model,
        })
    }

    /// Whether the provider can be used at all, without a network call: fails when the base
    /// URL is api.openai.com and no key is set. Local servers often need no key, so those pass.
    pub fn check(&self) -> Result<(), OpenAiError> {
        let official = self
            .http
            .url()
            .host_str()
            .is_some_and(|host| host.eq_ignore_ascii_case(OPENAI_HOST));
        if official && self.http.key().is_none() {
            return Err(OpenAiError::MissingKey);
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
            Err(OpenAiError::Http(failure)) if failure.status() == Some(400) && texts.len() > 1 => {
                texts
                    .iter()
                    .map(|text| match self.request(&[text]) {
                        Ok(mut vectors) => Ok(vectors.swap_remove(0)),
                        Err(failure) => Err(NotEmbedded::Server(std::sync::Arc::new(failure))),
                    })
                    .collect()
            }
            Err(failure) => {
                vec![Err(NotEmbedded::Server(std::sync::Arc::new(failure))); texts.len()]
            }
        }
    }

    /// How many HTTP requests this client has sent, retries included.
    pub fn requests_sent(&self) -> usize {
        self.http.attempts()
    }

    /// Sends one batch, retrying transient failures; on success there is exactly one vector
    /// per text, in input order.
    fn request(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, OpenAiError> {
        let body = self.http.post_json(&EmbeddingRequest {
            model: &self.model,
            input: texts,
        })?;
        parse_embeddings(&body, texts.len())
            .map_err(|why| OpenAiError::Malformed(self.http.scrub(&why.to_string())))
    }
}

/// Why a 2xx answer is not one embedding per text.
#[derive(Debug, thiserror::Error)]
enum Malformed {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("expected {expected} embeddings, got {got}")]
    Count { expected: usize, got: usize },
    #[error("index {0} is out of range or repeated")]
    Index(usize),
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
fn parse_embeddings(body: &str, expected: usize) -> Result<Vec<Vec<f32>>, Malformed> {
    let response: EmbeddingResponse = serde_json::from_str(body)?;
    if response.data.len() != expected {
        return Err(Malformed::Count {
            expected,
            got: response.data.len(),
        });
    }
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; expected];
    for item in response.data {
        let slot = slots
            .get_mut(item.index)
            .filter(|slot| slot.is_none())
            .ok_or(Malformed::Index(item.index))?;
        *slot = Some(item.embedding);
    }
    // As many items as slots, each in a distinct slot: every slot is filled.
    Ok(slots.into_iter().flatten().collect())
}
