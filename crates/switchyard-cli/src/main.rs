//! The `switchyard` command line: the library's [`switchyard_cli::main_with_args`] on the
//! process's arguments.

use std::process::ExitCode;

/// mimalloc rather than the system's allocator: a call's many small buffers cost a
/// fraction of the instructions (docs/performance.md, *The allocator*).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // What the gateway runs when it gives memory back: mimalloc purges the pages freed
    // (by every thread) that it still keeps for reuse.
    // SAFETY: mi_collect takes no pointer and may be called from any thread.
    switchyard_gateway::set_allocator_give_back(|| unsafe { libmimalloc_sys::mi_collect(true) });
    switchyard_cli::main_with_args(std::env::args_os())
}
