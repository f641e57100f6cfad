//! What the libtmux family's arrange tools share (`spawn`, `select`,
//! `resize_pane`, `rename`, `respawn_pane`, `kill`): the checks made before
//! anything is sent (names, programs, argument size), and the read-back after
//! tmux acted. Results carry the records the list tools publish
//! (`list_panes`, `list_windows`, `list_sessions`), read from a fresh table
//! after the action, so a name is the one tmux gave (it rewrites some
//! characters), never the one asked for.

use crate::session::Session;
use crate::toolkit::acting::launch::{self, Program};
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::spec::ToolOutput;
use crate::toolkit::libtmux::wording;
use crate::toolkit::records::graph::{self, Graph, PaneRecord, SessionRecord, WindowRecord};
use crate::toolkit::schemas::patterns::{self, NO_NUL};
use crate::toolkit::seed::mutation;
use crate::toolkit::target::references::{PaneRef, SessionRef, WindowRef};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;
use tmux_mcp_engine::registry::{Pane, Snapshot};

crate::toolkit::target::ids::text_type!(
    /// A session or window name: no control characters (tmux 3.7c refuses
    /// them, 3.3a keeps them in window names and escapes them in session
    /// names, so what tmux would do depends on its version).
    Name,
    { "type": "string", "minLength": 1, "maxLength": 256, "pattern": patterns::NO_CONTROL }
);

/// The program fields of `create_session`, `create_window`, `split_window`
/// and `respawn_pane` (flattened into each one's arguments; what runs without
/// argv or shell is in each tool's description).
#[derive(Deserialize, JsonSchema, Default)]
pub struct ProgramArgs {
    /// Run directly, never through a shell.
    #[schemars(length(min = 1, max = 256), inner(regex(pattern = NO_NUL)))]
    argv: Option<Vec<String>>,
    /// A shell command line, only when asked for; not with argv.
    ///
    /// tmux runs it with `default-shell -c`.
    #[schemars(length(min = 1), regex(pattern = NO_NUL))]
    shell: Option<String>,
    /// An existing directory (relative: to the agent's).
    #[schemars(length(min = 1), regex(pattern = NO_NUL))]
    cwd: Option<String>,
    /// NAME: value (tmux -e).
    #[serde(default)]
    #[schemars(schema_with = "launch::env_schema")]
    env: BTreeMap<String, String>,
}

impl ProgramArgs {
    /// `cwd` unless the program names its own directory (`build_workspace`'s
    /// session-wide one).
    pub fn default_cwd(&mut self, cwd: Option<&str>) {
        if self.cwd.is_none() {
            self.cwd = cwd.map(str::to_string);
        }
    }
}

impl ProgramArgs {
    /// What starts, as the person would say it (the confirmation question).
    pub fn describe(&self) -> String {
        match (&self.argv, &self.shell) {
            (Some(argv), _) => format!("{:?}", argv.join(" ")),
            (None, Some(line)) => format!("the shell command {line:?}"),
            (None, None) => "tmux's default command".to_string(),
        }
    }
}

/// The `-c`/`-e`/`--` tail for `program`, checked: argv and shell are
/// exclusive, the program is non-empty, cwd exists, the strings fit one
/// mutation. Every refusal is before anything is sent.
/// The tail of the command (`-c`, `-e`, the program) and the directory asked
/// for (resolved), to check against where tmux started the pane.
pub fn program_tail(
    session: &Session,
    args: &Value,
    program: &ProgramArgs,
) -> Result<(Vec<String>, Option<std::path::PathBuf>), ToolOutput> {
    let bad = |msg: String| wording::action_error(&msg, Delivery::NotSent);
    let n = mutation::string_bytes(args) as u64;
    if n > tmux_mcp_core::limits::MAX_MUTATION_BYTES {
        return Err(bad(format!(
            "The arguments hold {n} bytes of strings; at most {} are accepted.",
            tmux_mcp_core::limits::MAX_MUTATION_BYTES
        )));
    }
    let argv: Option<Vec<&str>> = program
        .argv
        .as_ref()
        .map(|a| a.iter().map(String::as_str).collect());
    let which = match (&argv, &program.shell) {
        (Some(_), Some(_)) => return Err(bad("Arguments argv and shell: give one of them, not both (argv runs directly, shell runs a command line through the shell).".into())),
        (Some(a), None) if a.first().is_none_or(|p| p.is_empty()) => return Err(bad("Argument argv/0: the program must be a non-empty string.".into())),
        (Some(a), None) => Program::Argv(a),
        (None, Some(line)) => Program::Shell(line),
        (None, None) => Program::Default,
    };
    let cwd = match &program.cwd {
        Some(c) => Some(
            launch::resolve_cwd(session, c).map_err(|why| bad(format!("Argument cwd: {why}.")))?,
        ),
        None => None,
    };
    if let Program::Argv(a) = &which {
        let path = program.env.get("PATH").map(String::as_str);
        launch::find_program(a[0], path, cwd.as_deref()).map_err(|why| {
            bad(format!(
                "Argument argv/0: {why}; tmux would make a pane whose program fails at once."
            ))
        })?;
    }
    let env = program.env.iter().map(|(k, v)| (k.as_str(), v.as_str()));
    Ok((launch::program_tail(cwd.as_deref(), env, which), cwd))
}

/// The table after an action, as this session sees it: the snapshot and the
/// record graph of the list tools.
pub struct After {
    pub snap: Arc<Snapshot>,
    pub graph: Graph,
}

/// Reads the table back after tmux acted (hook-free, like every read).
pub async fn read_back(session: &Session, what: &str) -> Result<After, ToolOutput> {
    let snap = session.broker.registry.refresh().await.map_err(|e| {
        wording::action_error(
            &format!("tmux {what}, but reading the table back failed: {e}. Call list_panes."),
            Delivery::Observed,
        )
    })?;
    let visible: Vec<_> = session.visible(&snap).collect();
    let graph = Graph::build(
        visible.iter().map(|p| p.as_ref()),
        &[],
        session.generation(),
    );
    drop(visible);
    Ok(After { snap, graph })
}

impl After {
    fn missing(kind: &str, id: &str) -> ToolOutput {
        wording::action_error(&format!("tmux reported success, but {kind} {id} is not in the table read just after (it may have ended at once). Call list_panes."), Delivery::Observed)
    }

    /// The pane as this session sees it.
    pub fn pane(&self, session: &Session, id: &str) -> Result<Pane, ToolOutput> {
        self.snap
            .panes
            .iter()
            .find(|p| p.id == id)
            .and_then(|p| session.scoped(p))
            .map(|p| p.into_owned())
            .ok_or_else(|| Self::missing("pane", id))
    }

    pub fn pane_record(&self, session: &Session, id: &str) -> Result<PaneRecord, ToolOutput> {
        self.pane(session, id)
            .map(|p| graph::pane_record(session, &p))
    }

    pub fn window_record(&self, session: &Session, id: &str) -> Result<WindowRecord, ToolOutput> {
        graph::window_records(session, &self.graph, None)
            .into_iter()
            .find(|w| w.id == id)
            .ok_or_else(|| Self::missing("window", id))
    }

    pub fn session_record(&self, session: &Session, id: &str) -> Result<SessionRecord, ToolOutput> {
        graph::session_records(session, &self.graph)
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| Self::missing("session", id))
    }

    /// The `PaneAction` result of pane `id` (select_pane, resize_pane, respawn_pane).
    pub fn pane_action(
        &self,
        session: &Session,
        id: &str,
        text: String,
    ) -> Result<ToolOutput, ToolOutput> {
        let pane = self.pane(session, id)?;
        let out = PaneAction {
            generation: session.generation().to_string(),
            window: self.window_record(session, &pane.window_id)?,
            window_zoomed: pane.window_zoomed,
            pane: graph::pane_record(session, &pane),
        };
        Ok(ToolOutput::typed(&out, text))
    }

    /// The name tmux gave session `id` (for the text result).
    pub fn session_name(&self, id: &str) -> String {
        self.snap
            .panes
            .iter()
            .flat_map(|p| &p.placements)
            .find(|pl| pl.session_id == id)
            .map(|pl| pl.session_name.clone())
            .unwrap_or_default()
    }

    /// The name tmux gave window `id` (for the text result).
    pub fn window_name(&self, id: &str) -> String {
        self.snap
            .panes
            .iter()
            .find(|p| p.window_id == id)
            .map(|p| p.window_name.clone())
            .unwrap_or_default()
    }
}

/// What `create_session`, `create_window` and `split_window` made: the new
/// pane, its window, and (when one was made or chosen) its session, as the
/// list tools describe them.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spawned {
    pub generation: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRecord>,
    pub window: WindowRecord,
    pub pane: PaneRecord,
}

/// A pane acted on (selected, resized, respawned), its window, and whether
/// that window is zoomed now.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PaneAction {
    pub generation: String,
    pub pane: PaneRecord,
    pub window: WindowRecord,
    pub window_zoomed: bool,
}

/// A window acted on (selected, renamed).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowAction {
    pub generation: String,
    pub window: WindowRecord,
}

/// A session acted on (renamed).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionAction {
    pub generation: String,
    pub session: SessionRecord,
}

/// What a kill tool ended: the entity (its reference and, for sessions and
/// windows, the name it had), and every pane that closed with it.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Killed<R> {
    pub generation: String,
    pub killed: R,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub panes_closed: Vec<PaneRef>,
}

/// The typed reference of a killed entity, by kind.
pub trait KilledRef: Serialize + JsonSchema {
    fn new(id: &str, generation: &str) -> Self;
}

impl KilledRef for PaneRef {
    fn new(id: &str, generation: &str) -> Self {
        PaneRef::new(id, generation)
    }
}

impl KilledRef for WindowRef {
    fn new(id: &str, generation: &str) -> Self {
        WindowRef::new(id, generation)
    }
}

impl KilledRef for SessionRef {
    fn new(id: &str, generation: &str) -> Self {
        SessionRef::new(id, generation)
    }
}

#[cfg(test)]
mod tests {
    use crate::toolkit::acting::launch::printed_ids;
    use crate::toolkit::acting::launch::{print_format, printed_pid, started_elsewhere};
    use crate::toolkit::target::references;
    use serde_json::json;

    /// What a creation printed (`print_format`): ids, then the start directory.
    #[test]
    fn a_pane_started_elsewhere_is_told() {
        use std::path::Path;
        assert_eq!(
            print_format(&[references::Kind::Window, references::Kind::Pane]),
            "#{window_id} #{pane_id}\n#{pane_pid} #{pane_start_path}"
        );
        let asked = Path::new("/d/a#[x");
        assert_eq!(
            started_elsewhere(Some(asked), "@1 %2\n42 /d/a#[x\n", "%2"),
            None
        );
        assert_eq!(
            printed_ids(
                "@1 %2\n42 /d/a b\n",
                &[references::Kind::Window, references::Kind::Pane]
            )
            .ok(),
            Some(vec!["@1".to_string(), "%2".to_string()])
        );
        assert_eq!(printed_pid("@1 %2\n42 /d/a b\n"), Some(42));
        assert_eq!(
            started_elsewhere(Some(Path::new("/d/a b")), "@1 %2\n42 /d/a b\n", "%2"),
            None,
            "a path with a space"
        );
        let why = started_elsewhere(Some(asked), "@1 %2\n42 /d/a##[x\n", "%2").unwrap();
        assert!(
            why.contains("%2") && why.contains("/d/a##[x") && why.contains("/d/a#[x"),
            "{why}"
        );
        assert_eq!(
            started_elsewhere(None, "@1 %2\n42 /root\n", "%2"),
            None,
            "no cwd asked: nothing to compare"
        );
    }

    /// Every name field of both families refuses control characters by its
    /// published schema, naming the field (tmux_create accepted them once).
    #[test]
    fn names_with_control_characters_are_refused() {
        let g = "0123456789abcdef0123456789abcdef";
        let session = json!({ "kind": "session", "id": "$0", "generation": g });
        for bad in [
            "a\nb",
            "tab\there",
            "esc\u{1b}[31m",
            "del\u{7f}",
            "c1\u{9b}",
        ] {
            let cases = [
                (
                    "rename_window",
                    json!({ "windowId": "@0", "name": bad }),
                    "/name",
                ),
                (
                    "rename_session",
                    json!({ "sessionId": "$0", "name": bad }),
                    "/name",
                ),
                ("create_session", json!({ "name": bad }), "/name"),
                (
                    "create_session",
                    json!({ "windowName": bad }),
                    "/windowName",
                ),
                (
                    "create_window",
                    json!({ "sessionId": "$0", "name": bad }),
                    "/name",
                ),
                (
                    "tmux_create",
                    json!({ "kind": "session", "name": bad, "argv": ["true"] }),
                    "/name",
                ),
                (
                    "tmux_create",
                    json!({ "kind": "session", "name": "ok", "window_name": bad, "argv": ["true"] }),
                    "/window_name",
                ),
                (
                    "tmux_create",
                    json!({ "kind": "window", "parent": session, "name": bad, "argv": ["true"] }),
                    "/name",
                ),
            ];
            for (tool, args, field) in cases {
                let e = crate::tools::validate_input(tool, &args).unwrap_err();
                assert_eq!(
                    e,
                    format!("argument {field}: must not contain control characters"),
                    "{tool} {bad:?}"
                );
            }
        }
        assert!(crate::tools::validate_input(
            "rename_window",
            &json!({ "windowId": "@0", "name": "build: logs.1 ✓ #[x]" })
        )
        .is_ok());
    }

    const TOOLS: [&str; 12] = [
        "create_session",
        "create_window",
        "split_window",
        "select_pane",
        "select_window",
        "resize_pane",
        "rename_session",
        "rename_window",
        "respawn_pane",
        "kill_pane",
        "kill_window",
        "kill_session",
    ];

    #[test]
    fn every_arrange_tool_is_registered_with_an_honest_tier_and_object_schemas() {
        use tmux_mcp_core::wire::Tier;
        for name in TOOLS {
            let t =
                crate::tools::spec(name).unwrap_or_else(|| panic!("{name} is not in the catalog"));
            let want = if name.starts_with("kill_") || name == "respawn_pane" {
                Tier::Destructive
            } else {
                Tier::Mutating
            };
            assert_eq!(t.tier(), want, "{name}");
            assert!(
                t.listed == crate::toolkit::call::spec::Listed::AtTier && !t.on_at(Tier::Readonly),
                "{name}: hidden at the default tier, on at its own"
            );
            assert!(t.on_at(want), "{name}");
            for schema in [(t.input_schema)(), (t.output_schema)()] {
                assert_eq!(schema["type"], "object", "{name}");
                jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
        // Bad input is refused by the published schema, naming the field.
        let e = crate::tools::validate_input("kill_pane", &json!({ "paneId": "@1" })).unwrap_err();
        assert!(e.starts_with("argument /paneId: must match"), "{e}");
        let e = crate::tools::validate_input(
            "split_window",
            &json!({ "paneId": "%1", "direction": "sideways" }),
        )
        .unwrap_err();
        assert!(e.starts_with("argument /direction: must be one of"), "{e}");
        let e = crate::tools::validate_input(
            "create_session",
            &json!({ "argv": ["sh"], "program": "x" }),
        )
        .unwrap_err();
        assert!(e.contains("unexpected field(s) program"), "{e}");
    }

    #[test]
    fn printed_ids_must_be_of_the_expected_kinds() {
        use references::Kind;
        assert_eq!(
            printed_ids("$1 @2 %3\n", &[Kind::Session, Kind::Window, Kind::Pane]).unwrap(),
            ["$1", "@2", "%3"]
        );
        let e = printed_ids("@2 %3\n", &[Kind::Session, Kind::Window, Kind::Pane]).unwrap_err();
        assert!(e.text.ends_with("tmux received the command."), "{}", e.text);
        assert!(printed_ids("%3 @2", &[Kind::Window, Kind::Pane]).is_err());
    }
}
