//! A streamed call as a Python iterator and async iterator of `Event`s, with the
//! assembled reply beside it. One object serves both: `llm.stream()` starts it at once
//! (so a refusal raises where the call is made), `llm.astream()` at its first event.

use std::sync::Arc;

use futures::StreamExt;
use pyo3::exceptions::{PyAttributeError, PyKeyError, PyStopAsyncIteration};
use pyo3::prelude::*;
use serde_json::{Map, Value};
use switchyard::{Attempt, Error, ReplyStream, Request};
use tokio::sync::Mutex;

use crate::errors;
use crate::json;
use crate::reply::Reply;
use crate::runtime;

enum State {
    // Boxed: a request is large beside the other states.
    Pending(Box<Request>),
    Open {
        stream: Box<ReplyStream>,
        attempts: Vec<Attempt>,
        ended: bool,
    },
    Failed,
}

/// The events of a streamed reply. Iterate it (`for` or `async for`); `.reply` is the
/// reply assembled so far, the whole reply once the events end.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Stream {
    llm: switchyard::Llm,
    // A tokio mutex: an event is awaited while it is held, and two threads (or tasks)
    // iterating one stream take turns rather than fail.
    state: Arc<Mutex<State>>,
}

impl Stream {
    pub(crate) fn pending(llm: switchyard::Llm, request: Request) -> Stream {
        Stream {
            llm,
            state: Arc::new(Mutex::new(State::Pending(Box::new(request)))),
        }
    }

    /// Starts the call now, raising its failure.
    pub(crate) fn start_blocking(&self, py: Python<'_>) -> PyResult<()> {
        let (llm, state) = (self.llm.clone(), self.state.clone());
        runtime::wait(
            py,
            async move { start(&llm, &mut *state.lock().await).await },
        )?
        .map_err(errors::to_py)
    }
}

async fn start(llm: &switchyard::Llm, state: &mut State) -> Result<(), Error> {
    let State::Pending(request) = state else {
        return Ok(());
    };
    let request = std::mem::take(&mut **request);
    let outcome = llm.stream_detailed(request).await;
    match outcome.result {
        Ok(stream) => {
            *state = State::Open {
                stream: Box::new(stream),
                attempts: outcome.attempts,
                ended: false,
            };
            Ok(())
        }
        Err(e) => {
            *state = State::Failed;
            Err(e)
        }
    }
}

/// The next event; `None` at the end.
async fn next(llm: switchyard::Llm, state: Arc<Mutex<State>>) -> Result<Option<Value>, Error> {
    let mut state = state.lock().await;
    start(&llm, &mut state).await?;
    let State::Open { stream, ended, .. } = &mut *state else {
        return Ok(None);
    };
    if *ended {
        return Ok(None);
    }
    match stream.next().await {
        Some(Ok(event)) => Ok(Some(serde_json::to_value(&event).unwrap_or(Value::Null))),
        Some(Err(e)) => {
            *ended = true;
            Err(e)
        }
        None => {
            *ended = true;
            Ok(None)
        }
    }
}

#[pymethods]
impl Stream {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Event>> {
        let (llm, state) = (self.llm.clone(), self.state.clone());
        let event = runtime::wait(py, next(llm, state))?.map_err(errors::to_py)?;
        Ok(event.map(Event::from_json))
    }

    fn __aiter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next event for `async for`: a coroutine, run when awaited (`_next_event`'s:
    /// pyo3 makes coroutines of `async fn` methods, but not of special methods).
    fn __anext__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.call_method0("_next_event")
    }

    /// The coroutine behind `__anext__`.
    async fn _next_event(&self) -> PyResult<Event> {
        let (llm, state) = (self.llm.clone(), self.state.clone());
        match runtime::on_runtime(next(llm, state))
            .await?
            .map_err(errors::to_py)?
        {
            Some(event) => Ok(Event::from_json(event)),
            None => Err(PyStopAsyncIteration::new_err(())),
        }
    }

    /// The reply assembled so far (`None` before the stream opened or when it failed to).
    #[getter]
    fn reply(&self, py: Python<'_>) -> PyResult<Option<Reply>> {
        let state = self.state.clone();
        let llm = self.llm.clone();
        runtime::wait(py, async move {
            match &*state.lock().await {
                State::Open {
                    stream, attempts, ..
                } => {
                    let reply = stream.reply();
                    let cost = llm.cost(&reply);
                    Some(Reply::new(reply, cost, attempts.clone()))
                }
                _ => None,
            }
        })
    }

    /// Stops the stream (closing the connection); the events end.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let state = self.state.clone();
        runtime::wait(py, async move {
            let mut state = state.lock().await;
            if let State::Open { ended, .. } = &mut *state {
                *ended = true;
            } else {
                *state = State::Failed;
            }
        })
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }
}

/// One stream event: `type` (`start`, `text_delta`, `thinking_delta`, `tool_call_start`,
/// `tool_call_delta`, `tool_call_end`, `usage`, `finish`…) and its fields as attributes
/// (`part`, `text`…), or all of them with `to_dict()`.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Event {
    fields: Map<String, Value>,
}

impl Event {
    fn from_json(value: Value) -> Event {
        match value {
            Value::Object(fields) => Event { fields },
            _ => Event { fields: Map::new() },
        }
    }
}

#[pymethods]
impl Event {
    /// The event's type.
    #[getter(r#type)]
    fn kind(&self) -> &str {
        self.fields
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// The text of a text or thinking delta, else `None`.
    #[getter]
    fn text(&self) -> Option<&str> {
        self.fields.get("text").and_then(Value::as_str)
    }

    /// The index of the reply part the event builds, else `None`.
    #[getter]
    fn part(&self) -> Option<u64> {
        self.fields.get("part").and_then(Value::as_u64)
    }

    fn __getattr__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.fields.get(name) {
            Some(v) => json::to_py(py, v),
            None => Err(PyAttributeError::new_err(format!(
                "a `{}` event has no `{name}`",
                self.kind()
            ))),
        }
    }

    fn __getitem__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
        match self.fields.get(name) {
            Some(v) => json::to_py(py, v),
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    /// Every field as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::to_py(py, &Value::Object(self.fields.clone()))
    }

    fn __repr__(&self) -> String {
        format!("Event({})", Value::Object(self.fields.clone()))
    }
}
