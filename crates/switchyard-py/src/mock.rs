//! The mock provider in-process (`switchyard.mock()`): a real server on a free loopback
//! port, in a thread of its own, for tests and notebooks.

use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::Mutex;
use switchyard_mock::{MockConfig, MockServer};

/// A running mock provider; `stop()` (or leaving the `with` block) shuts it down.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Mock {
    server: Mutex<Option<MockServer>>,
    url: String,
    base_url: String,
}

#[pymethods]
impl Mock {
    /// Starts a mock on `host:port` (port 0: a free one).
    #[new]
    #[pyo3(signature = (host = "127.0.0.1", port = 0))]
    fn new(py: Python<'_>, host: &str, port: u16) -> PyResult<Mock> {
        let ip: std::net::IpAddr = host
            .parse()
            .map_err(|e| PyOSError::new_err(format!("`{host}` is not an IP address: {e}")))?;
        let server = py
            .detach(|| MockServer::start_in_thread((ip, port).into(), MockConfig::default()))
            .map_err(|e| PyOSError::new_err(format!("cannot start the mock provider: {e}")))?;
        Ok(Mock {
            url: server.url(),
            base_url: server.base_url(),
            server: Mutex::new(Some(server)),
        })
    }

    /// The origin, `http://127.0.0.1:<port>` (Anthropic and Gemini base URLs).
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// The origin plus `/v1` (OpenAI-style base URLs; what `MOCK_BASE_URL` takes).
    #[getter]
    fn base_url(&self) -> &str {
        &self.base_url
    }

    /// How many requests it received.
    #[getter]
    fn received(&self) -> u64 {
        self.lock().as_ref().map_or(0, MockServer::received)
    }

    /// The requests received, oldest first, as `{"method", "path", "json"}` dicts (`json`
    /// the body parsed, `None` when it is not JSON): what a door sent upstream.
    fn requests<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        let requests = self
            .lock()
            .as_ref()
            .map(MockServer::requests)
            .unwrap_or_default();
        requests
            .iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("method", &r.method)?;
                d.set_item("path", &r.path)?;
                match &r.json {
                    Some(json) => d.set_item("json", crate::json::serde_to_py(py, json)?)?,
                    None => d.set_item("json", py.None())?,
                }
                Ok(d)
            })
            .collect()
    }

    /// Forgets the requests received and the attempt counters of `-then-ok` faults.
    fn clear(&self) {
        if let Some(s) = self.lock().as_ref() {
            s.clear();
        }
    }

    /// Stops the server and waits for its thread.
    fn stop(&self, py: Python<'_>) {
        let server = self.lock().take();
        py.detach(move || drop(server));
    }

    fn __repr__(&self) -> String {
        format!("Mock(url={:?})", self.url)
    }
}

impl Mock {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<MockServer>> {
        // A poisoned lock still holds the server: keep using it.
        self.server.lock().unwrap_or_else(|p| p.into_inner())
    }
}
