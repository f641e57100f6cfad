//! Asking the person before a destructive action, when they want it
//! (`tmux-mcp attach --confirm`, or `set -g @mcp-confirm on` for every agent).
//!
//! The kill, respawn and close tools resolve their target and check every
//! rule first, then call [`ask`] with a question naming exactly what they will
//! end (ids, names, the programs that run there); only an accepted answer lets
//! them send anything to tmux. How the question travels is the MCP layer's
//! business ([`Ask`]): a request to the client during the call before
//! 2026-07-28, an `input_required` result whose retry carries the answer on
//! 2026-07-28. When the client cannot ask, the tool refuses: a session that
//! confirms never acts unasked.
//!
//! Architecture invariant: a tool that ends something calls [`ask`] after its
//! last check and before its first command to tmux, and only there.

use crate::toolkit::call::output::ToolOutput;
use futures::future::BoxFuture;
use std::sync::{Arc, Mutex};

/// What the person answered (MCP elicitation's actions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Accept,
    Decline,
    Cancel,
}

/// Asks the person through the client while the call waits.
pub trait AskNow: Send + Sync {
    fn ask<'a>(&'a self, question: &'a str) -> BoxFuture<'a, Result<Answer, String>>;
}

/// How this call may ask the person.
#[derive(Clone, Default)]
pub enum Ask {
    /// The session does not confirm: destructive tools act at once.
    #[default]
    Not,
    /// The session confirms and its client declared no form elicitation.
    Cannot,
    /// A request to the client, answered while the call waits.
    Now(Arc<dyn AskNow>),
    /// The question goes out as an `input_required` result; the retry of the
    /// same call brings the answer.
    Rounds(Arc<Rounds>),
}

/// One round of an `input_required` exchange, seen from the tool.
#[derive(Default)]
pub struct Rounds {
    /// The question the person answered in an earlier round, and how.
    pub answered: Option<(String, Answer)>,
    /// Set by [`ask`] when the tool needs `question` answered first; the MCP
    /// layer then answers the call with it instead of the tool's output.
    pub asked: Mutex<Option<String>>,
}

/// `Ok` once the person accepted `question`; else the tool's refusal, made
/// by `refuse` (the family's error, saying nothing reached tmux).
pub async fn ask(
    how: &Ask,
    tool: &str,
    question: &str,
    refuse: impl Fn(&str) -> ToolOutput,
) -> Result<(), ToolOutput> {
    let answer = match how {
        Ask::Not => return Ok(()),
        Ask::Cannot => {
            return Err(refuse(&format!(
                "This session asks the person before {tool} (tmux-mcp attach --confirm, or @mcp-confirm), and this client cannot ask: it declared no form elicitation capability."
            )))
        }
        Ask::Now(asker) => asker
            .ask(question)
            .await
            .map_err(|e| refuse(&format!("Asking the person failed: {e}.")))?,
        Ask::Rounds(r) => match &r.answered {
            Some((asked, answer)) if asked == question => *answer,
            // Not asked yet, or the target changed since: this question.
            _ => {
                *r.asked.lock().unwrap() = Some(question.to_string());
                return Err(refuse("The person has not answered yet."));
            }
        },
    };
    match answer {
        Answer::Accept => Ok(()),
        Answer::Decline => Err(refuse(&format!("The person declined: {question}"))),
        Answer::Cancel => Err(refuse(&format!(
            "The person dismissed the question without answering: {question}"
        ))),
    }
}

/// The answer to a question another server's broker asks during a call this
/// one forwarded there (issue 52; `peers`), put to the person as this call
/// asks: while the call waits (`Now`), or, on 2026-07-28, as this call's
/// `input_required` round (`Rounds`): the first round gives the other broker
/// "cancel" (it refuses, nothing sent there) and this call goes out asking;
/// the retry answers the same question with the person's answer.
pub async fn relay(how: &Ask, question: &str) -> Result<Answer, String> {
    match how {
        Ask::Not | Ask::Cannot => Err(
            "the agent's client cannot ask the person: it declared no form elicitation capability"
                .into(),
        ),
        Ask::Now(asker) => asker.ask(question).await,
        Ask::Rounds(r) => match &r.answered {
            Some((asked, answer)) if asked == question => Ok(*answer),
            _ => {
                *r.asked.lock().unwrap() = Some(question.to_string());
                Ok(Answer::Cancel)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refuse(m: &str) -> ToolOutput {
        ToolOutput::libtmux_error(m.to_string())
    }

    struct Says(Answer);

    impl AskNow for Says {
        fn ask<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Answer, String>> {
            Box::pin(async move { Ok(self.0) })
        }
    }

    #[tokio::test]
    async fn only_an_accepted_question_lets_the_tool_act() {
        assert!(ask(&Ask::Not, "kill_pane", "q", refuse).await.is_ok());
        let e = ask(&Ask::Cannot, "kill_pane", "q", refuse)
            .await
            .unwrap_err();
        assert!(
            e.text.contains("cannot ask") && e.text.contains("kill_pane"),
            "{}",
            e.text
        );
        let now = |a| Ask::Now(Arc::new(Says(a)));
        assert!(ask(&now(Answer::Accept), "t", "q", refuse).await.is_ok());
        let e = ask(&now(Answer::Decline), "t", "Kill pane %1?", refuse)
            .await
            .unwrap_err();
        assert!(e.text.contains("declined: Kill pane %1?"), "{}", e.text);
        assert!(ask(&now(Answer::Cancel), "t", "q", refuse).await.is_err());
    }

    #[tokio::test]
    async fn another_servers_question_is_asked_as_this_call_asks() {
        assert!(relay(&Ask::Cannot, "q").await.is_err());
        assert!(relay(&Ask::Not, "q").await.is_err());
        let now = Ask::Now(Arc::new(Says(Answer::Decline)));
        assert_eq!(relay(&now, "q").await, Ok(Answer::Decline));
        // 2026-07-28: the first round asks this call's client and tells the
        // other broker "cancel"; the retry brings the answer to that question.
        let first = Arc::new(Rounds::default());
        assert_eq!(
            relay(&Ask::Rounds(first.clone()), "[server w] Kill?").await,
            Ok(Answer::Cancel)
        );
        assert_eq!(
            first.asked.lock().unwrap().as_deref(),
            Some("[server w] Kill?")
        );
        let retry = Ask::Rounds(Arc::new(Rounds {
            answered: Some(("[server w] Kill?".into(), Answer::Accept)),
            ..Default::default()
        }));
        assert_eq!(relay(&retry, "[server w] Kill?").await, Ok(Answer::Accept));
        assert_eq!(
            relay(&retry, "[server w] Kill more?").await,
            Ok(Answer::Cancel)
        );
    }

    #[tokio::test]
    async fn a_round_asks_until_this_very_question_was_answered() {
        let first = Arc::new(Rounds::default());
        assert!(
            ask(&Ask::Rounds(first.clone()), "t", "Kill pane %1?", refuse)
                .await
                .is_err()
        );
        assert_eq!(
            first.asked.lock().unwrap().as_deref(),
            Some("Kill pane %1?")
        );
        let retry = Arc::new(Rounds {
            answered: Some(("Kill pane %1?".into(), Answer::Accept)),
            ..Default::default()
        });
        assert!(
            ask(&Ask::Rounds(retry.clone()), "t", "Kill pane %1?", refuse)
                .await
                .is_ok()
        );
        assert!(retry.asked.lock().unwrap().is_none());
        // The target changed between the rounds: the accepted answer was to
        // another question, so this one is asked.
        assert!(ask(
            &Ask::Rounds(retry.clone()),
            "t",
            "Kill pane %1 and %2?",
            refuse
        )
        .await
        .is_err());
        assert_eq!(
            retry.asked.lock().unwrap().as_deref(),
            Some("Kill pane %1 and %2?")
        );
        let declined = Ask::Rounds(Arc::new(Rounds {
            answered: Some(("q".into(), Answer::Decline)),
            ..Default::default()
        }));
        assert!(ask(&declined, "t", "q", refuse)
            .await
            .unwrap_err()
            .text
            .contains("declined"));
    }
}
