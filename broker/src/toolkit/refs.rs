//! Entity references of the seed family's mutation tools (`tmux_send`,
//! `tmux_create`, `tmux_close`): their schemas, their resolution against a fresh
//! read of the registry, the session's visibility and self-protection policy,
//! and the small pieces every mutation shares (error envelope with `effects`,
//! argument escaping for tmux, running the one command that has an effect).
//!
//! Sessions and windows are not tables of their own: they are derived from the
//! panes' placements (`session_id`) and `window_id` in the registry snapshot.
//! A session or window with no pane does not exist in tmux, so this is exact.

use super::envelope::{self, Delivery};
use super::output::RefusalKind;
use super::output::ToolOutput;
use crate::session::Session;
use serde_json::{json, Value};
use tmux_mcp_core::tmux::TmuxError;
use tmux_mcp_core::wire::Scope;
use tmux_mcp_engine::registry::Pane;
use tmux_mcp_engine::Broker;

/// Largest tmux integer argument the schemas accept (2³¹−1).
pub const INT_MAX: i64 = 2_147_483_647;

/// The string pattern that refuses NUL (tmux arguments are C strings).
pub const NO_NUL: &str = "^[^\\x00]*$";

/// The pattern of a name (session, window): no control characters (C0, DEL,
/// C1). tmux 3.7c refuses them, 3.3a keeps them in window names, where a raw
/// ESC would then reach every terminal that lists windows.
pub const NO_CONTROL: &str = "^[^\\x00-\\x1f\\x7f-\\x9f]*$";

/// A command line: no control character but line feed (a shell's line editor
/// would act on it: Tab completes, CR submits).
pub const NO_CONTROL_BUT_LF: &str = "^[^\\x00-\\x09\\x0b-\\x1f\\x7f]*$";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Session,
    Window,
    Pane,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Session => "session",
            Kind::Window => "window",
            Kind::Pane => "pane",
        }
    }

    /// The tmux command that ends an entity of this kind.
    pub fn kill_command(self) -> &'static str {
        match self {
            Kind::Session => "kill-session",
            Kind::Window => "kill-window",
            Kind::Pane => "kill-pane",
        }
    }

    fn id_pattern(self) -> &'static str {
        match self {
            Kind::Session => super::ids::SESSION_ID,
            Kind::Window => super::ids::WINDOW_ID,
            Kind::Pane => super::ids::PANE_ID,
        }
    }

    /// The kind of a printed tmux id (`$3`, `@7`, `%12`), checked for syntax.
    pub fn of_id(id: &str) -> Option<Kind> {
        let kind = match id.as_bytes().first()? {
            b'$' => Kind::Session,
            b'@' => Kind::Window,
            b'%' => Kind::Pane,
            _ => return None,
        };
        let digits = &id[1..];
        (!digits.is_empty() && id.len() <= 32 && digits.bytes().all(|b| b.is_ascii_digit()))
            .then_some(kind)
    }
}

/// `{kind, id, generation}` schema of one entity kind (A.0.1 syntax).
pub fn ref_schema(kind: Kind) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["kind", "id", "generation"],
        "properties": {
            "kind": { "const": kind.as_str() },
            "id": { "type": "string", "pattern": kind.id_pattern(), "maxLength": 32 },
            "generation": { "type": "string", "minLength": 1, "maxLength": 128 }
        }
    })
}

/// Any of the three entity references.
pub fn any_ref_schema() -> Value {
    json!({ "oneOf": [ref_schema(Kind::Session), ref_schema(Kind::Window), ref_schema(Kind::Pane)] })
}

// A pane reference as a typed value (its derived schema equals
// `ref_schema(Kind::Pane)`; a unit test keeps the two equal). A plain comment,
// not a doc comment: schemars would publish a doc comment as the schema's
// description, in every tool that takes or returns one.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PaneRef {
    pub kind: PaneKind,
    #[schemars(regex(pattern = super::ids::PANE_ID), length(max = 32))]
    pub id: String,
    #[schemars(length(min = 1, max = 128))]
    pub generation: String,
}

#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub enum PaneKind {
    #[serde(rename = "pane")]
    Pane,
}

impl PaneRef {
    /// The kind, id and generation, as [`resolve`] takes them.
    pub fn parts(&self) -> (Kind, &str, &str) {
        (Kind::Pane, &self.id, &self.generation)
    }

    pub fn new(id: &str, generation: &str) -> PaneRef {
        PaneRef {
            kind: PaneKind::Pane,
            id: id.to_string(),
            generation: generation.to_string(),
        }
    }
}

pub fn reference(kind: Kind, id: &str, generation: &str) -> Value {
    json!({ "kind": kind.as_str(), "id": id, "generation": generation })
}

/// The output schema of a mutation tool: the common envelope, with `effects`
/// required on the error branch and `created` holding entity references.
pub fn output_schema(data: Value) -> Value {
    let mut schema = envelope::output_schema(data);
    let err = &mut schema["oneOf"][1]["properties"]["error"];
    err["required"] = json!(["code", "message", "delivery", "effects"]);
    err["properties"]["effects"]["properties"]["created"]["items"] = any_ref_schema();
    schema
}

/// A mutation error whose effects are `none` (not sent) or `unknown`.
pub fn fail(code: &str, why: &str, delivery: Delivery) -> ToolOutput {
    envelope::mutation_error(code, why, delivery, Vec::new())
}

pub fn policy_denied(why: &str) -> ToolOutput {
    envelope::mutation_error("policy_denied", why, Delivery::NotSent, Vec::new())
}

/// `invalid_input` for an argument-level rejection found after schema validation.
pub fn invalid_input(problem: &str) -> ToolOutput {
    envelope::mutation_error("invalid_input", problem, Delivery::NotSent, Vec::new())
}

/// Sum of all string bytes (object keys and string values) in `v`.
pub fn string_bytes(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Array(a) => a.iter().map(string_bytes).sum(),
        Value::Object(m) => m.iter().map(|(k, v)| k.len() + string_bytes(v)).sum(),
        _ => 0,
    }
}

/// `capacity` (not sent) when the arguments' strings exceed `max_mutation_bytes`.
pub fn check_mutation_bytes(args: &Value) -> Result<(), ToolOutput> {
    let n = string_bytes(args) as u64;
    if n > tmux_mcp_core::limits::MAX_MUTATION_BYTES {
        return Err(fail("capacity", &format!("The arguments hold {n} bytes of strings; at most {} are accepted. Nothing was sent.", tmux_mcp_core::limits::MAX_MUTATION_BYTES), Delivery::NotSent));
    }
    Ok(())
}

pub use tmux_mcp_core::tmux::quote::{format_arg, literal_arg};

/// What a reference resolved to: the entity and the panes it contains.
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: Kind,
    pub id: String,
    pub panes: Vec<Pane>,
    /// Every pane of the server at resolution time (to tell "last session").
    pub all_panes: usize,
}

impl Target {
    /// The pane a pane target names; `None` for a window or a session.
    pub fn pane(&self) -> Option<&Pane> {
        match self.kind {
            Kind::Pane => self.panes.iter().find(|p| p.id == self.id),
            _ => None,
        }
    }

    /// The name tmux gives the target: a window's or a session's (as it
    /// read at resolution); a pane has none.
    pub fn name(&self) -> Option<&str> {
        match self.kind {
            Kind::Pane => None,
            Kind::Window => self.panes.first().map(|p| p.window_name.as_str()),
            Kind::Session => self
                .panes
                .iter()
                .flat_map(|p| &p.placements)
                .find(|pl| pl.session_id == self.id)
                .map(|pl| pl.session_name.as_str()),
        }
    }

    pub fn reference(&self, broker: &Broker) -> Value {
        reference(self.kind, &self.id, &broker.identity.generation)
    }

    /// Whether the caller's own pane is (in) this entity.
    pub fn holds_caller(&self, session: &Session) -> bool {
        session
            .caller_pane
            .as_deref()
            .is_some_and(|c| self.panes.iter().any(|p| p.id == c))
    }
}

/// The `policy_denied` envelope for acting on the caller's own pane.
pub fn self_denied(what: &str) -> ToolOutput {
    policy_denied(&format!(
        "{what} the agent's own pane (the pane the MCP relay runs in); that needs explicit opt-in: attach with `tmux-mcp attach --allow-self`. Nothing was sent."
    ))
}

/// Why a target could not be acted on. Every one is found before anything is
/// sent to tmux (only reads ran); each family words it its own way.
#[derive(Debug, Clone)]
pub enum Refusal {
    /// The reference's generation is not this server's.
    Generation,
    /// The entity does not exist (any more).
    Gone { kind: Kind, id: String },
    /// It exists but this session may not see it.
    OutOfScope { kind: Kind, id: String },
    /// The table could not be read.
    Unreadable(String),
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::Generation => "The reference's generation is not this tmux server's (another or a restarted server).".to_string(),
            Refusal::Gone { kind, id } => format!("{} {id} does not exist (any more).", kind.as_str()),
            Refusal::OutOfScope { kind, id } => format!(
                "{} {id} is outside this session's scope (--scope session: the agent's own tmux session only); attach with --scope server to reach it.",
                kind.as_str()
            ),
            Refusal::Unreadable(e) => format!("Reading tmux's entities failed: {e}."),
        }
    }

    /// Its kind, as the layers above the tools act on it.
    pub fn kind(&self) -> Option<RefusalKind> {
        match self {
            Refusal::Generation | Refusal::Gone { .. } => Some(RefusalKind::Gone),
            Refusal::OutOfScope { .. } => Some(RefusalKind::OutOfScope),
            Refusal::Unreadable(_) => None,
        }
    }

    /// The seed family's envelope for it.
    pub fn envelope(&self) -> ToolOutput {
        let why = format!("{} Nothing was sent.", self.message());
        let mut out = match self {
            Refusal::Generation | Refusal::Gone { .. } => {
                fail("stale_target", &why, Delivery::NotSent)
            }
            Refusal::OutOfScope { .. } => policy_denied(&why),
            Refusal::Unreadable(_) => fail("transport_error", &why, Delivery::NotSent),
        };
        out.refusal = self.kind();
        out
    }
}

/// Resolves the entity `id` of `kind` with a fresh metadata read: generation
/// first (when the caller gave one), then existence, then this session's scope.
pub async fn find(
    session: &Session,
    kind: Kind,
    id: &str,
    generation: Option<&str>,
) -> Result<Target, Refusal> {
    let broker = &session.broker;
    if generation.is_some_and(|g| g != broker.identity.generation) {
        return Err(Refusal::Generation);
    }
    let snap = broker
        .registry
        .refresh()
        .await
        .map_err(|e| Refusal::Unreadable(e.to_string()))?;
    let panes: Vec<Pane> = snap
        .panes
        .iter()
        .filter(|p| match kind {
            Kind::Session => p.in_session(id),
            Kind::Window => p.window_id == id,
            Kind::Pane => p.id == id,
        })
        .cloned()
        .collect();
    if panes.is_empty() {
        return Err(Refusal::Gone {
            kind,
            id: id.to_string(),
        });
    }
    let visible = match kind {
        Kind::Session => {
            session.scope == Scope::Server || session.caller_sessions.iter().any(|s| s == id)
        }
        Kind::Window | Kind::Pane => panes.iter().any(|p| session.can_see(p)),
    };
    if !visible {
        return Err(Refusal::OutOfScope {
            kind,
            id: id.to_string(),
        });
    }
    Ok(Target {
        kind,
        id: id.to_string(),
        panes,
        all_panes: snap.panes.len(),
    })
}

/// Resolves the seed family's reference `r` (its generation required);
/// failures are the family's envelopes, all `not_sent`.
/// `r` is a typed reference's `parts()` (taken apart so that this module
/// need not know the session and window reference types, which build on it).
pub async fn resolve(session: &Session, r: (Kind, &str, &str)) -> Result<Target, ToolOutput> {
    let (kind, id, generation) = r;
    find(session, kind, id, Some(generation))
        .await
        .map_err(|e| e.envelope())
}

/// A tmux command that did not do what was asked, and whether it reached tmux.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: &'static str,
    pub message: String,
    pub delivery: Delivery,
}

impl Failure {
    pub fn envelope(&self) -> ToolOutput {
        fail(self.code, &self.message, self.delivery)
    }
}

/// Runs one tmux command that has an effect. `Ok(stdout)` when it exited 0.
pub async fn run_command(broker: &Broker, args: &[&str]) -> Result<String, Failure> {
    match broker.registry.tmux_output(args).await {
        Ok(out) if out.status == 0 => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        Ok(out) => {
            let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
            let err: String = err.chars().take(300).collect();
            Err(Failure {
                code: "command_failed",
                message: format!("tmux {} exited with status {}: {err}", args[0], out.status),
                delivery: Delivery::Observed,
            })
        }
        Err(e) => Err(transport(args[0], &e)),
    }
}

/// Runs the one tmux command of a seed-family mutation; failures as envelopes,
/// with `delivery` honest about what may have happened.
pub async fn run_mutation(broker: &Broker, args: &[&str]) -> Result<String, ToolOutput> {
    run_command(broker, args).await.map_err(|f| f.envelope())
}

fn transport(command: &str, e: &TmuxError) -> Failure {
    let (code, message, delivery) = match e {
        TmuxError::Timeout { timeout, .. } => (
            "deadline",
            format!("tmux {command} did not finish within {timeout:?}; it may have taken effect."),
            Delivery::PossiblySent,
        ),
        e if e.possibly_sent() => (
            "transport_error",
            format!(
                "The connection to tmux failed during {command}; it may have taken effect: {e}"
            ),
            Delivery::PossiblySent,
        ),
        e => (
            "transport_error",
            format!("tmux could not be reached for {command}: {e}. Nothing was sent."),
            Delivery::NotSent,
        ),
    };
    Failure {
        code,
        message,
        delivery,
    }
}

/// Re-reads the registry after a mutation so later calls see the change. A
/// failure here does not undo what tmux did, so it is only logged.
pub async fn refresh_after(broker: &Broker) {
    if let Err(e) = broker.registry.refresh().await {
        tracing::warn!("refresh after a mutation failed: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_pane_ref_has_the_published_schema() {
        let derived = crate::toolkit::typed::schema_of::<PaneRef>();
        let v = jsonschema::validator_for(&derived).unwrap();
        let hand = jsonschema::validator_for(&ref_schema(Kind::Pane)).unwrap();
        for r in [
            json!({ "kind": "pane", "id": "%3", "generation": "g" }),
            json!({ "kind": "pane", "id": "3", "generation": "g" }),
            json!({ "kind": "window", "id": "%3", "generation": "g" }),
            json!({ "kind": "pane", "id": "%3", "generation": "" }),
            json!({ "kind": "pane", "id": "%3" }),
        ] {
            assert_eq!(v.is_valid(&r), hand.is_valid(&r), "{r}");
        }
        // A published output schema does not forbid other fields
        // (`typed::lean_output`); the serialized type never has one.
        let extra = json!({ "kind": "pane", "id": "%3", "generation": "g", "x": 1 });
        assert!(v.is_valid(&extra) && !hand.is_valid(&extra));
        assert_eq!(
            serde_json::to_value(PaneRef::new("%3", "g")).unwrap(),
            reference(Kind::Pane, "%3", "g")
        );
    }

    #[test]
    fn ids_and_effects() {
        assert_eq!(Kind::of_id("$12"), Some(Kind::Session));
        assert_eq!(Kind::of_id("@0"), Some(Kind::Window));
        assert_eq!(Kind::of_id("%3"), Some(Kind::Pane));
        assert_eq!(Kind::of_id("%"), None);
        assert_eq!(Kind::of_id("%3x"), None);
        let effects = |o: ToolOutput| o.structured.unwrap()["error"].clone();
        let e = effects(fail("deadline", "x", Delivery::PossiblySent));
        assert_eq!(
            (e["delivery"].as_str(), e["effects"]["state"].as_str()),
            (Some("possibly_sent"), Some("unknown"))
        );
        let e = effects(fail("stale_target", "x", Delivery::NotSent));
        assert_eq!(e["effects"], json!({ "state": "none", "created": [] }));
        let created = vec![reference(Kind::Pane, "%1", "g")];
        let e = effects(envelope::mutation_error(
            "capacity",
            "x",
            Delivery::NotSent,
            created.clone(),
        ));
        assert_eq!(
            (e["delivery"].as_str(), e["effects"]["state"].as_str()),
            (Some("observed"), Some("known"))
        );
        assert_eq!(e["effects"]["created"], json!(created));
        let schema = output_schema(json!({ "type": "object" }));
        let v = jsonschema::validator_for(&schema).unwrap();
        assert!(v.is_valid(
            &envelope::mutation_error("capacity", "x", Delivery::NotSent, created)
                .structured
                .unwrap()
        ));
        assert!(
            !v.is_valid(
                &envelope::error("capacity", "x", Delivery::NotSent)
                    .structured
                    .unwrap()
            ),
            "effects must be required"
        );
        assert!(v.is_valid(
            &crate::tools::spec("tmux_send")
                .unwrap()
                .refusal(envelope::policy_denied())
                .structured
                .unwrap()
        ));
    }
}
