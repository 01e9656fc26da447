//! `Reply` and `Usage` as Python classes: read-only views of the library's reply, whose
//! Python values are made when read, so a call that only wants `.text` pays for nothing
//! else.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use switchyard::{Attempt, Message, Part, Role};

use crate::json;

/// A model's answer.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Reply {
    pub(crate) reply: switchyard::Reply,
    cost: Option<f64>,
    attempts: Vec<Attempt>,
}

impl Reply {
    pub(crate) fn new(reply: switchyard::Reply, cost: Option<f64>, attempts: Vec<Attempt>) -> Self {
        Reply {
            reply,
            cost,
            attempts,
        }
    }

    /// The assistant's turn, as the next request's history holds it (state kept).
    pub(crate) fn message(&self) -> Message {
        Message {
            role: Role::Assistant,
            content: self.reply.content.clone(),
        }
    }
}

#[pymethods]
impl Reply {
    /// The text parts, joined.
    #[getter]
    fn text(&self) -> String {
        self.reply.text()
    }

    /// The thinking parts' text, joined.
    #[getter]
    fn thinking(&self) -> String {
        self.reply.thinking()
    }

    /// Every part in order, as dicts with a `type`: `text`, `tool_call`, `thinking`…
    #[getter]
    fn content<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::serde_to_py(py, &self.reply.content)
    }

    /// The tool calls: dicts with `id`, `name`, `arguments` (the JSON text as written).
    #[getter]
    fn tool_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for part in &self.reply.content {
            if let Part::ToolCall(_) = part {
                list.append(json::serde_to_py(py, part)?)?;
            }
        }
        Ok(list)
    }

    /// Why the model stopped: `stop`, `length`, `tool_calls`, `content_filter`, `other`.
    #[getter]
    fn finish(&self) -> &'static str {
        self.reply.finish.as_str()
    }

    /// The provider's own finish reason, as written.
    #[getter]
    fn finish_raw(&self) -> Option<&str> {
        self.reply.finish_raw.as_deref()
    }

    /// Token usage, `None` when the provider reported none.
    #[getter]
    fn usage(&self) -> Option<Usage> {
        self.reply.usage.map(Usage)
    }

    /// The cost in US dollars; `None` when the price is unknown (never 0 for unknown).
    #[getter]
    fn cost_usd(&self) -> Option<f64> {
        self.cost
    }

    /// The model as the provider reported it.
    #[getter]
    fn model(&self) -> Option<&str> {
        self.reply.model.as_deref()
    }

    /// The provider's response id.
    #[getter]
    fn id(&self) -> Option<&str> {
        self.reply.id.as_deref()
    }

    /// The bytes as received (a stream's whole SSE body).
    #[getter]
    fn raw<'py>(&self, py: Python<'py>) -> Bound<'py, PyAny> {
        json::bytes(py, &self.reply.raw)
    }

    /// Every attempt the call took: dicts with `number`, `wait_before`, `duration`
    /// (seconds), `status`, `error_kind`, `error`.
    #[getter]
    fn attempts<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let list = PyList::empty(py);
        for a in &self.attempts {
            list.append(attempt(py, a)?)?;
        }
        Ok(list)
    }

    /// The assistant's turn as a message dict, to append to the next call's messages.
    fn to_message<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::serde_to_py(py, &self.message())
    }

    /// The reply as a dict (without `raw`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let d = json::serde_to_py(py, &self.reply)?;
        if let Ok(dict) = d.downcast::<PyDict>() {
            dict.set_item("cost_usd", self.cost)?;
        }
        Ok(d)
    }

    fn __str__(&self) -> String {
        self.reply.text()
    }

    fn __repr__(&self) -> String {
        let text = self.reply.text();
        let shown: String = text.chars().take(60).collect();
        let more = if shown.len() < text.len() { "…" } else { "" };
        format!(
            "Reply(text={:?}{more}, finish={:?}, model={:?}, usage={})",
            shown,
            self.reply.finish.as_str(),
            self.reply.model.as_deref().unwrap_or(""),
            self.reply
                .usage
                .map_or("None".into(), |u| Usage(u).__repr__())
        )
    }
}

pub(crate) fn attempt<'py>(py: Python<'py>, a: &Attempt) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("number", a.number)?;
    d.set_item("wait_before", a.wait_before.as_secs_f64())?;
    d.set_item("duration", a.duration.as_secs_f64())?;
    d.set_item("first_output", a.first_output.map(|d| d.as_secs_f64()))?;
    d.set_item("status", a.status)?;
    d.set_item("error_kind", a.error_kind.map(|k| k.as_str()))?;
    d.set_item("error", &a.error)?;
    Ok(d)
}

/// Token usage with the library's meanings: `input` includes `cached_input` and
/// `cache_write`; `output` includes `reasoning`.
#[pyclass(module = "switchyard", frozen, eq)]
#[derive(Clone, PartialEq)]
pub(crate) struct Usage(pub(crate) switchyard::Usage);

#[pymethods]
impl Usage {
    /// Every input token, cached ones included.
    #[getter]
    fn input(&self) -> u64 {
        self.0.input
    }
    /// Input tokens read from the provider's cache (part of `input`).
    #[getter]
    fn cached_input(&self) -> u64 {
        self.0.cached_input
    }
    /// Input tokens written to the cache (part of `input`).
    #[getter]
    fn cache_write(&self) -> u64 {
        self.0.cache_write
    }
    /// Every output token, reasoning included.
    #[getter]
    fn output(&self) -> u64 {
        self.0.output
    }
    /// Output tokens spent thinking (part of `output`).
    #[getter]
    fn reasoning(&self) -> u64 {
        self.0.reasoning
    }
    /// Input tokens neither read from nor written to the cache.
    #[getter]
    fn uncached_input(&self) -> u64 {
        self.0.uncached_input()
    }
    /// Input plus output.
    #[getter]
    fn total(&self) -> u64 {
        self.0.total()
    }
    /// The usage as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::serde_to_py(py, &self.0)
    }
    fn __repr__(&self) -> String {
        let u = &self.0;
        format!(
            "Usage(input={}, cached_input={}, cache_write={}, output={}, reasoning={})",
            u.input, u.cached_input, u.cache_write, u.output, u.reasoning
        )
    }
}
