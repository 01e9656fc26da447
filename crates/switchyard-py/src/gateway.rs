//! `switchyard.serve(...)`: the gateway in-process, built as `switchyard serve` builds
//! it (the registry and the config's gateway sections, `data_dir` for the store), on the
//! module's runtime, on a free loopback port, for tests and notebooks.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use switchyard::env::ProcessEnv;
use switchyard::registry::{Config, Layer, LoadOptions};
use switchyard::Error;
use switchyard_gateway::{check_exposure, GatewayConfig, RunningGateway};
use switchyard_mock::{MockConfig, MockServer};

use crate::errors::IntoPy;
use crate::runtime;

/// A running gateway; `stop()` (or leaving the `with` block) drains and stops it.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Gateway {
    running: Mutex<Option<RunningGateway>>,
    /// The mock answering the built-in `mock` backend, when it still pointed at the
    /// built-in URL (as `switchyard serve` starts one).
    mock: Mutex<Option<MockServer>>,
    url: String,
    data_dir: Option<PathBuf>,
}

fn load(config: &Option<PathBuf>, overrides: &[String]) -> PyResult<Config> {
    let env = ProcessEnv;
    let mut opts = LoadOptions::new(&env);
    opts.run_config = config.clone();
    opts.overrides = overrides.to_vec();
    Config::load(&opts)
        .map_err(|e| Error::Config(e.to_string()))
        .py_err()
}

fn problems(what: &str, errors: Vec<String>) -> PyErr {
    crate::errors::to_py(Error::Config(format!(
        "{what}; {} problem{}:\n  {}",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" },
        errors.join("\n  ")
    )))
}

#[pymethods]
impl Gateway {
    /// Starts the gateway of `config` (a run config; `None`: the built-in backends)
    /// recording into `data_dir` (it wins over the config's `store:`), on `host:port`
    /// (port 0: a free one). With `mock`, the built-in `mock` backend is answered by a
    /// mock provider in this process unless its URL was changed (as `switchyard serve`).
    #[new]
    #[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each
    #[pyo3(signature = (config = None, data_dir = None, host = "127.0.0.1", port = 0, overrides = None, mock = true, allow_public_without_keys = false))]
    fn new(
        py: Python<'_>,
        config: Option<PathBuf>,
        data_dir: Option<PathBuf>,
        host: &str,
        port: u16,
        overrides: Option<Vec<String>>,
        mock: bool,
        allow_public_without_keys: bool,
    ) -> PyResult<Gateway> {
        let ip: std::net::IpAddr = host
            .parse()
            .map_err(|e| PyValueError::new_err(format!("`{host}` is not an IP address: {e}")))?;
        let addr = SocketAddr::new(ip, port);
        let mut overrides = overrides.unwrap_or_default();
        let mut loaded = load(&config, &overrides)?;
        let mut gateway_config = GatewayConfig::from_sections(&loaded.sections)
            .map_err(|e| problems("the gateway configuration is wrong", e))?;
        let builtin_mock = loaded
            .registry
            .backend("mock")
            .and_then(|b| b.base_url.as_ref())
            .is_some_and(|u| u.layer == Layer::Builtin);
        let mut mock_server = None;
        if mock && builtin_mock {
            let quiet = MockConfig {
                keep_requests: 0,
                ..MockConfig::default()
            };
            let server = py
                .detach(|| MockServer::start_in_thread(([127, 0, 0, 1], 0).into(), quiet))
                .map_err(|e| PyOSError::new_err(format!("cannot start the mock provider: {e}")))?;
            overrides.push(format!("backends.mock.base_url={}", server.base_url()));
            loaded = load(&config, &overrides)?;
            mock_server = Some(server);
        }
        if let Some(dir) = data_dir {
            gateway_config.store = Some(dir);
        }
        let gateway = switchyard_gateway::Gateway::new(
            &gateway_config,
            loaded.registry,
            Arc::new(ProcessEnv),
        )
        .map_err(|e| problems("the gateway cannot start", e))?;
        check_exposure(addr, gateway.has_keys(), allow_public_without_keys)
            .map_err(PyValueError::new_err)?;
        let data_dir = gateway.store_dir().map(|d| d.to_path_buf());
        let running = py
            .detach(|| {
                runtime::runtime()
                    .block_on(async { switchyard_gateway::start(gateway, addr).await })
            })
            .map_err(|e| PyOSError::new_err(format!("cannot listen on {addr}: {e}")))?;
        Ok(Gateway {
            url: running.url(),
            running: Mutex::new(Some(running)),
            mock: Mutex::new(mock_server),
            data_dir,
        })
    }

    /// The origin, `http://127.0.0.1:<port>` (Anthropic and Gemini base URLs).
    #[getter]
    fn url(&self) -> &str {
        &self.url
    }

    /// The origin plus `/v1` (an OpenAI client's base URL).
    #[getter]
    fn base_url(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// Where calls are recorded (`None` without a store).
    #[getter]
    fn data_dir(&self) -> Option<PathBuf> {
        self.data_dir.clone()
    }

    /// Stops accepting, waits for calls in flight (up to the drain timeout), then stops the
    /// mock it started. Stopping twice does nothing.
    fn stop(&self, py: Python<'_>) -> PyResult<()> {
        let running = lock(&self.running).take();
        let mock = lock(&self.mock).take();
        py.detach(move || {
            let result = match running {
                Some(r) => runtime::runtime().block_on(r.shutdown()),
                None => Ok(()),
            };
            drop(mock);
            result
        })
        .map_err(|e| PyOSError::new_err(format!("the gateway stopped with an error: {e}")))
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __exit__(
        &self,
        py: Python<'_>,
        _t: Option<&Bound<'_, PyAny>>,
        _v: Option<&Bound<'_, PyAny>>,
        _tb: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.stop(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!("Gateway(url={:?})", self.url)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
