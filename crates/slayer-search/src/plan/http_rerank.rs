//! A cross-encoder reranker behind HTTP, in the Cohere / Jina request shape or the one of
//! Hugging Face's text-embeddings-inference (TEI). Responses are read in either shape
//! whatever the settings say; requests are written exactly in the configured one. The POST
//! itself (retries, timeout, redaction) is the shared client under [`super::http`]'s policy.

use std::time::Duration;

use serde_json::{json, Value};
use slayer_embed::http::HttpError;

use super::http::REDACTED;

/// Why the reranker gave no scores. Its text is the one-line warning the response shows,
/// starting with `planner: rerank failed: `, and never holds the key or the URL's secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RerankError {
    /// The request failed (after the planner's retries).
    #[error("planner: rerank failed: {0}")]
    Request(#[from] HttpError),
    /// The answer is not one score per document (see [`rerank`]); the reason, scrubbed.
    #[error("planner: rerank failed: {0}")]
    Response(String),
}

/// Why an answer cannot be read as one score per document.
#[derive(Debug, thiserror::Error)]
enum ScoresError {
    #[error("the response is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    #[error("the response has no `results` list")]
    NoResults,
    #[error("the response is neither a list nor an object")]
    NotAList,
    #[error("a result has no integer `index`")]
    NoIndex,
    #[error("result {0} has no finite score")]
    NoScore(u64),
    #[error("index {index} is out of range for {count} documents")]
    OutOfRange { index: u64, count: usize },
    #[error("index {0} is repeated")]
    Repeated(u64),
    #[error("the response scored none of the {0} documents")]
    NoneScored(usize),
}

/// Which request shape the endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RerankApi {
    /// Cohere and Jina: `{model?, query, documents, top_n, return_documents}`.
    Cohere,
    /// text-embeddings-inference: `{query, texts, raw_scores}`.
    Tei,
}

/// Where and how to reach the reranker.
#[derive(Clone)]
pub(crate) struct RerankSettings {
    /// The full endpoint URL, e.g. `http://localhost:8080/rerank` or `https://api.cohere.com/v2/rerank`.
    pub url: String,
    /// Sent as `model` in the Cohere shape when set; TEI serves one model and gets none.
    pub model: Option<String>,
    /// The request shape.
    pub api: RerankApi,
    /// Sent as `Authorization: Bearer <key>` when set and non-empty.
    pub api_key: Option<String>,
    /// Limit on each request as a whole (connect, send, read the body).
    pub timeout: Duration,
    /// How many times a 429, a 5xx or a connection error is retried.
    pub max_retries: u32,
    /// Wait before the first retry, doubled for each later one; a `Retry-After` header wins.
    pub backoff: Duration,
}

// By hand so that logging the settings never shows the key.
impl std::fmt::Debug for RerankSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RerankSettings")
            .field(
                "url",
                &match self.api_key.as_deref().filter(|k| !k.is_empty()) {
                    Some(key) => self.url.replace(key, REDACTED),
                    None => self.url.clone(),
                },
            )
            .field("model", &self.model)
            .field("api", &self.api)
            .field("api_key", &self.api_key.as_ref().map(|_| REDACTED))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// Scores `documents` against `query`: one score per document, in input order. A document
/// the response leaves out gets the lowest returned score minus 1, so the order stays total;
/// an index out of range or repeated, or a score that is missing or not finite, is an error.
/// The error is a one-line warning starting with `planner: rerank failed: `.
pub(crate) fn rerank(
    settings: &RerankSettings,
    query: &str,
    documents: &[String],
) -> Result<Vec<f64>, RerankError> {
    if documents.is_empty() {
        return Ok(Vec::new());
    }
    let policy = super::http::settings(settings.timeout, settings.max_retries, settings.backoff);
    let client = super::http::client(&settings.url, settings.api_key.as_deref(), policy)?;
    let text = client.post_json(&request_body(settings, query, documents))?;
    parse_scores(&text, documents.len())
        .map_err(|why| RerankError::Response(super::http::shown(&client, &why)))
}

fn request_body(settings: &RerankSettings, query: &str, documents: &[String]) -> Value {
    match settings.api {
        RerankApi::Cohere => {
            let mut body = json!({
                "query": query,
                "documents": documents,
                "top_n": documents.len(),
                "return_documents": false,
            });
            if let Some(model) = &settings.model {
                body["model"] = json!(model);
            }
            body
        }
        RerankApi::Tei => json!({"query": query, "texts": documents, "raw_scores": false}),
    }
}

/// `{"results": [{"index", "relevance_score"}]}` (Cohere, Jina) or `[{"index", "score"}]`
/// (TEI), in any order; either score key is accepted in either shape.
fn parse_scores(body: &str, count: usize) -> Result<Vec<f64>, ScoresError> {
    let value: Value = serde_json::from_str(body)?;
    let items = match &value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("results") {
            Some(Value::Array(items)) => items,
            _ => return Err(ScoresError::NoResults),
        },
        _ => return Err(ScoresError::NotAList),
    };
    let mut scores: Vec<Option<f64>> = vec![None; count];
    for item in items {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .ok_or(ScoresError::NoIndex)?;
        let score = item
            .get("relevance_score")
            .or_else(|| item.get("score"))
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite())
            .ok_or(ScoresError::NoScore(index))?;
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| scores.get_mut(i))
            .ok_or(ScoresError::OutOfRange { index, count })?;
        if slot.replace(score).is_some() {
            return Err(ScoresError::Repeated(index));
        }
    }
    let lowest = scores
        .iter()
        .flatten()
        .copied()
        .reduce(f64::min)
        .ok_or(ScoresError::NoneScored(count))?;
    Ok(scores
        .into_iter()
        .map(|s| s.unwrap_or(lowest - 1.0))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use slayer_embed::test_support::{unused_address, Reply, Server};

    use super::*;

    const KEY: &str = "rk-test-0123456789abcdef";
    const PREFIX: &str = "planner: rerank failed: ";

    fn settings(server: &Server, api: RerankApi) -> RerankSettings {
        RerankSettings {
            url: server.url("/v1/rerank"),
            model: Some("rerank-test".to_owned()),
            api,
            api_key: Some(KEY.to_owned()),
            timeout: Duration::from_secs(5),
            max_retries: 2,
            backoff: Duration::from_millis(1),
        }
    }

    fn docs(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("doc {i}")).collect()
    }

    #[test]
    fn cohere_shape_is_written_exactly_and_read_in_any_order() {
        let results = json!({"id": "x", "results": [
            {"index": 2, "relevance_score": 0.9},
            {"index": 0, "relevance_score": 0.1},
            {"index": 1, "relevance_score": 0.5}],
            "meta": {"billed_units": {"search_units": 1}}});
        let server = Server::replies(vec![Reply::json(200, &results)]);

        let scores = rerank(&settings(&server, RerankApi::Cohere), "q", &docs(3));

        assert_eq!(scores, Ok(vec![0.1, 0.5, 0.9]));
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].path, "/v1/rerank");
        assert_eq!(
            requests[0].json(),
            json!({"model": "rerank-test", "query": "q", "documents": ["doc 0", "doc 1", "doc 2"],
                   "top_n": 3, "return_documents": false})
        );
        assert_eq!(
            requests[0].header("authorization"),
            Some(&*format!("Bearer {KEY}"))
        );
    }

    #[test]
    fn tei_shape_is_written_exactly_and_either_shape_is_read() {
        let tei = json!([{"index": 1, "score": 0.75}, {"index": 0, "score": 0.25}]);
        let cohere = json!({"results": [{"index": 0, "relevance_score": 2.0}, {"index": 1, "relevance_score": 1.0}]});
        let server = Server::replies(vec![Reply::json(200, &tei), Reply::json(200, &cohere)]);
        let settings = RerankSettings {
            api_key: None,
            ..settings(&server, RerankApi::Tei)
        };

        assert_eq!(rerank(&settings, "q", &docs(2)), Ok(vec![0.25, 0.75]));
        assert_eq!(rerank(&settings, "q", &docs(2)), Ok(vec![2.0, 1.0]));
        let request = &server.requests()[0];
        assert_eq!(
            request.json(),
            json!({"query": "q", "texts": ["doc 0", "doc 1"], "raw_scores": false})
        );
        assert_eq!(request.header("authorization"), None);
    }

    #[test]
    fn cohere_without_a_model_sends_none() {
        let server = Server::replies(vec![Reply::json(200, &json!([{"index": 0, "score": 1}]))]);
        let settings = RerankSettings {
            model: None,
            ..settings(&server, RerankApi::Cohere)
        };

        assert_eq!(rerank(&settings, "q", &docs(1)), Ok(vec![1.0]));
        assert_eq!(server.requests()[0].json().get("model"), None);
    }

    #[test]
    fn a_missing_document_scores_below_the_lowest() {
        let body = json!({"results": [{"index": 0, "relevance_score": 0.4}, {"index": 2, "relevance_score": -0.5}]});
        let server = Server::replies(vec![Reply::json(200, &body)]);

        let scores = rerank(&settings(&server, RerankApi::Cohere), "q", &docs(3));

        assert_eq!(scores, Ok(vec![0.4, -1.5, -0.5]));
    }

    #[test]
    fn bad_answers_are_errors() {
        let cases = [
            (
                json!([{"index": 3, "score": 1.0}]),
                "index 3 is out of range for 3 documents",
            ),
            (json!([{"index": -1, "score": 1.0}]), "no integer `index`"),
            (
                json!([{"index": 0, "score": 1}, {"index": 0, "score": 2}]),
                "index 0 is repeated",
            ),
            (
                json!([{"index": 0, "score": "high"}]),
                "result 0 has no finite score",
            ),
            (json!([]), "scored none of the 3 documents"),
            (json!({"data": []}), "no `results` list"),
        ];
        for (body, expected) in cases {
            let server = Server::replies(vec![Reply::json(200, &body)]);
            let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(3))
                .unwrap_err()
                .to_string();
            assert!(error.starts_with(PREFIX), "{error}");
            assert!(error.contains(expected), "{error}");
        }
        let server = Server::replies(vec![Reply::new(200, "<html>oops</html>")]);
        let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(1))
            .unwrap_err()
            .to_string();
        assert!(error.contains("not JSON"), "{error}");
    }

    #[test]
    fn server_errors_are_retried() {
        let ok = json!([{"index": 0, "score": 0.5}]);
        let server = Server::replies(vec![
            Reply::new(500, "upstream\n<b>down</b>"),
            Reply::json(200, &ok),
        ]);

        assert_eq!(
            rerank(&settings(&server, RerankApi::Tei), "q", &docs(1)),
            Ok(vec![0.5])
        );
        assert_eq!(server.requests().len(), 2);
    }

    #[test]
    fn persistent_failures_give_up_and_other_4xx_are_not_retried() {
        let server = Server::replies(vec![Reply::new(503, "upstream\n<b>down</b>")]);
        let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(1))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "planner: rerank failed: HTTP 503: upstream <b>down</b> (gave up after 3 attempts)"
        );
        assert_eq!(server.requests().len(), 3);

        let body = json!({"error": {"message": "bad key {authorization}"}});
        let server = Server::replies(vec![Reply::json(401, &body)]);
        let shown = format!("{:?}", settings(&server, RerankApi::Tei));
        assert!(
            shown.contains("[redacted]") && !shown.contains(KEY),
            "{shown}"
        );
        let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(1))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "planner: rerank failed: HTTP 401: bad key Bearer [redacted]"
        );
        assert_eq!(server.requests().len(), 1);
    }

    #[test]
    fn a_timeout_is_an_error_at_once() {
        let ok = json!([{"index": 0, "score": 0.5}]);
        let server = Server::replies(vec![Reply::json(200, &ok).after(Duration::from_secs(1))]);
        let settings = RerankSettings {
            timeout: Duration::from_millis(300),
            ..settings(&server, RerankApi::Tei)
        };

        let started = Instant::now();
        let error = rerank(&settings, "q", &docs(1)).unwrap_err().to_string();

        assert!(started.elapsed() < Duration::from_millis(900));
        assert_eq!(
            error,
            "planner: rerank failed: the request timed out after 300ms"
        );
        assert_eq!(server.requests().len(), 1);
    }

    #[test]
    fn connection_errors_are_retried() {
        let addr = unused_address();
        let settings = RerankSettings {
            url: format!("http://{addr}/rerank?key={KEY}"),
            api: RerankApi::Tei,
            model: None,
            api_key: Some(KEY.to_owned()),
            timeout: Duration::from_secs(2),
            max_retries: 1,
            backoff: Duration::from_millis(1),
        };

        let error = rerank(&settings, "q", &docs(1)).unwrap_err().to_string();

        assert!(
            error.starts_with("planner: rerank failed: the request failed"),
            "{error}"
        );
        assert!(error.ends_with("(gave up after 2 attempts)"), "{error}");
        assert!(!error.contains(KEY), "{error}");
    }

    #[test]
    fn empty_documents_send_nothing() {
        let server = Server::replies(vec![Reply::new(500, "")]);

        assert_eq!(
            rerank(&settings(&server, RerankApi::Cohere), "q", &[]),
            Ok(vec![])
        );
        assert!(server.requests().is_empty());
    }

    #[test]
    fn serde_names_are_lowercase() {
        assert_eq!(serde_json::to_value(RerankApi::Tei).unwrap(), json!("tei"));
        let api: RerankApi = serde_json::from_value(json!("cohere")).unwrap();
        assert_eq!(api, RerankApi::Cohere);
    }
}
