//! The `switchyard` command line as a library: the binary's `main` is [`main_with_args`],
//! so that another front end (the Python wheel's `switchyard` command) runs the very same
//! CLI rather than a copy of it.

mod cli;
mod commands;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

/// Runs the command line on `args` (the program name first, as in `std::env::args_os`)
/// and gives the process's exit code. Help, a version request or bad arguments print
/// clap's text and exit the process, as the binary does.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = cli::Cli::parse_from(args);
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
