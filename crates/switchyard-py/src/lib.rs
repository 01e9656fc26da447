//! Switchyard for Python: the `_switchyard` extension module under the `switchyard`
//! package (`python/switchyard/`).
//!
//! A skin over the library: every module here converts between Python and library
//! values and holds no logic of its own (resolution, retries, recording, budgets and
//! replay are the library's). The Python package re-exports these classes and adds the
//! exceptions (`switchyard/errors.py`) and the context managers.

mod backend;
mod backends;
mod bench;
mod cli;
mod config_source;
mod errors;
mod gateway;
mod json;
mod llm;
mod log;
mod mock;
mod model_choice;
mod reply;
mod request;
mod run;
mod runtime;
mod stream;
mod trace;

use pyo3::prelude::*;

/// The native module; `switchyard/__init__.py` is its public face.
#[pymodule]
fn _switchyard(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(llm::llm, m)?)?;
    m.add_function(wrap_pyfunction!(run::check, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli_main, m)?)?;
    m.add_function(wrap_pyfunction!(backends::backends_list, m)?)?;
    m.add_function(wrap_pyfunction!(backends::backends_show, m)?)?;
    m.add_function(wrap_pyfunction!(backends::backends_check, m)?)?;
    m.add_function(wrap_pyfunction!(log::log_open, m)?)?;
    m.add_function(wrap_pyfunction!(log::log_records, m)?)?;
    m.add_function(wrap_pyfunction!(log::log_record, m)?)?;
    m.add_function(wrap_pyfunction!(log::log_stats, m)?)?;
    m.add_function(wrap_pyfunction!(log::log_show, m)?)?;
    m.add_function(wrap_pyfunction!(log::log_raw, m)?)?;
    m.add_function(wrap_pyfunction!(log::log_run_file, m)?)?;
    m.add_function(wrap_pyfunction!(bench::_bench_rust_complete, m)?)?;
    m.add_function(wrap_pyfunction!(trace::trace_shutdown, m)?)?;
    m.add_class::<llm::Llm>()?;
    m.add_class::<reply::Reply>()?;
    m.add_class::<reply::Usage>()?;
    m.add_class::<stream::Stream>()?;
    m.add_class::<stream::Event>()?;
    m.add_class::<run::Run>()?;
    m.add_class::<backend::Request>()?;
    m.add_class::<mock::Mock>()?;
    m.add_class::<gateway::Gateway>()?;
    Ok(())
}
