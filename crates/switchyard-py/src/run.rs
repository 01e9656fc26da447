//! `switchyard.Run`: a run config (a path or a dict) opened with its roles, budget and
//! call log, exactly as `switchyard::Run` opens it, and `switchyard.check(...)`, the check
//! as data.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use switchyard::env::file::{EnvFile, LayeredEnv};
use switchyard::env::{EnvSource, ProcessEnv};
use switchyard::run::{CheckReport, RunBuilder};
use switchyard::{Backend, Error};

use crate::backend::PyBackend;
use crate::config_source::ConfigSource;
use crate::errors::{self, IntoPy};
use crate::json;
use crate::llm::Llm;

/// An opened run: a handle per role, every call recorded in the run directory when the
/// config has `log:`.
#[pyclass(module = "switchyard", frozen)]
pub(crate) struct Run {
    run: switchyard::Run,
    dir: Option<PathBuf>,
}

/// The environment a run reads: the env file's variables over the process's.
fn environment(env_file: Option<PathBuf>) -> PyResult<Box<dyn EnvSource + Send + Sync>> {
    Ok(match env_file {
        None => Box::new(ProcessEnv),
        Some(path) => {
            let file = EnvFile::load(&path)
                .map_err(|e| Error::Config(e.to_string()))
                .py_err()?;
            Box::new(LayeredEnv::new(&file, ProcessEnv))
        }
    })
}

fn builder<'a>(
    config: &ConfigSource,
    overrides: &[String],
    env: &'a dyn EnvSource,
    backends: &[(String, Arc<dyn Backend>)],
) -> RunBuilder<'a> {
    let mut b = switchyard::Run::builder(config.path())
        .overrides(overrides.iter().cloned())
        .env(env);
    if let Some(text) = config.text() {
        b = b.config_text(text);
    }
    for (role, backend) in backends {
        b = b.backend_for_role(role, backend.clone());
    }
    b
}

/// The report's problems as a `ConfigError` carrying each of them.
fn config_error(py: Python<'_>, report: &CheckReport) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let d = PyDict::new(py);
        d.set_item("problems", json::serde_to_py(py, &report.problems)?)?;
        errors::exception(py, "Config", &report.problems_text(), &d)
    };
    build().unwrap_or_else(|e| e)
}

#[pymethods]
impl Run {
    /// Opens the run config `config` (a path, or a dict held in memory): resolves and
    /// checks every role (a `ConfigError` lists every problem), shares one budget,
    /// records into `log:`.
    #[staticmethod]
    #[pyo3(signature = (config, overrides = None, env_file = None, backends = None, resume = false))]
    fn open(
        py: Python<'_>,
        config: &Bound<'_, PyAny>,
        overrides: Option<Vec<String>>,
        env_file: Option<PathBuf>,
        backends: Option<&Bound<'_, PyDict>>,
        resume: bool,
    ) -> PyResult<Run> {
        let config = ConfigSource::extract(config)?;
        let overrides = overrides.unwrap_or_default();
        let env = environment(env_file)?;
        let mut custom = Vec::new();
        if let Some(backends) = backends {
            for (role, object) in backends.iter() {
                let role: String = role.extract()?;
                custom.push((role.clone(), PyBackend::for_role(&role, &object)?));
            }
        }
        let opened = py.detach(|| {
            builder(&config, &overrides, env.as_ref(), &custom)
                .resume(resume)
                .open()
        });
        let run = match opened {
            Ok(run) => run,
            Err(Error::Config(message)) => {
                // Checked again for the problems as data (the error holds them as text).
                // A sound config refused for another reason (a run directory that already
                // holds a run) keeps the library's message whole.
                let report = builder(&config, &overrides, env.as_ref(), &custom).check();
                if !report.ok {
                    return Err(config_error(py, &report));
                }
                return Err(errors::to_py(Error::Config(message)));
            }
            Err(e) => return Err(errors::to_py(e)),
        };
        let dir = switchyard::run::log_dir(run.config()).py_err()?;
        Ok(Run { run, dir })
    }

    /// The handle of `role` (a `ConfigError` naming the roles when there is none).
    fn llm(&self, role: &str) -> PyResult<Llm> {
        Ok(Llm {
            inner: self.run.llm(role).py_err()?,
        })
    }

    /// The check made when the run was opened, as `switchyard check --json` prints it.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        json::serde_to_py(py, self.run.report())
    }

    /// The run directory the calls are recorded in (`None` without `log:`).
    #[getter]
    fn dir(&self) -> Option<PathBuf> {
        self.dir.clone()
    }

    /// The roles' names, sorted.
    #[getter]
    fn roles(&self) -> Vec<String> {
        self.run
            .role_names()
            .into_iter()
            .map(str::to_string)
            .collect()
    }

    /// Writes every pending record and the index, and stops recording.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        match self.run.recorder() {
            Some(r) => py.detach(|| r.close()).py_err(),
            None => Ok(()),
        }
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
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        format!(
            "Run({:?}, roles={:?})",
            self.run.report().config,
            self.run.role_names()
        )
    }
}

/// Checks a run config (a path or a dict) without opening it: the report as data (`ok`,
/// `roles`, `problems`), as `switchyard check --json` prints it.
#[pyfunction]
#[pyo3(signature = (config, overrides = None, env_file = None))]
pub(crate) fn check<'py>(
    py: Python<'py>,
    config: &Bound<'py, PyAny>,
    overrides: Option<Vec<String>>,
    env_file: Option<PathBuf>,
) -> PyResult<Bound<'py, PyAny>> {
    let config = ConfigSource::extract(config)?;
    let env = environment(env_file)?;
    let overrides = overrides.unwrap_or_default();
    let report = py.detach(|| builder(&config, &overrides, env.as_ref(), &[]).check());
    json::serde_to_py(py, &report)
}
