//! Anthropic message threads (`"thread": {"type": "create"}`, or `{"type": "continue",
//! "previous_message_id": …}` with only the new messages).
//!
//! With kept conversations, the gateway serves threads for any backend: `thread` is left
//! out, a `continue` expanded to the kept history (and the kept `system` and `tools`
//! where the request leaves them out, as clients do), and the reply kept under its id.
//! Passed through to the first-party Anthropic API, which keeps threads itself, a thread
//! it holds goes as it came. Without kept conversations, a thread no server on the call
//! would hold is refused with the signal Anthropic's SDKs fall back on (400,
//! `error.details.error_code: "thread_unsupported_request"`): the SDK resends the whole
//! history. A `continue` of a reply nobody holds is Anthropic's 404 `thread_not_found`.

use super::capture::Capture;
use super::chain::{self, Chain};
use super::own;
use super::plan::{Aim, Keeping, Made, Plan};
use super::turn::{Kind, Turn};
use super::Conversations;
use crate::errors::{ApiError, Category};
use crate::raw::RawBody;
use bytes::Bytes;
use serde_json::Value;
use switchyard::Dialect;

/// What a thread request asks.
#[derive(Debug)]
pub(crate) struct Asked {
    owner: String,
    /// The gateway keeps conversations.
    kept: bool,
    /// `continue`: the reply it goes on from, and what the gateway holds under it.
    continues: Option<(String, Chain)>,
}

impl Asked {
    /// The bytes of the history the gateway holds for the request.
    pub(crate) fn history_bytes(&self) -> usize {
        match &self.continues {
            Some((_, Chain::Held(_, bytes))) => *bytes,
            _ => 0,
        }
    }
}

impl Asked {
    /// Reads `thread`; `None` without one (or `thread: null`).
    pub(crate) async fn load(
        conversations: Option<&Conversations>,
        owner: &str,
        raw: &RawBody<'_>,
        max_bytes: usize,
    ) -> Result<Option<Asked>, ApiError> {
        let Some(text) = raw.raw("thread").filter(|v| *v != "null") else {
            return Ok(None);
        };
        let thread: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let continues = match thread.get("type").and_then(Value::as_str) {
            Some("create") => None,
            Some("continue") => {
                let id = thread
                    .get("previous_message_id")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("thread.previous_message_id: Field required (a string: the id of the reply the thread goes on from)"))?;
                let chain = match conversations {
                    Some(c) => chain::load(c, Kind::Thread, owner, id, max_bytes).await?,
                    None => Chain::NotHeld,
                };
                Some((id.to_string(), chain))
            }
            _ => {
                return Err(invalid(
                    "thread: expected {\"type\": \"create\"} or {\"type\": \"continue\", \"previous_message_id\": \"msg_…\"}",
                ))
            }
        };
        Ok(Some(Asked {
            owner: owner.to_string(),
            kept: conversations.is_some(),
            continues,
        }))
    }

    /// The body for the member `aim` names and the turn to keep.
    pub(crate) fn plan(&self, bytes: &Bytes, aim: Aim<'_>) -> Result<Plan, ApiError> {
        let own_state = aim.passes && aim.keeps_state;
        // What the first-party API holds itself goes as it came.
        let as_it_came = own_state
            && match &self.continues {
                None => true,
                Some((_, Chain::NotHeld)) => true,
                Some((_, Chain::Held(turns, _))) => turns
                    .last()
                    .is_some_and(|t| t.upstream.as_deref() == Some(aim.backend)),
            };
        if !self.kept {
            if as_it_came {
                return Ok(Plan::default());
            }
            return Err(unsupported(aim.backend));
        }
        let keeping = |request: Bytes, inherited: (Option<Value>, Option<Value>)| Keeping {
            kind: Kind::Thread,
            owner: self.owner.clone(),
            previous: self.continues.as_ref().map(|(id, _)| id.clone()),
            upstream: as_it_came.then(|| aim.backend.to_string()),
            capture: Capture::new(Dialect::Messages),
            made: Made::Thread(own::Thread {
                request,
                system: inherited.0,
                tools: inherited.1,
            }),
        };
        if as_it_came {
            return Ok(Plan {
                body: None,
                keeping: Some(keeping(bytes.clone(), (None, None))),
            });
        }
        let turns: &[Turn] = match &self.continues {
            None => &[],
            Some((_, Chain::Held(turns, _))) => turns,
            Some((id, Chain::NotHeld)) => return Err(not_found(id)),
        };
        let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(bytes) else {
            return Err(invalid("the body is not a JSON object"));
        };
        request.remove("thread");
        let own = match request.get("messages") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(m)) => m.clone(),
            Some(_) => return Err(invalid("messages: Input should be a valid list")),
        };
        let inherited = (
            latest(turns, |t| t.system.as_ref()),
            latest(turns, |t| t.tools.as_ref()),
        );
        let mut messages: Vec<Value> = turns
            .iter()
            .flat_map(|t| t.input.iter().chain(&t.output).cloned())
            .collect();
        messages.extend(own);
        request.insert("messages".into(), Value::Array(messages));
        for (key, kept) in [("system", &inherited.0), ("tools", &inherited.1)] {
            if let (None, Some(kept)) = (request.get(key), kept) {
                request.insert(key.into(), kept.clone());
            }
        }
        Ok(Plan {
            body: Some(Bytes::from(Value::Object(request).to_string())),
            keeping: Some(keeping(bytes.clone(), inherited)),
        })
    }
}

/// The newest of the turns' values of a field.
fn latest(turns: &[Turn], field: impl Fn(&Turn) -> Option<&Value>) -> Option<Value> {
    turns.iter().rev().find_map(|t| field(t).cloned())
}

fn invalid(message: &str) -> ApiError {
    ApiError::new(Category::BadRequest, message)
}

/// Anthropic's 404 for a thread nobody on the call holds.
fn not_found(id: &str) -> ApiError {
    ApiError::new(
        Category::NotFound,
        format!("No thread state was found for the requested `previous_message_id` '{id}'. Replay the full conversation with `thread: {{\"type\": \"create\"}}` to start a new Thread."),
    )
    .with_error_code("thread_not_found")
}

/// The refusal of a thread no server on the call would hold.
fn unsupported(backend: &str) -> ApiError {
    ApiError::new(
        Category::BadRequest,
        format!(
            "`thread`: this gateway keeps no message threads (no store is configured, or `conversations: off`), and backend `{backend}` is not the Anthropic API that keeps its own; send the whole conversation without `thread`"
        ),
    )
    .with_error_code("thread_unsupported_request")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AWAY: Aim<'static> = Aim {
        backend: "chat",
        passes: false,
        keeps_state: false,
    };

    #[test]
    fn a_continue_expands_with_the_kept_system_and_tools() {
        let t1 = Turn {
            input: vec![json!({"role": "user", "content": "q"})],
            output: vec![
                json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}),
            ],
            system: Some(json!("be brief")),
            tools: Some(json!([{"name": "f"}])),
            ..Turn::default()
        };
        let a = Asked {
            owner: String::new(),
            kept: true,
            continues: Some(("msg_1".into(), Chain::Held(vec![t1], 0))),
        };
        let body = Bytes::from(json!({"model": "m", "thread": {"type": "continue", "previous_message_id": "msg_1"}, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}]}).to_string());
        let plan = a.plan(&body, AWAY).unwrap();
        let sent: Value = serde_json::from_slice(plan.body.as_ref().unwrap()).unwrap();
        assert!(sent.get("thread").is_none());
        assert_eq!(sent["messages"].as_array().unwrap().len(), 3);
        assert_eq!(sent["system"], "be brief");
        assert_eq!(sent["tools"][0]["name"], "f");
        let keeping = plan.keeping.unwrap();
        assert_eq!(keeping.previous.as_deref(), Some("msg_1"));
        let Made::Thread(own) = keeping.made else {
            panic!()
        };
        let t = own
            .turn(json!({"id": "msg_2", "content": [{"type": "text", "text": "done"}]}))
            .unwrap();
        assert_eq!(t.input.len(), 1, "only what the request added");
        assert_eq!(t.system, Some(json!("be brief")));
        assert_eq!(t.output[0]["content"][0]["text"], "done");
    }

    #[test]
    fn without_kept_conversations_only_the_first_party_api_threads() {
        let a = Asked {
            owner: String::new(),
            kept: false,
            continues: None,
        };
        let body = Bytes::from_static(br#"{"model":"m","thread":{"type":"create"},"messages":[]}"#);
        let e = a.plan(&body, AWAY).unwrap_err();
        let (status, _, out) = e.parts_for(Dialect::Messages);
        assert_eq!(status, 400);
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            out["error"]["details"]["error_code"],
            "thread_unsupported_request"
        );
        let anthropic = Aim {
            backend: "anthropic",
            passes: true,
            keeps_state: true,
        };
        assert!(a.plan(&body, anthropic).unwrap().body.is_none());
        let gone = Asked {
            owner: String::new(),
            kept: true,
            continues: Some(("msg_x".into(), Chain::NotHeld)),
        };
        let e = gone.plan(&body, AWAY).unwrap_err();
        let (status, _, out) = e.parts_for(Dialect::Messages);
        assert_eq!(status, 404);
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["error"]["details"]["error_code"], "thread_not_found");
    }
}
