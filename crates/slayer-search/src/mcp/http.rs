//! `slayer-search mcp --http ADDR`: the same server over MCP's streamable HTTP transport
//! (rmcp's `StreamableHttpService`, on hyper's HTTP/1 server), at `/mcp`.
//!
//! What guards it, in the order a request meets it: the listener is on loopback unless
//! `--allow-remote` says otherwise; every request must carry `Authorization: Bearer <token>`
//! (compared in constant time) or it gets 401 before any MCP processing; an `Origin` that is
//! not this machine gets 403 (unless remote); a POSTed body must arrive within 30 s and
//! `limits.request_bytes` and be one JSON-RPC message (`posted.rs`: 408, 413, or the JSON-RPC
//! error stdio gives); rmcp then checks the `Host` header (loopback names only, against DNS
//! rebinding, unless remote). Sessions expire (`sessions.rs`). SIGTERM drains: no new connection
//! or request, the replies under way sent, then the sessions end ([`serve`]). The token is
//! never printed: not in the listening line, not in errors, not in `Debug`.

use std::convert::Infallible;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use super::posted::{self, plain};
use super::sessions::{ExpiringSessions, Expiry};
use anyhow::Context as _;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::{header, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use slayer_common::cli::UsageError;
use tokio::sync::Notify;

use super::Server;
use crate::cli::McpArgs;

/// The shortest token taken: shorter ones are guessable.
const MIN_TOKEN_CHARS: usize = 16;

/// Where MCP is served.
const ENDPOINT: &str = "/mcp";

/// The bearer token clients must present.
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(hidden)")
    }
}

impl Token {
    /// The token of `--token-file`, else of `SLAYER_MCP_TOKEN`, trimmed; refused when there
    /// is none or it is too short to be a secret.
    pub fn load(file: Option<&Path>) -> Result<Token, UsageError> {
        let (text, source) = match file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    UsageError(format!(
                        "--token-file {}: cannot read it: {e}",
                        path.display()
                    ))
                })?;
                (text, format!("--token-file {}", path.display()))
            }
            None => match slayer_common::env::var(slayer_common::env::MCP_TOKEN) {
                Some(text) => (text, slayer_common::env::MCP_TOKEN.to_owned()),
                None => {
                    return Err(UsageError(format!(
                        "--http needs a bearer token: set {} or give --token-file PATH (at \
                         least {MIN_TOKEN_CHARS} characters, e.g. from `openssl rand -hex 32`)",
                        slayer_common::env::MCP_TOKEN
                    )))
                }
            },
        };
        let token = text.trim();
        // One token, one line: a second line (two tokens, a comment) would make the server
        // refuse every request whose header carries either.
        if token.lines().count() > 1 || token.chars().any(char::is_whitespace) {
            return Err(UsageError(format!(
                "the bearer token of {source} holds more than one line or a space; it must be one token alone (e.g. from `openssl rand -hex 32`)"
            )));
        }
        let chars = token.chars().count();
        if chars < MIN_TOKEN_CHARS {
            return Err(UsageError(format!(
                "the bearer token of {source} is {chars} characters; at least \
                 {MIN_TOKEN_CHARS} are needed (e.g. from `openssl rand -hex 32`)"
            )));
        }
        Ok(Token(token.to_owned()))
    }

    /// Whether an `Authorization` header carries this token (scheme `Bearer`, any case).
    fn admits(&self, header: Option<&header::HeaderValue>) -> bool {
        let Some(value) = header.map(header::HeaderValue::as_bytes) else {
            return false;
        };
        let Some((scheme, given)) = value.split_at_checked(7) else {
            return false;
        };
        scheme.eq_ignore_ascii_case(b"bearer ") && same(given.trim_ascii(), self.0.as_bytes())
    }
}

/// Byte equality whose time does not depend on where the inputs differ (only on their
/// lengths), so a client cannot find the token a byte at a time.
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0);
        diff = std::hint::black_box(diff | usize::from(x));
    }
    diff == 0
}

/// What `--http` and its flags ask for, checked before anything is opened.
#[derive(Debug)]
pub struct Options {
    addr: SocketAddr,
    allow_remote: bool,
    token: Token,
    expiry: Expiry,
}

impl Options {
    /// Refuses a non-loopback address without `--allow-remote`, and a missing or short token.
    pub fn new(addr: SocketAddr, args: &McpArgs) -> Result<Options, UsageError> {
        if !addr.ip().is_loopback() && !args.allow_remote {
            return Err(UsageError(format!(
                "--http {addr} would listen beyond this machine; give a loopback address \
                 (127.0.0.1:PORT), or add --allow-remote to mean it (and put TLS in front)"
            )));
        }
        Ok(Options {
            addr,
            allow_remote: args.allow_remote,
            token: Token::load(args.token_file.as_deref())?,
            expiry: Expiry {
                idle: std::time::Duration::from_secs(args.session_idle),
                cap: usize::try_from(args.max_sessions).unwrap_or(usize::MAX),
            },
        })
    }
}

type Body = BoxBody<Bytes, Infallible>;

/// The token check in front of rmcp's service.
struct Gate {
    token: Token,
    /// Whether a browser page of any origin may call (only with `--allow-remote`).
    any_origin: bool,
    /// The most bytes a POSTed message may hold.
    request_bytes: usize,
    /// One permit per POST being answered (see [`Gate::answer`]).
    replies: Arc<tokio::sync::Semaphore>,
    mcp: StreamableHttpService<Server, ExpiringSessions>,
}

impl Gate {
    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        if !self
            .token
            .admits(request.headers().get(header::AUTHORIZATION))
        {
            let mut response = plain(
                StatusCode::UNAUTHORIZED,
                "Unauthorized: send `Authorization: Bearer <token>` with the server's token",
            );
            response.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return response;
        }
        if request.uri().path() != ENDPOINT {
            return plain(StatusCode::NOT_FOUND, "Not Found: MCP is served at /mcp");
        }
        // A browser names the page that sent the request; a page of another site must not
        // reach a loopback server (DNS rebinding), as the MCP transport requires.
        if !self.any_origin
            && request
                .headers()
                .get(header::ORIGIN)
                .is_some_and(|o| !loopback_origin(o.as_bytes()))
        {
            return plain(
                StatusCode::FORBIDDEN,
                "Forbidden: the Origin is not this machine (start with --allow-remote to accept others)",
            );
        }
        if request.method() == hyper::Method::POST {
            // Held until the reply's body is dropped (sent, or its client gone): a shutdown
            // waits for every one, so no caller of a committed save gets a cut-off reply.
            let Ok(in_flight) = self.replies.clone().acquire_owned().await else {
                return plain(StatusCode::SERVICE_UNAVAILABLE, "the server is stopping");
            };
            let response = match posted::read(request, self.request_bytes).await {
                Ok(request) => self.mcp.handle(request).await,
                Err(answer) => answer,
            };
            return response.map(|body| {
                body.map_frame(move |frame| {
                    let _held = &in_flight;
                    frame
                })
                .boxed()
            });
        }
        self.mcp.handle(request).await
    }
}

/// `http://localhost:8931`, `http://127.0.0.1`, `https://[::1]:1`: an origin on this machine.
fn loopback_origin(origin: &[u8]) -> bool {
    let Ok(origin) = std::str::from_utf8(origin) else {
        return false;
    };
    let Some(rest) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        return false;
    };
    let host = match rest.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => rest.split(':').next().unwrap_or_default(),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The most connections served at once.
pub const MAX_CONNECTIONS: usize = 64;

/// Serves until SIGTERM or SIGINT (then returns Ok, once the replies under way are sent, within
/// `drain`: `--drain`), or until a call finds the store thread gone. One line on stderr says
/// where it listens.
pub async fn serve(
    server: Server,
    options: Options,
    request_bytes: usize,
    drain_time: std::time::Duration,
) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let local = listener.local_addr()?;
    let shutdown = Arc::new(Notify::new());
    if let Ok(mut slot) = server.stop.lock() {
        let shutdown = shutdown.clone();
        *slot = Some(Box::new(move || shutdown.notify_one()));
    }
    for kind in [
        tokio::signal::unix::SignalKind::terminate(),
        tokio::signal::unix::SignalKind::interrupt(),
    ] {
        let mut signal = tokio::signal::unix::signal(kind)?;
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            signal.recv().await;
            shutdown.notify_one();
        });
    }
    let mut config =
        StreamableHttpServerConfig::default().with_max_request_body_bytes(request_bytes);
    if options.allow_remote {
        // Clients name the host as they reach it; the token, not the Host header, guards it.
        config = config.disable_allowed_hosts();
    } else {
        // rmcp knows `localhost`, 127.0.0.1 and ::1; a listener on another loopback address
        // (127.0.0.2) is reached by that address.
        config.allowed_hosts.push(local.ip().to_string());
    }
    let sessions = config.cancellation_token.clone();
    let expiring = Arc::new(ExpiringSessions::new(options.expiry));
    ExpiringSessions::reap_in_background(&expiring);
    let gate = Arc::new(Gate {
        token: options.token,
        any_origin: options.allow_remote,
        request_bytes,
        replies: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
        mcp: StreamableHttpService::new(move || Ok(server.clone()), expiring, config),
    });
    let _ = writeln!(
        std::io::stderr(),
        "slayer-search mcp: listening on http://{local}{ENDPOINT} (every request needs \
         `Authorization: Bearer <token>`)"
    );
    let replies = gate.replies.clone();
    let open = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let (drain, draining) = tokio::sync::watch::channel(false);
    let accepting = {
        let open = open.clone();
        tokio::spawn(async move {
            loop {
                // At most MAX_CONNECTIONS at once: the next waits in the listen backlog until
                // one closes, so memory stays bounded whatever clients do.
                let Ok(permit) = open.clone().acquire_owned().await else {
                    return;
                };
                // A failed accept (out of descriptors, a reset) is that connection's; go on.
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                };
                let gate = gate.clone();
                let mut draining = draining.clone();
                tokio::spawn(async move {
                    let _open = permit;
                    let service = hyper::service::service_fn(move |request| {
                        let gate = gate.clone();
                        async move { Ok::<_, Infallible>(gate.answer(request).await) }
                    });
                    // Slow clients are cut off by hyper's header read timeout (30 s by
                    // default, once a timer is set).
                    let connection = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .serve_connection(TokioIo::new(stream), service);
                    let mut connection = std::pin::pin!(connection);
                    tokio::select! {
                        _ = connection.as_mut() => {}
                        _ = draining.changed() => {
                            // The request in progress is answered; no next one is read.
                            connection.as_mut().graceful_shutdown();
                            let _ = connection.await;
                        }
                    }
                });
            }
        })
    };
    shutdown.notified().await;
    // Stopping: no new connection, no new request on an open one; the replies under way are
    // finished and sent (bounded), then the sessions end, which closes their event streams.
    accepting.abort();
    let _ = drain.send(true);
    let deadline = tokio::time::Instant::now() + drain_time;
    let permits = u32::try_from(MAX_CONNECTIONS).unwrap_or(u32::MAX);
    let answered = tokio::time::timeout_at(deadline, replies.acquire_many(permits))
        .await
        .is_ok();
    sessions.cancel();
    let closed = tokio::time::timeout_at(deadline, open.acquire_many(permits))
        .await
        .is_ok();
    if !(answered && closed) {
        // The drain ran out with a reply unsent: the shutdown watchdog ends the process with
        // 128 + the signal, as every binary whose drain runs out (this wait is only for a
        // process where it could not be installed).
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_origins_on_this_machine_are_loopback() {
        for yes in [
            "http://localhost:8931",
            "http://127.0.0.1",
            "https://[::1]:1",
            "http://LOCALHOST",
        ] {
            assert!(loopback_origin(yes.as_bytes()), "{yes}");
        }
        for no in [
            "http://evil.example",
            "http://127.0.0.1.evil.example",
            "null",
            "file://",
            "http://[::2]:1",
        ] {
            assert!(!loopback_origin(no.as_bytes()), "{no}");
        }
    }

    #[test]
    fn only_the_exact_token_is_admitted() {
        let token = Token("0123456789abcdef".into());
        let admits =
            |value: &str| token.admits(Some(&header::HeaderValue::from_str(value).unwrap()));
        assert!(admits("Bearer 0123456789abcdef"));
        assert!(admits("bearer 0123456789abcdef"));
        assert!(!admits("Bearer 0123456789abcde"));
        assert!(!admits("Bearer 0123456789abcdef0"));
        assert!(!admits("Basic 0123456789abcdef"));
        assert!(!admits("0123456789abcdef"));
        assert!(!token.admits(None));
        assert_eq!(format!("{token:?}"), "Token(hidden)");
    }
}
