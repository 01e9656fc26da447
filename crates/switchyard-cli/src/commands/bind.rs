//! `switchyard bind claude|codex <reference> [--print] [-- <args>]`: runs the CLI bound to a
//! backend, or prints the command that would.

use std::process::Command;

use switchyard::backend::cli::{default_program, locate};
use switchyard::bind::{bind, Agent, Binding};
use switchyard::env::ProcessEnv;
use switchyard::registry::{Backend, Config};

use crate::cli::{BindAgent, BindArgs};

/// Runs `bind`.
pub fn run(config: &Config, args: &BindArgs) -> Result<(), String> {
    let agent = match args.agent {
        BindAgent::Claude => Agent::Claude,
        BindAgent::Codex => Agent::Codex,
    };
    let env = ProcessEnv;
    let binding = bind(agent, &config.registry, &args.reference, &args.args, &env)
        .map_err(|e| format!("error: {e}"))?;
    // The CLI is found like its backend kind finds it: the `command` of the backend of that
    // kind (`claude-code`, `codex`), else its usual name on PATH.
    let runner = runner_backend(config, agent);
    if args.print {
        let mut words: Vec<String> = match runner.and_then(|b| b.command.as_ref()) {
            Some(c) => c.value.clone(),
            None => vec![default_program(agent.kind()).0.to_string()],
        };
        let program = words.remove(0);
        println!("{}", binding.shell_command_with(&program, &words));
        return Ok(());
    }
    exec(runner, agent, &binding)
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

fn exec(runner: Option<&Backend>, agent: Agent, binding: &Binding) -> Result<(), String> {
    let env = ProcessEnv;
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
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        // Become the CLI: it owns the terminal, its signals and its exit status.
        let e = command.exec();
        Err(format!("error: could not run `{}`: {e}", program.display()))
    }
    #[cfg(not(unix))]
    {
        let status = command
            .status()
            .map_err(|e| format!("error: could not run `{}`: {e}", program.display()))?;
        std::process::exit(status.code().unwrap_or(1));
    }
}
