//! A cross-encoder reranker behind HTTP, in the Cohere / Jina request shape or the one of
//! Hugging Face's text-embeddings-inference (TEI). Responses are read in either shape
//! whatever the settings say; requests are written exactly in the configured one. The POST
//! itself (retries, timeout, redaction) is [`super::http::Post`].

use std::time::Duration;

use serde_json::{json, Value};

use super::http::{Post, REDACTED};

const PREFIX: &str = "planner: rerank failed: ";

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
) -> Result<Vec<f64>, String> {
    if documents.is_empty() {
        return Ok(Vec::new());
    }
    let post = Post {
        url: &settings.url,
        api_key: settings.api_key.as_deref(),
        timeout: settings.timeout,
        max_retries: settings.max_retries,
        backoff: settings.backoff,
    };
    let body = request_body(settings, query, documents);
    let text = post.send(&body).map_err(|f| post.message(PREFIX, f))?;
    parse_scores(&text, documents.len()).map_err(|why| post.message(PREFIX, why))
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
fn parse_scores(body: &str, count: usize) -> Result<Vec<f64>, String> {
    let value: Value =
        serde_json::from_str(body).map_err(|e| format!("the response is not JSON: {e}"))?;
    let items = match &value {
        Value::Array(items) => items,
        Value::Object(map) => match map.get("results") {
            Some(Value::Array(items)) => items,
            _ => return Err("the response has no `results` list".to_owned()),
        },
        _ => return Err("the response is neither a list nor an object".to_owned()),
    };
    let mut scores: Vec<Option<f64>> = vec![None; count];
    for item in items {
        let index = item
            .get("index")
            .and_then(Value::as_u64)
            .ok_or("a result has no integer `index`")?;
        let score = item
            .get("relevance_score")
            .or_else(|| item.get("score"))
            .and_then(Value::as_f64)
            .filter(|s| s.is_finite())
            .ok_or_else(|| format!("result {index} has no finite score"))?;
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| scores.get_mut(i))
            .ok_or_else(|| format!("index {index} is out of range for {count} documents"))?;
        if slot.replace(score).is_some() {
            return Err(format!("index {index} is repeated"));
        }
    }
    let lowest = scores
        .iter()
        .flatten()
        .copied()
        .reduce(f64::min)
        .ok_or_else(|| format!("the response scored none of the {count} documents"))?;
    Ok(scores
        .into_iter()
        .map(|s| s.unwrap_or(lowest - 1.0))
        .collect())
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::time::Instant;

    use super::super::http::test_server::{Reply, Server};
    use super::*;

    const KEY: &str = "rk-test-0123456789abcdef";

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
        let server = Server::start(vec![Reply::json(200, &results)]);

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
        let server = Server::start(vec![Reply::json(200, &tei), Reply::json(200, &cohere)]);
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
        let server = Server::start(vec![Reply::json(200, &json!([{"index": 0, "score": 1}]))]);
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
        let server = Server::start(vec![Reply::json(200, &body)]);

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
            let server = Server::start(vec![Reply::json(200, &body)]);
            let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(3)).unwrap_err();
            assert!(error.starts_with(PREFIX), "{error}");
            assert!(error.contains(expected), "{error}");
        }
        let server = Server::start(vec![Reply::new(200, "<html>oops</html>")]);
        let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(1)).unwrap_err();
        assert!(error.contains("not JSON"), "{error}");
    }

    #[test]
    fn server_errors_are_retried() {
        let ok = json!([{"index": 0, "score": 0.5}]);
        let server = Server::start(vec![
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
        let server = Server::start(vec![Reply::new(503, "upstream\n<b>down</b>")]);
        let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(1)).unwrap_err();
        assert_eq!(
            error,
            "planner: rerank failed: HTTP 503: upstream <b>down</b> (gave up after 3 attempts)"
        );
        assert_eq!(server.requests().len(), 3);

        let body = json!({"error": {"message": "bad key {authorization}"}});
        let server = Server::start(vec![Reply::json(401, &body)]);
        let shown = format!("{:?}", settings(&server, RerankApi::Tei));
        assert!(
            shown.contains("[redacted]") && !shown.contains(KEY),
            "{shown}"
        );
        let error = rerank(&settings(&server, RerankApi::Tei), "q", &docs(1)).unwrap_err();
        assert_eq!(
            error,
            "planner: rerank failed: HTTP 401: bad key Bearer [redacted]"
        );
        assert_eq!(server.requests().len(), 1);
    }

    #[test]
    fn a_timeout_is_an_error_at_once() {
        let ok = json!([{"index": 0, "score": 0.5}]);
        let server = Server::start(vec![Reply::json(200, &ok).after(Duration::from_secs(1))]);
        let settings = RerankSettings {
            timeout: Duration::from_millis(300),
            ..settings(&server, RerankApi::Tei)
        };

        let started = Instant::now();
        let error = rerank(&settings, "q", &docs(1)).unwrap_err();

        assert!(started.elapsed() < Duration::from_millis(900));
        assert_eq!(
            error,
            "planner: rerank failed: the request timed out after 300ms"
        );
        assert_eq!(server.requests().len(), 1);
    }

    #[test]
    fn connection_errors_are_retried() {
        // A port that was just free and now has nobody listening.
        let addr = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let settings = RerankSettings {
            url: format!("http://{addr}/rerank?key={KEY}"),
            api: RerankApi::Tei,
            model: None,
            api_key: Some(KEY.to_owned()),
            timeout: Duration::from_secs(2),
            max_retries: 1,
            backoff: Duration::from_millis(1),
        };

        let error = rerank(&settings, "q", &docs(1)).unwrap_err();

        assert!(
            error.starts_with("planner: rerank failed: the request failed"),
            "{error}"
        );
        assert!(error.ends_with("(gave up after 2 attempts)"), "{error}");
        assert!(!error.contains(KEY), "{error}");
    }

    #[test]
    fn empty_documents_send_nothing() {
        let server = Server::start(vec![Reply::new(500, "")]);

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
