//! What every HTTP client of the project reads the same way from a failed call: the server's
//! retry hint and the error's causes (the embedding API here, the planner's LLM and rerank
//! clients in slayer-search).

use std::time::Duration;

use reqwest::header::HeaderMap;
use reqwest::Url;
use slayer_common::secrets::{masked_url, secrets_of};

/// `base` with `path` appended to its path, its query (Azure's `?api-version=`) kept after it:
/// `https://h/v1?api-version=1` and `chat/completions` give
/// `https://h/v1/chat/completions?api-version=1`. Messages show `base` masked.
pub fn endpoint(base: &str, path: &str) -> Result<Url, String> {
    let shown = masked_url(base);
    let mut url = Url::parse(base.trim()).map_err(|e| format!("{shown} is not a URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{shown} is not an http(s) URL"));
    }
    url.path_segments_mut()
        .map_err(|_| format!("{shown} cannot take a path"))?
        .pop_if_empty()
        .extend(path.split('/'));
    Ok(url)
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
