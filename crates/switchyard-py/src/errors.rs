//! Library errors → the Python exceptions of `switchyard.errors` (one class per kind,
//! every field as an attribute), and back: what a Python backend raises → a library
//! error, so the retry loop treats it as it treats the library's own backends.

use pyo3::prelude::*;
use pyo3::types::PyDict;
use switchyard::error::{ProviderDetails, TimeoutPhase};
use switchyard::Error;

use crate::json;

/// The Python exception for `error`.
pub(crate) fn to_py(error: Error) -> PyErr {
    Python::attach(|py| match build(py, &error) {
        Ok(err) => err,
        // Building the exception failed (the Python package is broken): say both.
        Err(e) => e,
    })
}

/// The Python exception for `error` (its class and attributes), saying `message`: the
/// same refusal in the words another part of the library gave it.
pub(crate) fn to_py_saying(error: Error, message: &str) -> PyErr {
    Python::attach(|py| match build_saying(py, &error, message) {
        Ok(err) => err,
        Err(e) => e,
    })
}

/// `Result<T, Error>` → `PyResult<T>`.
pub(crate) trait IntoPy<T> {
    fn py_err(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for Result<T, Error> {
    fn py_err(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

fn build(py: Python<'_>, error: &Error) -> PyResult<PyErr> {
    build_saying(py, error, &error.to_string())
}

fn build_saying(py: Python<'_>, error: &Error, message: &str) -> PyResult<PyErr> {
    let d = PyDict::new(py);
    if let Some(p) = error.provider_details() {
        provider(py, &d, p)?;
    }
    match error {
        Error::UnknownBackend {
            name,
            known,
            nearest,
        } => {
            d.set_item("name", name)?;
            d.set_item("known", known.clone())?;
            d.set_item("nearest", nearest.clone())?;
        }
        Error::NotAReference { text } => d.set_item("text", text)?,
        Error::MissingKey { backend, variable } => {
            d.set_item("backend", backend)?;
            d.set_item("variable", variable)?;
        }
        Error::RateLimited {
            attempts, waited, ..
        } => {
            d.set_item("attempts", attempts)?;
            d.set_item("waited", waited.as_secs_f64())?;
        }
        Error::ProviderReplyMalformed {
            backend,
            reason,
            attempts,
            body,
        } => {
            d.set_item("backend", backend)?;
            d.set_item("reason", reason)?;
            d.set_item("attempts", attempts)?;
            d.set_item("body", json::bytes(py, body))?;
        }
        Error::ContextLengthExceeded {
            prompt_tokens,
            max_tokens,
            limit,
            ..
        } => {
            d.set_item("prompt_tokens", prompt_tokens)?;
            d.set_item("max_tokens", max_tokens)?;
            d.set_item("limit", limit)?;
        }
        Error::Timeout {
            backend,
            phase,
            after,
        } => {
            d.set_item("backend", backend)?;
            d.set_item("phase", phase_name(*phase))?;
            d.set_item("after", after.as_secs_f64())?;
        }
        Error::Transport { backend, .. } => d.set_item("backend", backend)?,
        Error::BudgetExceeded {
            limit,
            max,
            spent,
            in_flight,
        } => {
            d.set_item("limit", limit)?;
            d.set_item("max", max)?;
            d.set_item("spent", spent)?;
            d.set_item("in_flight", in_flight)?;
        }
        Error::BudgetStopped { max, spent, stream } => {
            d.set_item("limit", "max_usd")?;
            d.set_item("max", max)?;
            d.set_item("spent", spent)?;
            d.set_item("stream", stream)?;
        }
        Error::ReplayExhausted {
            role,
            digest,
            nearest,
        } => {
            d.set_item("role", role)?;
            d.set_item("digest", digest)?;
            d.set_item("nearest", nearest.clone())?;
        }
        Error::Cancelled { backend, during } => {
            d.set_item("backend", backend)?;
            d.set_item("during", during)?;
        }
        Error::ReplyTooLarge {
            backend,
            bound,
            limit,
            ..
        } => {
            d.set_item("backend", backend)?;
            d.set_item("bound", bound.setting())?;
            d.set_item("limit", limit)?;
        }
        _ => {}
    }
    exception(py, error.kind().as_str(), message, &d)
}

/// An instance of the class for `kind`, with `details` as attributes.
pub(crate) fn exception(
    py: Python<'_>,
    kind: &str,
    message: &str,
    details: &Bound<'_, PyDict>,
) -> PyResult<PyErr> {
    let module = py.import("switchyard.errors")?;
    let instance = module
        .getattr("_from_kind")?
        .call1((kind, message, details))?;
    Ok(PyErr::from_value(instance))
}

fn provider(py: Python<'_>, d: &Bound<'_, PyDict>, p: &ProviderDetails) -> PyResult<()> {
    d.set_item("backend", &p.backend)?;
    d.set_item("status", p.status)?;
    d.set_item("request_id", &p.request_id)?;
    d.set_item("provider_kind", &p.kind)?;
    d.set_item("code", &p.code)?;
    d.set_item("provider_message", &p.message)?;
    d.set_item("headers", p.headers.clone())?;
    d.set_item("body", json::bytes(py, &p.body))?;
    Ok(())
}

fn phase_name(phase: TimeoutPhase) -> &'static str {
    match phase {
        TimeoutPhase::Connect => "connect",
        TimeoutPhase::FirstByte => "first_byte",
        TimeoutPhase::Idle => "idle",
        TimeoutPhase::Total => "total",
    }
}

/// What a Python backend raised, as a library error: a `switchyard.Error` by its `kind`
/// (so `ProviderReplyMalformed` is asked again on the malformed schedule, `RateLimited`
/// waited out…), anything else as a provider error naming the exception.
pub(crate) fn from_backend(py: Python<'_>, backend: &str, err: PyErr) -> Error {
    let value = err.value(py);
    let message = value
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "(unprintable)".into());
    let base = py
        .import("switchyard.errors")
        .and_then(|m| m.getattr("Error"));
    let ours = base.is_ok_and(|b| value.is_instance(&b).unwrap_or(false));
    let attr_str = |name: &str| -> Option<String> {
        value
            .getattr(name)
            .ok()
            .and_then(|v| v.extract::<Option<String>>().ok().flatten())
    };
    let details = || {
        Box::new(ProviderDetails {
            backend: backend.to_string(),
            status: value
                .getattr("status")
                .ok()
                .and_then(|v| v.extract::<Option<u16>>().ok().flatten())
                .unwrap_or(0),
            request_id: attr_str("request_id"),
            kind: attr_str("provider_kind"),
            code: attr_str("code"),
            message: message.clone(),
            headers: Vec::new(),
            body: value
                .getattr("body")
                .ok()
                .and_then(|v| v.extract::<Vec<u8>>().ok())
                .unwrap_or_default()
                .into(),
        })
    };
    if !ours {
        let kind = value
            .get_type()
            .name()
            .map(|n| n.to_string())
            .unwrap_or_else(|_| "Exception".into());
        return Error::Provider(Box::new(ProviderDetails {
            kind: Some(kind.clone()),
            message: format!("the Python backend raised {kind}: {message}"),
            ..*details()
        }));
    }
    match attr_str("kind").as_deref().unwrap_or("") {
        "ProviderReplyMalformed" => Error::ProviderReplyMalformed {
            backend: backend.to_string(),
            reason: attr_str("reason").unwrap_or_else(|| message.clone()),
            attempts: 1,
            body: details().body,
        },
        "RateLimited" => Error::RateLimited {
            attempts: 1,
            waited: std::time::Duration::ZERO,
            last: details(),
        },
        "ProviderQuotaExhausted" => Error::ProviderQuotaExhausted(details()),
        "Overloaded" => Error::Overloaded(details()),
        "Auth" => Error::Auth(details()),
        "BadRequest" => Error::BadRequest(details()),
        "ContextLengthExceeded" => Error::ContextLengthExceeded {
            prompt_tokens: attr_u64(value, "prompt_tokens"),
            max_tokens: attr_u64(value, "max_tokens"),
            limit: attr_u64(value, "limit"),
            message: message.clone(),
            details: Some(details()),
        },
        "Transport" => Error::Transport {
            backend: backend.to_string(),
            message: message.clone(),
        },
        "Unsupported" => Error::Unsupported(message.clone()),
        "Config" => Error::Config(message.clone()),
        _ => Error::Provider(details()),
    }
}

fn attr_u64(value: &Bound<'_, PyAny>, name: &str) -> Option<u64> {
    value
        .getattr(name)
        .ok()
        .and_then(|v| v.extract::<Option<u64>>().ok().flatten())
}
