//! What a tool is: its declaration ([`ToolSpec`], registered once in
//! `crate::tools::CATALOG`), one call of it ([`Call`]), what it produced
//! ([`ToolOutput`]), where its progress goes, and how `tools/list` publishes it.

use crate::session::Session;
use crate::toolkit::call::args::decode;
use crate::toolkit::call::confirm;
pub use crate::toolkit::call::output::ToolOutput;
use crate::toolkit::seed::envelope;
use crate::toolkit::seed::mutation;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use std::future::Future;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `tmux_*`: envelope results, `policy_denied` when disabled.
    Seed,
    /// libtmux vocabulary: plain results, tool errors naming the enabling option.
    Libtmux,
}

/// What a tool does to the person's tmux, honestly (MCP tool annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Annotations {
    pub title: Option<&'static str>,
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// A tool's tier (`readonly` / `mutating` / `destructive`), from its annotations.
pub use tmux_mcp_core::wire::{Tier, Toolset};

impl Annotations {
    /// A read: changes nothing in tmux, so repeating it has no further effect
    /// (idempotent), and it touches nothing outside the person's tmux server.
    /// Every read publishes exactly these hints, the seed tools included:
    /// clients act on them (Codex CLI refuses a tool hinted destructive when
    /// it runs unattended), so MCP's defaults are never left in place.
    pub const fn read_only(title: &'static str) -> Annotations {
        Annotations {
            title: Some(title),
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
        }
    }

    /// Changes state but loses nothing (the mutating tier): typing, arranging.
    pub const fn mutating(title: &'static str, idempotent: bool) -> Annotations {
        Annotations {
            title: Some(title),
            read_only: false,
            destructive: false,
            idempotent,
            open_world: false,
        }
    }

    pub const fn destructive(title: &'static str) -> Annotations {
        Annotations {
            title: Some(title),
            read_only: false,
            destructive: true,
            idempotent: false,
            open_world: false,
        }
    }

    /// The safety tier, from the hints alone: read-only, else destructive or
    /// not. Destructive means the tool's own action can lose something (a
    /// process, a pane, history); typing into a pane is mutating — the tier the
    /// person grants with `--safety mutating` — and says so in its description.
    pub fn tier(&self) -> Tier {
        match (self.read_only, self.destructive) {
            (true, _) => Tier::Readonly,
            (false, false) => Tier::Mutating,
            (false, true) => Tier::Destructive,
        }
    }

    pub fn to_json(&self) -> Value {
        let mut v = json!({});
        if let Some(t) = self.title {
            v["title"] = json!(t);
        }
        v["readOnlyHint"] = json!(self.read_only);
        v["destructiveHint"] = json!(self.destructive);
        v["idempotentHint"] = json!(self.idempotent);
        v["openWorldHint"] = json!(self.open_world);
        v
    }
}

/// One call of a tool: which tool, the session, the arguments (already
/// checked against the published input schema), and where progress goes.
pub struct Call<'a> {
    /// The tool called, as the session's toolset spells it.
    pub spec: &'static ToolSpec,
    pub session: &'a Session,
    pub args: Value,
    pub progress: Option<Progress>,
    /// How a destructive tool asks the person first (`attach --confirm`).
    pub ask: confirm::Ask,
}

pub type CallFuture<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = ToolOutput> + Send + 'a>>;

impl<'a> Call<'a> {
    /// Every tool's `run` is this one line, `|c| c.run(call)` in its
    /// [`ToolSpec`] (a `fn run` where it takes more, or where `call` reaches
    /// the catalog holding the spec: `batch`), over
    ///
    /// ```ignore
    /// async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput>
    /// ```
    ///
    /// whose body refuses with `?` (both sides are the tool's answer). What
    /// else a tool needs of the call (`progress`, `ask`, the raw `args`) it
    /// takes out before and hands to `call` in a closure:
    /// `let progress = c.progress.clone(); c.run(move |s, a| call(s, a, progress))`.
    ///
    /// The arguments are decoded first, refused in the family's words when
    /// they do not fit `A` (nothing was sent): a libtmux tool's error, the
    /// seed envelope's `invalid_input`; a seed tool that changes tmux checks
    /// its arguments' string bytes against the mutation ceiling before that.
    pub fn run<A, F, Fut>(self, call: F) -> CallFuture<'a>
    where
        A: DeserializeOwned + Send + 'a,
        F: FnOnce(&'a Session, A) -> Fut + Send + 'a,
        Fut: Future<Output = Result<ToolOutput, ToolOutput>> + Send + 'a,
    {
        Box::pin(async move {
            let out = match self.arguments::<A>() {
                Ok(args) => call(self.session, args).await.unwrap_or_else(|e| e),
                Err(refused) => refused,
            };
            self.spec.answer(out)
        })
    }

    /// [`Call::run`] for a tool that reports progress while it waits: `call`
    /// gets the call's progress handle too.
    pub fn run_with_progress<A, F, Fut>(self, call: F) -> CallFuture<'a>
    where
        A: DeserializeOwned + Send + 'a,
        F: FnOnce(&'a Session, A, Option<Progress>) -> Fut + Send + 'a,
        Fut: Future<Output = Result<ToolOutput, ToolOutput>> + Send + 'a,
    {
        let progress = self.progress.clone();
        self.run(move |session, args| call(session, args, progress))
    }

    /// The arguments as the tool's typed struct. They already passed the
    /// published input schema, so a failure here means the struct and the
    /// schema disagree: reported as invalid arguments, nothing sent.
    fn arguments<A: DeserializeOwned>(&self) -> Result<A, ToolOutput> {
        match self.spec.family {
            Family::Libtmux => decode(&self.args).map_err(|e| {
                ToolOutput::libtmux_error(format!(
                    "Invalid arguments: {e}. Nothing was sent to tmux."
                ))
            }),
            Family::Seed => {
                if self.spec.tier() != Tier::Readonly {
                    mutation::check_mutation_bytes(&self.args)?;
                }
                decode(&self.args).map_err(|e| {
                    envelope::invalid_input(&format!("Invalid arguments: {e}. Nothing was sent."))
                })
            }
        }
    }
}

/// A tool, whole: everything about it is here, registered once in
/// `crate::tools::CATALOG`. Declared with [`ToolSpec::new`] and the setters
/// below, so a tool states only what differs from the usual: a libtmux-family
/// tool, on at its tier, documented by its description alone, with no sample.
pub struct ToolSpec {
    pub name: &'static str,
    pub family: Family,
    /// What `tools/list` says: what the tool is for and its one rule that is
    /// not obvious. It is paid for in every agent's context, so the rest is in
    /// `details`.
    pub description: &'static str,
    /// The rest of the tool's documentation, served in its reference
    /// (`tmux://tool/{name}`, `toolkit::schemas::tool_doc`) and not in `tools/list`;
    /// empty when the description is all of it (a seed contract's).
    pub details: &'static str,
    /// What the tool does; decides its tier and, in the seed family, whether
    /// its errors carry `effects` (destructive tools).
    pub annotations: Annotations,
    /// When the tool is on without `--enable-tool`.
    pub listed: Listed,
    pub input_schema: fn() -> Value,
    pub output_schema: fn() -> Value,
    pub run: for<'a> fn(Call<'a>) -> CallFuture<'a>,
    /// Arguments that make the tool do its work on one pane of a fresh
    /// server: the hook trap calls every read tool with them (a read tool
    /// must have one), and a unit test checks each against the input schema.
    pub sample: Option<fn(&Sample) -> Value>,
    /// Its text holds no pane content, only what its structured result
    /// says: when another server answers it, the ids in its text are
    /// qualified as in the structured result (`route`). Off by default, so a
    /// pane's own text is never rewritten.
    pub ids_in_text: bool,
    /// A listing that reads several servers in one call (`server: "*"` or a
    /// list of keys, `route`): its result is then one entry per server.
    pub across_servers: bool,
}

/// What a [`ToolSpec::sample`] may name: a pane that exists and runs a shell,
/// and the server's generation (for the seed family's references).
pub struct Sample<'a> {
    pub pane: &'a str,
    pub generation: &'a str,
}

impl ToolSpec {
    /// Tool `name`: what it does to tmux, its input and output schemas and
    /// its implementation; the rest has the usual defaults.
    pub const fn new(
        name: &'static str,
        annotations: Annotations,
        input_schema: fn() -> Value,
        output_schema: fn() -> Value,
        run: for<'a> fn(Call<'a>) -> CallFuture<'a>,
    ) -> ToolSpec {
        ToolSpec {
            name,
            family: Family::Libtmux,
            description: "",
            details: "",
            annotations,
            listed: Listed::AtTier,
            input_schema,
            output_schema,
            run,
            sample: None,
            ids_in_text: false,
            across_servers: false,
        }
    }

    pub const fn description(mut self, description: &'static str) -> ToolSpec {
        self.description = description;
        self
    }

    pub const fn details(mut self, details: &'static str) -> ToolSpec {
        self.details = details;
        self
    }

    /// A tool of the seed family (`tmux_*`: the envelope, `policy_denied`).
    pub const fn seed(mut self) -> ToolSpec {
        self.family = Family::Seed;
        self
    }

    pub const fn listed(mut self, listed: Listed) -> ToolSpec {
        self.listed = listed;
        self
    }

    pub const fn sample(mut self, sample: fn(&Sample) -> Value) -> ToolSpec {
        self.sample = Some(sample);
        self
    }

    /// See [`ToolSpec::ids_in_text`].
    pub const fn ids_in_text(mut self) -> ToolSpec {
        self.ids_in_text = true;
        self
    }

    /// See [`ToolSpec::across_servers`].
    pub const fn across_servers(mut self) -> ToolSpec {
        self.across_servers = true;
        self
    }
}

/// When a tool is on without `--enable-tool` / `@mcp-enable-tools`. Every
/// listed tool costs each agent context (issue 20), so a tool that is seldom
/// what an agent came for is named by the person, and a tool that only serves
/// another comes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listed {
    /// On for every session whose safety tier covers the tool's.
    AtTier,
    /// On only when named: the seed family's policy (A.0.4: only its
    /// discovery tools are on by default), and the configuration reads
    /// (`show_options`, `show_environment`, `show_hooks`).
    OptIn,
    /// On exactly when the named tool is (`get_job` collects what only
    /// `run_command` starts).
    With(&'static str),
}

impl ToolSpec {
    pub fn tier(&self) -> Tier {
        self.annotations.tier()
    }

    /// `out` as this tool answers it: a seed mutation tool's errors carry
    /// `effects` (destructive, A.0.2), whether the tool made them or they were
    /// made for it before dispatch (policy, validation). Applied at the edge
    /// ([`Call::run`], `tools::call`), so the tools and the toolkit build a
    /// seed error one way, with `envelope::error` and its shorthands.
    pub fn answer(&self, out: ToolOutput) -> ToolOutput {
        if self.family == Family::Seed && self.annotations.destructive {
            envelope::with_effects(out)
        } else {
            out
        }
    }

    pub fn published_annotations(&self) -> Value {
        self.annotations.to_json()
    }
}

/// Where a long-running call reports progress (`notifications/progress`), when
/// the client asked for it with a `progressToken`. The MCP layer supplies the
/// sink; `report` returns once the notification is on its way.
#[derive(Clone)]
pub struct Progress {
    sink: std::sync::Arc<dyn ProgressSink>,
}

/// Delivers progress reports to the client (implemented by the MCP layer).
pub trait ProgressSink: Send + Sync {
    fn report(
        &self,
        progress: f64,
        total: Option<f64>,
        message: String,
    ) -> futures::future::BoxFuture<'static, ()>;
}

impl Progress {
    pub fn new(sink: std::sync::Arc<dyn ProgressSink>) -> Self {
        Progress { sink }
    }

    pub async fn report(&self, progress: f64, total: Option<f64>, message: &str) {
        self.sink.report(progress, total, message.to_string()).await;
    }
}

/// Runs `work`; meanwhile, when the call has a `progressToken`, reports once a
/// second how long it has run (`what` "for N s"), out of `total` seconds (its
/// deadline). Every call that can block longer than a second reports so
/// (`run_command`, `tmux_run`; the waits through `pane_events::PaneEvents`).
pub async fn reporting<F: std::future::Future>(
    progress: Option<&Progress>,
    total: f64,
    what: &str,
    work: F,
) -> F::Output {
    let Some(p) = progress else {
        return work.await;
    };
    let mut work = std::pin::pin!(work);
    let started = tokio::time::Instant::now();
    let second = std::time::Duration::from_secs(1);
    let mut tick = tokio::time::interval_at(started + second, second);
    loop {
        tokio::select! {
            out = &mut work => return out,
            _ = tick.tick() => {
                let waited = started.elapsed().as_secs_f64().min(total);
                p.report(waited, Some(total), &format!("{what} for {waited:.0} s")).await;
            }
        }
    }
}
