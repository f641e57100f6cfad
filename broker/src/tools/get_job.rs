//! `get_job` (libtmux family, read-only): a `run_command` job by its id —
//! still running, done (exit status and output tail), or lost. It only reads
//! the broker's memory: nothing reaches tmux. A job is visible to sessions
//! whose view covers the one that started it (like retained cursors); a finished
//! job stays readable for `crate::jobs::DONE_TTL`.

use crate::session::Session;
use crate::toolkit::call::spec::{Annotations, ToolOutput, ToolSpec};
use crate::toolkit::schemas::derived::{input_of, schema_of};
use crate::toolkit::shell::job::{self, JobView};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

pub const SPEC: ToolSpec = ToolSpec::new(
    "get_job",
    Annotations::read_only("Get a run_command job"),
    input_of::<Args>,
    schema_of::<JobView>,
    |c| c.run(call),
)
.description("Collect a run_command job: running, done (exit status and output) or lost.")
.details("Collect a run_command job by jobId: state running, done (exitStatus and the output tail with what was dropped) or lost (the pane's shell or the server went away first), with its paneId and command; jobId while running, output's counts only when something was dropped. Finished jobs are kept 600 s. Read-only; sends nothing to tmux.")
.listed(crate::toolkit::call::spec::Listed::With("run_command"))
.sample(|_| json!({"jobId": "0123456789abcdef0123456789abcdef"}));

#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Args {
    /// From run_command.
    #[schemars(regex(pattern = r"^[0-9a-f]{32}$"))]
    job_id: String,
}

async fn call(session: &Session, args: Args) -> Result<ToolOutput, ToolOutput> {
    match job::lookup(session, &args.job_id) {
        Some(v) => {
            let text = job::summary(&v);
            Ok(ToolOutput::typed(&v, text))
        }
        None => Err(ToolOutput::libtmux_error(format!("No job {} for this session: unknown, expired (finished jobs are kept {} s), collected by the run_command call that waited for it, or started by an agent whose scope this session does not cover. Nothing was sent to tmux.", args.job_id, crate::jobs::DONE_TTL.as_secs()))),
    }
}
