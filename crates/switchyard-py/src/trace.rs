//! The trace export's end for a Python program: the library queues spans on a thread of
//! its own, and a process that exits without flushing loses the last second of them, so
//! `switchyard/__init__.py` registers [`trace_shutdown`] with `atexit`.

use pyo3::prelude::*;
use std::time::Duration;

/// Sends every queued span and stops the export, waiting `timeout_seconds` at most (the
/// GIL released meanwhile); `True` when everything went in time. Nothing to do (and
/// `True`) when no export is running.
#[pyfunction]
#[pyo3(signature = (timeout_seconds = 5.0))]
pub(crate) fn trace_shutdown(py: Python<'_>, timeout_seconds: f64) -> bool {
    let timeout = if timeout_seconds.is_finite() && timeout_seconds > 0.0 {
        Duration::from_secs_f64(timeout_seconds.min(3600.0))
    } else {
        Duration::ZERO
    };
    py.detach(|| switchyard::trace::shutdown(timeout))
}
