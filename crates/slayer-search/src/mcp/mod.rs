//! `slayer-search mcp`: a Model Context Protocol server on stdin/stdout, or over the
//! streamable HTTP transport ([`http`]).
//!
//! The protocol (JSON-RPC framing, version negotiation, `initialize`, `ping`, notifications,
//! cancellation) is the official Rust SDK's (`rmcp`); this module declares the tools and
//! answers `tools/list` and `tools/call`. The tool work runs on the store thread
//! ([`worker`]), within the session's [`scope`]; this side only parses arguments and shapes
//! results. Argument errors and failed calls are tool results with `isError: true`; an
//! unknown tool (a writing one too, under `--read-only`) is a protocol error. Nothing but
//! protocol messages goes to stdout.

mod http;
mod posted;
mod results;
mod scope;
mod sessions;
mod tool_error;
mod tools;
mod wire;
mod worker;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::sync::oneshot;

use self::scope::Scope;
use self::tool_error::ToolError;
use self::tools::{
    ListDatasourcesArgs, FORGET_MEMORY, LIST_DATASOURCES, SAVE_MEMORY, SEARCH, SHOW,
};
use self::worker::{Call, Job, Outcome};
use crate::cli::McpArgs;

const INSTRUCTIONS: &str = "slayer knows a data warehouse's semantic layer (datasources, \
models, columns, measures, aggregations) and the lessons agents saved about it. Before writing \
SQL or a SlayerQuery, call `search` with the question (and any entity references you know): it \
returns the entities to use, example queries that worked and caveats other agents saved. Call \
`show` for the full definition of an entity you are about to query (exact names, types, \
filters, groupings). `list_datasources` lists the databases.";

/// The instructions' second half, for a session that may write.
const WRITING: &str = " When you learn something durable and non-obvious about the data (a \
unit, an exclusion rule, a misleading column, a query that answered the question), record it \
with `save_memory`, linked to the entities it concerns: one lesson per memory, never a \
transcript. When a memory proves wrong, `forget_memory` it.";

/// What ends the server from inside a call (the store thread found gone).
type Stop = Box<dyn FnOnce() + Send>;

/// The MCP side: hands each call to the store thread.
#[derive(Clone)]
struct Server {
    jobs: std::sync::mpsc::Sender<Job>,
    /// Without the tools that write.
    read_only: bool,
    /// Set when the store thread is found gone: the session is then ended.
    stopped: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Ends the running session (stdio) or server (HTTP), once.
    stop: std::sync::Arc<std::sync::Mutex<Option<Stop>>>,
}

impl Server {
    async fn call(&self, call: Call) -> Outcome {
        let (reply, outcome) = oneshot::channel();
        let answered = match self.jobs.send(Job { call, reply }) {
            Ok(()) => outcome.await.ok(),
            Err(_) => None,
        };
        answered.unwrap_or_else(|| {
            // The store thread is gone (it never ends while the session runs): answering
            // nothing but errors from here on would leave the server half alive, so the
            // session ends and the process exits non-zero.
            self.stopped
                .store(true, std::sync::atomic::Ordering::SeqCst);
            if let Some(stop) = self.stop.lock().ok().and_then(|mut s| s.take()) {
                stop();
            }
            Err(ToolError::StoreThreadGone)
        })
    }
}

/// A tool call's arguments as a [`Call`], or why they are not one; `None` for a tool
/// that does not exist (or writes, in a read-only session).
fn parse_call(params: CallToolRequestParams, read_only: bool) -> Option<Result<Call, ToolError>> {
    let name = params.name.as_ref();
    let arguments = params.arguments;
    if read_only && matches!(name, SAVE_MEMORY | FORGET_MEMORY) {
        return None;
    }
    Some(match name {
        SEARCH => tools::parse(name, arguments).map(|a| Call::Search(Box::new(a))),
        SAVE_MEMORY => tools::parse(name, arguments).map(|a| Call::SaveMemory(Box::new(a))),
        FORGET_MEMORY => tools::parse(name, arguments).map(Call::ForgetMemory),
        SHOW => tools::parse(name, arguments).map(Call::Show),
        LIST_DATASOURCES => {
            tools::parse::<ListDatasourcesArgs>(name, arguments).map(|_| Call::ListDatasources)
        }
        _ => return None,
    })
}

/// An outcome as a tool result: structured content and text, or an error result.
fn tool_result(outcome: Outcome) -> CallToolResult {
    match outcome {
        Ok(reply) => {
            let mut result = CallToolResult::success(vec![ContentBlock::text(reply.text)]);
            result.structured_content = Some(reply.structured);
            result
        }
        Err(error) => CallToolResult::error(vec![ContentBlock::text(error.to_string())]),
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "slayer-search",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(if self.read_only {
                INSTRUCTIONS.to_owned()
            } else {
                format!("{INSTRUCTIONS}{WRITING}")
            })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::all(self.read_only)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::all(self.read_only)
            .into_iter()
            .find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let outcome = match parse_call(request, self.read_only) {
            None => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool '{name}'; the tools are {}",
                        tools::names(self.read_only).join(", ")
                    ),
                    None,
                ))
            }
            Some(Err(message)) => Err(message),
            Some(Ok(call)) => self.call(call).await,
        };
        Ok(tool_result(outcome).into())
    }
}

/// Serves MCP as `args` say: on stdin/stdout until the client closes stdin, or over HTTP
/// until SIGTERM or SIGINT (the replies under way get `drain` to be sent); either ends in error
/// when the store thread is gone (rather than answering half). With `--review`, every memory
/// saved in the session is proposed.
pub fn serve(
    store: &std::path::Path,
    args: McpArgs,
    drain: std::time::Duration,
) -> anyhow::Result<()> {
    // Everything the flags can get wrong is refused before the store is opened.
    let http = args
        .http
        .map(|addr| http::Options::new(addr, &args))
        .transpose()?;
    let limits = slayer_common::limits::Limits::load(store)
        .map_err(|e| slayer_common::cli::UsageError(e.to_string()))?;
    let review = args.review;
    let scope = Scope {
        project: args.project,
        agent: args.agent,
    };
    let (jobs, worker) = worker::start(store.to_owned(), limits, scope, review)?;
    let _reembed = slayer_search::reembed::start(store);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let server = Server {
        jobs,
        read_only: args.read_only,
        stopped: Default::default(),
        stop: Default::default(),
    };
    let stopped = server.stopped.clone();
    runtime.block_on(async {
        match http {
            Some(options) => http::serve(server, options, limits.request_bytes, drain).await,
            None => serve_stdio(server, limits.request_bytes).await,
        }
    })?;
    drop(runtime);
    if stopped.load(std::sync::atomic::Ordering::SeqCst) {
        anyhow::bail!(
            "the store thread stopped; the session was ended (restart `slayer-search mcp`)"
        );
    }
    // Every sender is gone with the service, so the store thread finishes its last call and ends.
    worker
        .join()
        .map_err(|_| anyhow::anyhow!("the store thread panicked"))?;
    Ok(())
}

/// One session on stdin/stdout.
async fn serve_stdio(server: Server, request_bytes: usize) -> anyhow::Result<()> {
    let (transport, stdout) = wire::connect(request_bytes)?;
    let stop = server.stop.clone();
    let service = match server.serve(transport).await {
        Ok(service) => service,
        // A client that hangs up before initializing ends the session, not in error.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
        Err(e) => return Err(anyhow::Error::from(e)),
    };
    if let Ok(mut slot) = stop.lock() {
        let session = service.cancellation_token();
        *slot = Some(Box::new(move || session.cancel()));
    }
    service.waiting().await?;
    // What is still on its way to stdout (a last error reply) goes out before the end.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stdout).await;
    Ok(())
}
