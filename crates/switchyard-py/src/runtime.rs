//! The one tokio runtime of the module, and waiting on it from Python.
//!
//! It is pyo3-async-runtimes' runtime (multi-threaded, started on first use), so that
//! `acomplete`/`astream` futures and blocking `complete` calls share one connection pool
//! and one set of worker threads.

use std::future::Future;
use std::time::Duration;

use pyo3::prelude::*;

/// How often a blocked call looks for Ctrl-C: the GIL is released while it waits, so a
/// signal is only seen when it comes back for a moment.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    pyo3_async_runtimes::tokio::get_runtime()
}

/// Runs `fut` on the runtime and waits for it with the GIL released. A `KeyboardInterrupt`
/// (or any signal handler raising) drops the future, which ends the call.
///
/// The future is polled on the calling thread (`block_on`, as a Rust caller does), not
/// spawned: a spawned task would add a hop to a worker thread and back on every call (a
/// few microseconds, `bench/overhead.py`). Its I/O is still driven by the runtime.
pub(crate) fn wait<F>(py: Python<'_>, fut: F) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let mut fut = Box::pin(fut);
    loop {
        let done = py.detach(|| {
            runtime().block_on(async { tokio::time::timeout(SIGNAL_POLL, &mut fut).await })
        });
        match done {
            Ok(output) => return Ok(output),
            Err(_elapsed) => py.check_signals()?,
        }
    }
}

/// Runs `fut` on the runtime's workers and waits for it from an `async fn` method: the
/// method is a Python coroutine polled by the caller's event loop, which has no tokio
/// reactor, so the call's I/O runs on the runtime. Dropping the wait (the asyncio task
/// cancelled, the coroutine closed) aborts the call.
pub(crate) async fn on_runtime<F>(fut: F) -> PyResult<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    /// Aborts the task when the waiting coroutine is dropped before it ends.
    struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);
    impl<T> Drop for AbortOnDrop<T> {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let mut task = AbortOnDrop(runtime().spawn(fut));
    (&mut task.0).await.map_err(|e| {
        pyo3::exceptions::PyRuntimeError::new_err(format!("the call's task failed: {e}"))
    })
}
