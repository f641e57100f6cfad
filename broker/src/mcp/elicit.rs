//! The MCP side of asking the person before a destructive action
//! (`toolkit::call::confirm` is the tools' side): which way this call can ask, and
//! the `input_required` round of 2026-07-28.
//!
//! Before 2026-07-28 the broker sends `elicitation/create` while the call
//! waits. On 2026-07-28 a server does not send requests of its own; the call
//! answers `input_required` with the question and a `requestState`, and the
//! client retries the same call with the person's answer. The state is a
//! random key to what the broker kept (tool, arguments, question), used once:
//! a retry with other arguments, or one that comes too late, is a new call
//! and is asked again, so an answer counts only for the question it answered.

use crate::session::{PendingConfirmation, Session};
use crate::toolkit::call::confirm::{Answer, Ask, AskNow, Rounds};
use futures::future::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientResult, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ErrorCode, InputRequest, InputRequiredResult, ServerRequest,
};
use rmcp::service::{PeerRequestOptions, RequestContext};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{json, Value};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The key of the one input request a confirmation sends.
const KEY: &str = "confirm";
/// How long a question waits for its retry (2026-07-28) or its answer.
const PENDING_FOR: Duration = Duration::from_secs(tmux_mcp_core::limits::CONFIRM_TIMEOUT_SECONDS);
/// Questions kept per session at most (the oldest goes first).
const PENDING_MAX: usize = 32;

/// How this call of a destructive tool may ask, before it runs, in a
/// session that confirms (the caller checks both). `args` is the call's
/// arguments (compared with what a `requestState` was made for).
pub fn ask_for(
    context: &RequestContext<RoleServer>,
    request: &CallToolRequestParams,
    args: &Value,
    legacy: bool,
    session: &Session,
) -> Result<Ask, McpError> {
    if !can_ask(context) {
        if legacy {
            return Ok(Ask::Cannot);
        }
        // 2026-07-28: the tool still runs its checks and says what it would
        // ask; the call then answers -32021 ([`missing_elicitation`]).
        return Ok(Ask::Rounds(Default::default()));
    }
    if legacy {
        return Ok(Ask::Now(Arc::new(PeerAsk {
            peer: context.peer.clone(),
            timeout: PENDING_FOR,
        })));
    }
    // An answer that is not an elicitation's is the retry's mistake: refused
    // (-32602), not taken for no answer and asked again.
    if let Some(given) = request.input_responses.as_ref().and_then(|r| r.get(KEY)) {
        if answer_of(given).is_none() {
            return Err(McpError::invalid_params(
                format!("invalid params: inputResponses.{KEY} must be the elicitation's answer, an object whose \"action\" is \"accept\", \"decline\" or \"cancel\". Nothing was sent to tmux."),
                Some(json!({ "field": format!("inputResponses.{KEY}.action"), "delivery": "not_sent" })),
            ));
        }
    }
    let answered = request.request_state.as_deref().and_then(|state| {
        let pending = take(session, state)?;
        let fresh = pending.made.elapsed() < PENDING_FOR;
        let same = pending.tool == request.name && pending.args == *args;
        let answer = request
            .input_responses
            .as_ref()?
            .get(KEY)
            .and_then(answer_of)?;
        (fresh && same).then_some((pending.question, answer))
    });
    Ok(Ask::Rounds(Arc::new(Rounds {
        answered,
        asked: Default::default(),
    })))
}

/// Whether this request's client declared form elicitation. An empty
/// `elicitation` object means form (the spec's reading for clients written
/// before modes existed).
pub fn can_ask(context: &RequestContext<RoleServer>) -> bool {
    context
        .client_capabilities()
        .and_then(|c| c.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none())
}

/// After the call, on 2026-07-28, for a client that declared no form
/// elicitation: when the tool got as far as asking (every check passed),
/// MCP's -32021 naming the capability it needs (nothing reached tmux).
pub fn missing_elicitation(ask: &Ask, tool: &str) -> Option<McpError> {
    let Ask::Rounds(r) = ask else { return None };
    r.asked.lock().unwrap().as_ref()?;
    let required: ClientCapabilities =
        serde_json::from_value(json!({ "elicitation": { "form": {} } })).ok()?;
    Some(McpError::new(
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("This session asks the person before {tool} (tmux-mcp attach --confirm, or @mcp-confirm), and this request's client declared no form elicitation capability (_meta[\"io.modelcontextprotocol/clientCapabilities\"].elicitation). Nothing was sent to tmux."),
        Some(json!({ "requiredCapabilities": required, "delivery": "not_sent" })),
    ))
}

/// After the call: the `input_required` result to answer with, when the
/// tool asked a question this round.
pub fn asked(session: &Session, ask: &Ask, tool: &str, args: Value) -> Option<InputRequiredResult> {
    let Ask::Rounds(r) = ask else { return None };
    let question = r.asked.lock().unwrap().take()?;
    let state = tmux_mcp_core::sys::random_hex(16);
    let mut pending = session.pending_confirmations.lock().unwrap();
    pending.retain(|(_, p)| p.made.elapsed() < PENDING_FOR);
    while pending.len() >= PENDING_MAX {
        pending.pop_front();
    }
    pending.push_back((
        state.clone(),
        PendingConfirmation {
            tool: tool.to_string(),
            args,
            question: question.clone(),
            made: Instant::now(),
        },
    ));
    let request = InputRequest::Elicitation(ElicitRequest::new(form(&question)));
    Some(InputRequiredResult::new(
        Some([(KEY.to_string(), request)].into_iter().collect()),
        Some(state),
    ))
}

/// Whether the call's arguments must be kept for [`asked`].
pub fn keeps_args(ask: &Ask) -> bool {
    matches!(ask, Ask::Rounds(_))
}

fn take(session: &Session, state: &str) -> Option<PendingConfirmation> {
    let mut pending = session.pending_confirmations.lock().unwrap();
    let at = pending.iter().position(|(s, _)| s == state)?;
    pending.remove(at).map(|(_, p)| p)
}

/// A yes/no question: a form with no fields, so accepting is the yes.
fn form(question: &str) -> ElicitRequestParams {
    serde_json::from_value(json!({
        "mode": "form",
        "message": question,
        "requestedSchema": { "type": "object", "properties": {} }
    }))
    .expect("a form elicitation")
}

fn answer_of(response: &Value) -> Option<Answer> {
    match response.get("action")?.as_str()? {
        "accept" => Some(Answer::Accept),
        "decline" => Some(Answer::Decline),
        "cancel" => Some(Answer::Cancel),
        _ => None,
    }
}

/// Asks through `elicitation/create` while the call waits, at most
/// [`PENDING_FOR`]: a person reads the question first (the session's request
/// timeout, 5 s by default, bounds the broker's own waits, not theirs).
struct PeerAsk {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

impl AskNow for PeerAsk {
    fn ask<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Result<Answer, String>> {
        Box::pin(async move {
            // rmcp's `create_elicitation` needs its `elicitation` feature
            // (and the url crate) for URL mode, which this never sends.
            let request = ServerRequest::ElicitRequest(ElicitRequest::new(form(question)));
            let answer = self
                .peer
                .send_request_with_option(request, PeerRequestOptions::with_timeout(self.timeout))
                .await
                .map_err(|e| e.to_string())?
                .await_response()
                .await
                .map_err(|e| e.to_string())?;
            let ClientResult::ElicitResult(r) = answer else {
                return Err(
                    "the client answered something other than an elicitation result".into(),
                );
            };
            Ok(match r.action {
                ElicitationAction::Accept => Answer::Accept,
                ElicitationAction::Decline => Answer::Decline,
                _ => Answer::Cancel,
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_question_is_a_form_without_fields_and_answers_parse() {
        let v = serde_json::to_value(form("Kill pane %1?")).unwrap();
        assert_eq!(v["message"], "Kill pane %1?");
        assert_eq!(v["requestedSchema"]["properties"], json!({}));
        assert_eq!(
            answer_of(&json!({ "action": "accept", "content": {} })),
            Some(Answer::Accept)
        );
        assert_eq!(
            answer_of(&json!({ "action": "decline" })),
            Some(Answer::Decline)
        );
        assert_eq!(
            answer_of(&json!({ "action": "cancel" })),
            Some(Answer::Cancel)
        );
        assert_eq!(answer_of(&json!({ "action": "yes" })), None);
        assert_eq!(answer_of(&json!({})), None);
    }
}
