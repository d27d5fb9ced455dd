//! The planner's LLM contract (docs/spec/planner.md §15.2) through any OpenAI-compatible chat
//! endpoint: the query goes out, expansion terms ([`Injected`]) come back. Only the query, the
//! catalog's datasource names and the stoplist are sent; nothing else of the catalog is
//! (docs/spec/planner.md §15.2). Terms are not validated here: the planner's gating drops invalid
//! ones with reasons.

use std::time::Duration;

use serde_json::{json, Map, Value};
use slayer_embed::http::{EndpointError, HttpError};

use super::http::{shown, truncate};
use super::terms::Injected;

const EXTRA_KEYS: &str = "planner: the LLM's answer had keys outside the contract, ignored: ";
const MODEL_VAR: &str = slayer_common::env::LLM_MODEL;
const BASE_URL_VAR: &str = slayer_common::env::LLM_BASE_URL;
const KEY_VARS: [&str; 2] = [slayer_common::env::LLM_API_KEY, "OPENAI_API_KEY"];
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The contract's keys: at the top, inside `negatives`, inside an exception.
const TOP_KEYS: [&str; 5] = ["anchors", "phrases", "synonyms", "negatives", "exceptions"];
const NEGATIVES_KEYS: [&str; 3] = ["hard", "soft", "exceptions"];
const EXCEPTION_KEYS: [&str; 2] = ["negative", "allow"];

/// `SLAYER_LLM_MODEL` is set to something else than `openai/<model>`; the text is the warning.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} must be `openai/<model>` (any OpenAI-compatible chat endpoint, e.g. openai/gpt-4o-mini), not {:?}", MODEL_VAR, .0)]
pub struct BadModelVar(pub String);

/// Why the LLM gave no terms. Its text is the one-line warning the response shows, starting
/// with `planner: LLM expansion failed: `, and never holds the key or the URL's secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// The base URL cannot name the chat endpoint.
    #[error("planner: LLM expansion failed: invalid LLM base URL: {0}")]
    BaseUrl(EndpointError),
    /// The request failed (after the planner's retries).
    #[error("planner: LLM expansion failed: {0}")]
    Request(#[from] HttpError),
    /// The answer is not a completion holding the contract's terms; the reason, scrubbed.
    #[error("planner: LLM expansion failed: {0}")]
    Answer(String),
}

/// Why a completion does not hold the contract's terms.
#[derive(Debug, thiserror::Error)]
enum AnswerError {
    #[error("the response is not a chat completion: {0}")]
    NotCompletion(serde_json::Error),
    #[error("the model refused: {}", truncate(.0, 160))]
    Refused(String),
    #[error("the response has no choices[0].message.content")]
    NoContent,
    #[error("the answer is not valid JSON: {0}")]
    NotJson(serde_json::Error),
    #[error("the answer has the wrong shape: not a JSON object")]
    NotAnObject,
    #[error("the answer has the wrong shape: {0}")]
    WrongShape(serde_json::Error),
}

/// Where and how to reach the chat endpoint.
#[derive(Clone)]
pub struct LlmSettings {
    /// Model name as the endpoint knows it, e.g. `gpt-4o-mini`.
    pub model: String,
    /// Endpoint root such as `https://api.openai.com/v1`; requests go to
    /// `{base_url}/chat/completions`.
    pub base_url: String,
    /// Sent as `Authorization: Bearer <key>` when set and non-empty.
    pub api_key: Option<String>,
    /// Limit on each request as a whole (connect, send, read the body).
    pub timeout: Duration,
    /// How many times a 429, a 5xx or a connection error is retried.
    pub max_retries: u32,
    /// Wait before the first retry, doubled for each later one; a `Retry-After` header wins.
    pub backoff: Duration,
}

impl LlmSettings {
    /// From the environment: `SLAYER_LLM_MODEL=openai/<model>` (unset or empty: `Ok(None)`,
    /// the planner runs without an LLM), `SLAYER_LLM_BASE_URL` (default
    /// `https://api.openai.com/v1`), the key from `SLAYER_LLM_API_KEY` or else
    /// `OPENAI_API_KEY`. Timeout 20 s, 2 retries, backoff 300 ms. Empty variables count as
    /// unset; a model without the `openai/` prefix is an error naming the variable.
    pub fn from_env(
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<LlmSettings>, BadModelVar> {
        let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        let Some(model) = parse_model_var(var(MODEL_VAR).as_deref())? else {
            return Ok(None);
        };
        Ok(Some(LlmSettings {
            model,
            base_url: var(BASE_URL_VAR).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned()),
            api_key: KEY_VARS.iter().find_map(|name| var(name)),
            timeout: Duration::from_secs(20),
            max_retries: 2,
            backoff: Duration::from_millis(300),
        }))
    }
}

// By hand so that logging the settings never shows the key.
impl std::fmt::Debug for LlmSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmSettings")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("backoff", &self.backoff)
            .finish()
    }
}

/// `SLAYER_LLM_MODEL`'s value: `openai/<model>` gives the model; unset or blank, none.
fn parse_model_var(value: Option<&str>) -> Result<Option<String>, BadModelVar> {
    let Some(value) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    match value.strip_prefix("openai/").map(str::trim) {
        Some(model) if !model.is_empty() => Ok(Some(model.to_owned())),
        _ => Err(BadModelVar(value.to_owned())),
    }
}

/// The LLM's expansion terms, as given, and what was odd about the answer.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmAnswer {
    /// The terms, not yet gated.
    pub terms: Injected,
    /// One-line warnings for the response (keys outside the contract, ignored).
    pub warnings: Vec<String>,
}

/// One chat completion: POST `{base_url}/chat/completions` with temperature 0 and a JSON
/// response format; the system message states the contract and lists `datasources` and
/// `stoplist`, the user message is `query`. The answer may be fenced in a code block; keys
/// outside the contract are dropped with one warning; a null or missing list counts as
/// empty; any value of the wrong type fails the whole answer.
///
/// The error is a one-line warning starting with `planner: LLM expansion failed: ` that
/// never holds the API key. Blocking: call it from a plain thread, not an async runtime.
pub fn expand(
    settings: &LlmSettings,
    query: &str,
    datasources: &[String],
    stoplist: &[String],
) -> Result<LlmAnswer, LlmError> {
    let url = slayer_embed::http::endpoint(&settings.base_url, "chat/completions")
        .map_err(LlmError::BaseUrl)?;
    let policy = super::http::settings(settings.timeout, settings.max_retries, settings.backoff);
    let client = super::http::client(url.as_str(), settings.api_key.as_deref(), policy)?;
    let body = request_body(&settings.model, query, datasources, stoplist);
    let text = client.post_json(&body)?;
    let (terms, extra) = content_of(&text)
        .and_then(|content| parse_answer(&content))
        .map_err(|why| LlmError::Answer(shown(&client, &why)))?;
    let mut warnings = Vec::new();
    if !extra.is_empty() {
        let keys = format!("{EXTRA_KEYS}[{}]", extra.join(", "));
        warnings.push(shown(&client, &keys));
    }
    Ok(LlmAnswer { terms, warnings })
}

fn request_body(model: &str, query: &str, datasources: &[String], stoplist: &[String]) -> Value {
    json!({
        "model": model,
        "temperature": 0,
        "response_format": {"type": "json_object"},
        "messages": [
            {"role": "system", "content": system_prompt(datasources, stoplist)},
            {"role": "user", "content": query},
        ],
    })
}

/// The contract (docs/spec/planner.md §15.2). The two lists are its only variable
/// parts; JSON arrays keep names with odd characters unambiguous.
fn system_prompt(datasources: &[String], stoplist: &[String]) -> String {
    let list = |items: &[String]| Value::from(items).to_string();
    format!(
        r#"You turn a search request over a data catalog into search terms. Answer with JSON only: one object with exactly these keys:
{{"anchors": [], "phrases": [], "synonyms": [], "negatives": {{"hard": [], "soft": []}}, "exceptions": [{{"negative": "", "allow": []}}]}}
Rules:
- anchors: 1 to 3 key terms, taken from the request.
- phrases: short multi-word phrases from the request; may be empty.
- synonyms: at most 12 related terms, each 2 to 24 characters of [a-z0-9_.-].
- negatives: "hard" = safe to exclude; "soft" = ambiguous, to be penalised rather than excluded.
- exceptions: for common false positives of a negative, the phrases that contain it but mean something else, e.g. {{"negative": "test", "allow": ["ab test", "t-test"]}}.
- No proper nouns and no invented identifiers.
- Leave out English stop words and these generic words: {}
- The catalog's datasources (use no other datasource names): {}"#,
        list(stoplist),
        list(datasources),
    )
}

/// `choices[0].message.content` of a chat completion.
fn content_of(body: &str) -> Result<String, AnswerError> {
    let value: Value = serde_json::from_str(body).map_err(AnswerError::NotCompletion)?;
    let message = &value["choices"][0]["message"];
    if let Some(content) = message["content"].as_str() {
        return Ok(content.to_owned());
    }
    Err(match message["refusal"].as_str() {
        Some(refusal) => AnswerError::Refused(refusal.to_owned()),
        None => AnswerError::NoContent,
    })
}

/// The terms in `content`, and the keys outside the contract that were dropped.
fn parse_answer(content: &str) -> Result<(Injected, Vec<String>), AnswerError> {
    let mut value: Value =
        serde_json::from_str(strip_fences(content)).map_err(AnswerError::NotJson)?;
    let Value::Object(top) = &mut value else {
        return Err(AnswerError::NotAnObject);
    };
    let mut extra = Vec::new();
    prune(top, &TOP_KEYS, "", &mut extra);
    if let Some(Value::Object(negatives)) = top.get_mut("negatives") {
        prune(negatives, &NEGATIVES_KEYS, "negatives.", &mut extra);
        let exceptions = negatives.get_mut("exceptions");
        prune_exceptions(exceptions, "negatives.exceptions[].", &mut extra);
    }
    prune_exceptions(top.get_mut("exceptions"), "exceptions[].", &mut extra);
    let terms = serde_json::from_value(value).map_err(AnswerError::WrongShape)?;
    Ok((terms, extra))
}

/// Drops the keys not in `allowed` (named in `extra`, prefixed by `path`) and the null values.
fn prune(map: &mut Map<String, Value>, allowed: &[&str], path: &str, extra: &mut Vec<String>) {
    map.retain(|key, value| {
        if allowed.contains(&key.as_str()) {
            return !value.is_null();
        }
        let name = format!("{path}{}", truncate(key, 40));
        if !extra.contains(&name) {
            extra.push(name);
        }
        false
    });
}

fn prune_exceptions(list: Option<&mut Value>, path: &str, extra: &mut Vec<String>) {
    let Some(Value::Array(items)) = list else {
        return;
    };
    for item in items {
        if let Value::Object(exception) = item {
            prune(exception, &EXCEPTION_KEYS, path, extra);
            exception
                .entry("allow")
                .or_insert_with(|| Value::Array(Vec::new()));
        }
    }
}

/// The inside of a Markdown code fence (```` ```json … ``` ````), or the text as it is.
fn strip_fences(content: &str) -> &str {
    let text = content.trim();
    let Some(rest) = text.strip_prefix("```") else {
        return text;
    };
    // The info string (`json`) is a word right after the opening fence.
    let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
    let rest = rest.trim_end();
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use slayer_embed::test_support::{Reply, Server};

    use super::super::terms::{Exception, Negatives};
    use super::*;

    const KEY: &str = "sk-test-0123456789abcdef";

    fn settings(server: &Server) -> LlmSettings {
        LlmSettings {
            model: "gpt-test".to_owned(),
            base_url: server.url("/v1/"),
            api_key: Some(KEY.to_owned()),
            timeout: Duration::from_secs(5),
            max_retries: 2,
            backoff: Duration::from_millis(1),
        }
    }

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn completion(content: &str) -> Reply {
        let body = json!({"id": "c1", "object": "chat.completion", "model": "gpt-test",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}]});
        Reply::json(200, &body)
    }

    /// `content` answered by a fresh server.
    fn answer(content: &str) -> Result<LlmAnswer, String> {
        let server = Server::replies(vec![completion(content)]);
        expand(&settings(&server), "q", &[], &[]).map_err(|e| e.to_string())
    }

    #[test]
    fn a_good_answer_is_read_and_the_request_holds_only_the_contract() {
        let content = json!({"anchors": ["pii", "email"], "phrases": ["phone number"],
            "synonyms": ["phone", "gdpr"],
            "negatives": {"hard": ["tmp"], "soft": ["test"],
                          "exceptions": [{"negative": "test", "allow": ["ab test"]}]},
            "exceptions": [{"negative": "sample", "allow": ["sample size"]}]});
        let server = Server::replies(vec![completion(&content.to_string())]);
        let (datasources, stoplist) = (strings(&["shop", "crm db"]), strings(&["data", "table"]));
        let query = "pii tables with emails, not test";

        let answer = expand(&settings(&server), query, &datasources, &stoplist).unwrap();

        let exception = |negative: &str, allow: &str| Exception {
            negative: negative.to_owned(),
            allow: strings(&[allow]),
        };
        let expected = Injected {
            anchors: strings(&["pii", "email"]),
            phrases: strings(&["phone number"]),
            synonyms: strings(&["phone", "gdpr"]),
            negatives: Negatives {
                hard: strings(&["tmp"]),
                soft: strings(&["test"]),
                exceptions: vec![exception("test", "ab test")],
            },
            exceptions: vec![exception("sample", "sample size")],
        };
        assert_eq!(
            answer,
            LlmAnswer {
                terms: expected,
                warnings: vec![]
            }
        );
        let requests = server.requests();
        assert_eq!(requests.len(), 1);
        assert_eq!(requests[0].path, "/v1/chat/completions");
        assert_eq!(
            requests[0].header("authorization"),
            Some(&*format!("Bearer {KEY}"))
        );
        let prompt = system_prompt(&datasources, &stoplist);
        assert_eq!(
            requests[0].json(),
            json!({"model": "gpt-test", "temperature": 0, "response_format": {"type": "json_object"},
                   "messages": [{"role": "system", "content": prompt},
                                {"role": "user", "content": query}]})
        );
        assert!(prompt.contains(r#"["shop","crm db"]"#), "{prompt}");
        assert!(prompt.contains(r#"["data","table"]"#), "{prompt}");
        // Nothing but the two lists varies: no other catalog text can ride along.
        let bare = prompt
            .replace(r#"["shop","crm db"]"#, "[]")
            .replace(r#"["data","table"]"#, "[]");
        assert_eq!(bare, system_prompt(&[], &[]));
    }

    #[test]
    fn fenced_answers_are_unwrapped() {
        for content in [
            "```json\n{\"anchors\": [\"churn\"]}\n```",
            "  ```\n{\"anchors\": [\"churn\"]}```  ",
            "```JSON {\"anchors\": [\"churn\"]} ```",
        ] {
            let answer = answer(content).unwrap();
            assert_eq!(answer.terms.anchors, strings(&["churn"]), "{content:?}");
        }
    }

    #[test]
    fn answers_that_are_not_json_objects_fail() {
        let error = answer("Sure! Here are the terms: churn").unwrap_err();
        assert!(error.starts_with("planner: LLM expansion failed: the answer is not valid JSON: "));
        assert_eq!(
            answer("[\"churn\"]").unwrap_err(),
            "planner: LLM expansion failed: the answer has the wrong shape: not a JSON object"
        );
        let server = Server::replies(vec![Reply::json(200, &json!({"choices": []}))]);
        let error = expand(&settings(&server), "q", &[], &[])
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "planner: LLM expansion failed: the response has no choices[0].message.content"
        );
    }

    #[test]
    fn keys_outside_the_contract_are_dropped_with_one_warning() {
        let content = json!({"anchors": ["churn"], "reasoning": "because",
            "negatives": {"hard": ["tmp"], "why": 1,
                          "exceptions": [{"negative": "test", "allow": null, "note": "x"}]},
            "confidence": 0.9, "exceptions": [{"negative": "dev", "note": "y"}]});

        let answer = answer(&content.to_string()).unwrap();

        assert_eq!(
            answer.warnings,
            vec!["planner: the LLM's answer had keys outside the contract, ignored: \
                  [reasoning, confidence, negatives.why, negatives.exceptions[].note, exceptions[].note]"
                .to_owned()]
        );
        assert_eq!(answer.terms.anchors, strings(&["churn"]));
        assert_eq!(answer.terms.negatives.hard, strings(&["tmp"]));
        assert_eq!(
            answer.terms.negatives.exceptions[0].allow,
            Vec::<String>::new()
        );
        assert_eq!(answer.terms.exceptions[0].negative, "dev");
    }

    #[test]
    fn null_lists_count_as_empty() {
        let content =
            r#"{"anchors": null, "synonyms": ["kpi"], "negatives": null, "exceptions": null}"#;
        let answer = answer(content).unwrap();
        assert_eq!(answer.terms.synonyms, strings(&["kpi"]));
        assert!(answer.terms.anchors.is_empty() && answer.terms.negatives.hard.is_empty());
        assert!(answer.warnings.is_empty());
    }

    #[test]
    fn values_of_the_wrong_type_fail_the_whole_answer() {
        for content in [
            r#"{"anchors": ["churn", 3]}"#,
            r#"{"anchors": ["churn"], "synonyms": "retention"}"#,
            r#"{"anchors": ["churn"], "negatives": ["tmp"]}"#,
            r#"{"anchors": ["churn"], "exceptions": [{"allow": ["ab test"]}]}"#,
        ] {
            let error = answer(content).unwrap_err();
            assert!(
                error
                    .starts_with("planner: LLM expansion failed: the answer has the wrong shape: "),
                "{error}"
            );
        }
    }

    #[test]
    fn a_timeout_fails_without_retrying() {
        let slow = completion(r#"{"anchors": ["churn"]}"#).after(Duration::from_secs(1));
        let server = Server::replies(vec![slow]);
        let settings = LlmSettings {
            timeout: Duration::from_millis(300),
            ..settings(&server)
        };

        let started = Instant::now();
        let error = expand(&settings, "q", &[], &[]).unwrap_err().to_string();

        assert!(started.elapsed() < Duration::from_millis(900));
        assert_eq!(
            error,
            "planner: LLM expansion failed: the request timed out after 300ms"
        );
        assert_eq!(server.requests().len(), 1);
    }

    #[test]
    fn a_rate_limit_is_retried() {
        let limited = Reply::json(429, &json!({"error": {"message": "Rate limit reached"}}));
        let server = Server::replies(vec![
            limited.header("Retry-After", "0"),
            completion(r#"{"anchors": ["churn"]}"#),
        ]);

        let answer = expand(&settings(&server), "q", &[], &[]).unwrap();

        assert_eq!(answer.terms.anchors, strings(&["churn"]));
        assert_eq!(server.requests().len(), 2);
    }

    #[test]
    fn a_lasting_rate_limit_gives_up() {
        let limited = Reply::json(429, &json!({"error": {"message": "Rate limit reached"}}));
        let server = Server::replies(vec![limited.header("retry-after-ms", "5")]);

        let error = expand(&settings(&server), "q", &[], &[])
            .unwrap_err()
            .to_string();

        assert_eq!(
            error,
            "planner: LLM expansion failed: HTTP 429: Rate limit reached (gave up after 3 attempts)"
        );
        assert_eq!(server.requests().len(), 3);
    }

    #[test]
    fn the_key_never_shows_in_an_error() {
        let echo = json!({"error": {"message": "Incorrect API key: {authorization}"}});
        let server = Server::replies(vec![Reply::json(401, &echo)]);
        let settings = settings(&server);
        assert!(!format!("{settings:?}").contains(KEY));

        let error = expand(&settings, "q", &[], &[]).unwrap_err().to_string();

        assert_eq!(
            error,
            "planner: LLM expansion failed: HTTP 401: Incorrect API key: Bearer [redacted]"
        );
        assert_eq!(server.requests().len(), 1, "other 4xx are not retried");
        let content = format!(r#"{{"anchors": ["a"], "{KEY}": 1}}"#);
        let server = Server::replies(vec![completion(&content)]);
        let settings = LlmSettings {
            base_url: server.url("/v1"),
            ..settings
        };
        let answer = expand(&settings, "q", &[], &[]).unwrap();
        assert!(
            answer.warnings[0].ends_with("ignored: [[redacted]]"),
            "{answer:?}"
        );
    }

    #[test]
    fn the_model_variable_needs_the_openai_prefix() {
        assert_eq!(parse_model_var(None), Ok(None));
        assert_eq!(parse_model_var(Some("  ")), Ok(None));
        assert_eq!(
            parse_model_var(Some("openai/gpt-4o-mini")),
            Ok(Some("gpt-4o-mini".to_owned()))
        );
        assert_eq!(
            parse_model_var(Some(" openai/llama3.1:8b ")),
            Ok(Some("llama3.1:8b".to_owned()))
        );
        for bad in [
            "gpt-4o-mini",
            "anthropic/claude",
            "openai/",
            "OpenAI/gpt-4o",
        ] {
            let error = parse_model_var(Some(bad)).unwrap_err().to_string();
            assert!(
                error.starts_with("SLAYER_LLM_MODEL must be `openai/<model>`"),
                "{error}"
            );
            assert!(error.contains(bad), "{error}");
        }
    }
}
