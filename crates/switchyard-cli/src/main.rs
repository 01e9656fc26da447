//! The `switchyard` command line: the library's [`switchyard_cli::main_with_args`] on the
//! process's arguments.

use std::process::ExitCode;

fn main() -> ExitCode {
    switchyard_cli::main_with_args(std::env::args_os())
}
