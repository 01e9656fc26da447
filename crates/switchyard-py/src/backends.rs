//! `switchyard.backends.list()` / `.show(reference)` / `.check(reference)`: the data
//! `switchyard backends list|show|check --json` prints, made by the CLI's own functions
//! (`switchyard_cli::data`).

use pyo3::prelude::*;
use switchyard::env::ProcessEnv;
use switchyard::registry::Config;
use switchyard::{Error, ReferenceError};

use crate::config_source::load_config;
use crate::errors::IntoPy;
use crate::json;
use crate::runtime;

/// The registry as the CLI loads it: built-ins, the user's file, the environment, the run
/// config's `backends:` (a path or a dict) and the overrides.
fn load(config: Option<&Bound<'_, PyAny>>, overrides: Option<Vec<String>>) -> PyResult<Config> {
    load_config(config, &ProcessEnv, overrides.unwrap_or_default())
}

/// Every backend, as `switchyard backends list --json` prints them.
#[pyfunction]
#[pyo3(signature = (config = None, overrides = None))]
pub(crate) fn backends_list<'py>(
    py: Python<'py>,
    config: Option<&Bound<'py, PyAny>>,
    overrides: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = load(config, overrides)?;
    let value = switchyard_cli::data::backends_list(&config, &ProcessEnv)
        .map_err(Error::Config)
        .py_err()?;
    json::to_py(py, &value)
}

/// One reference resolved, as `switchyard backends show REF --json` prints it. An unknown
/// backend raises `UnknownBackend` with the nearest name.
#[pyfunction]
#[pyo3(signature = (reference, config = None, overrides = None))]
pub(crate) fn backends_show<'py>(
    py: Python<'py>,
    reference: &str,
    config: Option<&Bound<'py, PyAny>>,
    overrides: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = load(config, overrides)?;
    match config.registry.require_reference(reference) {
        Ok(_) => {}
        // A backend's name alone is shown with its model left open, as the CLI does.
        Err(ReferenceError::EmptyModel { ref backend, .. })
            if config.registry.backend(backend).is_some() => {}
        Err(e) => return Err(Error::from(e)).py_err(),
    }
    let value = switchyard_cli::data::backends_show(&config, reference, &ProcessEnv)
        .map_err(Error::Config)
        .py_err()?;
    json::to_py(py, &value)
}

/// One reference checked, as `switchyard backends check REF --json` prints it: the
/// backend, model, base URL, key variable and whether it is set, `GET /models`, and one
/// short request per claimed dialect (the backend is reached; the GIL is released while
/// it answers). A claim that fails is data (`ok` false), not an exception; a reference to
/// no backend raises `UnknownBackend`, a CLI agent's `Unsupported`.
#[pyfunction]
#[pyo3(signature = (reference, config = None, overrides = None))]
pub(crate) fn backends_check<'py>(
    py: Python<'py>,
    reference: &str,
    config: Option<&Bound<'py, PyAny>>,
    overrides: Option<Vec<String>>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = load(config, overrides)?;
    let reference = reference.to_string();
    let value = runtime::wait(py, async move {
        switchyard_cli::data::backends_check(&config, &reference, &ProcessEnv).await
    })?
    .map_err(Error::from)
    .py_err()?;
    json::to_py(py, &value)
}
