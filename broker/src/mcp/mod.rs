//! The MCP layer: rmcp's server runtime over one relay connection.
//!
//! [`transport`] frames lines and keeps the broker's rules for garbage and ids;
//! [`Handler`] is rmcp's `ServerHandler`: both protocol eras (`initialize` for
//! 2024-11-05 … 2025-11-25, `server/discover` and per-request `_meta` for
//! 2026-07-28, answered by rmcp), `tools/list` with the published schemas as
//! they are, `tools/call` through the tool facade with progress and
//! cancellation, resources and their subscriptions (`subscriptions`),
//! `prompts/list`/`prompts/get` and `completion/complete` (for prompt
//! arguments and resource templates), and log notices (the session's
//! `logging/setLevel` before 2026-07-28, each request's `_meta` level from
//! then on). The rules are in
//! ARCHITECTURE.md, "MCP layer".

#[cfg(test)]
mod budget;
mod elicit;
mod subscriptions;
mod transport;

use crate::completion;
use crate::prompts;
use crate::resources::{self, ReadError, Resource};
use crate::session::{LogLevel, LogSink, Session};
use crate::toolkit::call::confirm::Ask;
use crate::toolkit::call::output::RefusalKind;
use crate::toolkit::call::spec::{Family, Progress, ProgressSink, Tier, ToolOutput, Toolset};
use crate::toolkit::schemas::publish;
use crate::tools;
use futures::future::BoxFuture;
use rmcp::model::*;
use rmcp::service::{
    NotificationContext, RequestContext, RoleServer, Service, SubscriptionContext,
};
use rmcp::{ErrorData as McpError, Peer, ServerHandler};
use serde_json::{json, Value};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;
use subscriptions::{Armed, Notifier, Subscriptions};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

const INSTRUCTIONS: &str = "tmux-mcp: exact, hook-safe access to this person's tmux server. Every pane reference carries the server generation; a reference from another server instance is refused. Start with tmux_capabilities or list_panes.";

/// Answered by `initialize` (2024-11-05 … 2025-11-25) and by requests that
/// carry their version in `_meta` (2026-07-28), oldest first.
const VERSIONS: &[ProtocolVersion] = &[
    ProtocolVersion::V_2024_11_05,
    ProtocolVersion::V_2025_03_26,
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// Serves one MCP session until the client closes its side.
pub async fn serve<R, W>(reader: R, writer: W, session: Arc<Session>)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let gone = CancellationToken::new();
    let (transport, writer) = transport::LineTransport::new(reader, writer, gone.clone());
    // No handshake gate: the session takes `initialize`, `server/discover` or
    // a request carrying its own `_meta` at any time, as before (rmcp's
    // `serve_server` would end the session on a notification that comes
    // before `initialize`).
    let running = rmcp::service::serve_directly(
        Server(Handler {
            session: session.clone(),
            gone,
            legacy: Default::default(),
            armed: Default::default(),
            tasks: Default::default(),
        }),
        transport,
        None,
    );
    if let Err(e) = running.waiting().await {
        tracing::warn!(session = session.id, "MCP service task failed: {e}");
    }
    let _ = writer.await;
}

/// [`Handler`] as rmcp serves it, with the 2026-07-28 rules rmcp leaves to
/// the server: a request's `_meta` log level is checked before anything
/// runs, and `logging/setLevel`, which that revision removed (as `ping`,
/// which rmcp refuses itself), is -32601 there; both stay in older eras.
struct Server(Handler);

impl Service<RoleServer> for Server {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let modern = !legacy_era(&context);
        if modern {
            if matches!(request, ClientRequest::SetLevelRequest(_)) {
                return Err(McpError::method_not_found::<SetLevelRequestMethod>());
            }
            log_level_meta(&context)?;
        }
        let mut result = Service::handle_request(&self.0, request, context).await?;
        if modern {
            stamp_server_info(&mut result);
        }
        Ok(result)
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        Service::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerHandler::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        ServerHandler::supported_protocol_versions(&self.0)
    }
}

pub struct Handler {
    session: Arc<Session>,
    /// Fired at end of input: the client is gone, its calls stop at once.
    gone: CancellationToken,
    /// `resources/subscribe` subscriptions (legacy eras), told on the session.
    legacy: std::sync::OnceLock<Subscriptions>,
    /// What a listen stream watches, armed when its filter is accepted, before
    /// rmcp acknowledges it; its `listen` takes what it subscribes to (a
    /// concurrent stream on the same URI arms its own).
    armed: std::sync::Mutex<Armed>,
    /// `run_command` calls answered as tasks (the tasks extension, SEP-2663,
    /// 2026-07-28), polled with `tasks/get`; this session's only.
    tasks: rmcp::task_manager::TaskManager,
}

impl Handler {
    /// A `run_command` call as a task, when its 2026-07-28 request declares
    /// the tasks extension and it did not ask to `detach`: the command is
    /// started (detached) now, and a task waits for its end, up to
    /// [`TASK_WAIT_MS`], without the request timeout's cap; the task's
    /// result is the blocking call's. A refused call is answered at once;
    /// without the extension nothing changes (never a task to a client that
    /// did not declare it).
    async fn as_task(
        &self,
        tool: &str,
        args: &Value,
        context: &RequestContext<RoleServer>,
    ) -> Option<CallToolResponse> {
        let declared = context
            .client_capabilities()
            .is_some_and(|c| c.supports_tasks());
        if tool != "run_command"
            || legacy_era(context)
            || !declared
            || args.get("detach") == Some(&Value::Bool(true))
        {
            return None;
        }
        let mut detached = args.clone();
        detached["detach"] = Value::Bool(true);
        let asked_ms = args.get("timeoutMs").and_then(Value::as_u64);
        let started = tools::call(&self.session, tool, detached, None, Ask::Not).await;
        let job = started
            .structured
            .as_ref()
            .filter(|_| !started.is_error)
            .and_then(|v| v.get("jobId"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let Some(job) = job else {
            return Some(tool_result(started).into());
        };
        let session = self.session.clone();
        let wait_ms = asked_ms.unwrap_or(TASK_WAIT_MS).min(TASK_WAIT_MS);
        let options = rmcp::task_manager::TaskOptions::new()
            .with_ttl_ms(TASK_WAIT_MS + TASK_KEPT_MS)
            .with_status_message(format!("job {job} running"));
        let task = self.tasks.spawn(options, move |ctx| {
            Box::pin(async move {
                tokio::select! {
                    out = tools::wait_job(&session, &job, wait_ms) => Ok(tool_result(out)),
                    _ = ctx.cancelled() => Err(rmcp::task_manager::TaskExit::Cancelled),
                }
            })
        });
        Some(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    fn attach_log(&self, peer: &Peer<RoleServer>) {
        self.session.log.attach(|| Arc::new(PeerLog(peer.clone())));
    }

    fn legacy(&self, peer: &Peer<RoleServer>) -> &Subscriptions {
        self.legacy.get_or_init(|| {
            Subscriptions::new(self.session.clone(), Notifier::Legacy(peer.clone()), true)
        })
    }
}

/// Where a 2026-07-28 result names the server that made it (SHOULD, on
/// every response; `server/discover` and a listen stream's end carry it
/// already).
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// Puts `serverInfo` into a 2026-07-28 result's `_meta`, unless it has it.
fn stamp_server_info(result: &mut ServerResult) {
    let meta = match result {
        ServerResult::CallToolResult(r) => &mut r.meta,
        ServerResult::ListToolsResult(r) => &mut r.meta,
        ServerResult::ListPromptsResult(r) => &mut r.meta,
        ServerResult::GetPromptResult(r) => &mut r.meta,
        ServerResult::ListResourcesResult(r) => &mut r.meta,
        ServerResult::ListResourceTemplatesResult(r) => &mut r.meta,
        ServerResult::ReadResourceResult(r) => &mut r.meta,
        ServerResult::CompleteResult(r) => &mut r.meta,
        ServerResult::InputRequiredResult(r) => &mut r.meta,
        _ => return,
    };
    let meta = meta.get_or_insert_default();
    if !meta.contains_key(SERVER_INFO_META) {
        if let Ok(info) = serde_json::to_value(server_info()) {
            meta.insert(SERVER_INFO_META.to_string(), info);
        }
    }
}

/// The `_meta` key of a 2026-07-28 request that asks for log messages.
const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";

/// The log level a 2026-07-28 request asks for in its `_meta` (none: it gets
/// no `notifications/message`); a value that is not one of the eight levels
/// is the request's mistake (-32602, naming the key).
fn log_level_meta(context: &RequestContext<RoleServer>) -> Result<Option<LogLevel>, McpError> {
    if !context.meta.contains_key(LOG_LEVEL_META) {
        return Ok(None);
    }
    match context.meta.log_level() {
        Some(l) => Ok(Some(level_from(l))),
        None => Err(McpError::invalid_params(
            format!("invalid params: _meta[\"{LOG_LEVEL_META}\"] must be one of \"debug\", \"info\", \"notice\", \"warning\", \"error\", \"critical\", \"alert\", \"emergency\". Nothing was run."),
            Some(json!({ "field": format!("_meta.{LOG_LEVEL_META}"), "delivery": "not_sent" })),
        )),
    }
}

/// Whether `context` is a request of an era before 2026-07-28 (notifications
/// may then go on the session; afterwards only on a listen stream).
fn legacy_era(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_none_or(|v| v.as_str() < ProtocolVersion::V_2026_07_28.as_str())
}

/// The JSON-RPC error of a resource read that failed, with `data.reason`
/// (and `data.delivery`: none of these reads sent anything with an effect).
/// Not found and out of scope are MCP's -32002; a read refused because the
/// person's `after-capture-pane` hook is set is [`READ_REFUSED`]; only a tmux
/// that cannot be reached is an internal error.
fn resource_error(e: ReadError) -> McpError {
    let data = Some(json!({ "reason": e.reason(), "delivery": "not_sent" }));
    match e {
        ReadError::NotFound(m) | ReadError::NotVisible(m) => McpError::resource_not_found(m, data),
        ReadError::HookSet(m) => McpError::new(READ_REFUSED, m, data),
        ReadError::Failed(m) => McpError::internal_error(m, data),
    }
}

/// The JSON-RPC error of a prompt that cannot be got: invalid params, naming
/// the argument at fault (`data.argument`); nothing reached tmux.
fn prompt_error(e: prompts::PromptError) -> McpError {
    McpError::invalid_params(
        e.message,
        Some(json!({ "argument": e.argument, "delivery": "not_sent" })),
    )
}

/// A read refused by the broker's policy (an `after-capture-pane` hook is
/// set): a code of the project's own, outside JSON-RPC's reserved
/// -32768..-32000 (MCP 2026-07-28: -32000..-32019 is legacy, -32020..-32099
/// the specification's; -32003 was MCP's old missing-capability number).
/// docs/spec.md, A.0.7.
pub const READ_REFUSED: ErrorCode = ErrorCode(-31001);

/// `uri` parsed, and visible to this session (out of scope reads as unknown).
async fn visible_resource(session: &Session, uri: &str) -> Result<Resource, McpError> {
    let r = Resource::parse(uri).map_err(resource_error)?;
    if let Resource::Handed { pane, cursor } = &r {
        return if resources::handed_over(session, pane, cursor) {
            Ok(r)
        } else {
            Err(McpError::resource_not_found(
                format!("no hand-off cursor for pane {pane}"),
                None,
            ))
        };
    }
    if let Some(pane) = r.pane() {
        let snap = session.broker.registry.refresh().await.map_err(|e| {
            McpError::internal_error(format!("cannot read the pane table: {e}"), None)
        })?;
        match snap.pane(pane) {
            None => return Err(resource_error(ReadError::NotFound(format!("no pane {pane}: it does not exist or has gone (call list_panes)")))),
            Some(p) if !session.can_see(p) => return Err(resource_error(ReadError::NotVisible(format!("pane {pane} is outside this session's scope (call list_panes for the panes it may see)")))),
            Some(_) => {}
        }
    }
    Ok(r)
}

/// The cache hint (2026-07-28 `ttlMs`) of a list that cannot change within a
/// session: `tools/list` and `prompts/list` (`listChanged: false`; what they
/// hold depends only on the session's options) and the resource templates.
/// An hour, not forever: the relay may reconnect to a newer broker. Their
/// `cacheScope` is `private`: the lists differ with the session's options.
/// Lists and reads of live state keep `ttlMs: 0`. (Older eras have no cache
/// hints: `tools/list` and `prompts/list` carry none there.)
const UNCHANGING_LIST_TTL_MS: u64 = 3_600_000;

/// The tools `tools/list` publishes to a session of `toolset` with `enabled`
/// on, in catalog order.
pub fn published_tools(
    toolset: Toolset,
    enabled: &BTreeSet<String>,
) -> Result<Vec<Tool>, serde_json::Error> {
    tools::catalog(toolset)
        .filter(|t| enabled.contains(t.name))
        .map(|t| serde_json::from_value::<Tool>(publish::describe(t, toolset)))
        .collect()
}

/// The line a client of the 2025 eras reads in answer to `tools/list` with
/// request id 2, byte for byte as the relay writes it: what an agent pays
/// for in context before it does anything, measured by the context budget
/// (`mcp/budget.rs`; `tests/e2e/budget.rs` checks it against the relay's).
pub fn tools_list_line(toolset: Toolset, enabled: &BTreeSet<String>) -> Vec<u8> {
    let tools =
        published_tools(toolset, enabled).expect("every published tool fits the MCP tool shape");
    let mut result = ServerResult::ListToolsResult(ListToolsResult::with_all_items(tools));
    // As rmcp answers a peer older than 2026-07-28.
    result.strip_result_type_for_legacy_peer();
    result.strip_non_object_output_for_legacy_peer();
    let message = ServerJsonRpcMessage::response(result, RequestId::Number(2));
    let mut line = serde_json::to_vec(&message).expect("a tools/list answer serializes");
    line.push(b'\n');
    line
}

/// Every list is answered in one page (no `nextCursor`), so no cursor is one
/// this server gave: -32602 naming the field (MCP pagination: an invalid
/// cursor SHOULD be -32602), rather than the whole list again.
fn one_page(request: Option<PaginatedRequestParams>) -> Result<(), McpError> {
    match request.and_then(|r| r.cursor) {
        None => Ok(()),
        Some(_) => Err(McpError::invalid_params(
            "invalid params: cursor is not one this server gave: every list is answered in one page (no nextCursor), so no cursor is valid; list again without one",
            Some(json!({ "field": "cursor", "delivery": "not_sent" })),
        )),
    }
}

fn server_info() -> Implementation {
    let mut info = Implementation::new("tmux-mcp", env!("CARGO_PKG_VERSION"));
    info.title = Some("tmux-mcp broker".into());
    info
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut caps = ServerCapabilities::default();
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(false);
        caps.tools = Some(tools);
        caps.logging = Some(Default::default());
        let mut res = ResourcesCapability::default();
        res.subscribe = Some(true);
        res.list_changed = Some(true);
        caps.resources = Some(res);
        let mut prompts = PromptsCapability::default();
        prompts.list_changed = Some(false);
        caps.prompts = Some(prompts);
        caps.completions = Some(JsonObject::new());
        // Answered on 2026-07-28 only (`initialize` leaves it out): a
        // `run_command` whose request declares the extension may be a task.
        caps.extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_string(), JsonObject::new());
        let mut info = ServerConfig::new(caps)
            .with_server_info(server_info())
            .with_instructions(INSTRUCTIONS);
        info.protocol_version = ProtocolVersion::LATEST_WITH_INITIALIZE;
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(VERSIONS)
    }

    /// rmcp's `initialize`, but the session remembers the version agreed on,
    /// not the one asked for: rmcp's own client asks for 2026-07-28 (which
    /// has no `initialize`), gets 2025-11-25, and its session is of that era
    /// (session logging, `ping`, no per-request `_meta`).
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let mut result = self.negotiate_initialize(&request)?;
        result.capabilities.extensions = None;
        let mut agreed = request;
        agreed.protocol_version = result.protocol_version.clone();
        context.peer.set_peer_info(agreed);
        Ok(result)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        one_page(request)?;
        let tools = published_tools(self.session.toolset, &self.session.enabled).map_err(|e| {
            McpError::internal_error(
                format!("a published tool does not fit the MCP tool shape: {e}"),
                None,
            )
        })?;
        let result = ListToolsResult::with_all_items(tools);
        Ok(match legacy_era(&context) {
            true => result,
            false => result
                .with_ttl_ms(UNCHANGING_LIST_TTL_MS)
                .with_cache_scope(CacheScope::Private),
        })
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        self.attach_log(&context.peer);
        let args = request
            .arguments
            .take()
            .map(Value::Object)
            .unwrap_or_else(|| json!({}));
        // Only a destructive tool can ask the person (kill, respawn, close
        // and the seed family's destructive tools); every other call skips
        // confirmation altogether. A call naming a server may be asked by
        // that server's broker (its @mcp-confirm) even where this session
        // does not confirm.
        let names_server = args.get("server").is_some() || args.get("socket_name").is_some();
        let may_ask = (self.session.confirm || names_server)
            && tools::spec_in(self.session.toolset, &request.name)
                .is_some_and(|t| t.tier() == Tier::Destructive);
        let cannot_ask = may_ask && !legacy_era(&context) && !elicit::can_ask(&context);
        let ask = if may_ask {
            elicit::ask_for(
                &context,
                &request,
                &args,
                legacy_era(&context),
                &self.session,
            )?
        } else {
            Ask::Not
        };
        // Notices go at the level this request may hear: the session's
        // (`logging/setLevel`) before 2026-07-28, the request's own `_meta`
        // level from then on (checked in `Server::handle_request`).
        let log_min = if legacy_era(&context) {
            self.session.log.level()
        } else {
            log_level_meta(&context)?
        };
        if let Some(task) = self.as_task(&request.name, &args, &context).await {
            return Ok(task);
        }
        // Kept only when an answer may have to come back in a retry.
        let kept = elicit::keeps_args(&ask).then(|| args.clone());
        let progress = context.meta.get_progress_token().map(|token| {
            Progress::new(Arc::new(PeerProgress {
                peer: context.peer.clone(),
                token,
            }))
        });
        // Dropping the tool's future is what stops it: it holds no tmux client
        // (commands are one short connection each, and a wait only watches).
        let out = tokio::select! {
            out = tools::call(&self.session, &request.name, args, progress, ask.clone()) => out,
            _ = context.ct.cancelled() => return Err(cancelled("the client cancelled the request")),
            _ = self.gone.cancelled() => return Err(cancelled("the client went away")),
        };
        if cannot_ask {
            if let Some(e) = elicit::missing_elicitation(&ask, &request.name) {
                return Err(e);
            }
        }
        if let Some(question) =
            elicit::asked(&self.session, &ask, &request.name, kept.unwrap_or_default())
        {
            return Ok(question.into());
        }
        notices(&self.session, log_min, &request.name, &out).await;
        Ok(tool_result(out).into())
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.tasks.cancel_task(&request.task_id)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        one_page(request)?;
        if legacy_era(&context) {
            // A client that lists resources hears when the list changes.
            self.legacy(&context.peer).start_pane_set();
        }
        let items = resources::list(&self.session)
            .await
            .into_iter()
            .map(serde_json::from_value::<rmcp::model::Resource>)
            .collect::<Result<Vec<_>, _>>();
        let items = items.map_err(|e| {
            McpError::internal_error(format!("a resource does not fit the MCP shape: {e}"), None)
        })?;
        Ok(ListResourcesResult::with_all_items(items)
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private))
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        one_page(request)?;
        let items = resources::templates()
            .into_iter()
            .map(serde_json::from_value::<ResourceTemplate>)
            .collect::<Result<Vec<_>, _>>();
        let items = items.map_err(|e| {
            McpError::internal_error(format!("a template does not fit the MCP shape: {e}"), None)
        })?;
        Ok(ListResourceTemplatesResult::with_all_items(items)
            .with_ttl_ms(UNCHANGING_LIST_TTL_MS)
            .with_cache_scope(CacheScope::Private))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let r = Resource::parse(&request.uri).map_err(resource_error)?;
        let (mime, text) = resources::read(&self.session, &r)
            .await
            .map_err(resource_error)?;
        let contents = ResourceContents::text(text, request.uri).with_mime_type(mime);
        Ok(ReadResourceResult::new(vec![contents])
            .with_ttl_ms(0)
            .with_cache_scope(CacheScope::Private)
            .into())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        one_page(request)?;
        let items = prompts::visible(&self.session)
            .map(|p| {
                let args = p
                    .arguments
                    .iter()
                    .map(|a| {
                        PromptArgument::new(a.name)
                            .with_description(a.description)
                            .with_required(a.required)
                    })
                    .collect();
                Prompt::new(p.name, Some(p.description), Some(args)).with_title(p.title)
            })
            .collect();
        let result = ListPromptsResult::with_all_items(items);
        Ok(match legacy_era(&context) {
            true => result,
            false => result
                .with_ttl_ms(UNCHANGING_LIST_TTL_MS)
                .with_cache_scope(CacheScope::Private),
        })
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let p = prompts::find(&self.session, &request.name).map_err(prompt_error)?;
        let mut given = std::collections::HashMap::new();
        for (k, v) in request.arguments.unwrap_or_default() {
            let Value::String(v) = v else {
                return Err(prompt_error(prompts::PromptError {
                    message: format!(
                        "argument {k:?}: expected a string (prompt arguments are strings), got {v}"
                    ),
                    argument: Some(k),
                }));
            };
            given.insert(k, v);
        }
        let text = p.get(&self.session, given).await.map_err(prompt_error)?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]);
        result.description = Some(p.description.to_string());
        Ok(result.into())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let arg = &request.argument.name;
        let kind = match &request.r#ref {
            Reference::Prompt(r) => {
                let p = prompts::find(&self.session, &r.name).map_err(prompt_error)?;
                p.argument(arg)
                    .map(|a| a.kind)
                    .ok_or_else(|| format!("prompt {:?} has no argument {arg:?}", p.name))
            }
            Reference::Resource(r) => resources::template_argument(&r.uri, arg),
            #[allow(unreachable_patterns)] // rmcp's enum is non_exhaustive
            _ => Err("unknown reference type: expected ref/prompt or ref/resource".to_string()),
        }
        .map_err(|m| McpError::invalid_params(m, Some(json!({ "delivery": "not_sent" }))))?;
        let context = request
            .context
            .and_then(|c| c.arguments)
            .unwrap_or_default();
        let found = completion::complete(&self.session, kind, &request.argument.value, &context)
            .await
            .map_err(|m| McpError::internal_error(m, Some(json!({ "delivery": "not_sent" }))))?;
        let has_more = found.has_more();
        let info =
            CompletionInfo::with_pagination(found.values, Some(found.total as u32), has_more)
                .map_err(|m| McpError::internal_error(m, None))?;
        Ok(CompleteResult::new(info))
    }

    #[allow(deprecated)] // the legacy eras' subscription; 2026-07-28 uses listen
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let r = visible_resource(&self.session, &request.uri).await?;
        let subs = self.legacy(&context.peer);
        subs.start_pane_set();
        subs.add(request.uri, r);
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.legacy(&context.peer).remove(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        // Resource URIs this session may read; a pane out of scope (or gone)
        // is left out of the acknowledgment rather than failing the stream.
        let snap = self.session.broker.registry.cached();
        let readable = |r: &Resource| match r {
            Resource::Handed { pane, cursor } => {
                resources::handed_over(&self.session, pane, cursor)
            }
            r => r.pane().is_none_or(|p| {
                snap.as_ref()
                    .and_then(|s| s.pane(p))
                    .is_some_and(|p| self.session.can_see(p))
            }),
        };
        let requested_uris = requested.resource_subscriptions.as_ref();
        let kept: Vec<(&String, Resource)> = requested_uris
            .into_iter()
            .flatten()
            .filter_map(|u| Some((u, Resource::parse(u).ok()?)))
            .filter(|(_, r)| readable(r))
            .collect();
        // Watched from now on: rmcp acknowledges the stream before `listen`.
        self.armed.lock().unwrap().arm(
            &self.session,
            kept.iter().map(|(u, r)| (u.as_str(), r)),
            requested.resources_list_changed == Some(true)
                || kept.iter().any(|(_, r)| r.pane().is_none()),
        );
        let uris = requested_uris.map(|_| kept.iter().map(|(u, _)| (*u).clone()).collect());
        let mut accepted = SubscriptionFilter::default();
        accepted.resources_list_changed = requested.resources_list_changed;
        accepted.resource_subscriptions = uris;
        Some(accepted)
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let accepted = context.accepted().clone();
        let subs = Subscriptions::new(
            self.session.clone(),
            Notifier::Listen(context.sink().clone()),
            accepted.resources_list_changed == Some(true),
        );
        {
            let mut armed = self.armed.lock().unwrap();
            if accepted.resources_list_changed == Some(true) {
                subs.start_pane_set_armed(&mut armed);
            }
            for uri in accepted.resource_subscriptions.into_iter().flatten() {
                if let Ok(r) = Resource::parse(&uri) {
                    subs.add_armed(uri, r, &mut armed);
                }
            }
        }
        // The broker stopping (its tmux server exited, or a signal) ends the
        // stream with its final result, named by the listen request's id,
        // while the broker still writes; the client may listen again (the
        // relay finds the next broker, or ends when the server is gone).
        tokio::select! {
            _ = context.cancelled() => {}
            _ = self.gone.cancelled() => {}
            _ = self.session.broker.server_gone() => {}
        }
        drop(subs);
        Ok(())
    }

    #[allow(deprecated)] // logging is deprecated by SEP-2577 but part of every era we answer
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.attach_log(&context.peer);
        self.session.log.set_level(level_from(request.level));
        Ok(())
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        Err(McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: {}", request.method),
            None,
        ))
    }
}

/// How long a `run_command` task waits for its command (an hour); a command
/// still running then is the task's result, a running job for get_job.
const TASK_WAIT_MS: u64 = 3_600_000;
/// How long a task is kept after it could have ended (for `tasks/get`).
const TASK_KEPT_MS: u64 = 600_000;

/// A tool's answer as MCP's `tools/call` result.
fn tool_result(out: ToolOutput) -> CallToolResult {
    // Moved, not copied: the structured result is the Value the tool
    // built from its typed output, serialized once more only onto the wire.
    let mut result = CallToolResult::success(vec![ContentBlock::text(out.text)]);
    result.structured_content = out.structured;
    result.is_error = Some(out.is_error);
    // Required on 2026-07-28; rmcp strips it for older peers.
    result.result_type = Some(ResultType::COMPLETE);
    result
}

/// Never sent: rmcp drops the answer to a cancelled request (and the client
/// that went away reads nothing).
fn cancelled(why: &str) -> McpError {
    McpError::new(ErrorCode::INTERNAL_ERROR, format!("cancelled: {why}"), None)
}

/// Broker notices an agent should know about, derived from what the call
/// answered (the tool model does not emit them itself yet): a capture refused
/// because an `after-capture-pane` hook is set (warning), a reference or
/// cursor gone stale (info).
async fn notices(session: &Session, min: Option<LogLevel>, tool: &str, out: &ToolOutput) {
    if !out.is_error {
        return;
    }
    // The seed family's stale references are logged; the libtmux family's
    // unknown panes are the agent's ordinary answers.
    let seed = || tools::spec_in(session.toolset, tool).is_some_and(|t| t.family == Family::Seed);
    let (level, what) = match out.refusal {
        Some(RefusalKind::CaptureHook) => (
            LogLevel::Warning,
            "capture refused: an after-capture-pane hook is set",
        ),
        Some(RefusalKind::Gone) if seed() => (LogLevel::Info, "reference gone stale"),
        Some(RefusalKind::StaleCursor) => (LogLevel::Info, "cursor gone stale"),
        _ => return,
    };
    session
        .log
        .send(
            min,
            level,
            "tmux-mcp",
            json!({ "event": what, "tool": tool, "message": out.text }),
        )
        .await;
}

struct PeerProgress {
    peer: Peer<RoleServer>,
    token: ProgressToken,
}

impl ProgressSink for PeerProgress {
    fn report(&self, progress: f64, total: Option<f64>, message: String) -> BoxFuture<'static, ()> {
        let peer = self.peer.clone();
        let mut param =
            ProgressNotificationParam::new(self.token.clone(), progress).with_message(message);
        param.total = total;
        Box::pin(async move {
            let _ = peer.notify_progress(param).await;
        })
    }
}

struct PeerLog(Peer<RoleServer>);

#[allow(deprecated)]
impl LogSink for PeerLog {
    fn send(&self, level: LogLevel, logger: &str, data: Value) -> BoxFuture<'static, ()> {
        let peer = self.0.clone();
        let mut param = LoggingMessageNotificationParam::new(level_to(level), data);
        param.logger = Some(logger.to_string());
        Box::pin(async move {
            let _ = peer.notify_logging_message(param).await;
        })
    }
}

#[allow(deprecated)]
fn level_from(l: LoggingLevel) -> LogLevel {
    match l {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

#[allow(deprecated)]
fn level_to(l: LogLevel) -> LoggingLevel {
    match l {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}
