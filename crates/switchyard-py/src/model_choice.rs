//! Which model `switchyard.llm(...)` calls: the one place the package decides it. A
//! backend's default model is the library's (`run::default_reference`), as for `ask`, runs
//! and the gateway.
//!
//! Precedence, strongest first: the model named in the call (a reference, a route, or a
//! backend's name alone: its default model; or `model=`), then `SWITCHYARD_MODEL` (and the
//! `model=` override, the run config's `model:`, as for a role that names none), then the
//! default model of `SWITCHYARD_BACKEND`'s backend. `model=` beside a backend's name alone
//! (`llm("vertex", model="gemini-2.5-pro")`), or a model id that is no reference with
//! `SWITCHYARD_BACKEND` set, is a model id on that backend (the seeds' `make_llm(backend,
//! model)`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use switchyard::env::EnvSource;
use switchyard::registry::Config;
use switchyard::run::{BACKEND_VAR, MODEL_VAR};
use switchyard::{Error, Parsed};

use crate::errors::IntoPy;

/// The reference (or route) to call, from what the caller gave: `given` (positional: a
/// reference, a route, or a backend's name alone) and `model` (the `model=` keyword).
pub(crate) fn choose(
    config: &Config,
    env: &dyn EnvSource,
    given: Option<&str>,
    model: Option<&str>,
) -> PyResult<String> {
    let alone = given.filter(|g| backend_alone(config, g));
    match (given, alone, model) {
        (_, Some(backend), Some(model)) => Ok(on_backend(backend, model)),
        (Some(given), None, Some(model)) => Err(PyTypeError::new_err(format!(
            "switchyard.llm: `{given}` already names the model, and `model={model:?}` names another: pass one (`model=` beside a backend's name alone is its model id: `llm(\"vertex\", model=\"gemini-2.5-pro\")`)"
        ))),
        (_, Some(backend), None) => backend_default(config, backend, None),
        (Some(given), None, None) => Ok(given.to_string()),
        (None, _, Some(model)) => match env.var(BACKEND_VAR) {
            // A model id that is no reference, with a backend chosen by the environment.
            Some(b) if !names_a_model(config, model) && config.registry.backend(&b).is_some() => {
                Ok(on_backend(&b, model))
            }
            _ => Ok(model.to_string()),
        },
        (None, _, None) => {
            if let Some(m) = switchyard::run::default_model(config, env) {
                // A backend named alone that declares no default model is left as named:
                // say so, and which variable named it.
                if backend_alone(config, &m) {
                    let var = match env.var(MODEL_VAR).as_deref() == Some(m.as_str()) {
                        true => MODEL_VAR,
                        false => BACKEND_VAR,
                    };
                    return backend_default(config, &m, Some(var));
                }
                return Ok(m);
            }
            match env.var(BACKEND_VAR) {
                Some(b) => backend_default(config, &b, Some(BACKEND_VAR)),
                None => Err(Error::Config(format!(
                    "no model: pass a reference (`switchyard.llm(\"mock/echo\")`) or `model=`, or set the environment variable {MODEL_VAR} (a reference) or {BACKEND_VAR} (a backend with a default model)"
                )))
                .py_err(),
            }
        }
    }
}

/// Whether `text` is a backend's name alone (not a route's, not a reference).
fn backend_alone(config: &Config, text: &str) -> bool {
    !text.contains('/')
        && config.registry.route(text).is_none()
        && config.registry.backend(text).is_some()
}

/// Whether `text` is a reference or a route.
fn names_a_model(config: &Config, text: &str) -> bool {
    config.registry.route(text).is_some() || backend_of(config, text).is_some()
}

/// The backend a reference names, if it is one.
fn backend_of(config: &Config, reference: &str) -> Option<String> {
    match config.registry.parse_reference(reference) {
        Ok(Parsed::Reference(r)) => Some(r.backend),
        _ => None,
    }
}

/// `model` on `backend`: the model id on it, or already a reference on it.
fn on_backend(backend: &str, model: &str) -> String {
    if model.starts_with(&format!("{backend}/")) {
        model.to_string()
    } else {
        format!("{backend}/{model}")
    }
}

/// The default model of `backend` (named by `var` when the environment chose it): the
/// library's rule, the one every door follows.
fn backend_default(config: &Config, backend: &str, var: Option<&str>) -> PyResult<String> {
    let from = var.map(|v| format!(" (from {v})")).unwrap_or_default();
    if config.registry.backend(backend).is_none() {
        let known: Vec<&str> = config
            .registry
            .backends()
            .map(|b| b.name.as_str())
            .collect();
        return Err(Error::Config(format!(
            "no backend is called `{backend}`{from}; known backends: {}",
            known.join(", ")
        )))
        .py_err();
    }
    switchyard::run::default_reference(&config.registry, backend)
        .ok_or_else(|| {
            Error::Config(format!(
                "{}{from}",
                switchyard::run::no_default_model(backend)
            ))
        })
        .py_err()
}
