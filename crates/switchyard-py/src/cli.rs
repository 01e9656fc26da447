//! The `switchyard` command of the wheel: the CLI crate's own `main`, so `pip install`
//! gives the very same command line as the Rust binary.

use pyo3::prelude::*;

/// Runs the command line on `argv` (the program name first) and gives its exit code.
#[pyfunction]
pub(crate) fn cli_main(py: Python<'_>, argv: Vec<String>) -> i32 {
    let code = py.detach(|| switchyard_cli::main_with_args(argv));
    // `ExitCode` is opaque: success or failure is all the CLI reports.
    if code == std::process::ExitCode::SUCCESS {
        0
    } else {
        1
    }
}
