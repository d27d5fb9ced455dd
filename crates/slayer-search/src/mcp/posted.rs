//! A POSTed MCP message, read and checked before rmcp sees it: the body must arrive within
//! [`BODY_SECONDS`] (a client that stalls mid-body no longer holds a connection for minutes)
//! and within `limits.request_bytes`; what is not one JSON-RPC message gets the JSON-RPC error
//! the stdio transport gives (`-32700` not JSON, `-32600` not an object or a batch, `-32602`
//! a `tools/call` without a tool name), as JSON with HTTP 400, instead of a plain-text 415.

use std::convert::Infallible;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::body::Incoming;
use hyper::{header, Request, Response, StatusCode};
use serde_json::{json, Value};

/// How long a request body may take to arrive.
pub const BODY_SECONDS: u64 = 30;

type Body = BoxBody<Bytes, Infallible>;

/// A plain-text answer with `status`.
pub(super) fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// The request with its body read, or the answer it gets instead.
pub async fn read(
    request: Request<Incoming>,
    max_bytes: usize,
) -> Result<Request<Full<Bytes>>, Response<Body>> {
    read_within(request, max_bytes, Duration::from_secs(BODY_SECONDS)).await
}

async fn read_within<B>(
    request: Request<B>,
    max_bytes: usize,
    patience: Duration,
) -> Result<Request<Full<Bytes>>, Response<Body>>
where
    B: hyper::body::Body,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    let (parts, body) = request.into_parts();
    let read = tokio::time::timeout(patience, Limited::new(body, max_bytes).collect()).await;
    let bytes = match read {
        Err(_) => {
            return Err(plain(
                StatusCode::REQUEST_TIMEOUT,
                "Request Timeout: the body did not arrive in time",
            ))
        }
        Ok(Err(e))
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            return Err(plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large: over limits.request_bytes",
            ))
        }
        Ok(Err(_)) => {
            return Err(plain(
                StatusCode::BAD_REQUEST,
                "Bad Request: the body broke off",
            ))
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    if let Some(error) = check(&bytes) {
        return Err(error);
    }
    Ok(Request::from_parts(parts, Full::new(bytes)))
}

/// The JSON-RPC error a body gets, when it is not one message rmcp can take.
fn check(body: &[u8]) -> Option<Response<Body>> {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Some(error(Value::Null, -32700, &format!("Parse error: {e}"))),
    };
    let Value::Object(message) = &value else {
        let why = if value.is_array() {
            "Invalid Request: batches are not supported; send one message per request"
        } else {
            "Invalid Request: a message is a JSON object"
        };
        return Some(error(Value::Null, -32600, why));
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    if message.get("method").and_then(Value::as_str) == Some("tools/call") {
        let named = message
            .get("params")
            .and_then(|p| p.get("name"))
            .is_some_and(Value::is_string);
        if !named {
            return Some(error(
                id,
                -32602,
                "Invalid params: tools/call needs params.name, the tool's name",
            ));
        }
    }
    None
}

fn error(id: Value, code: i64, message: &str) -> Response<Body> {
    let body = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("application/json"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(body: &str) -> Option<i64> {
        let response = check(body.as_bytes())?;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST);
        let bytes = body_of(response);
        let v: Value = serde_json::from_slice(&bytes).unwrap();
        v["error"]["code"].as_i64()
    }

    fn body_of(response: Response<Body>) -> Bytes {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(response.into_body().collect())
            .unwrap()
            .to_bytes()
    }

    /// A body that never sends a byte.
    struct Stalled;

    impl hyper::body::Body for Stalled {
        type Data = Bytes;
        type Error = std::io::Error;
        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
            std::task::Poll::Pending
        }
    }

    #[test]
    fn a_stalled_body_is_answered_408_and_an_oversized_one_413() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let stalled = Request::new(Stalled);
        let answer = rt
            .block_on(read_within(stalled, 1024, Duration::from_millis(50)))
            .unwrap_err();
        assert_eq!(answer.status(), StatusCode::REQUEST_TIMEOUT);
        let big = Request::new(Full::new(Bytes::from(vec![b' '; 2048])));
        let answer = rt
            .block_on(read_within(big, 1024, Duration::from_secs(5)))
            .unwrap_err();
        assert_eq!(answer.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }

    #[test]
    fn what_is_not_one_message_gets_the_json_rpc_error() {
        assert_eq!(code("{not json"), Some(-32700));
        assert_eq!(code("[]"), Some(-32600));
        assert_eq!(
            code("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]"),
            Some(-32600)
        );
        assert_eq!(code("42"), Some(-32600));
        assert_eq!(
            code("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{}}"),
            Some(-32602)
        );
        assert_eq!(
            code("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"search\"}}"),
            None
        );
        assert_eq!(
            code("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"),
            None
        );
    }
}
