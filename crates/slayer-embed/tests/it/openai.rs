//! Whole-client tests against the scripted HTTP/1.1 server of `slayer_embed::test_support`.

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use slayer_embed::openai::{OpenAiClient, OpenAiConfig};
use slayer_embed::test_support::{unused_address, Reply, Request, Server};

const KEY: &str = "sk-test-0123456789abcdef";
const MODEL: &str = "text-embedding-3-small";

/// The texts of an embeddings request.
pub(crate) fn inputs(request: &Request) -> Vec<String> {
    request.json()["input"]
        .as_array()
        .expect("input is an array")
        .iter()
        .map(|v| v.as_str().expect("input items are strings").to_owned())
        .collect()
}

/// An OpenAI-style error answer.
pub(crate) fn error(status: u16, message: &str) -> Reply {
    Reply::json(
        status,
        &json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": null}}),
    )
}

/// A well-formed answer to `request`, with `data` reversed so that order must come from `index`.
pub(crate) fn embeddings(request: &Request) -> Reply {
    let data: Vec<Value> = inputs(request)
        .iter()
        .enumerate()
        .rev()
        .map(|(index, text)| {
            json!({"object": "embedding", "index": index, "embedding": fake_embedding(text)})
        })
        .collect();
    Reply::json(
        200,
        &json!({"object": "list", "data": data, "model": MODEL,
               "usage": {"prompt_tokens": 1, "total_tokens": 1}}),
    )
}

/// Identifies its text exactly, so a vector landing in the wrong slot is caught.
fn fake_embedding(text: &str) -> Vec<f32> {
    text.bytes().map(f32::from).collect()
}

fn config(server: &Server) -> OpenAiConfig {
    OpenAiConfig {
        base_url: server.base_url(),
        api_key: Some(KEY.to_owned()),
        model: MODEL.to_owned(),
        timeout: Duration::from_secs(5),
        max_retries: 4,
        backoff: Duration::from_millis(2),
    }
}

fn client(config: OpenAiConfig) -> OpenAiClient {
    OpenAiClient::new(config).expect("client")
}

/// Each slot's embedding, or its error as the message a user reads.
fn messages(results: Vec<slayer_embed::EmbedResult>) -> Vec<Result<Vec<f32>, String>> {
    results
        .into_iter()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect()
}

fn assert_embedded(results: &[Result<Vec<f32>, String>], texts: &[&str]) {
    assert_eq!(results.len(), texts.len());
    for (result, text) in results.iter().zip(texts) {
        assert_eq!(result.as_ref(), Ok(&fake_embedding(text)), "text {text:?}");
    }
}

#[test]
fn batch_comes_back_in_input_order_from_one_request() {
    let server = Server::start(|_, request| embeddings(request));
    let client = client(config(&server));
    let texts = ["alpha", "b", "gamma ray"];

    let results = messages(client.embed(&texts));

    assert_embedded(&results, &texts);
    assert_eq!(server.count(), 1);
    assert_eq!(client.requests_sent(), 1);
    let request = &server.requests()[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.json(), json!({"model": MODEL, "input": texts}));
    assert_eq!(
        request.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert!(request
        .header("content-type")
        .is_some_and(|v| v.starts_with("application/json")));
}

#[test]
fn rate_limit_is_retried() {
    let server = Server::start(|n, request| {
        if n < 2 {
            error(429, "Rate limit reached").header("Retry-After", "0")
        } else {
            embeddings(request)
        }
    });
    let client = client(config(&server));

    let results = messages(client.embed(&["one", "two"]));

    assert_embedded(&results, &["one", "two"]);
    assert_eq!(server.count(), 3);
    assert_eq!(client.requests_sent(), 3);
}

#[test]
fn retry_after_is_honoured() {
    let server = Server::start(|n, request| {
        if n == 0 {
            error(429, "Rate limit reached").header("Retry-After", "1")
        } else {
            embeddings(request)
        }
    });
    let client = client(config(&server));

    let started = Instant::now();
    let results = messages(client.embed(&["one"]));

    assert_embedded(&results, &["one"]);
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(server.count(), 2);
}

#[test]
fn server_error_is_retried() {
    let server = Server::start(|n, request| {
        if n == 0 {
            error(500, "The server had an error")
        } else {
            embeddings(request)
        }
    });
    let client = client(config(&server));

    let results = messages(client.embed(&["one", "two"]));

    assert_embedded(&results, &["one", "two"]);
    assert_eq!(server.count(), 2);
}

#[test]
fn exhausted_retries_fail_every_slot() {
    let server = Server::start(|_, _| error(503, "overloaded"));
    let client = client(OpenAiConfig {
        max_retries: 2,
        ..config(&server)
    });

    let results = messages(client.embed(&["one", "two"]));

    assert_eq!(server.count(), 3);
    for result in results {
        let message = result.unwrap_err();
        assert!(message.contains("HTTP 503: overloaded"), "{message}");
        assert!(message.contains("3 attempts"), "{message}");
    }
}

#[test]
fn timeout_is_retried() {
    let server = Server::start(|n, request| {
        let reply = embeddings(request);
        if n == 0 {
            reply.after(Duration::from_secs(1))
        } else {
            reply
        }
    });
    let client = client(OpenAiConfig {
        timeout: Duration::from_millis(300),
        ..config(&server)
    });

    let results = messages(client.embed(&["one", "two"]));

    assert_embedded(&results, &["one", "two"]);
    assert_eq!(server.count(), 2);
}

#[test]
fn timeout_without_retries_fails_every_slot() {
    let server = Server::start(|_, request| embeddings(request).after(Duration::from_secs(1)));
    let client = client(OpenAiConfig {
        timeout: Duration::from_millis(300),
        max_retries: 0,
        ..config(&server)
    });

    let results = messages(client.embed(&["one", "two"]));

    assert_eq!(results.len(), 2);
    for result in results {
        let message = result.unwrap_err();
        assert!(message.contains("timed out"), "{message}");
    }
    assert_eq!(client.requests_sent(), 1);
}

#[test]
fn connection_errors_are_retried() {
    let addr = unused_address();
    let client = client(OpenAiConfig {
        base_url: format!("http://{addr}/v1"),
        api_key: Some(KEY.to_owned()),
        model: MODEL.to_owned(),
        timeout: Duration::from_secs(5),
        max_retries: 1,
        backoff: Duration::from_millis(2),
    });

    let results = messages(client.embed(&["one"]));

    assert_eq!(client.requests_sent(), 2);
    let message = results[0].clone().unwrap_err();
    assert!(message.contains("request failed"), "{message}");
    assert!(message.contains("2 attempts"), "{message}");
}

#[test]
fn bad_request_isolates_the_bad_text() {
    let server = Server::start(|_, request| {
        if inputs(request).iter().any(|text| text.contains("BAD")) {
            error(400, "input contains a forbidden word")
        } else {
            embeddings(request)
        }
    });
    let client = client(config(&server));
    let owned: Vec<String> = (0..32)
        .map(|i| {
            if i == 17 {
                format!("text {i} BAD")
            } else {
                format!("text {i}")
            }
        })
        .collect();
    let texts: Vec<&str> = owned.iter().map(String::as_str).collect();

    let results = messages(client.embed(&texts));

    assert_eq!(results.len(), 32);
    for (i, (result, text)) in results.iter().zip(&texts).enumerate() {
        if i == 17 {
            let message = result.clone().unwrap_err();
            assert!(
                message.contains("HTTP 400: input contains a forbidden word"),
                "{message}"
            );
        } else {
            assert_eq!(result.as_ref(), Ok(&fake_embedding(text)), "text {text:?}");
        }
    }
    assert_eq!(server.count(), 1 + 32);
    let requests = server.requests();
    assert_eq!(inputs(&requests[0]).len(), 32);
    assert!(requests[1..].iter().all(|r| inputs(r).len() == 1));
}

#[test]
fn bad_request_for_a_single_text_is_not_repeated() {
    let server = Server::start(|_, _| error(400, "input too long"));
    let client = client(config(&server));

    let results = messages(client.embed(&["one"]));

    assert_eq!(results, vec![Err("HTTP 400: input too long".to_owned())]);
    assert_eq!(server.count(), 1);
}

#[test]
fn unauthorized_fails_at_once_without_leaking_the_key() {
    let server = Server::start(|_, _| error(401, &format!("Incorrect API key provided: {KEY}.")));
    let config = config(&server);
    assert!(!format!("{config:?}").contains(KEY));
    let client = client(config);
    assert!(!format!("{client:?}").contains(KEY));

    let results = messages(client.embed(&["one", "two", "three"]));

    assert_eq!(results.len(), 3);
    for result in results {
        let message = result.unwrap_err();
        assert!(message.contains("401"), "{message}");
        assert!(message.contains("Incorrect API key provided"), "{message}");
        assert!(!message.contains(KEY), "{message}");
    }
    assert_eq!(server.count(), 1);
}

#[test]
fn other_client_errors_are_not_retried() {
    let server = Server::start(|_, _| Reply::json(404, &json!({"detail": "Not Found"})));
    let client = client(config(&server));

    let results = messages(client.embed(&["one", "two"]));

    assert_eq!(
        results,
        vec![Err("HTTP 404: Not Found".to_owned()); 2],
        "every slot gets the same error"
    );
    assert_eq!(server.count(), 1);
}

#[test]
fn malformed_response_fails_every_slot() {
    let server = Server::start(|_, _| Reply::new(200, "not json"));
    let client = client(config(&server));

    let results = messages(client.embed(&["one", "two"]));

    for result in results {
        let message = result.unwrap_err();
        assert!(
            message.contains("malformed embeddings response"),
            "{message}"
        );
    }
    assert_eq!(server.count(), 1);
}

#[test]
fn wrong_number_of_embeddings_fails_every_slot() {
    let server = Server::start(|_, _| {
        Reply::json(
            200,
            &json!({"object": "list", "data": [{"object": "embedding", "index": 0, "embedding": [0.5]}]}),
        )
    });
    let client = client(config(&server));

    let results = messages(client.embed(&["one", "two"]));

    for result in results {
        let message = result.unwrap_err();
        assert!(
            message.contains("expected 2 embeddings, got 1"),
            "{message}"
        );
    }
    assert_eq!(server.count(), 1);
}

#[test]
fn trailing_slash_and_missing_key_are_handled() {
    let server = Server::start(|_, request| embeddings(request));
    let client = client(OpenAiConfig {
        base_url: format!("{}/", server.base_url()),
        api_key: None,
        ..config(&server)
    });

    let results = messages(client.embed(&["one"]));

    assert_embedded(&results, &["one"]);
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/embeddings");
    assert_eq!(request.header("authorization"), None);
}

#[test]
fn empty_batch_sends_nothing() {
    let server = Server::start(|_, request| embeddings(request));
    let client = client(config(&server));

    assert!(client.embed(&[]).is_empty());
    assert_eq!(client.requests_sent(), 0);
}

#[test]
fn check_requires_a_key_only_for_openai() {
    let settings = |base_url: &str, api_key: Option<&str>| OpenAiConfig {
        base_url: base_url.to_owned(),
        api_key: api_key.map(str::to_owned),
        model: MODEL.to_owned(),
        timeout: Duration::from_secs(1),
        max_retries: 0,
        backoff: Duration::from_millis(1),
    };
    let openai = |api_key| client(settings("https://api.openai.com/v1", api_key));
    assert_eq!(
        openai(None).check().map_err(|e| e.to_string()),
        Err("OPENAI_API_KEY is not set".to_owned())
    );
    assert!(openai(Some("")).check().is_err());
    assert_eq!(openai(Some(KEY)).check(), Ok(()));

    let local = client(settings("http://127.0.0.1:8080/v1", None));
    assert_eq!(local.check(), Ok(()));
}

#[test]
fn invalid_base_url_is_rejected() {
    let config = OpenAiConfig {
        base_url: "not a url".to_owned(),
        ..OpenAiConfig::from_env(MODEL)
    };
    assert!(OpenAiClient::new(config).is_err());
}

#[test]
fn a_base_url_with_a_query_keeps_it_after_the_path_and_never_shows_its_values() {
    let server = Server::start(|_, _| error(503, "overloaded"));
    let base = format!(
        "{}?api-version=2024-06-01&key=QUERYSECRET",
        server.base_url().replace("http://", "http://tok3n@")
    );
    let queried = client(OpenAiConfig {
        base_url: base,
        max_retries: 0,
        ..config(&server)
    });
    let results = messages(queried.embed(&["one"]));
    assert_eq!(
        server.requests()[0].path,
        "/v1/embeddings?api-version=2024-06-01&key=QUERYSECRET",
        "the path is joined, the query kept"
    );
    let message = results[0].clone().unwrap_err();
    assert!(
        !message.contains("QUERYSECRET") && !message.contains("tok3n"),
        "{message}"
    );

    // A refused connection quotes the URL in reqwest's error chain: masked there too.
    let addr = unused_address();
    let refused = client(OpenAiConfig {
        base_url: format!("http://user:PASSW0RD@{addr}/v1?key=QUERYSECRET"),
        max_retries: 0,
        ..config(&server)
    });
    let message = refused.embed(&["one"])[0].clone().unwrap_err().to_string();
    assert!(
        !message.contains("QUERYSECRET") && !message.contains("PASSW0RD"),
        "{message}"
    );
    let bad = OpenAiClient::new(OpenAiConfig {
        base_url: "ftp://u:PASSW0RD@host/v1?key=QUERYSECRET".into(),
        ..config(&server)
    })
    .unwrap_err();
    assert_eq!(
        bad.to_string(),
        "invalid embedding base URL: ftp://***:***@host/v1?key=*** is not an http(s) URL"
    );
}
