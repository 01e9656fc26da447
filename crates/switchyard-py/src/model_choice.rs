//! What `switchyard.llm(...)`'s `model=` keyword means: the one decision about the model
//! the library does not make itself. Everything else (a reference or route given, a
//! backend's name alone and its default model, `SWITCHYARD_MODEL`, the `model=` override,
//! the run config's `model:`, `SWITCHYARD_BACKEND`) is the library's one assembly's
//! (`run::default_reference` and the precedence of a role that names no model).
//!
//! `model=` is the model the call names (over the environment's). Beside a backend's name
//! alone (`llm("vertex", model="gemini-2.5-pro")`), or as a model id that is no reference
//! with `SWITCHYARD_BACKEND` set, it is a model id on that backend (the seeds'
//! `make_llm(backend, model)`).

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use switchyard::env::EnvSource;
use switchyard::registry::Config;
use switchyard::run::BACKEND_VAR;
use switchyard::Parsed;

/// The reference given to the call when `model=` is: from `given` (positional: a
/// reference, a route, or a backend's name alone) and `model`.
pub(crate) fn with_model(
    config: &Config,
    env: &dyn EnvSource,
    given: Option<&str>,
    model: &str,
) -> PyResult<String> {
    match given {
        Some(backend) if backend_alone(config, backend) => Ok(on_backend(backend, model)),
        Some(given) => Err(PyTypeError::new_err(format!(
            "switchyard.llm: `{given}` already names the model, and `model={model:?}` names another: pass one (`model=` beside a backend's name alone is its model id: `llm(\"vertex\", model=\"gemini-2.5-pro\")`)"
        ))),
        None => match env.var(BACKEND_VAR) {
            // A model id that is no reference, with a backend chosen by the environment.
            Some(b) if !names_a_model(config, model) && config.registry.backend(&b).is_some() => {
                Ok(on_backend(&b, model))
            }
            _ => Ok(model.to_string()),
        },
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
    config.registry.route(text).is_some()
        || matches!(
            config.registry.parse_reference(text),
            Ok(Parsed::Reference(_))
        )
}

/// `model` on `backend`: the model id on it, or already a reference on it.
fn on_backend(backend: &str, model: &str) -> String {
    if model.starts_with(&format!("{backend}/")) {
        model.to_string()
    } else {
        format!("{backend}/{model}")
    }
}
