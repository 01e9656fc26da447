//! The `switchyard` command line: the library's [`switchyard_cli::main_with_args`] on the
//! process's arguments.

use std::process::ExitCode;

// mimalloc in place of the system allocator: a gateway call allocates and frees many
// small buffers across worker threads, where glibc's malloc showed as ~15 % of a
// worker's time in `perf` (docs/performance.md, "The gateway at the limit").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    switchyard_cli::main_with_args(std::env::args_os())
}
