//! `switchyard.llm(reference, **settings)`: the keyword settings read exactly as a run
//! config's role settings are (the library's `SETTINGS` table, value checks and the rule
//! of which backend takes which setting), so the same names and values work, and the same
//! ones are refused with the same message, in both places.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde_json::{Map, Value};
use switchyard::connect::preferred_dialect;
use switchyard::registry::Config;
use switchyard::run::settings::{check_value, not_taken, spec, SETTINGS};
use switchyard::run::Settings;
use switchyard::{CallPolicy, Error, RetryPolicy};

use crate::errors::IntoPy;
use crate::json::to_json;

/// The settings and the call policy they make over `base` (the run config's `retry:` and
/// `timeouts:`, when one is read). `retry=False` never retries.
pub(crate) fn read(
    settings: Option<&Bound<'_, PyDict>>,
    base: CallPolicy,
) -> PyResult<(Settings, CallPolicy)> {
    let mut out = Settings::default();
    let Some(settings) = settings else {
        return Ok((out, base));
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
        let Some(spec) = spec(&name) else {
            let names: Vec<&str> = SETTINGS.iter().map(|s| s.name).collect();
            let hint = switchyard::internal::suggest::nearest(&name, names.iter().copied())
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(PyTypeError::new_err(format!(
                "unknown setting `{name}`{hint}; accepted: {}",
                names.join(", ")
            )));
        };
        check_value(spec, &json)
            .map_err(|accepted| PyValueError::new_err(format!("setting `{name}`: {accepted}")))?;
        out.set(&name, &json);
    }
    let policy = policy(&base, &out.policy)?;
    Ok((out, policy))
}

/// `base` with the settings' policy fields laid over it (a `retry` mapping reason by
/// reason), as a role's policy is laid over the run's.
fn policy(base: &CallPolicy, fields: &Map<String, Value>) -> PyResult<CallPolicy> {
    if fields.is_empty() {
        return Ok(base.clone());
    }
    let invalid = |e: serde_json::Error| PyValueError::new_err(format!("retry/timeouts: {e}"));
    let Value::Object(mut merged) = serde_json::to_value(base).map_err(invalid)? else {
        return Ok(base.clone());
    };
    for (k, v) in fields {
        match (merged.get_mut(k), v) {
            (Some(Value::Object(have)), Value::Object(add)) => {
                for (k, v) in add {
                    have.insert(k.clone(), v.clone());
                }
            }
            _ => {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    serde_json::from_value(Value::Object(merged)).map_err(invalid)
}

/// The role a setting given to `switchyard.llm(...)` is reported for: the call is a role of
/// its own, and a setting its backend does not take is refused as a run config's role's is.
pub(crate) const LLM_ROLE: &str = "llm";

/// Refuses a setting in `given` that a backend `reference` reaches (each member of a
/// route) does not take, with the library's message for a role's setting
/// (`switchyard::run::settings::not_taken`), as a `ConfigError`.
pub(crate) fn check_taken(
    config: &Config,
    reference: &str,
    given: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let Some(given) = given else {
        return Ok(());
    };
    let members: Vec<&str> = match config.registry.route(reference) {
        Some(route) => route.members.iter().map(|m| m.reference.as_str()).collect(),
        None => vec![reference],
    };
    for member in members {
        // An unusable reference is refused when the handle is made, with its own message.
        let Ok(r) = config.registry.require_reference(member) else {
            continue;
        };
        let Some(backend) = config.registry.backend(&r.backend) else {
            continue;
        };
        let dialect = preferred_dialect(backend);
        for (key, value) in given.iter() {
            if value.is_none() {
                continue;
            }
            let name: String = key.extract()?;
            if let Some(problem) = not_taken(LLM_ROLE, &name, backend, dialect) {
                return Err(Error::Config(problem.to_string())).py_err();
            }
        }
    }
    Ok(())
}
