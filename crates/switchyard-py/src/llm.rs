//! `switchyard.Llm`, the handle a program calls, and `switchyard.llm(...)`, which opens a
//! run of one call through the library's one assembly, as `switchyard ask` does
//! (`RunBuilder::one_call`): the model, the settings (read by the reader of a role's
//! settings, refused with a run config's message), retry and timeouts, routes, cache,
//! budget, recorder and prices all come from there. `model_choice` only maps the `model=`
//! keyword onto the reference given.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::Value;
use switchyard::env::ProcessEnv;
use switchyard::run::settings::{check_value, spec};
use switchyard::run::OneCall;
use switchyard::{CallOutcome, Error, RetryPolicy};

use crate::config_source::{load_config, ConfigSource};
use crate::errors::{self, IntoPy};
use crate::json::to_json;
use crate::reply::Reply;
use crate::runtime;
use crate::stream::Stream;
use crate::{model_choice, request};

/// A handle on one model. Cheap to share: threads and asyncio tasks may call one handle
/// at once.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Llm {
    pub(crate) inner: switchyard::Llm,
}

/// The handle for `reference` (a reference, a route, or a backend's name alone), `model=`,
/// or the default model; `config=` a run config (path or dict), `overrides=` as on the
/// command line; `role=` a role of that config to call as (`ask --role`: its model and
/// settings, the given ones over them); the keyword settings as a role's settings.
#[pyfunction]
#[pyo3(signature = (reference = None, *, model = None, role = None, overrides = None, config = None, **settings))]
pub(crate) fn llm(
    py: Python<'_>,
    reference: Option<String>,
    model: Option<String>,
    role: Option<String>,
    overrides: Option<Vec<String>>,
    config: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<Llm> {
    let env = ProcessEnv;
    let overrides = overrides.unwrap_or_default();
    let reference = match model {
        // Only `model=` needs the registry here: which names are a backend's alone.
        Some(model) => Some(model_choice::with_model(
            &load_config(config, &env, overrides.clone())?,
            &env,
            reference.as_deref(),
            &model,
        )?),
        None => reference,
    };
    let source = config.map(ConfigSource::extract).transpose()?;
    let given = given_settings(settings)?;
    let call_model = CallModel {
        reference: reference.clone(),
        config,
        overrides: overrides.clone(),
    };
    let call = OneCall {
        role,
        reference,
        settings: given.clone(),
    };
    let opened = py.detach(|| {
        let builder = match &source {
            Some(source) => {
                let b = switchyard::Run::builder(source.path());
                match source.text() {
                    Some(text) => b.config_text(text),
                    None => b,
                }
            }
            None => switchyard::Run::builder_without_config(),
        };
        builder.overrides(overrides).env(&env).one_call(call).open()
    });
    let run = match opened {
        Ok(run) => run,
        Err(e) => return Err(refused(e, &given, &call_model)),
    };
    Ok(Llm {
        inner: run.call_llm().py_err()?,
    })
}

/// The keyword settings as the library reads a role's: `None` values left out, and
/// `retry=False` the schedule that never retries.
fn given_settings(settings: Option<&Bound<'_, PyDict>>) -> PyResult<Vec<(String, Value)>> {
    let mut out = Vec::new();
    let Some(settings) = settings else {
        return Ok(out);
    };
    for (key, value) in settings.iter() {
        let name: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        let mut json = to_json(&value, &name)?;
        if name == "retry" && json == Value::Bool(false) {
            json = serde_json::to_value(RetryPolicy::never())
                .map_err(|e| PyValueError::new_err(e.to_string()))?;
        }
        out.push((name, json));
    }
    Ok(out)
}

/// What names the call's model, to find the library's typed error for a refused one.
struct CallModel<'a, 'py> {
    reference: Option<String>,
    config: Option<&'a Bound<'py, PyAny>>,
    overrides: Vec<String>,
}

/// The library's refusal as a Python exception. A keyword that names no setting is a
/// `TypeError` and a value of the wrong shape a `ValueError`, as for any Python function;
/// a model the library cannot call is its typed error (`UnknownBackend`, `NotAReference`,
/// `MissingKey`); the message is the library's either way.
fn refused(error: Error, given: &[(String, Value)], call: &CallModel<'_, '_>) -> PyErr {
    let Error::Config(message) = &error else {
        return errors::to_py(error);
    };
    for (name, value) in given {
        match spec(name) {
            None => return PyTypeError::new_err(message.clone()),
            Some(s) if check_value(s, value).is_err() => {
                return PyValueError::new_err(message.clone())
            }
            Some(_) => {}
        }
    }
    match typed(call) {
        // The same refusal: the class and attributes of the error the library resolves
        // that model with, the words of the run that refused it.
        Some(
            typed @ (Error::UnknownBackend { .. }
            | Error::NotAReference { .. }
            | Error::MissingKey { .. }),
        ) => errors::to_py_saying(typed, message),
        _ => errors::to_py(error),
    }
}

/// The library's own error for the model the call names (its first member, for a route),
/// as the run's check found it: `None` when that model resolves.
fn typed(call: &CallModel<'_, '_>) -> Option<Error> {
    let env = ProcessEnv;
    let config = load_config(call.config, &env, call.overrides.clone()).ok()?;
    let text = match &call.reference {
        Some(r) => r.clone(),
        None => switchyard::run::default_model(&config, &env)?,
    };
    let text = switchyard::run::default_reference(&config.registry, &text)?;
    let member = match config.registry.route(&text) {
        Some(route) => route.members.first()?.reference.clone(),
        None => text,
    };
    switchyard::Llm::resolve(&config.registry, &member, &env).err()
}

/// The Python reply for a finished call, or its exception.
pub(crate) fn reply_of(
    llm: &switchyard::Llm,
    outcome: CallOutcome<switchyard::Reply>,
) -> PyResult<Reply> {
    let reply = outcome.result.map_err(errors::to_py)?;
    // The library's rule, as records and budgets count it.
    let cost = llm.cost(&reply);
    Ok(Reply::new(reply, cost, outcome.attempts))
}

#[pymethods]
impl Llm {
    /// Sends `prompt` (a str, or a list of messages) and waits for the whole reply, with
    /// the GIL released.
    #[pyo3(signature = (prompt, **options))]
    fn complete(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Reply> {
        let request = request::build(prompt, options)?;
        let llm = self.inner.clone();
        let outcome = runtime::wait(py, async move { llm.complete_detailed(request).await })?;
        reply_of(&self.inner, outcome)
    }

    /// `complete` for asyncio: a coroutine (nothing is sent until it is awaited, so it may
    /// be made before the loop runs: `asyncio.run(llm.acomplete("x"))`).
    #[pyo3(signature = (prompt, **options))]
    async fn acomplete(&self, prompt: Py<PyAny>, options: Option<Py<PyDict>>) -> PyResult<Reply> {
        let request = Python::attach(|py| {
            request::build(prompt.bind(py), options.as_ref().map(|o| o.bind(py)))
        })?;
        let llm = self.inner.clone();
        let outcome = runtime::on_runtime({
            let llm = llm.clone();
            async move { llm.complete_detailed(request).await }
        })
        .await?;
        reply_of(&llm, outcome)
    }

    /// Sends `prompt` and streams the reply: an iterator of events whose `.reply` is the
    /// assembled reply. Failures before the first output raise here.
    #[pyo3(signature = (prompt, **options))]
    fn stream(
        &self,
        py: Python<'_>,
        prompt: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Stream> {
        let request = request::build(prompt, options)?;
        let stream = Stream::pending(self.inner.clone(), request);
        stream.start_blocking(py)?;
        Ok(stream)
    }

    /// `stream` for asyncio: `async for event in llm.astream(...)`. The call starts at
    /// the first event asked for.
    #[pyo3(signature = (prompt, **options))]
    fn astream(
        &self,
        prompt: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Stream> {
        let request = request::build(prompt, options)?;
        Ok(Stream::pending(self.inner.clone(), request))
    }

    /// The reference as written (`mock/echo`), or the run's label.
    #[getter]
    fn label(&self) -> &str {
        self.inner.label()
    }

    /// The model id sent to the backend.
    #[getter]
    fn model(&self) -> &str {
        self.inner.model()
    }

    /// The backend's name.
    #[getter]
    fn backend(&self) -> &str {
        self.inner.backend().name()
    }

    /// The handle's role in a run, if any.
    #[getter]
    fn role(&self) -> Option<&str> {
        self.inner.role()
    }

    /// The context window in tokens, when the backend declares one.
    #[getter]
    fn context_window(&self) -> Option<u64> {
        self.inner.context_window()
    }

    /// Whether the model's price is known (`cost_usd` is `None` otherwise).
    #[getter]
    fn price_known(&self) -> bool {
        self.inner.price().is_some()
    }

    fn __repr__(&self) -> String {
        match self.inner.role() {
            Some(role) => format!("Llm({:?}, role={role:?})", self.inner.label()),
            None => format!("Llm({:?})", self.inner.label()),
        }
    }
}
