//! `list_clients` (libtmux family, read-only, opt-in): who is looking at
//! this tmux server. The terminal clients attached to the sessions this agent
//! may see, each with its terminal, size, session, and the pane it shows (the
//! active pane of its session's current window), so an agent can tell the
//! pane a person is watching from the ones nobody sees.
//!
//! Read hook-free through the `L:` format loop (tmux >= 3.5, the record
//! graph's `clients`); `list-clients` would fire `after-list-clients`, so on an
//! older tmux the result says the clients are unavailable, and why. Opt-in:
//! the default `tools/list` has no room left in its context budget.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, Listed, ToolOutput, ToolSpec};
use crate::toolkit::records::attached::{self, ClientRecord};
use crate::toolkit::records::graph;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::SessionFilter;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tmux_mcp_engine::registry::Snapshot;

pub const SPEC: ToolSpec = ToolSpec::new(
    "list_clients",
    Annotations::read_only("List attached clients"),
    input_of::<Args>,
    schema_of::<Listing>,
    |c| c.run(call),
)
.description("Terminal clients attached to tmux: terminal, size, session and the pane each shows (tmux >= 3.5).")
.details("List the terminal clients attached to the sessions this agent may see (optionally of one session, by id or name): name, tty, pid, terminal type, size, session, whether it is read-only or a control-mode client, and paneId, the pane it shows (the active pane of its session's current window). Read hook-free through tmux's client format loop, which needs tmux >= 3.5; on older tmux the clients cannot be read without firing the after-list-clients hook, and available is false with the reason. Read-only; fires no tmux hook.")
.listed(Listed::OptIn)
.sample(|_| json!({}))
.ids_in_text();

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Only clients attached to this session.
    session: Option<SessionFilter>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Listing {
    generation: String,
    /// Whether tmux can list its clients without firing a hook (>= 3.5).
    available: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    unavailable_reason: Option<String>,
    /// Empty when unavailable.
    clients: Vec<ListedClient>,
}

#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct ListedClient {
    #[serde(flatten)]
    client: ClientRecord,
    /// The pane the client shows: the active pane of its session's current
    /// window (`null` if the table read has none).
    #[schemars(regex(pattern = crate::toolkit::target::ids::PANE_ID))]
    pane_id: Option<String>,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    let (snap, g) = graph::fresh(session).await?;
    let only = graph::session_filter(&g, args.session.as_deref())?;
    let found = attached::clients(session, &snap.server.version).await;
    let clients: Vec<ListedClient> = found
        .attached
        .into_iter()
        .filter(|c| only.as_deref().is_none_or(|s| c.session_id == s))
        .map(|client| ListedClient {
            pane_id: shown_pane(&snap, &client.session_id),
            client,
        })
        .collect();
    let text = if found.available {
        let mut lines = vec![format!("{} client(s)", clients.len())];
        lines.extend(clients.iter().map(|c| {
            let size = match (c.client.width, c.client.height) {
                (Some(w), Some(h)) => format!("{w}x{h}"),
                _ => "no size".to_string(),
            };
            format!(
                "{} {} {size} session {} pane {}{}",
                c.client.name,
                c.client.termname,
                c.client.session_name,
                c.pane_id.as_deref().unwrap_or("none"),
                if c.client.control_mode {
                    " [control]"
                } else {
                    ""
                },
            )
        }));
        lines.join("\n")
    } else {
        format!(
            "clients unavailable: {}",
            found.unavailable_reason.as_deref().unwrap_or_default()
        )
    };
    Ok(ToolOutput::typed(
        &Listing {
            generation: session.generation().to_string(),
            available: found.available,
            unavailable_reason: found.unavailable_reason,
            clients,
        },
        text,
    ))
}

/// The active pane of session `session_id`'s current window.
fn shown_pane(snap: &Snapshot, session_id: &str) -> Option<String> {
    snap.panes
        .iter()
        .find(|p| {
            p.active
                && p.placements
                    .iter()
                    .any(|pl| pl.session_id == session_id && pl.window_active)
        })
        .map(|p| p.id.clone())
}
