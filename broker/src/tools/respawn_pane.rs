//! `respawn_pane` (libtmux family, destructive tier: with `kill` it ends the
//! pane's running process): `respawn-pane [-k] -t %N` with the program as
//! argv (never a shell string unless the caller gives `shell`). A pane whose
//! process still runs is refused before anything is sent unless `kill` is
//! true, so the loss is always asked for. The agent's own pane is never
//! respawned. The result is the pane read back: new pid, new process
//! generation.

use crate::guarded;
use crate::session::Session;
use crate::toolkit::acting::tmux_command::Delivery;
use crate::toolkit::call::confirm::{self, Ask};
use crate::toolkit::call::spec::{Annotations, Call, CallFuture, ToolOutput, ToolSpec};
use crate::toolkit::libtmux::action::{self, SelfRule};
use crate::toolkit::libtmux::arrange::{self, PaneAction, ProgramArgs};
use crate::toolkit::libtmux::wording;
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::target::ids::{Generation, PaneId};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

pub const SPEC: ToolSpec = ToolSpec::new(
    "respawn_pane",
    Annotations::destructive("Respawn pane"),
    input_of::<Args>,
    schema_of::<PaneAction>,
    run,
)
.description("Restart a pane's program (argv, shell, or its original command); a running one only with kill: true.")
.details("Restart the program of a pane (respawn-pane -t paneId) with argv (executed directly; `shell` for a command line through the shell; neither: the command the pane was started with). If the pane's process is still running this is refused unless kill is true, which kills it first (destructive). Optional cwd, env, generation. The agent's own pane is never respawned. Returns the pane record read back from tmux (its new pid and process generation) and its window.");

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
struct Args {
    pane_id: PaneId,
    generation: Option<Generation>,
    /// Kill a running process first (else a running pane is refused).
    #[serde(default)]
    kill: bool,
    #[serde(flatten)]
    program: ProgramArgs,
}
guarded!(Args, pane_id);

fn run(c: Call<'_>) -> CallFuture<'_> {
    let (raw, ask) = (c.args.clone(), c.ask.clone());
    c.run(move |session, a| async move { call(session, &raw, &ask, a).await })
}

async fn call(
    session: &Session,
    raw: &Value,
    ask: &Ask,
    a: Args,
) -> Result<ToolOutput, ToolOutput> {
    let (tail, _) = arrange::program_tail(session, raw, &a.program)?;
    let t = action::target_of(session, &a, SelfRule::Never).await?;
    let Some(pane) = t.pane() else {
        return Err(wording::action_error(
            &format!("{} is not a pane.", t.id),
            Delivery::NotSent,
        ));
    };
    if !pane.dead && !a.kill {
        return Err(wording::action_error(
            &format!("Pane {} still runs {} (pid {}); respawning it would kill that process. Pass kill: true to kill it and respawn.", t.id, pane.command, pane.pid),
            Delivery::NotSent,
        ));
    }
    let old_pid = pane.pid;
    let mut cmd: Vec<String> = vec!["respawn-pane".into()];
    if a.kill {
        cmd.push("-k".into());
    }
    cmd.extend(["-t".into(), t.id.clone()]);
    cmd.extend(tail);
    let argv: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let question = format!(
        "Respawn pane {}? {}; then {} starts there.",
        action::pane_line(pane),
        if pane.dead {
            "It is dead"
        } else {
            "Its program is killed"
        },
        a.program.describe()
    );
    confirm::ask(ask, "respawn_pane", &question, |m| {
        wording::action_error(m, Delivery::NotSent)
    })
    .await?;
    action::run(session, &argv).await?;
    let after = arrange::read_back(session, "respawned the pane").await?;
    let now = after.pane(session, &t.id)?;
    let text = format!(
        "Pane {} respawned: pid {} (was {old_pid}), running {}.",
        t.id, now.pid, now.command
    );
    after.pane_action(session, &t.id, text)
}
