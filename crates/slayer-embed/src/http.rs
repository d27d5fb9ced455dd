//! What every HTTP client of the project reads the same way from a failed call: the server's
//! retry hint and the error's causes (the embedding API here, the planner's LLM and rerank
//! clients in slayer-search).

use std::time::Duration;

use reqwest::header::HeaderMap;

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
