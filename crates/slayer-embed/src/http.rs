//! The one HTTP client of the project ([`Client`]: a blocking JSON POST with retries) and what
//! every caller reads the same way from a failed call: the server's retry hint, the error's
//! causes, the server's explanation, and the secrets scrubbed from all of it. Its callers are
//! the embedding API here ([`crate::openai`]) and the planner's LLM and rerank clients in
//! slayer-search; each states its own retry policy in [`Settings`].

mod client;

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::Url;
use slayer_common::secrets::{masked_url, secrets_of};

pub use client::{Client, HttpError, Settings};

/// Why a base URL cannot be joined with an endpoint path; the URL shows masked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// Not a URL at all.
    #[error("{shown} is not a URL ({why})")]
    NotAUrl {
        /// The base, masked.
        shown: String,
        /// The parser's reason.
        why: String,
    },
    /// A URL of another scheme than http or https.
    #[error("{0} is not an http(s) URL")]
    NotHttp(String),
    /// A URL that cannot have a path (`data:` and the like).
    #[error("{0} cannot take a path")]
    NoPath(String),
}

/// `base` with `path` appended to its path, its query (Azure's `?api-version=`) kept after it:
/// `https://h/v1?api-version=1` and `chat/completions` give
/// `https://h/v1/chat/completions?api-version=1`. Messages show `base` masked.
pub fn endpoint(base: &str, path: &str) -> Result<Url, EndpointError> {
    let shown = masked_url(base);
    let mut url = Url::parse(base.trim()).map_err(|e| EndpointError::NotAUrl {
        shown: shown.clone(),
        why: e.to_string(),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(EndpointError::NotHttp(shown));
    }
    url.path_segments_mut()
        .map_err(|()| EndpointError::NoPath(shown))?
        .pop_if_empty()
        .extend(path.split('/'));
    Ok(url)
}

/// `url` parsed, when it is an http(s) URL; the error shows it masked and without `key`.
pub fn http_url(url: &str, key: Option<&str>) -> Result<Url, HttpError> {
    Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| {
            let message = format!("{} is not an http(s) URL", masked_url(url));
            HttpError::Invalid(one_line(&scrub(&message, None, key)))
        })
}

/// `message` without the API key (as [`REDACTED`]) or any secret of the endpoint (user,
/// password, query values, as `***`): servers echo headers, and error chains quote the URL.
pub fn scrub(message: &str, url: Option<&Url>, key: Option<&str>) -> String {
    let message = match key.filter(|k| !k.is_empty()) {
        Some(key) => message.replace(key, REDACTED),
        None => message.to_owned(),
    };
    match url {
        Some(url) => slayer_common::secrets::scrub(&message, &secrets_of(url)),
        None => message,
    }
}

/// What stands in for an API key wherever it would show.
pub const REDACTED: &str = "[redacted]";

/// `Retry-After` in seconds, or OpenAI's `retry-after-ms`, at most `cap`. The HTTP-date form of
/// `Retry-After` falls back to plain backoff: servers of these APIs send seconds, and parsing
/// dates would need another dependency.
pub fn retry_after(headers: &HeaderMap, cap: Duration) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)?
            .to_str()
            .ok()?
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|n| n.is_finite() && *n >= 0.0)
    };
    // Capped before converting: from_secs_f64 panics on values too large for a Duration.
    let cap = cap.as_secs_f64();
    number("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| number("retry-after"))
        .map(|secs| Duration::from_secs_f64(secs.min(cap)))
}

/// The error with its causes, since reqwest's top-level message ("error sending request")
/// hides the useful part ("connection refused").
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Layers often repeat their inner error's text verbatim.
        if !message.ends_with(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// At most `max_chars` characters, `...` marking a cut.
pub fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// Whitespace runs, line breaks included, as single spaces: errors are shown on one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
