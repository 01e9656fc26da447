//! The `switchyard` command line as a library: the binary's `main` is [`main_with_args`],
//! so that another front end (the Python wheel's `switchyard` command) runs the very same
//! CLI rather than a copy of it.

mod cli;
mod commands;
mod redacting;

/// What `switchyard backends list|show|check --json` and `log stats|show` print, as
/// values, for another front end (the Python package's `switchyard.backends` and
/// `switchyard.log`) to give its callers the same data.
pub mod data {
    use serde_json::Value;
    use switchyard::env::EnvSource;
    use switchyard::registry::Config;

    /// `switchyard backends list --json`: `{prices_date, backends: [...]}`, each backend
    /// with every field, its layer, and `key` (`set`, `unset` or `not needed`).
    pub fn backends_list(config: &Config, env: &dyn EnvSource) -> Result<Value, String> {
        crate::commands::backends_list::list_json(config, env)
    }

    /// `switchyard backends show REFERENCE --json`: the reference resolved field by field
    /// with layers, its URLs, and `litellm` (`{model, api_base, api_key_env}` or `null`).
    /// A backend's name alone shows the backend with the model left open (`{model}`).
    pub fn backends_show(
        config: &Config,
        reference: &str,
        env: &dyn EnvSource,
    ) -> Result<Value, String> {
        crate::commands::backends_show::show_json(config, reference, env)
    }

    pub use crate::commands::backends_check::Uncheckable;

    /// `switchyard backends check REFERENCE --json`: the reference resolved (backend,
    /// model, base URL, key variable and whether it is set), `GET /models`, and one short
    /// request in each claimed dialect (`dialects`: claimed, working, time, reply or
    /// error); `ok` when every claimed dialect answered. Sends requests: the backend is
    /// reached.
    pub async fn backends_check(
        config: &Config,
        reference: &str,
        env: &(dyn EnvSource + Sync),
    ) -> Result<Value, Uncheckable> {
        crate::commands::backends_check::check_json(config, reference, env).await
    }

    /// `switchyard log stats RUN_DIR --json` of a run's records: totals in all, by role,
    /// by model and by client key.
    pub fn log_stats(records: &[switchyard::CallRecord]) -> Value {
        crate::commands::log::stats_json(records)
    }

    /// One call as `switchyard log show RUN_DIR N` prints it.
    pub fn log_show(record: &switchyard::CallRecord) -> String {
        crate::commands::log::show_text(record)
    }
}

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
            eprintln!("{}", switchyard::internal::redact::redact(&e));
            ExitCode::FAILURE
        }
    }
}
