//! The planner's retry policy for the shared HTTP client ([`slayer_embed::http::Client`],
//! used by [`super::http_rerank`] and [`super::llm`]): retries on 429, 5xx and connection
//! errors (`Retry-After` honoured, capped at 5 s), no retry on a timeout (its cost is already
//! the whole timeout), and failure messages on one line that never hold the API key.
//! Blocking: call it from a plain thread, never from inside an async runtime.

use std::ops::RangeInclusive;
use std::time::Duration;

use slayer_embed::http::{Client, HttpError, Settings};

pub(crate) use slayer_embed::http::{one_line, truncate, REDACTED};

/// Upper bound on any wait between retries, `Retry-After` included.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);
/// Server explanations of an error status are quoted only this far.
const MAX_DETAIL_CHARS: usize = 160;
/// Rate limits and server errors; a 408 is a timeout, which the planner does not wait out twice.
const RETRY_STATUSES: &[RangeInclusive<u16>] = &[429..=429, 500..=599];

/// The planner's policy with a caller's timeout, retries and first wait.
pub(crate) fn settings(timeout: Duration, max_retries: u32, backoff: Duration) -> Settings {
    Settings {
        timeout,
        max_retries,
        backoff,
        max_delay: MAX_RETRY_DELAY,
        retry_statuses: RETRY_STATUSES,
        retry_timeouts: false,
        max_detail_chars: MAX_DETAIL_CHARS,
    }
}

/// A client of `url` (checked to be http(s)) under the planner's policy.
pub(crate) fn client(
    url: &str,
    api_key: Option<&str>,
    settings: Settings,
) -> Result<Client, HttpError> {
    let url = slayer_embed::http::http_url(url, api_key)?;
    Client::new(url, api_key.map(str::to_owned), settings)
}

/// `why` on one line without the key or the URL's secrets: servers echo headers and models
/// echo prompts, so whatever came back is scrubbed.
pub(crate) fn shown(client: &Client, why: &impl std::fmt::Display) -> String {
    one_line(&client.scrub(&why.to_string()))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderMap;

    use super::*;

    #[test]
    fn retry_after_is_read_and_capped() {
        let retry_after =
            |headers: &HeaderMap| slayer_embed::http::retry_after(headers, MAX_RETRY_DELAY);
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", "100".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(MAX_RETRY_DELAY));
        headers.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(250)));
        let policy = settings(Duration::from_secs(1), 2, Duration::from_millis(300));
        assert_eq!(policy.delay(1, None), Duration::from_millis(600));
        assert_eq!(policy.delay(30, None), MAX_RETRY_DELAY);
        assert_eq!(policy.delay(0, Some(Duration::ZERO)), Duration::ZERO);
    }
}
