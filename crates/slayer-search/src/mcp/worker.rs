//! The one thread that touches the store. A search context is single-threaded by design (one
//! read connection, caches that live as long as the store's `data_version` does), so it
//! stays on this thread, and the async MCP handler sends it calls and awaits the replies.
//! Calls run one after another, each on a fresh view of the store: another process's write is
//! seen by the next call.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use super::results::{flatten, render_flat_text};
use serde_json::{json, Value};
use slayer_common::canonical::{memory_id_of, memory_ref};
use slayer_common::records::{Standing, Tier};
use slayer_common::store::{OpenMode, Store};
use slayer_memory::service::{self, SaveRequest};
use slayer_memory::write;
use slayer_search::context::Context;
use slayer_search::output::measure_card::measure_card;
use slayer_search::request::{Request, RequestFields};
use tokio::sync::oneshot;

use super::scope::{Change, Scope};
use super::tool_error::{failed, ToolError};
use super::tools::{
    ForgetMemoryArgs, LinkedEntities, QueryArg, SaveMemoryArgs, SearchArgs, ShowArgs,
};

/// The original's default `max_results`.
const DEFAULT_MAX_RESULTS: i64 = 10;

/// What a tool call asks the store.
#[derive(Debug)]
pub enum Call {
    /// `search`.
    Search(Box<SearchArgs>),
    /// `save_memory`.
    SaveMemory(Box<SaveMemoryArgs>),
    /// `forget_memory`.
    ForgetMemory(ForgetMemoryArgs),
    /// `show`.
    Show(ShowArgs),
    /// `list_datasources`.
    ListDatasources,
}

/// A tool's answer: structured content and its text rendering.
#[derive(Debug)]
pub struct Reply {
    /// The structured content.
    pub structured: Value,
    /// The same, for models that read text.
    pub text: String,
}

/// A reply, or why the call failed (the tool error's text).
pub type Outcome = Result<Reply, ToolError>;

/// A call and where its outcome goes.
pub struct Job {
    /// The call.
    pub call: Call,
    /// The outcome's way back.
    pub reply: oneshot::Sender<Outcome>,
}

/// Starts the worker on the store at `path`, every call within `scope`; returns once the
/// store is open (or failed to open). The worker ends when every sender is dropped.
pub fn start(
    path: PathBuf,
    limits: slayer_common::limits::Limits,
    scope: Scope,
    review: bool,
) -> anyhow::Result<(mpsc::Sender<Job>, JoinHandle<()>)> {
    super::tool_error::serving(&path);
    let (jobs, inbox) = mpsc::channel::<Job>();
    let (ready, opened) = mpsc::sync_channel::<anyhow::Result<()>>(1);
    let handle = std::thread::Builder::new()
        .name("slayer-store".into())
        .spawn(move || {
            crate::process::join_the_pool();
            let store = match Store::open(&path, OpenMode::ReadOnly) {
                Ok(store) => store,
                Err(e) => {
                    let _ = ready.send(Err(slayer_search::SearchError::Store(e).into()));
                    return;
                }
            };
            let config = match slayer_search::plan::config::PlanConfig::load(None, &path) {
                Ok(config) => config,
                Err(e) => {
                    let _ = ready.send(Err(e.into()));
                    return;
                }
            };
            let planner = slayer_search::plan::Planner::new(config, slayer_common::env::var);
            let memory_defaults = match crate::process::memory_defaults() {
                Ok(defaults) => defaults,
                Err(e) => {
                    let _ = ready.send(Err(e.into()));
                    return;
                }
            };
            let mut worker = match Context::on(&store, planner) {
                Ok(mut ctx) => {
                    ctx.serve();
                    ctx.limits = limits;
                    ctx.memory_defaults = memory_defaults;
                    Worker {
                        ctx,
                        path: &path,
                        writer: None,
                        scope,
                        review,
                    }
                }
                Err(e) => {
                    let _ = ready.send(Err(e.into()));
                    return;
                }
            };
            let _ = ready.send(Ok(()));
            for job in inbox {
                // A call that panics (a bug) is that call's error; the caches it may have left
                // half-filled are dropped, and the next call reads the store afresh.
                let outcome =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run(job.call)))
                        .unwrap_or_else(|panic| {
                            worker.ctx.forget_caches();
                            Err(ToolError::Panicked(panic_text(&panic)))
                        });
                // The client may have cancelled the call; its outcome then goes nowhere.
                let _ = job.reply.send(outcome);
            }
        })?;
    match opened.recv() {
        Ok(Ok(())) => Ok((jobs, handle)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(anyhow::anyhow!(
            "the store thread stopped while opening the store"
        )),
    }
}

/// A query argument as JSON (its text parsed; never a file, whatever it starts with).
fn query_value(query: QueryArg) -> Result<Value, ToolError> {
    match query {
        QueryArg::Object(map) => Ok(Value::Object(map)),
        QueryArg::Json(text) => serde_json::from_str(&text).map_err(ToolError::QueryJson),
    }
}

/// What a panic said.
fn panic_text(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "a panic".into())
}

struct Worker<'a> {
    ctx: Context<'a>,
    path: &'a Path,
    /// A write connection, opened on the first save or forget.
    writer: Option<Store>,
    /// The session's project and agent.
    scope: Scope,
    /// `mcp --review`: every save of the session is proposed.
    review: bool,
}

impl Worker<'_> {
    fn run(&mut self, call: Call) -> Outcome {
        // One pragma when nothing changed; a store another process (or our own writer)
        // changed is read afresh.
        self.ctx.refresh_if_changed().map_err(failed)?;
        match call {
            Call::Search(args) => self.search(*args),
            Call::SaveMemory(args) => self.save(*args),
            Call::ForgetMemory(args) => self.forget(&args.id),
            Call::Show(args) => self.show(&args.ids),
            Call::ListDatasources => self.list_datasources(),
        }
    }

    fn search(&self, args: SearchArgs) -> Outcome {
        let max_results = args.max_results.unwrap_or(DEFAULT_MAX_RESULTS);
        if max_results < 1 {
            return Err(ToolError::Argument(format!(
                "max_results must be >= 1; got {max_results}."
            )));
        }
        if args.cypher_filter.is_some() {
            return Err(ToolError::Argument(
                "cypher_filter is not supported: slayer keeps no graph. Narrow the search \
                 with `datasource`, `entities` or the question instead."
                    .to_owned(),
            ));
        }
        let query = args.query.map(query_value).transpose()?;
        let scope = self.scope.narrow(args.project, args.agent)?;
        let cap = usize::try_from(max_results).unwrap_or(usize::MAX);
        let tiers = args
            .tiers
            .map(|names| names.iter().map(|n| Tier::parse(&n.0)).collect())
            .transpose()?;
        // The MCP tool's own defaults: each cap is `max_results`.
        let request = Request::default().with(RequestFields {
            entities: args.entities,
            query,
            question: args.question,
            datasource: args.datasource,
            max_memories: Some(args.max_memories.unwrap_or(cap)),
            max_example_queries: Some(args.max_example_queries.unwrap_or(cap)),
            max_entities: Some(args.max_entities.unwrap_or(cap)),
            explain: args.explain,
            channels: args.channels,
            plan: args.plan,
            injected: args.injected,
            tiers,
            confidence_floor: args.confidence_floor,
            schema: args.schema,
            schema_models: args.schema_models,
            schema_columns: args.schema_columns,
            project: scope.project,
            agent: scope.agent,
            ..RequestFields::default()
        });
        let response = self.ctx.search(&request).map_err(failed)?;
        let flat =
            flatten(self.ctx.conn, response, cap, args.compact.unwrap_or(true)).map_err(failed)?;
        Ok(Reply {
            text: render_flat_text(&flat),
            structured: serde_json::to_value(&flat).map_err(failed)?,
        })
    }

    fn writer(&mut self) -> Result<&mut Store, ToolError> {
        if self.writer.is_none() {
            let store = Store::open(self.path, OpenMode::MustExist)
                .map_err(|e| failed(slayer_memory::MemoryError::Store(e)))?;
            self.writer = Some(store);
        }
        Ok(self.writer.as_mut().expect("opened above"))
    }

    fn save(&mut self, args: SaveMemoryArgs) -> Outcome {
        let (entities, query) = match (args.linked_entities, args.entities, args.query) {
            (Some(LinkedEntities::References(refs)), None, None) => (Some(refs), None),
            (Some(LinkedEntities::Query(map)), None, None) => (None, Some(Value::Object(map))),
            (None, Some(refs), None) => (Some(refs.into_list()), None),
            (None, None, Some(query)) => (None, Some(query_value(query)?)),
            (None, None, None) => {
                return Err(ToolError::Argument(
                    "what the memory is about must be given: entities (references), query (a \
                     SlayerQuery) or linked_entities (either)"
                        .to_owned(),
                ))
            }
            _ => {
                return Err(ToolError::Argument(
                    "linked_entities, entities and query are mutually exclusive; give one"
                        .to_owned(),
                ))
            }
        };
        // A link to a memory the session cannot see would tell it that memory exists.
        for reference in entities.iter().flatten() {
            if let Some(id) = memory_id_of(reference) {
                if !self.visible(id)? {
                    return Err(ToolError::NoMemory(id.to_owned()));
                }
            }
        }
        let defaults = slayer_common::records::Standing::default();
        let standing = slayer_common::records::Standing {
            tier: args
                .tier
                .map(|t| Tier::parse(&t.0))
                .transpose()?
                .unwrap_or(defaults.tier),
            confidence: args.confidence.unwrap_or(defaults.confidence),
            project: self.scope.project.clone(),
            agent: self.scope.agent.clone(),
            ..defaults
        };
        let request = SaveRequest {
            learning: args.learning,
            entities,
            query,
            id: args.id,
            description: args.description,
            standing,
            occasion: slayer_common::records::Occasion {
                event_time: args.event_time,
                session: args.session,
            },
        };
        let limits = self.ctx.limits;
        let saved = self.save_reviewed(request, &limits)?;
        for warning in &saved.embedding_warnings {
            // A note for whoever reads the server's log, as slayer-memory prints it.
            let _ = writeln!(
                std::io::stderr(),
                "Warning: {}",
                slayer_common::cli::terminal_safe(warning)
            );
        }
        Ok(Reply {
            structured: serde_json::to_value(&saved.outcome).map_err(failed)?,
            text: saved.outcome.to_text(),
        })
    }

    /// Review of agent memories: whatever an MCP client saves is an agent's save (proposed
    /// while the store requires review), and `--review` proposes it in any case.
    fn save_reviewed(
        &mut self,
        mut request: SaveRequest,
        limits: &slayer_common::limits::Limits,
    ) -> Result<write::Saved, ToolError> {
        request.standing.proposed |= self.review;
        // A memory the save replaces must be the session's, as the save's own transaction
        // reads it.
        let scope = self.scope.clone();
        let id = request.id.clone().unwrap_or_default();
        let guard = move |standing: &Standing| {
            scope
                .may_change(&id, standing, Change::Replace)
                .map_err(|refused| refused.to_string())
        };
        write::save_by(
            self.writer()?,
            request,
            limits,
            // SLAYER_NO_EMBED holds for the server's saves as for `slayer-memory save`.
            !slayer_search::reembed::turned_off(),
            write::Saver::Agent,
            &guard,
        )
        .map_err(failed)
    }

    fn forget(&mut self, id: &str) -> Outcome {
        // Checked inside the deletion's transaction: no other writer can hand the id to
        // another scope between the check and the deletion.
        let scope = self.scope.clone();
        let guard = |standing: &Standing| {
            scope
                .may_change(id, standing, Change::Forget)
                .map_err(|refused| refused.to_string())
        };
        let warning = write::forget_guarded(self.writer()?, id, &guard).map_err(failed)?;
        Ok(Reply {
            structured: json!({"deleted_id": id}),
            text: service::forgotten_text(id, warning.as_deref()),
        })
    }

    /// Each reference's docs: a memory id (bare or `memory:<id>`) or an entity reference,
    /// resolved strictly; the first that resolves to nothing fails the call.
    fn show(&self, ids: &[String]) -> Outcome {
        if ids.is_empty() {
            return Err(ToolError::Argument(
                "ids must name at least one entity or memory".to_owned(),
            ));
        }
        self.ctx
            .limits
            .check_names("ids", ids.iter().map(String::as_str))
            .map_err(|e| ToolError::Argument(format!("{e}.")))?;
        let conn = self.ctx.conn;
        let mut catalog = None;
        let mut shown: Vec<String> = Vec::new();
        for raw in ids {
            // A memory outside the scope is answered as an absent one: the same error.
            let canonical = if let Some(id) = memory_id_of(raw) {
                if !self.visible(id)? {
                    return Err(ToolError::NoMemory(id.to_owned()));
                }
                vec![raw.clone()]
            } else if self.visible(raw)? {
                vec![memory_ref(raw)]
            } else {
                if catalog.is_none() {
                    catalog = Some(service::load_catalog(conn).map_err(failed)?);
                }
                let catalog = catalog.as_ref().expect("loaded above");
                service::resolve_ref(conn, catalog, raw)
                    .map_err(|e| ToolError::Unresolved {
                        reference: raw.clone(),
                        why: e.into(),
                    })?
                    .canonical_forms
            };
            if canonical.is_empty() {
                return Err(ToolError::Argument(format!(
                    "{raw}: resolves to nothing to show"
                )));
            }
            for id in canonical {
                if !shown.contains(&id) {
                    shown.push(id);
                }
            }
        }
        let mut found = Vec::new();
        let mut text = String::new();
        for id in &shown {
            let Some(stored) = conn.doc(id).map_err(failed)? else {
                return Err(match memory_id_of(id) {
                    Some(m) => ToolError::NoMemory(m.to_owned()),
                    None => ToolError::Argument(format!(
                        "{id}: no document; `slayer-index load` indexes the catalog"
                    )),
                });
            };
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&format!(
                "== {} ({}) ==\n{}\n",
                id, stored.doc.doc_kind, stored.doc.text
            ));
            let mut doc = json!({
                "id": id,
                "kind": stored.doc.doc_kind,
                "datasource": stored.doc.datasource,
                "text": stored.doc.text,
            });
            // A measure (a metric) comes whole: filters, and what it can be grouped by.
            if stored.doc.doc_kind == "measure" {
                if let Some(card) = measure_card(conn, id).map_err(failed)? {
                    text.push_str(&card.to_text());
                    doc["measure"] = serde_json::to_value(&card).map_err(failed)?;
                }
            }
            found.push(doc);
        }
        Ok(Reply {
            structured: json!({ "docs": found }),
            text,
        })
    }

    /// Whether the memory `id` exists and the session's scope sees it (search returns only
    /// those; anything else is answered as absent).
    fn visible(&self, id: &str) -> Result<bool, ToolError> {
        Ok(match self.ctx.conn.memory(id).map_err(failed)? {
            Some(memory) => self.scope.sees(&memory.standing),
            None => false,
        })
    }

    fn list_datasources(&self) -> Outcome {
        let conn = self.ctx.conn;
        let described = conn.datasources().map_err(failed)?;
        let skeletons = conn.model_skeletons().map_err(failed)?;
        let names = conn.datasource_names().map_err(failed)?;
        let mut list = Vec::new();
        let mut text = format!("Datasources ({}):\n", names.len());
        for name in &names {
            let description = described
                .iter()
                .find(|d| &d.name == name)
                .and_then(|d| d.description.clone());
            let models = skeletons.iter().filter(|m| &m.data_source == name).count();
            text.push_str(&format!("  {name} ({models} models)"));
            if let Some(d) = &description {
                text.push_str(&format!(": {}", d.lines().next().unwrap_or("")));
            }
            text.push('\n');
            list.push(json!({"name": name, "description": description, "models": models}));
        }
        Ok(Reply {
            structured: json!({ "datasources": list }),
            text,
        })
    }
}
