//! A backend written in Python, by role: any object with `complete(request) -> reply`
//! (and optionally a `stream(request)` generator, used when the caller streams), adapted
//! onto the library's `Backend` trait, so its calls go through the same retry loop,
//! recording, pricing and budget as every other backend's.
//!
//! Its reply is kept as the bytes of an OpenAI chat completion, a streamed one as chat
//! completion chunks (the wire crate's own encoders), and the backend says it speaks
//! `chat`: that is what makes its recorded calls replayable like any other's.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;
use switchyard::wire::{codec, Event, ServerContext, StreamEncoder};
use switchyard::{
    Backend, Call, Chunk, Dialect, Error, FinishReason, Message, Part, Reply, ReplyStream, Role,
    Usage,
};

use crate::errors;
use crate::json::{self, to_json, type_name};

/// The Python object behind a role.
pub(crate) struct PyBackend {
    name: String,
    object: Py<PyAny>,
    /// The object has a `stream` method: a streamed call iterates it (else the call is
    /// completed and its reply given as one stream).
    streams: bool,
}

impl PyBackend {
    /// `object` as the backend of `role`; refused unless it has a `complete` method.
    pub(crate) fn for_role(role: &str, object: &Bound<'_, PyAny>) -> PyResult<Arc<dyn Backend>> {
        let callable = object
            .getattr("complete")
            .map(|m| m.is_callable())
            .unwrap_or(false);
        if !callable {
            return Err(PyTypeError::new_err(format!(
                "backends[{role:?}]: a {} has no `complete(request)` method",
                type_name(object)
            )));
        }
        let streams = object
            .getattr("stream")
            .map(|m| m.is_callable())
            .unwrap_or(false);
        Ok(Arc::new(PyBackend {
            name: format!("python:{role}"),
            object: object.clone().unbind(),
            streams,
        }))
    }
}

#[async_trait]
impl Backend for PyBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn dialect(&self) -> Option<Dialect> {
        Some(Dialect::Chat)
    }

    /// A str reply (or a dict without `usage`) is a reply whose usage is unknown: a Python
    /// function often has no token counts to give.
    fn reports_usage(&self) -> bool {
        false
    }

    async fn complete(&self, call: &Call) -> switchyard::Result<Reply> {
        let object = Python::attach(|py| self.object.clone_ref(py));
        let name = self.name.clone();
        let request = Request {
            model: call.model.clone(),
            role: call.role.as_deref().map(str::to_string),
            request: call.request.clone(),
        };
        // Python code blocks: on the blocking pool, never on a runtime worker.
        let answer = tokio::task::spawn_blocking(move || {
            Python::attach(|py| {
                object
                    .call_method1(py, "complete", (request,))
                    .and_then(|r| reply_from(r.bind(py)))
                    .map_err(|e| errors::from_backend(py, &name, e))
            })
        })
        .await
        .map_err(|e| Error::Unsupported(format!("{}: the Python call failed: {e}", self.name)))?;
        let mut reply = answer?;
        let context = ServerContext {
            created: 0,
            fallback_id: "python".into(),
        };
        reply.raw = codec(Dialect::Chat).encode_reply(&reply, &context).into();
        call.notes
            .sent_body(serde_json::to_vec(&call.request).unwrap_or_default().into());
        Ok(reply)
    }

    /// Iterates the object's `stream(request)` on the blocking pool, each item as it
    /// comes. A failure before the first item fails the call (so it is retried like any
    /// other); one after it ends the stream with the error, what came kept.
    async fn stream(&self, call: &Call) -> switchyard::Result<ReplyStream> {
        if !self.streams {
            return Ok(ReplyStream::from_reply(self.complete(call).await?));
        }
        let object = Python::attach(|py| self.object.clone_ref(py));
        let name = self.name.clone();
        let request = Request {
            model: call.model.clone(),
            role: call.role.as_deref().map(str::to_string),
            request: call.request.clone(),
        };
        let model = call.model.clone();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<switchyard::Result<Chunk>>(16);
        tokio::task::spawn_blocking(move || feed(object, &name, request, &model, &tx));
        call.notes
            .sent_body(serde_json::to_vec(&call.request).unwrap_or_default().into());
        let first = match rx.recv().await {
            Some(Ok(chunk)) => chunk,
            Some(Err(e)) => return Err(e),
            None => {
                return Err(Error::Unsupported(format!(
                    "{}: the Python stream ended without a word",
                    self.name
                )))
            }
        };
        let rest = futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        Ok(ReplyStream::new(
            futures::stream::once(async move { Ok(first) }).chain(rest),
        ))
    }
}

/// Runs a Python backend's `stream(request)` to its end (or until the caller stops
/// reading), sending each item's events with their chat-chunk bytes.
fn feed(
    object: Py<PyAny>,
    name: &str,
    request: Request,
    model: &str,
    tx: &tokio::sync::mpsc::Sender<switchyard::Result<Chunk>>,
) {
    Python::attach(|py| {
        let send = |py: Python<'_>, item| py.detach(|| tx.blocking_send(item).is_ok());
        let items = match object
            .call_method1(py, "stream", (request,))
            .and_then(|g| g.into_bound(py).try_iter())
        {
            Ok(items) => items,
            Err(e) => {
                send(py, Err(errors::from_backend(py, name, e)));
                return;
            }
        };
        let context = ServerContext {
            created: 0,
            fallback_id: "python".into(),
        };
        let mut encoder = codec(Dialect::Chat).stream_encoder(&context);
        let mut parts = Parts::default();
        let mut pending = vec![Event::Start {
            id: None,
            model: Some(model.to_string()),
        }];
        for item in items {
            let events = item.and_then(|item| parts.events(&item));
            match events {
                Ok(events) => pending.extend(events),
                Err(e) => {
                    send(py, Err(errors::from_backend(py, name, e)));
                    return;
                }
            }
            if !send(
                py,
                Ok(chunk(encoder.as_mut(), std::mem::take(&mut pending))),
            ) {
                return; // the caller dropped the stream
            }
        }
        pending.extend(parts.finish());
        let mut last = chunk(encoder.as_mut(), pending);
        let mut tail = Vec::new();
        encoder.finish(&mut tail);
        let mut raw = last.raw.to_vec();
        raw.extend_from_slice(&tail);
        last.raw = raw.into();
        send(py, Ok(last));
    });
}

/// `events` with the chat chunks that carry them.
fn chunk(encoder: &mut dyn StreamEncoder, events: Vec<Event>) -> Chunk {
    let mut raw = Vec::new();
    for e in &events {
        encoder.event(e, &mut raw);
    }
    Chunk {
        raw: raw.into(),
        events,
    }
}

/// What a Python backend's stream has yielded so far: the index of the next part and the
/// kind of the open one, so that text after text extends one part.
#[derive(Default)]
struct Parts {
    next: usize,
    open: Option<(Open, usize)>,
    tool_calls: bool,
    finished: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Open {
    Text,
    Thinking,
}

impl Parts {
    /// The part index for a delta of `kind`: the open part's, or a new one.
    fn part(&mut self, kind: Open) -> usize {
        match self.open {
            Some((k, i)) if k == kind => i,
            _ => {
                let i = self.next;
                self.next += 1;
                self.open = Some((kind, i));
                i
            }
        }
    }

    /// The events of one yielded item: a str (text); a dict with one of `text`,
    /// `thinking`, `tool_call` (`{id, name, arguments}`), `usage`, `finish`; or a
    /// canonical event dict with its `type` (`{"type": "text_delta", "part": 0, …}`).
    fn events(&mut self, item: &Bound<'_, PyAny>) -> PyResult<Vec<Event>> {
        if let Ok(text) = item.downcast::<PyString>() {
            let part = self.part(Open::Text);
            return Ok(vec![Event::TextDelta {
                part,
                text: text.to_cow()?.into_owned(),
            }]);
        }
        let Ok(Value::Object(map)) = to_json(item, "the stream's item") else {
            return Err(PyTypeError::new_err(format!(
                "a Python backend's stream() must yield str or dict items, not {}",
                type_name(item)
            )));
        };
        let bad = |what: &str, e: serde_json::Error| {
            PyValueError::new_err(format!("the stream's `{what}` item: {e}"))
        };
        if map.contains_key("type") {
            let event: Event =
                serde_json::from_value(Value::Object(map)).map_err(|e| bad("type", e))?;
            let mut event = event;
            if let Some(part) = event.part_mut() {
                self.next = self.next.max(*part + 1);
                self.open = None;
            }
            self.note(&event);
            return Ok(vec![event]);
        }
        let (key, value) = match map.len() {
            1 => map.into_iter().next().unwrap_or_default(),
            _ => {
                return Err(PyValueError::new_err(format!(
                    "a stream item is a str, a dict with one of `text`, `thinking`, `tool_call`, `usage`, `finish`, or an event with its `type` (got the keys {:?})",
                    map.keys().collect::<Vec<_>>()
                )))
            }
        };
        let events = match key.as_str() {
            "text" | "thinking" => {
                let text: String = serde_json::from_value(value).map_err(|e| bad(&key, e))?;
                if key == "text" {
                    let part = self.part(Open::Text);
                    vec![Event::TextDelta { part, text }]
                } else {
                    let part = self.part(Open::Thinking);
                    vec![Event::ThinkingDelta {
                        part,
                        text,
                        id: None,
                    }]
                }
            }
            "tool_call" => {
                let Value::Object(mut call) = value else {
                    return Err(PyValueError::new_err(
                        "the stream's `tool_call` item is {\"id\": str, \"name\": str, \"arguments\": str or dict}",
                    ));
                };
                let text = |v: Option<Value>| match v {
                    Some(Value::String(s)) => s,
                    Some(other) => other.to_string(),
                    None => String::new(),
                };
                let name = text(call.remove("name"));
                let part = self.next;
                self.next += 1;
                self.open = None;
                self.tool_calls = true;
                vec![
                    Event::ToolCallStart {
                        part,
                        id: match call.remove("id") {
                            None | Some(Value::Null) => format!("call_{part}"),
                            id => text(id),
                        },
                        name,
                        kind: Default::default(),
                        namespace: None,
                        state: None,
                    },
                    Event::ToolCallDelta {
                        part,
                        arguments: match call.remove("arguments") {
                            None | Some(Value::Null) => "{}".into(),
                            a => text(a),
                        },
                    },
                    Event::ToolCallEnd { part },
                ]
            }
            "usage" => vec![Event::Usage(
                serde_json::from_value::<Usage>(value).map_err(|e| bad("usage", e))?,
            )],
            "finish" => vec![Event::Finish {
                reason: serde_json::from_value::<FinishReason>(value)
                    .map_err(|e| bad("finish", e))?,
                raw: None,
            }],
            other => {
                return Err(PyValueError::new_err(format!(
                    "a stream item's key `{other}` is not one of `text`, `thinking`, `tool_call`, `usage`, `finish`, `type`"
                )))
            }
        };
        for e in &events {
            self.note(e);
        }
        Ok(events)
    }

    fn note(&mut self, event: &Event) {
        match event {
            Event::ToolCallStart { .. } => self.tool_calls = true,
            Event::Finish { .. } => self.finished = true,
            _ => {}
        }
    }

    /// The finish the stream did not give itself: `tool_calls` after a tool call, else
    /// `stop`.
    fn finish(&self) -> Option<Event> {
        (!self.finished).then_some(Event::Finish {
            reason: if self.tool_calls {
                FinishReason::ToolCalls
            } else {
                FinishReason::Stop
            },
            raw: None,
        })
    }
}

/// What a Python backend returned, as a reply: a `switchyard.Reply`, a str (the text,
/// usage unknown), or a dict with `text` or `content` (canonical parts), `usage`
/// (unknown without it), `finish`, `model`.
fn reply_from(value: &Bound<'_, PyAny>) -> PyResult<Reply> {
    if let Ok(reply) = value.downcast::<crate::reply::Reply>() {
        return Ok(reply.get().reply.clone());
    }
    if let Ok(text) = value.downcast::<PyString>() {
        return Ok(Reply {
            content: vec![Part::text(&*text.to_cow()?)],
            ..Reply::default()
        });
    }
    if !value.is_instance_of::<PyDict>() {
        return Err(PyTypeError::new_err(format!(
            "a Python backend's complete() must return a str, a dict or a switchyard.Reply, not {}",
            type_name(value)
        )));
    }
    let Value::Object(mut map) = to_json(value, "the reply")? else {
        return Err(PyTypeError::new_err("the reply must be a dict"));
    };
    let bad = |what: &str, e: serde_json::Error| {
        PyValueError::new_err(format!("the reply's `{what}`: {e}"))
    };
    let mut reply = Reply::default();
    if let Some(content) = map.remove("content") {
        reply.content = serde_json::from_value(content).map_err(|e| bad("content", e))?;
    } else if let Some(text) = map.remove("text") {
        let text: String = serde_json::from_value(text).map_err(|e| bad("text", e))?;
        reply.content = vec![Part::text(text)];
    }
    if let Some(usage) = map.remove("usage") {
        reply.usage = Some(serde_json::from_value::<Usage>(usage).map_err(|e| bad("usage", e))?);
    }
    reply.finish = match map.remove("finish") {
        Some(f) => serde_json::from_value::<FinishReason>(f).map_err(|e| bad("finish", e))?,
        None if reply.content.iter().any(|p| matches!(p, Part::ToolCall(_))) => {
            FinishReason::ToolCalls
        }
        None => FinishReason::Stop,
    };
    reply.model = map
        .remove("model")
        .and_then(|m| m.as_str().map(str::to_string));
    reply.id = map
        .remove("id")
        .and_then(|m| m.as_str().map(str::to_string));
    Ok(reply)
}

/// What a Python backend's `complete` receives.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Request {
    model: String,
    role: Option<String>,
    request: switchyard::Request,
}

#[pymethods]
impl Request {
    /// The model id the role names.
    #[getter]
    fn model(&self) -> &str {
        &self.model
    }

    /// The calling role.
    #[getter]
    fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// Every message, as dicts (`role`, `content`: a list of parts).
    #[getter]
    fn messages<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::serde_to_py(py, &self.request.messages)
    }

    /// The system messages' text, joined (`None` without one).
    #[getter]
    fn system(&self) -> Option<String> {
        let parts: Vec<String> = self
            .request
            .messages
            .iter()
            .filter(|m| matches!(m.role, Role::System | Role::Developer))
            .map(Message::joined_text)
            .collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    /// The last user message's text.
    #[getter]
    fn prompt(&self) -> String {
        self.request
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map(Message::joined_text)
            .unwrap_or_default()
    }

    /// The tools on offer, as dicts.
    #[getter]
    fn tools<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::serde_to_py(py, &self.request.tools)
    }

    /// The output limit, if set.
    #[getter]
    fn max_tokens(&self) -> Option<u64> {
        self.request.max_tokens
    }

    /// The temperature, if set.
    #[getter]
    fn temperature(&self) -> Option<f64> {
        self.request.temperature
    }

    /// The whole canonical request as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::serde_to_py(py, &self.request)
    }

    fn __repr__(&self) -> String {
        format!(
            "Request(model={:?}, role={:?}, prompt={:?})",
            self.model,
            self.role,
            self.prompt()
        )
    }
}
