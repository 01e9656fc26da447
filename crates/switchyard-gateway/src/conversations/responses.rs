//! OpenAI Responses state: `store`, `previous_response_id` and `item_reference` items.
//!
//! A request naming a response the gateway keeps is expanded as OpenAI expands it: the
//! kept turns' input and output items come before the request's own input, and an item
//! reference stands for the kept item of that id; `previous_response_id` is then left
//! out. Passed through to the first-party OpenAI API, whose own ids those are when it
//! served the turn, the request goes as it came. A reference nobody on the call holds
//! (not the gateway, and not a Responses backend the request passes through to, which
//! answers for its own ids) is OpenAI's 404.

use super::capture::Capture;
use super::chain::{self, Chain};
use super::own::{self, own_items};
use super::plan::{Aim, Keeping, Made, Plan};
use super::turn::{Kind, Turn};
use super::Conversations;
use crate::errors::{ApiError, Category};
use crate::raw::RawBody;
use bytes::Bytes;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use switchyard::Dialect;

/// What a Responses request asks of kept state.
#[derive(Debug)]
pub(crate) struct Asked {
    owner: String,
    /// `store` (true unless the request says false) and the gateway keeps conversations.
    keep: bool,
    /// `previous_response_id`, and what the gateway holds under it.
    previous: Option<(String, Chain)>,
    /// The items the request references that the gateway holds, by id, with the backend
    /// that keeps each too.
    refs: Arc<HashMap<String, (Value, Option<String>)>>,
    /// Referenced items the gateway does not hold.
    unheld: Vec<String>,
    /// The bytes of what the gateway holds for it: the request grows by about as much.
    history_bytes: usize,
}

impl Asked {
    /// Reads `store`, `previous_response_id` and the input's item references; `None`
    /// when the request names no state and none is to be kept.
    pub(crate) async fn load(
        conversations: Option<&Conversations>,
        owner: &str,
        raw: &RawBody<'_>,
        bytes: &Bytes,
        max_bytes: usize,
    ) -> Result<Option<Asked>, ApiError> {
        let keep = raw.bool("store").unwrap_or(true) && conversations.is_some();
        let previous = match raw.raw("previous_response_id") {
            None | Some("null") => None,
            Some(_) => Some(raw.string("previous_response_id").ok_or_else(|| {
                ApiError::new(
                    Category::BadRequest,
                    "Invalid type for 'previous_response_id': expected a string (the id of a response)",
                )
                .with_param("previous_response_id")
            })?),
        };
        // Only a body that says `item_reference` somewhere is read for references.
        let has_refs = memchr::memmem::find(bytes, b"item_reference").is_some();
        if !keep && previous.is_none() && !has_refs {
            return Ok(None);
        }
        let previous = match (previous, conversations) {
            (None, _) => None,
            (Some(id), None) => Some((id, Chain::NotHeld)),
            (Some(id), Some(c)) => {
                let chain = chain::load(c, Kind::Response, owner, &id, max_bytes).await?;
                Some((id, chain))
            }
        };
        let mut refs = HashMap::new();
        let mut unheld = Vec::new();
        if has_refs {
            for id in referenced(bytes)? {
                let held = match conversations {
                    Some(c) => c.item(owner, &id).await?,
                    None => None,
                };
                match held {
                    Some(item) => {
                        refs.insert(id, item);
                    }
                    None => unheld.push(id),
                }
            }
        }
        let chain_bytes = match &previous {
            Some((_, Chain::Held(_, bytes))) => *bytes,
            _ => 0,
        };
        let refs_bytes: usize = refs.values().map(|(item, _)| item.to_string().len()).sum();
        Ok(Some(Asked {
            owner: owner.to_string(),
            keep,
            previous,
            refs: Arc::new(refs),
            unheld,
            history_bytes: chain_bytes + refs_bytes,
        }))
    }

    /// The bytes of what the gateway holds for the request (its history, its items).
    pub(crate) fn history_bytes(&self) -> usize {
        self.history_bytes
    }

    /// The body for the member `aim` names and the turn to keep.
    pub(crate) fn plan(&self, bytes: &Bytes, aim: Aim<'_>) -> Result<Plan, ApiError> {
        let own_state = aim.passes && aim.keeps_state;
        let expand: Option<&[Turn]> = match &self.previous {
            None => None,
            Some((_, Chain::Held(turns, _))) => {
                let theirs = turns
                    .last()
                    .is_some_and(|t| t.upstream.as_deref() == Some(aim.backend));
                (!(own_state && theirs)).then_some(turns.as_slice())
            }
            // The backend passed through to answers for ids it may hold itself.
            Some((_, Chain::NotHeld)) if aim.passes => None,
            Some((id, Chain::NotHeld)) => return Err(previous_not_found(id)),
        };
        if !aim.passes {
            if let Some(id) = self.unheld.first() {
                return Err(item_not_found(id));
            }
        }
        // A reference to an item the backend passed through to made stays as it is.
        let refs: HashMap<&str, &Value> = self
            .refs
            .iter()
            .filter(|(_, (_, kept_by))| !(own_state && kept_by.as_deref() == Some(aim.backend)))
            .map(|(id, (item, _))| (id.as_str(), item))
            .collect();
        let body = match (expand, refs.is_empty()) {
            (None, true) => None,
            (turns, _) => Some(expanded(bytes, turns.unwrap_or_default(), &refs)?),
        };
        let keeping = self.keep.then(|| Keeping {
            kind: Kind::Response,
            owner: self.owner.clone(),
            previous: self.previous.as_ref().map(|(id, _)| id.clone()),
            upstream: own_state.then(|| aim.backend.to_string()),
            capture: Capture::new(Dialect::Responses),
            made: Made::Responses(own::Response {
                request: bytes.clone(),
                refs: self.refs.clone(),
            }),
        });
        Ok(Plan { body, keeping })
    }
}

/// The ids of the request's `item_reference` input items.
fn referenced(bytes: &[u8]) -> Result<Vec<String>, ApiError> {
    let body: Value = serde_json::from_slice(bytes)
        .map_err(|e| ApiError::new(Category::BadRequest, format!("the body is not JSON: {e}")))?;
    let Some(Value::Array(input)) = body.get("input") else {
        return Ok(Vec::new());
    };
    let mut ids = Vec::new();
    for (i, item) in input.iter().enumerate() {
        if item.get("type").and_then(Value::as_str) != Some("item_reference") {
            continue;
        }
        match item.get("id").and_then(Value::as_str) {
            Some(id) => ids.push(id.to_string()),
            None => {
                return Err(ApiError::new(
                    Category::BadRequest,
                    format!("Missing required parameter: 'input[{i}].id' (an item reference names the id of an item kept with an earlier response)"),
                ))
            }
        }
    }
    Ok(ids)
}

/// The request with the kept turns' items before its own input, and its held item
/// references replaced by the items, `previous_response_id` left out when expanded.
fn expanded(bytes: &[u8], turns: &[Turn], refs: &HashMap<&str, &Value>) -> Result<Bytes, ApiError> {
    let Ok(Value::Object(mut request)) = serde_json::from_slice::<Value>(bytes) else {
        return Err(ApiError::new(
            Category::BadRequest,
            "the body is not a JSON object",
        ));
    };
    let mut items: Vec<Value> = turns
        .iter()
        .flat_map(|t| t.input.iter().chain(&t.output).cloned())
        .collect();
    items.extend(own_items(&request, refs));
    if !turns.is_empty() {
        request.remove("previous_response_id");
    }
    request.insert("input".into(), Value::Array(items));
    Ok(Bytes::from(Value::Object(request).to_string()))
}

/// OpenAI's 404 for a `previous_response_id` not held.
pub(crate) fn previous_not_found(id: &str) -> ApiError {
    ApiError::new(
        Category::NotFound,
        format!("Previous response with id '{id}' not found."),
    )
    .with_param("previous_response_id")
    .with_error_code("previous_response_not_found")
}

/// OpenAI's 404 for an item reference not held.
fn item_not_found(id: &str) -> ApiError {
    ApiError::new(
        Category::NotFound,
        format!(
            "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
        ),
    )
    .with_param("input")
    .with_error_code("item_not_found")
}

/// OpenAI's 404 for a response not held (`GET`, `DELETE`, `input_items`).
pub(crate) fn response_not_found(id: &str) -> ApiError {
    ApiError::new(
        Category::NotFound,
        format!("Response with id '{id}' not found."),
    )
    .with_error_code("response_not_found")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(input: Value, output: Value, upstream: Option<&str>) -> Turn {
        Turn {
            input: input.as_array().unwrap().clone(),
            output: output.as_array().unwrap().clone(),
            upstream: upstream.map(str::to_string),
            ..Turn::default()
        }
    }

    fn asked(previous: Option<(&str, Chain)>, refs: &[(&str, Value)], unheld: &[&str]) -> Asked {
        Asked {
            owner: "k".into(),
            keep: true,
            previous: previous.map(|(id, c)| (id.to_string(), c)),
            refs: Arc::new(
                refs.iter()
                    .map(|(k, v)| (k.to_string(), (v.clone(), None)))
                    .collect(),
            ),
            unheld: unheld.iter().map(|s| s.to_string()).collect(),
            history_bytes: 0,
        }
    }

    const AWAY: Aim<'static> = Aim {
        backend: "msg",
        passes: false,
        keeps_state: false,
    };

    #[test]
    fn a_previous_response_expands_before_the_new_input() {
        let t1 = turn(
            json!([{"id": "a", "n": 1}]),
            json!([{"id": "rs_1", "type": "reasoning"}]),
            None,
        );
        let t2 = turn(
            json!([{"id": "b", "n": 2}]),
            json!([{"id": "c", "n": 3}]),
            None,
        );
        let a = asked(Some(("resp_2", Chain::Held(vec![t1, t2], 0))), &[], &[]);
        let body = Bytes::from(
            json!({"model": "m", "previous_response_id": "resp_2", "input": "next"}).to_string(),
        );
        let plan = a.plan(&body, AWAY).unwrap();
        let sent: Value = serde_json::from_slice(&plan.body.unwrap()).unwrap();
        assert!(sent.get("previous_response_id").is_none());
        let ids: Vec<_> = sent["input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["id"].clone())
            .collect();
        assert_eq!(
            ids,
            [
                json!("a"),
                json!("rs_1"),
                json!("b"),
                json!("c"),
                Value::Null
            ]
        );
        assert_eq!(sent["input"][4]["content"][0]["text"], "next");
        let keeping = plan.keeping.unwrap();
        assert_eq!(keeping.previous.as_deref(), Some("resp_2"));
        assert_eq!(keeping.upstream, None);
    }

    #[test]
    fn ids_the_backend_holds_pass_and_ids_nobody_holds_are_refused() {
        let theirs = turn(json!([]), json!([]), Some("oai"));
        let own = Aim {
            backend: "oai",
            passes: true,
            keeps_state: true,
        };
        let body =
            Bytes::from_static(br#"{"model":"m","previous_response_id":"resp_1","input":"x"}"#);
        let a = asked(
            Some(("resp_1", Chain::Held(vec![theirs.clone()], 0))),
            &[],
            &[],
        );
        let plan = a.plan(&body, own).unwrap();
        assert!(plan.body.is_none(), "sent as it came");
        assert_eq!(plan.keeping.unwrap().upstream.as_deref(), Some("oai"));
        // Another backend, or one that keeps no state, gets the history.
        let other = Aim {
            backend: "oai2",
            passes: true,
            keeps_state: true,
        };
        assert!(a.plan(&body, other).unwrap().body.is_some());
        // Not held: a pass-through backend answers for it; a translated call cannot.
        let a = asked(Some(("resp_x", Chain::NotHeld)), &[], &["rs_x"]);
        let pass = Aim {
            backend: "any",
            passes: true,
            keeps_state: false,
        };
        assert!(a.plan(&body, pass).unwrap().body.is_none());
        let e = a.plan(&body, AWAY).unwrap_err();
        assert_eq!(e.status, 404);
        let (_, _, out) = e.parts_for(Dialect::Responses);
        let out: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(out["error"]["code"], "previous_response_not_found");
        assert_eq!(out["error"]["param"], "previous_response_id");
        let a = asked(None, &[], &["rs_x"]);
        let e = a.plan(&body, AWAY).unwrap_err();
        assert!(e.message.contains("rs_x"), "{}", e.message);
    }

    #[test]
    fn held_references_stand_for_their_items_and_the_turn_keeps_them() {
        let item = json!({"id": "rs_1", "type": "reasoning", "encrypted_content": "E"});
        let a = asked(None, &[("rs_1", item.clone())], &[]);
        let body = Bytes::from(
            json!({"model": "m", "input": [{"role": "user", "content": "q"}, {"type": "item_reference", "id": "rs_1"}]}).to_string(),
        );
        let plan = a.plan(&body, AWAY).unwrap();
        let sent: Value = serde_json::from_slice(plan.body.as_ref().unwrap()).unwrap();
        assert_eq!(sent["input"][1], item);
        let Made::Responses(own) = plan.keeping.unwrap().made else {
            panic!()
        };
        let t = own
            .turn(
                "resp_9",
                json!({"id": "resp_9", "output": [{"id": "msg_o"}]}),
            )
            .unwrap();
        assert_eq!(t.input[0]["id"], "msg_9_in_0");
        assert_eq!(t.input[1], item);
        assert_eq!(t.output, vec![json!({"id": "msg_o"})]);
        assert_eq!(t.response.unwrap()["id"], "resp_9");
    }
}
