//! `switchyard.log.open(run_dir)`: a recorded run read back — its records, one call, its
//! stats, its `run.yaml` — by the library's readers and the CLI's own `log stats|show`
//! (`switchyard_cli::data`), so Python gets what the command prints.

use std::path::{Path, PathBuf};

use pyo3::exceptions::PyFileNotFoundError;
use pyo3::prelude::*;
use pyo3::types::PyList;
use switchyard::record::{self, CallRecord};

use crate::errors::IntoPy;
use crate::json;

/// The run directory `path` names (itself, or the parent of its `llm_log/`), or
/// `FileNotFoundError` saying what a run directory holds.
#[pyfunction]
pub(crate) fn log_open(path: PathBuf) -> PyResult<PathBuf> {
    let dir = record::run_dir_of(&path);
    if dir.join(record::LOG_DIR).is_dir() || dir.join(record::RUN_FILE).is_file() {
        return Ok(dir);
    }
    Err(PyFileNotFoundError::new_err(format!(
        "{} is not a run directory: it holds neither {} nor {}/ (expected the directory a run config's `log:` names, or its {}/ folder)",
        path.display(),
        record::RUN_FILE,
        record::LOG_DIR,
        record::LOG_DIR
    )))
}

fn records(py: Python<'_>, dir: &Path) -> PyResult<Vec<CallRecord>> {
    py.detach(|| record::read_records(dir)).py_err()
}

fn one(py: Python<'_>, dir: &Path, number: u64) -> PyResult<CallRecord> {
    py.detach(|| record::read_record(dir, number)).py_err()
}

/// Every record of the run, in number order, as the JSON the call log holds.
#[pyfunction]
pub(crate) fn log_records<'py>(py: Python<'py>, dir: PathBuf) -> PyResult<Bound<'py, PyList>> {
    let items = records(py, &dir)?
        .iter()
        .map(|r| json::serde_to_py(py, r))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// Record `number`, as the JSON the call log holds.
#[pyfunction]
pub(crate) fn log_record<'py>(
    py: Python<'py>,
    dir: PathBuf,
    number: u64,
) -> PyResult<Bound<'py, PyAny>> {
    json::serde_to_py(py, &one(py, &dir, number)?)
}

/// The run's totals, as `switchyard log stats RUN_DIR --json` prints them.
#[pyfunction]
pub(crate) fn log_stats<'py>(py: Python<'py>, dir: PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let value = switchyard_cli::data::log_stats(&records(py, &dir)?);
    json::to_py(py, &value)
}

/// Call `number` as `switchyard log show RUN_DIR N` prints it.
#[pyfunction]
pub(crate) fn log_show(py: Python<'_>, dir: PathBuf, number: u64) -> PyResult<String> {
    Ok(switchyard_cli::data::log_show(&one(py, &dir, number)?))
}

/// The reply bytes of call `number` exactly as received (`log show --raw`).
#[pyfunction]
pub(crate) fn log_raw<'py>(
    py: Python<'py>,
    dir: PathBuf,
    number: u64,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = one(py, &dir, number)?.raw_bytes().py_err()?;
    Ok(json::bytes(py, &raw))
}

/// The run's `run.yaml` (roles, backends with each field's layer, settings), as data.
#[pyfunction]
pub(crate) fn log_run_file<'py>(py: Python<'py>, dir: PathBuf) -> PyResult<Bound<'py, PyAny>> {
    let value = record::read_run_file(&dir).py_err()?;
    json::to_py(py, &value)
}
