//! A backend written in Python, by role: any object with `complete(request) -> reply`,
//! adapted onto the library's `Backend` trait, so its calls go through the same retry
//! loop, recording, pricing and budget as every other backend's.
//!
//! Its reply is kept as the bytes of an OpenAI chat completion (the wire crate's own
//! encoder) and the backend says it speaks `chat`: that is what makes its recorded calls
//! replayable like any other's.

use std::sync::Arc;

use async_trait::async_trait;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::Value;
use switchyard::wire::{codec, ServerContext};
use switchyard::{Backend, Call, Dialect, Error, FinishReason, Message, Part, Reply, Role, Usage};

use crate::errors;
use crate::json::{self, to_json, type_name};

/// The Python object behind a role.
pub(crate) struct PyBackend {
    name: String,
    object: Py<PyAny>,
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
        Ok(Arc::new(PyBackend {
            name: format!("python:{role}"),
            object: object.clone().unbind(),
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
}

/// What a Python backend returned, as a reply: a `switchyard.Reply`, a str (the text),
/// or a dict with `text` or `content` (canonical parts), `usage`, `finish`, `model`.
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
