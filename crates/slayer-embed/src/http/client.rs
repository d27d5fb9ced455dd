//! [`Client`]: one endpoint, one key, one retry policy ([`Settings`]), JSON POSTs.

use std::fmt;
use std::ops::RangeInclusive;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use reqwest::{StatusCode, Url};
use serde::Serialize;

use super::{error_chain, one_line, retry_after, truncate, REDACTED};

/// How a caller's requests are timed and retried, and how much of a server's explanation its
/// errors quote. Connection errors are always retried; see [`Settings::retries`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Limit on each attempt as a whole (connect, send, read the body).
    pub timeout: Duration,
    /// Retries after the first attempt, for the failures [`Settings::retries`] accepts.
    pub max_retries: u32,
    /// Wait before the first retry, doubled for each later one; a `Retry-After` header wins.
    pub backoff: Duration,
    /// Upper bound on any wait between retries, `Retry-After` included, so that a hostile or
    /// confused server cannot stall the caller with a large hint.
    pub max_delay: Duration,
    /// The HTTP statuses that are retried.
    pub retry_statuses: &'static [RangeInclusive<u16>],
    /// Whether a timed-out attempt is retried (a batch job can wait; a search cannot, and a
    /// timeout has already cost it the whole timeout).
    pub retry_timeouts: bool,
    /// The server's explanation of an error status is quoted only this far.
    pub max_detail_chars: usize,
}

impl Settings {
    /// Wait before retry number `retries + 1`: the server's hint, else `backoff * 2^retries`;
    /// never more than [`Settings::max_delay`].
    pub fn delay(&self, retries: u32, retry_after: Option<Duration>) -> Duration {
        retry_after
            .unwrap_or_else(|| self.backoff.saturating_mul(2u32.saturating_pow(retries)))
            .min(self.max_delay)
    }

    /// Whether a failed attempt is worth repeating under this policy.
    pub fn retries(&self, error: &HttpError) -> bool {
        match error {
            HttpError::Status { status, .. } => {
                self.retry_statuses.iter().any(|r| r.contains(status))
            }
            HttpError::Timeout(_) => self.retry_timeouts,
            HttpError::Transport(_) => true,
            HttpError::Invalid(_) | HttpError::Setup(_) | HttpError::Exhausted { .. } => false,
        }
    }
}

/// Why a request failed, structured so that retry and fallback decisions need no text parsing.
/// Every text in it is on one line and holds neither the API key nor the URL's secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The server answered with an error status.
    #[error("HTTP {status}: {detail}")]
    Status {
        /// The status code.
        status: u16,
        /// The server's explanation (see [`Settings::max_detail_chars`]), else the reason phrase.
        detail: String,
        /// The server's retry hint, capped at [`Settings::max_delay`].
        retry_after: Option<Duration>,
    },
    /// The attempt ran past [`Settings::timeout`].
    #[error("the request timed out after {0:?}")]
    Timeout(Duration),
    /// The connection failed (refused, reset, DNS): the error with its causes.
    #[error("the request failed: {0}")]
    Transport(String),
    /// A request that would fail the same way again (not buildable, redirected in a loop).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The HTTP client itself could not be set up.
    #[error("cannot set up the HTTP client: {0}")]
    Setup(String),
    /// The last of several attempts failed.
    #[error("{last} (gave up after {attempts} attempts)")]
    Exhausted {
        /// The last attempt's failure.
        last: Box<HttpError>,
        /// How many attempts were made.
        attempts: u32,
    },
}

impl HttpError {
    /// The HTTP status of the (last) failure, if the server answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            HttpError::Exhausted { last, .. } => last.status(),
            _ => None,
        }
    }

    /// How many attempts the failure took.
    pub fn attempts(&self) -> u32 {
        match self {
            HttpError::Exhausted { attempts, .. } => *attempts,
            _ => 1,
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            HttpError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// A blocking client for one endpoint. It owns a `reqwest` blocking client, which runs its own
/// internal runtime: create, use and drop it outside of any async runtime. It is `Sync`, so one
/// client can serve many threads.
pub struct Client {
    http: reqwest::blocking::Client,
    url: Url,
    api_key: Option<String>,
    settings: Settings,
    attempts: AtomicUsize,
}

impl Client {
    /// A client of `url` that sends `api_key` (when set and non-empty) as a bearer token.
    pub fn new(url: Url, api_key: Option<String>, settings: Settings) -> Result<Client, HttpError> {
        let http = reqwest::blocking::Client::builder()
            .timeout(settings.timeout)
            .user_agent(concat!(
                env!("CARGO_PKG_NAME"),
                "/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .map_err(|e| HttpError::Setup(e.to_string()))?;
        Ok(Client {
            http,
            url,
            api_key: api_key.filter(|k| !k.is_empty()),
            settings,
            attempts: AtomicUsize::new(0),
        })
    }

    /// The endpoint.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The API key, if one is sent.
    pub fn key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// How many attempts this client has made, retries included.
    pub fn attempts(&self) -> usize {
        self.attempts.load(Ordering::Relaxed)
    }

    /// `message` without the key or the URL's secrets (see [`super::scrub`]), for the callers'
    /// own errors about what came back.
    pub fn scrub(&self, message: &str) -> String {
        super::scrub(message, Some(&self.url), self.key())
    }

    /// POSTs `body` as JSON, retrying what [`Settings::retries`] accepts; the body of the first
    /// 2xx answer.
    pub fn post_json(&self, body: &impl Serialize) -> Result<String, HttpError> {
        let mut retries = 0;
        loop {
            let failure = match self.attempt(body) {
                Ok(text) => return Ok(text),
                Err(failure) => failure,
            };
            if !self.settings.retries(&failure) {
                return Err(failure);
            }
            if retries >= self.settings.max_retries {
                // Without retries the plain cause reads better than "gave up after 1 attempt".
                return Err(if retries == 0 {
                    failure
                } else {
                    HttpError::Exhausted {
                        last: Box::new(failure),
                        attempts: retries + 1,
                    }
                });
            }
            thread::sleep(self.settings.delay(retries, failure.retry_after()));
            retries += 1;
        }
    }

    /// One HTTP exchange, no retries.
    fn attempt(&self, body: &impl Serialize) -> Result<String, HttpError> {
        // Counted before sending so that attempts which time out or fail to connect show up.
        self.attempts.fetch_add(1, Ordering::Relaxed);
        let mut request = self.http.post(self.url.clone()).json(body);
        if let Some(key) = self.key() {
            // bearer_auth marks the header sensitive, which keeps it out of Debug output.
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| self.transport(&e))?;
        let status = response.status();
        let retry_after = retry_after(response.headers(), self.settings.max_delay);
        let text = response.text().map_err(|e| self.transport(&e))?;
        if status.is_success() {
            return Ok(text);
        }
        Err(HttpError::Status {
            status: status.as_u16(),
            detail: self.detail(status, &text),
            retry_after,
        })
    }

    fn transport(&self, error: &reqwest::Error) -> HttpError {
        if error.is_timeout() {
            return HttpError::Timeout(self.settings.timeout);
        }
        let chain = one_line(&self.scrub(&error_chain(error)));
        if error.is_builder() || error.is_redirect() {
            // Repeating a request that could not be built or was redirected in a loop would
            // fail the same way.
            HttpError::Invalid(chain)
        } else {
            HttpError::Transport(chain)
        }
    }

    /// The server's explanation: `error.message`, `error`, `message` or `detail` of a JSON
    /// body (OpenAI's shape and the looser ones of compatible servers), or the start of a
    /// non-JSON body (proxy HTML pages, plain text); the reason phrase when there is none.
    fn detail(&self, status: StatusCode, body: &str) -> String {
        let from_json = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .map(|value| {
                let error = value.get("error");
                error
                    .and_then(|e| e.get("message"))
                    .or(error)
                    .or_else(|| value.get("message"))
                    .or_else(|| value.get("detail"))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or_default()
                    .to_owned()
            });
        let detail = one_line(&self.scrub(&from_json.unwrap_or_else(|| body.to_owned())));
        if detail.is_empty() {
            status
                .canonical_reason()
                .unwrap_or("unexpected status")
                .to_owned()
        } else {
            truncate(&detail, self.settings.max_detail_chars)
        }
    }
}

// By hand so that logging a client never shows the key or the URL's secrets.
impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("url", &self.scrub(self.url.as_str()))
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("settings", &self.settings)
            .field("attempts", &self.attempts())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderMap;

    use super::*;

    fn settings(backoff: Duration, max_delay: Duration) -> Settings {
        Settings {
            timeout: Duration::from_secs(1),
            max_retries: 2,
            backoff,
            max_delay,
            retry_statuses: &[429..=429, 500..=599],
            retry_timeouts: false,
            max_detail_chars: 20,
        }
    }

    #[test]
    fn waits_double_and_are_capped() {
        let settings = settings(Duration::from_millis(300), Duration::from_secs(5));
        assert_eq!(settings.delay(1, None), Duration::from_millis(600));
        assert_eq!(settings.delay(30, None), Duration::from_secs(5));
        assert_eq!(settings.delay(0, Some(Duration::ZERO)), Duration::ZERO);
        assert_eq!(
            settings.delay(0, Some(Duration::from_secs(60))),
            Duration::from_secs(5)
        );
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "100".parse().unwrap());
        assert_eq!(
            retry_after(&headers, Duration::from_secs(5)),
            Some(Duration::from_secs(5))
        );
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(
            retry_after(&headers, Duration::from_secs(5)),
            Some(Duration::from_millis(250))
        );
    }

    #[test]
    fn the_policy_decides_what_is_retried() {
        let settings = settings(Duration::ZERO, Duration::ZERO);
        let status = |status| HttpError::Status {
            status,
            detail: String::new(),
            retry_after: None,
        };
        assert!(settings.retries(&status(429)) && settings.retries(&status(503)));
        assert!(!settings.retries(&status(408)) && !settings.retries(&status(400)));
        assert!(!settings.retries(&HttpError::Timeout(Duration::ZERO)));
        assert!(settings.retries(&HttpError::Transport(String::new())));
        let patient = Settings {
            retry_statuses: &[408..=408, 429..=429, 500..=599],
            retry_timeouts: true,
            ..settings
        };
        assert!(patient.retries(&status(408)));
        assert!(patient.retries(&HttpError::Timeout(Duration::ZERO)));
    }

    #[test]
    fn details_are_one_line_scrubbed_and_cut() {
        let url = Url::parse("http://u:PASSW0RD@127.0.0.1:1/v1?key=QS").unwrap();
        let client = Client::new(
            url,
            Some("sk-KEY".into()),
            settings(Duration::ZERO, Duration::ZERO),
        )
        .unwrap();
        let detail = |body: &str| client.detail(StatusCode::BAD_GATEWAY, body);
        assert_eq!(
            detail(r#"{"error": {"message": "bad sk-KEY"}}"#),
            "bad [redacted]"
        );
        assert_eq!(detail(r#"{"detail": "a\n  b"}"#), "a b");
        assert_eq!(detail(r#"{"other": 1}"#), "Bad Gateway");
        assert_eq!(detail("  "), "Bad Gateway");
        assert_eq!(
            detail("<html>\n<b>upstream PASSW0RD is down for good</b>"),
            "<html> <b>upstream *..."
        );
        let shown = format!("{client:?}");
        assert!(
            !shown.contains("sk-KEY") && !shown.contains("PASSW0RD"),
            "{shown}"
        );
    }
}
