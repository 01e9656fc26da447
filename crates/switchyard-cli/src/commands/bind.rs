//! `switchyard bind claude|codex <reference> [--print] [-- <args>]`: runs the CLI bound to a
//! backend, or prints the command that would. A backend that does not serve the CLI's
//! dialect, or whose request encoding changes what the CLI sends (`developer_role:
//! system`, `extra_body`), is reached through the gateway: a running one (`$SWITCHYARD_GATEWAY_URL`, else
//! `http://127.0.0.1:8080`) when it answers, else one started in this process for as long
//! as the CLI runs.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use super::CliEnv;
use switchyard::backend::cli::{default_program, locate};
use switchyard::bind::{
    bind, bind_through_gateway, bind_to_print, gateway_reason, needs_gateway, Agent, Binding,
};
use switchyard::env::EnvSource;
use switchyard::registry::{Backend, Config};
use switchyard_gateway::{probe, start, Gateway, GatewayConfig};

use crate::cli::{BindAgent, BindArgs};

/// Where a running gateway is looked for when `SWITCHYARD_GATEWAY_URL` is unset (the
/// address `switchyard serve` listens on by default).
const DEFAULT_GATEWAY_URL: &str = "http://127.0.0.1:8080";

/// The longest the in-process gateway waits for calls in flight once the CLI has exited
/// (nothing is left to read their replies).
const IN_PROCESS_DRAIN: Duration = Duration::from_secs(2);

/// Runs `bind`.
pub(super) fn run(
    config: &Config,
    args: &BindArgs,
    run_config: Option<PathBuf>,
) -> Result<(), String> {
    let agent = match args.agent {
        BindAgent::Claude => Agent::Claude,
        BindAgent::Codex => Agent::Codex,
    };
    let env = CliEnv;
    let err = |e: switchyard::Error| format!("error: {e}");
    // The CLI is found like its backend kind finds it: the `command` of the backend of that
    // kind (`claude-code`, `codex`), else its usual name on PATH.
    let runner = runner_backend(config, agent);
    // A backend named alone (`mock`) is its default model, as at every door; one without
    // a default model is refused by the binding with the library's words.
    let reference = switchyard::run::default_reference(&config.registry, &args.reference)
        .unwrap_or_else(|| args.reference.clone());
    // The run config's `retry:` and `timeouts:` are read as a run reads them: what a run
    // refuses is refused here too, in the same words, bound directly or not.
    switchyard::run::call_policy(config).map_err(err)?;
    if !needs_gateway(agent, &config.registry, &reference).map_err(err)? {
        if args.print {
            // Printing writes the key as its variable: it needs no key, the shell that
            // runs the command does.
            let binding = bind_to_print(agent, &config.registry, &reference, &args.args, &env)
                .map_err(err)?;
            print(runner, agent, &binding);
            if let Err(switchyard::Error::MissingKey { variable, .. }) =
                bind(agent, &config.registry, &reference, &args.args, &env)
            {
                eprintln!(
                    "note: {variable} is unset here; set it in the shell that runs this command"
                );
            }
            return Ok(());
        }
        let binding = bind(agent, &config.registry, &reference, &args.args, &env).map_err(err)?;
        return exec(command(runner, agent, &binding)?);
    }

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    let wanted = env
        .var("SWITCHYARD_GATEWAY_URL")
        .filter(|u| !u.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_GATEWAY_URL.to_string());
    let wanted = wanted.trim_end_matches('/').to_string();
    let running = runtime.block_on(probe(&wanted));
    let bind_at = |url: &str| {
        bind_through_gateway(agent, &config.registry, &reference, &args.args, url).map_err(err)
    };
    // Why the gateway: the library says (a dialect not served, edits only it applies).
    let reason = config
        .registry
        .require_reference(&reference)
        .ok()
        .and_then(|r| config.registry.backend(&r.backend))
        .and_then(|b| gateway_reason(agent, b))
        .unwrap_or_else(|| {
            format!(
                "`{}` is a route, whose members the gateway follows",
                reference
            )
        });
    if args.print {
        print(runner, agent, &bind_at(&wanted)?);
        if !running {
            eprintln!(
                "note: {reason}, so {} goes through a gateway; none answers at {wanted}: \
                 start one there with `switchyard serve` (or set SWITCHYARD_GATEWAY_URL) \
                 before running this",
                agent.title()
            );
        }
        return Ok(());
    }
    if running {
        eprintln!("switchyard: {reason}; using the gateway at {wanted}");
        return exec(command(runner, agent, &bind_at(&wanted)?)?);
    }
    // No gateway to reuse: serve one here while the CLI runs — with the built-in mock
    // answered in process, as `switchyard serve` does.
    let parsed = config.registry.require_reference(&reference).ok();
    let backend = parsed
        .as_ref()
        .and_then(|r| config.registry.backend(&r.backend));
    if let Some(b) = backend {
        // The gateway would fail every call without it; say so before the CLI starts.
        b.api_key(&env).map_err(|e| format!("error: {e}"))?;
    }
    let mut _mock = None;
    let mut served = None;
    if parsed.as_ref().is_some_and(|r| r.backend == "mock") {
        if let Some((mock, point)) = runtime.block_on(super::builtin_mock::start(config))? {
            let mut overrides = args.overrides.clone();
            overrides.push(point);
            served = Some(super::load(run_config, overrides)?);
            _mock = Some(mock);
        }
    }
    let gateway = in_process_gateway(served.as_ref().unwrap_or(config))?;
    let gateway = runtime
        .block_on(start(gateway, ([127, 0, 0, 1], 0).into()))
        .map_err(|e| format!("error: cannot start the gateway on 127.0.0.1: {e}"))?;
    let url = gateway.url();
    let outcome = bind_at(&url).and_then(|binding| {
        let (mut cmd, program) = command(runner, agent, &binding)?;
        eprintln!(
            "switchyard: {reason}; using a gateway started for this session at {url} (none \
             answered at {wanted})"
        );
        // Ctrl-c goes to the whole foreground group: the CLI handles it (Claude Code and
        // Codex interrupt a turn); this process must outlive it to keep serving.
        // Creating the stream installs tokio's handler, in place of the default (exit), for
        // the life of the process; the child gets the default back when it starts.
        #[cfg(unix)]
        let _interrupts = runtime.block_on(async {
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        });
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("error: could not run `{}`: {e}", program.display()))?;
        // A SIGTERM or SIGHUP meant for the session (a closed terminal, a supervisor)
        // reaches this process only: pass it on, so the CLI ends as it would alone, and
        // this process stops the gateway after it instead of leaving the CLI without one.
        #[cfg(unix)]
        let forwarding = runtime.spawn(forward_signals(child.id()));
        let status = child
            .wait()
            .map_err(|e| format!("error: could not wait for `{}`: {e}", program.display()));
        #[cfg(unix)]
        forwarding.abort();
        status
    });
    if let Err(e) = runtime.block_on(gateway.shutdown()) {
        eprintln!("switchyard: the gateway did not stop cleanly: {e}");
    }
    let status = outcome?;
    std::process::exit(exit_code(status));
}

/// Passes SIGTERM and SIGHUP on to the process `pid` for as long as it runs.
#[cfg(unix)]
async fn forward_signals(pid: u32) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::hangup()),
    ) else {
        return;
    };
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    loop {
        let sig = tokio::select! {
            _ = term.recv() => libc::SIGTERM,
            _ = hup.recv() => libc::SIGHUP,
        };
        // `kill` takes no pointer. Forwarding stops as soon as the CLI has been waited
        // for, long before its pid could be given to another process.
        unsafe {
            libc::kill(pid, sig);
        }
    }
}

/// The gateway `bind` serves itself: the run config's gateway sections and the registry,
/// without client keys (it listens on loopback, for this CLI only, which has no client key).
fn in_process_gateway(config: &Config) -> Result<Gateway, String> {
    let mut gateway_config = GatewayConfig::from_sections(&config.sections)
        .map_err(|e| super::problems("the gateway configuration", e))?;
    gateway_config.keys.clear();
    gateway_config.drain_timeout = gateway_config.drain_timeout.min(IN_PROCESS_DRAIN);
    Gateway::new(&gateway_config, config.registry.clone(), Arc::new(CliEnv))
        .map_err(|e| super::problems("the gateway for this session", e))
}

/// The exit code to pass on: the CLI's, or 128 + the signal that ended it (as shells do).
fn exit_code(status: std::process::ExitStatus) -> i32 {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return 128 + signal;
        }
    }
    status.code().unwrap_or(1)
}

fn print(runner: Option<&Backend>, agent: Agent, binding: &Binding) {
    let mut words: Vec<String> = match runner.and_then(|b| b.command.as_ref()) {
        Some(c) => c.value.clone(),
        None => vec![default_program(agent.kind()).0.to_string()],
    };
    let program = words.remove(0);
    println!("{}", binding.shell_command_with(&program, &words));
}

/// The backend that runs `agent`: the built-in of its name when it has that kind, else
/// the first of that kind.
fn runner_backend(config: &Config, agent: Agent) -> Option<&Backend> {
    let usual = match agent {
        Agent::Claude => "claude-code",
        Agent::Codex => "codex",
    };
    config
        .registry
        .backend(usual)
        .filter(|b| b.kind.value == agent.kind())
        .or_else(|| {
            config
                .registry
                .backends()
                .find(|b| b.kind.value == agent.kind())
        })
}

/// The CLI's command, bound: program, arguments and environment (the key's value read
/// here, for this child only).
fn command(
    runner: Option<&Backend>,
    agent: Agent,
    binding: &Binding,
) -> Result<(Command, PathBuf), String> {
    let env = CliEnv;
    let (program, leading) = match runner {
        Some(b) => locate(b, &env).map_err(|e| format!("error: {e}"))?,
        None => {
            let name = default_program(agent.kind()).0;
            let found = std::env::var("PATH").ok().and_then(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join(name))
                    .find(|c| c.is_file())
            });
            match found {
                Some(p) => (p, Vec::new()),
                None => return Err(format!("error: `{name}` was not found on PATH")),
            }
        }
    };
    let child_env = binding.child_env(&env).map_err(|e| format!("error: {e}"))?;
    let mut command = Command::new(&program);
    command.args(&leading).args(binding.all_args());
    for name in &binding.unset {
        command.env_remove(name);
    }
    command.envs(child_env);
    Ok((command, program))
}

/// Becomes the CLI: it owns the terminal, its signals and its exit status.
fn exec((mut command, program): (Command, PathBuf)) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = command.exec();
        Err(format!("error: could not run `{}`: {e}", program.display()))
    }
    #[cfg(not(unix))]
    {
        let status = command
            .status()
            .map_err(|e| format!("error: could not run `{}`: {e}", program.display()))?;
        std::process::exit(exit_code(status));
    }
}
