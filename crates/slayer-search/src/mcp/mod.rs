//! `slayer-search mcp`: a Model Context Protocol server on stdin/stdout.
//!
//! The protocol (JSON-RPC framing, version negotiation, `initialize`, `ping`, notifications,
//! cancellation) is the official Rust SDK's (`rmcp`); this module declares the tools and
//! answers `tools/list` and `tools/call`. The tool work runs on the store thread
//! ([`worker`]); this side only parses arguments and shapes results. Argument errors and
//! failed calls are tool results with `isError: true`; an unknown tool is a protocol error.
//! Nothing but protocol messages goes to stdout.

mod measure_card;
mod results;
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

use self::tools::{
    ListDatasourcesArgs, FORGET_MEMORY, LIST_DATASOURCES, SAVE_MEMORY, SEARCH, SHOW,
};
use self::worker::{Call, Job, Outcome};

const INSTRUCTIONS: &str = "slayer searches a data warehouse's semantic layer (datasources, \
models, columns, measures, aggregations) and the memories agents saved about it. Call `search` \
with a question (and any entity references you know) before writing a query; `show` gives an \
entity's full description; `save_memory` records what you learned, linked to the entities it \
concerns; `forget_memory` removes a memory that turned out wrong.";

/// The MCP side: hands each call to the store thread.
#[derive(Clone)]
struct Server {
    jobs: std::sync::mpsc::Sender<Job>,
    /// Set when the store thread is found gone: the session is then ended.
    stopped: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The running session, to end it from a call.
    session:
        std::sync::Arc<std::sync::Mutex<Option<rmcp::service::RunningServiceCancellationToken>>>,
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
            if let Some(session) = self.session.lock().ok().and_then(|mut s| s.take()) {
                session.cancel();
            }
            Err(
                "the store thread has stopped; the session ends (restart `slayer-search mcp`)"
                    .into(),
            )
        })
    }
}

/// A tool call's arguments as a [`Call`], or the message of a tool error; `None` for a tool
/// that does not exist.
fn parse_call(params: CallToolRequestParams) -> Option<Result<Call, String>> {
    let name = params.name.as_ref();
    let arguments = params.arguments;
    Some(match name {
        SEARCH => tools::parse(name, arguments).map(|a| Call::Search(Box::new(a))),
        SAVE_MEMORY => tools::parse(name, arguments).map(Call::SaveMemory),
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
        Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "slayer-search",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools::all()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::all().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let outcome = match parse_call(request) {
            None => {
                return Err(ErrorData::invalid_params(
                    format!(
                        "unknown tool '{name}'; the tools are {SEARCH}, {SAVE_MEMORY}, \
                         {FORGET_MEMORY}, {SHOW}, {LIST_DATASOURCES}"
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

/// Serves MCP on stdin/stdout until the client closes stdin, or until the store thread is
/// gone (then the session ends with an error rather than answering half). With `review`,
/// every memory saved in the session is proposed.
pub fn serve(store: &std::path::Path, review: bool) -> anyhow::Result<()> {
    let limits = slayer_common::limits::Limits::load(store)
        .map_err(|e| slayer_common::cli::UsageError(e.to_string()))?;
    let (jobs, worker) = worker::start(store.to_owned(), limits, review)?;
    let _reembed = slayer_search::reembed::start(store);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let stopped = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    runtime.block_on(async {
        let (transport, stdout) = wire::connect(limits.request_bytes)?;
        let server = Server {
            jobs,
            stopped: stopped.clone(),
            session: Default::default(),
        };
        let session = server.session.clone();
        let service = match server.serve(transport).await {
            Ok(service) => service,
            // A client that hangs up before initializing ends the session, not in error.
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => return Ok(()),
            Err(e) => return Err(anyhow::Error::from(e)),
        };
        if let Ok(mut slot) = session.lock() {
            *slot = Some(service.cancellation_token());
        }
        service.waiting().await?;
        // What is still on its way to stdout (a last error reply) goes out before the end.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), stdout).await;
        anyhow::Ok(())
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
