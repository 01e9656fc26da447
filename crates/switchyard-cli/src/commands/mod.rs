//! One module per command, and what they share.

mod ask;
pub(crate) mod backends_check;
pub(crate) mod backends_list;
mod backends_shell;
pub(crate) mod backends_show;
mod bind;
mod builtin_mock;
mod check;
mod init;
pub(crate) mod log;
mod log_source;
mod log_view;
mod mock;
mod otel;
#[cfg(feature = "postgres")]
mod postgres;
// Built without the `postgres` feature: the same functions, each refusing.
#[cfg(not(feature = "postgres"))]
#[path = "postgres_absent.rs"]
mod postgres;
mod serve;
mod serve_log;
mod store;
mod table;

use std::path::PathBuf;
use std::sync::OnceLock;

use switchyard::env::file::EnvFile;
use switchyard::env::{EnvSource, ProcessEnv};
use switchyard::registry::{Config, LoadOptions};

use crate::cli::{BackendsCommand, Cli, Command, ConfigArgs, LogCommand, StoreCommand};

/// The variables of `--env-file`, loaded once before any command runs.
static ENV_FILE: OnceLock<EnvFile> = OnceLock::new();

/// The environment every command resolves with: the `--env-file` variables over the
/// process environment. The process environment itself is not changed (no `set_var`):
/// the library hands the file's variables on where they are needed (a CLI agent's
/// subprocess gets them in its environment, Vertex's key file is read from
/// `GOOGLE_APPLICATION_CREDENTIALS` as resolved here).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CliEnv;

impl EnvSource for CliEnv {
    fn var(&self, name: &str) -> Option<String> {
        match ENV_FILE.get().and_then(|f| f.get(name)) {
            Some(v) if !v.is_empty() => Some(v.to_string()),
            _ => ProcessEnv.var(name),
        }
    }

    fn explicit_vars(&self) -> Vec<(String, String)> {
        ENV_FILE
            .get()
            .map(|f| {
                f.vars()
                    .iter()
                    .filter(|(_, v)| !v.is_empty())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Runs the command; the error is the text to print.
pub(crate) fn run(cli: Cli) -> Result<(), String> {
    let files = files(&cli)?;
    if let Command::Init(args) = &cli.command {
        // For `init` the env file is the one written, and may not exist yet.
        return init::run(files.config, files.env_file.as_deref(), args);
    }
    if let Some(path) = &files.env_file {
        let file = EnvFile::load(path).map_err(|e| format!("error: {e}"))?;
        let _ = ENV_FILE.set(file);
    }
    let config = files.config;
    match cli.command {
        Command::Check(args) => check::run(config.as_deref(), &args),
        Command::Init(_) => Ok(()),
        Command::Backends(BackendsCommand::List(args)) => {
            let config = load(config, args.overrides.clone())?;
            backends_list::run(&config, &args)
        }
        Command::Backends(BackendsCommand::Show(args)) => {
            let config = load(config, args.overrides.clone())?;
            backends_show::run(&config, &args)
        }
        Command::Backends(BackendsCommand::Check(mut args)) => {
            // With --all, the first positional is an override, not a reference.
            if args.all {
                if let Some(first) = args.reference.take() {
                    if !switchyard::registry::looks_like_override(&first) {
                        return Err(format!(
                            "error: `--all` checks every backend whose key is set and takes no reference (got `{first}`)"
                        ));
                    }
                    args.overrides.insert(0, first);
                }
            }
            let config = load(config, args.overrides.clone())?;
            backends_check::run(&config, &args)
        }
        Command::Backends(BackendsCommand::Shell(args)) => {
            let config = load(config, args.overrides.clone())?;
            backends_shell::run(&config, &args)
        }
        Command::Bind(args) => {
            let loaded = load(config.clone(), args.overrides.clone())?;
            bind::run(&loaded, &args, config)
        }
        Command::Ask(mut args) => {
            args.split_words()?;
            if let Some(path) = &config {
                check::preflight(path, &args.overrides, args.log.as_deref())?;
            }
            let config = load(config, args.overrides.clone())?;
            ask::run(&config, &args)
        }
        Command::Log(LogCommand::Stats(args)) => log::stats(&args),
        Command::Log(LogCommand::Show(args)) => log::show(&args),
        Command::Log(LogCommand::Export(args)) => log::export(&args),
        Command::Log(LogCommand::View(args)) => log_view::run(&args),
        Command::Mock(args) => mock::run(&args),
        Command::Store(StoreCommand::Migrate(args)) => store::migrate(&args),
        Command::Serve(args) => serve::run(config, &args),
    }
}

/// The `--config` and `--env-file` of the command: given after it, else before it (the
/// older spelling, still accepted); refused before a command that reads neither.
fn files(cli: &Cli) -> Result<ConfigArgs, String> {
    let given_before = ConfigArgs {
        config: cli.config.clone(),
        env_file: cli.env_file.clone(),
    };
    match cli.command.config_args() {
        Some(after) => Ok(ConfigArgs {
            config: after.config.or(given_before.config),
            env_file: after.env_file.or(given_before.env_file),
        }),
        None => match (&given_before.config, &given_before.env_file) {
            (None, None) => Ok(given_before),
            (config, _) => Err(format!(
                "error: `switchyard {}` reads no {}: it is the flag of the commands that resolve backends (ask, check, backends, bind, serve, init)",
                cli.command.name(),
                if config.is_some() { "run config (--config)" } else { "env file (--env-file)" }
            )),
        },
    }
}

/// Loads every layer from the process environment, formatting problems for a terminal.
fn load(run_config: Option<PathBuf>, overrides: Vec<String>) -> Result<Config, String> {
    let env = CliEnv;
    let mut opts = LoadOptions::new(&env);
    opts.run_config = run_config;
    opts.overrides = overrides;
    Config::load(&opts).map_err(|errors| {
        let n = errors.errors().len();
        let mut out = format!(
            "error: the configuration has {n} problem{}:",
            if n == 1 { "" } else { "s" }
        );
        for e in errors.errors() {
            out.push_str("\n  ");
            out.push_str(&e.to_string());
        }
        out
    })
}

/// `errors` found in `what`, one a line, for a terminal.
fn problems(what: &str, errors: Vec<String>) -> String {
    format!(
        "error: {what} has {} problem{}:\n  {}",
        errors.len(),
        if errors.len() == 1 { "" } else { "s" },
        errors.join("\n  ")
    )
}

/// Serialises to pretty JSON.
fn to_json(value: &serde_json::Value) -> Result<String, String> {
    serde_json::to_string_pretty(value).map_err(|e| format!("error: cannot write JSON: {e}"))
}
