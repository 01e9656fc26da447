//! `switchyard.Llm`, the handle a program calls, and `switchyard.llm(...)`, which makes
//! one the way `switchyard ask` does: the model `model_choice` picks, over the registry
//! (with `config=` a run config's `backends:`, `model:`, `retry:`, `timeouts:`, and
//! `overrides=`), with the keyword settings read by `settings`.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use switchyard::env::ProcessEnv;
use switchyard::run::RoleBackend;
use switchyard::CallOutcome;

use crate::config_source::load_config;
use crate::errors::{self, IntoPy};
use crate::reply::Reply;
use crate::runtime;
use crate::stream::Stream;
use crate::{model_choice, request, settings};

/// A handle on one model. Cheap to share: threads and asyncio tasks may call one handle
/// at once.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Llm {
    pub(crate) inner: switchyard::Llm,
}

/// The handle for `reference` (a reference, a route, or a backend's name alone), `model=`,
/// or the default model; `config=` a run config (path or dict), `overrides=` as on the
/// command line.
#[pyfunction]
#[pyo3(signature = (reference = None, *, model = None, overrides = None, config = None, **settings))]
pub(crate) fn llm(
    reference: Option<String>,
    model: Option<String>,
    overrides: Option<Vec<String>>,
    config: Option<&Bound<'_, PyAny>>,
    settings: Option<&Bound<'_, PyDict>>,
) -> PyResult<Llm> {
    let env = ProcessEnv;
    let config = load_config(config, &env, overrides.unwrap_or_default())?;
    let reference = model_choice::choose(&config, &env, reference.as_deref(), model.as_deref())?;
    let base = switchyard::run::call_policy(&config).py_err()?;
    let given = settings;
    let (settings, policy) = settings::read(given, base)?;
    settings::check_taken(&config, &reference, given)?;
    let llm = switchyard::Llm::resolve_with(&config.registry, &reference, &env, policy).py_err()?;
    if settings == switchyard::run::Settings::default() {
        return Ok(Llm { inner: llm });
    }
    // The settings fill what a request leaves unset, as a role's settings do.
    let backend = Arc::new(RoleBackend::new(llm.backend().clone(), settings, None));
    let inner = switchyard::Llm::new(llm.label(), backend, llm.model())
        .with_context_window(llm.context_window())
        .with_policy(llm.policy().clone())
        .with_price(llm.price().cloned());
    Ok(Llm { inner })
}

/// The Python reply for a finished call, or its exception.
pub(crate) fn reply_of(
    llm: &switchyard::Llm,
    outcome: CallOutcome<switchyard::Reply>,
) -> PyResult<Reply> {
    let reply = outcome.result.map_err(errors::to_py)?;
    let cost = cost(llm, &reply);
    Ok(Reply::new(reply, cost, outcome.attempts))
}

/// The call's cost as the call log prices it: the backend's own report, else the price.
pub(crate) fn cost(llm: &switchyard::Llm, reply: &switchyard::Reply) -> Option<f64> {
    llm.backend()
        .reported_cost(&reply.raw)
        .or_else(|| switchyard::internal::cost::call_cost(llm.price(), reply.usage.as_ref()))
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
