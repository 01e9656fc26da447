//! The `switchyard` command line: the library's [`switchyard_cli::main_with_args`] on the
//! process's arguments.

use std::process::ExitCode;

/// mimalloc rather than the system's allocator: a call's many small buffers cost a
/// fraction of the instructions (docs/performance.md, *The allocator*).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    switchyard_cli::main_with_args(std::env::args_os())
}
