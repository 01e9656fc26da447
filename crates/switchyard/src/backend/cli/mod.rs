//! The CLI agents as backends: `kind: claude-code` runs `claude -p`, `kind: codex` runs
//! `codex exec`, each once per call, isolated, from a fresh empty directory.
//!
//! # How a canonical request becomes one prompt
//!
//! A CLI takes one prompt, not a list of messages, so [`flatten`] writes the request as
//! text:
//!
//! - `system` and `developer` messages, joined by a blank line, become the system prompt:
//!   Claude Code's `--system-prompt` (replacing its own), or for Codex, which has no such
//!   flag, a block in front of the prompt headed `# Instructions`.
//! - A request of one user message is sent as that message's text, unchanged.
//! - A longer conversation is sent as a transcript: each turn headed `## user` or
//!   `## assistant`, tool calls as `[tool call <id>: <name>(<arguments>)]`, tool results as
//!   `[tool result <id>: <text>]`, earlier thinking dropped, ending with a line asking for
//!   the reply to the last user turn.
//! - Images and tool declarations cannot be passed to a CLI run with its tools off: the
//!   call fails with `Unsupported` before anything runs.
//!
//! # Where the provider-reported cost lives
//!
//! The reply's `raw` bytes are the CLI's own output, unchanged: Claude Code's result
//! object (whose `total_cost_usd` is Claude Code's figure, computed from Anthropic's price
//! table) — or, streamed, its stream-json lines ending in that object — and Codex's JSONL
//! events. [`claude_code::reported_cost`] reads the figure back.
//!
//! # Replay
//!
//! A recorded call of a CLI agent names no wire dialect; replay reads its bytes again with
//! the agent's own reader (`recorded.rs`), chosen by the kind of backend the recorded
//! run's `run.yaml` describes, so a replayed call gives the same reply and events.

pub mod claude_code;
pub mod claude_stream;
pub mod codex;
pub mod output_stream;
pub mod process;
pub(crate) mod recorded;

use crate::env::EnvSource;
use crate::error::{Error, ProviderDetails, Result};
use crate::registry::{self, Kind};
use bytes::Bytes;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;
use switchyard_wire::{Part, Request, Role};

pub use claude_code::ClaudeCodeBackend;
pub use codex::CodexBackend;

/// The longest a CLI run may take unless configured otherwise: an agent answering one
/// prompt with its tools off has no reason to take longer; a stuck one is killed.
pub const DEFAULT_CLI_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// A system prompt longer than this goes in front of the prompt on standard input rather
/// than in an argument (Linux refuses a single argument over 128 KiB).
pub const MAX_SYSTEM_ARG: usize = 100_000;

/// Everything a CLI backend needs, resolved from the registry. Its `Debug` shows the
/// names of `env`'s variables, never their values.
#[derive(Clone)]
pub struct CliConfig {
    /// The backend's name (`claude-code`).
    pub name: String,
    /// The program, found on `PATH` or from `command`.
    pub program: PathBuf,
    /// Arguments from `command` that go before Switchyard's own.
    pub leading_args: Vec<String>,
    /// The most one run may take.
    pub timeout: Option<Duration>,
    /// Variables of the resolved environment the program inherits no other way (an env
    /// file's: `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`…), set in its environment under the
    /// backend's own (see [`EnvSource::explicit_vars`]).
    pub env: Vec<(String, String)>,
}

impl std::fmt::Debug for CliConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("CliConfig")
            .field("name", &self.name)
            .field("program", &self.program)
            .field("leading_args", &self.leading_args)
            .field("timeout", &self.timeout)
            .field("env (names)", &names)
            .finish()
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_never_shows_a_variables_value() {
        let config = CliConfig {
            name: "claude-code".into(),
            program: "claude".into(),
            leading_args: Vec::new(),
            timeout: None,
            env: vec![("ANTHROPIC_API_KEY".into(), "secret-value-0123".into())],
        };
        let own = vec![(OsString::from("X"), OsString::from("secret-own-4567"))];
        let inv = process::Invocation {
            backend: "claude-code".into(),
            program: "claude".into(),
            args: Vec::new(),
            env: config.child_env(own, &[]),
            env_remove: Vec::new(),
            stdin: "prompt".into(),
            timeout: None,
        };
        for shown in [format!("{config:?}"), format!("{inv:?}")] {
            assert!(shown.contains("ANTHROPIC_API_KEY"), "{shown}");
            assert!(!shown.contains("secret-"), "{shown}");
        }
    }
}

impl CliConfig {
    /// The child's variables: the resolved environment's, then the run's `own` (which
    /// win), none of those the run removes.
    pub fn child_env(
        &self,
        own: Vec<(OsString, OsString)>,
        removed: &[OsString],
    ) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = self
            .env
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .filter(|(k, _)| !removed.contains(k))
            .collect();
        env.extend(own);
        env
    }
}

/// The usual program name of a CLI kind, and how to install it.
pub fn default_program(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Codex => ("codex", "npm install -g @openai/codex"),
        _ => ("claude", "npm install -g @anthropic-ai/claude-code"),
    }
}

/// Finds the program of a CLI backend: its `command` field, else the kind's usual name on
/// `PATH` (read from `env`). Missing: a `Config` error naming what was looked for and how
/// to set `command`.
pub fn locate(backend: &registry::Backend, env: &dyn EnvSource) -> Result<(PathBuf, Vec<String>)> {
    let (usual, install) = default_program(backend.kind.value);
    let (program, leading, from_field) = match &backend.command {
        Some(c) => match c.value.split_first() {
            Some((p, rest)) => (p.clone(), rest.to_vec(), true),
            None => (usual.to_string(), Vec::new(), false),
        },
        None => (usual.to_string(), Vec::new(), false),
    };
    let path_var = env.var("PATH");
    match process::find_program(&program, path_var.as_deref()) {
        Some(found) => Ok((found, leading)),
        None => {
            let looked = if program.contains('/') {
                format!("`{program}` (from `command`) is not an executable file")
            } else if from_field {
                format!("`{program}` (from `command`) was not found on PATH")
            } else {
                format!("`{program}` was not found on PATH")
            };
            Err(Error::Config(format!(
                "backend `{}` (kind `{}`) runs a program, and {looked}. Install it ({install}) \
                 or {}",
                backend.name,
                backend.kind.value,
                set_command_hint(&backend.name, usual),
            )))
        }
    }
}

/// How to set the `command` of backend `name`, in words a user can paste: a registry
/// backend's field (`backends.<name>.command=…`), or for the anonymous backend of an
/// inline role (`role:<role>`), the role's own key (`llm.<role>.command=…`).
pub fn set_command_hint(name: &str, usual: &str) -> String {
    match name.strip_prefix("role:") {
        Some(role) => format!(
            "set the role's `command` to the program's path: in the run config \
             `llm: {{{role}: {{command: /path/to/{usual}}}}}`, or on the command line \
             `llm.{role}.command=/path/to/{usual}`"
        ),
        None => format!(
            "set the backend's `command` to the program's path: in your backends file \
             `backends: {{{name}: {{command: /path/to/{usual}}}}}`, or on the command line \
             `backends.{name}.command=/path/to/{usual}`"
        ),
    }
}

/// A callable `claude-code` or `codex` backend (the model comes with each call).
pub fn cli_backend(
    backend: &registry::Backend,
    env: &dyn EnvSource,
) -> Result<std::sync::Arc<dyn crate::backend::Backend>> {
    let (program, leading_args) = locate(backend, env)?;
    let config = CliConfig {
        name: backend.name.clone(),
        program,
        leading_args,
        timeout: Some(DEFAULT_CLI_TIMEOUT),
        env: env.explicit_vars(),
    };
    match backend.kind.value {
        Kind::ClaudeCode => Ok(std::sync::Arc::new(ClaudeCodeBackend::new(config))),
        Kind::Codex => Ok(std::sync::Arc::new(
            CodexBackend::new(config).with_user_login(env),
        )),
        other => Err(Error::Unsupported(format!(
            "backend `{}` is of kind `{other}`, not a CLI agent (claude-code, codex)",
            backend.name
        ))),
    }
}

/// A request written as one prompt (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The system and developer messages, joined.
    pub system: Option<String>,
    /// The conversation as text.
    pub text: String,
}

impl Prompt {
    /// The system prompt in front of the text, for a CLI without a system prompt flag.
    pub fn with_instructions_inline(&self) -> String {
        match &self.system {
            Some(system) => format!("# Instructions\n\n{system}\n\n# Task\n\n{}", self.text),
            None => self.text.clone(),
        }
    }
}

/// Writes a request as one prompt. Fails for what a CLI with its tools off cannot take:
/// tool declarations and images.
pub fn flatten(backend: &str, request: &Request) -> Result<Prompt> {
    if !request.tools.is_empty() {
        return Err(Error::Unsupported(format!(
            "backend `{backend}` runs a CLI agent with its tools off and cannot offer the \
             request's {} tool(s) to the model; call the model over an http backend instead",
            request.tools.len()
        )));
    }
    let mut system = Vec::new();
    let mut turns: Vec<(Role, String)> = Vec::new();
    for message in &request.messages {
        let text = message_text(backend, &message.content)?;
        match message.role {
            Role::System | Role::Developer => system.push(text),
            role => turns.push((role, text)),
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    let text = match turns.as_slice() {
        [] => String::new(),
        [(Role::User, only)] => only.clone(),
        _ => {
            let mut out = String::from("The conversation so far, oldest turn first:\n");
            for (role, text) in &turns {
                let who = match role {
                    Role::Assistant => "assistant",
                    Role::Tool => "tool",
                    _ => "user",
                };
                out.push_str(&format!("\n## {who}\n\n{text}\n"));
            }
            out.push_str("\nWrite the assistant's reply to the last turn.");
            out
        }
    };
    if text.trim().is_empty() {
        return Err(Error::Unsupported(format!(
            "backend `{backend}`: the request has no user message to send as a prompt"
        )));
    }
    Ok(Prompt { system, text })
}

fn message_text(backend: &str, parts: &[Part]) -> Result<String> {
    let mut out: Vec<String> = Vec::new();
    for part in parts {
        match part {
            Part::Text { text, .. } => out.push(text.clone()),
            Part::ToolCall(call) => out.push(format!(
                "[tool call {}: {}({})]",
                call.id, call.name, call.arguments
            )),
            Part::ToolResult(result) => {
                for inner in &result.content {
                    if matches!(inner, Part::Image(_)) {
                        return Err(image_error(backend));
                    }
                }
                out.push(format!(
                    "[tool result {}: {}]",
                    result.call_id,
                    result.text()
                ))
            }
            // Reasoning from earlier turns is the model's own scratch work: not resent.
            Part::Thinking(_) => {}
            Part::Image(_) => return Err(image_error(backend)),
        }
    }
    Ok(out.join("\n"))
}

fn image_error(backend: &str) -> Error {
    Error::Unsupported(format!(
        "backend `{backend}` runs a CLI agent that takes a text prompt on standard input; \
         the request holds an image, which it cannot pass"
    ))
}

/// A malformed-output error with a preview of what the CLI printed.
pub(crate) fn malformed(backend: &str, program: &str, reason: &str, stdout: &[u8]) -> Error {
    let preview = crate::text::preview(stdout, 300);
    let shown = if preview.is_empty() {
        "nothing".to_string()
    } else {
        format!("`{preview}`")
    };
    Error::ProviderReplyMalformed {
        backend: backend.to_string(),
        reason: format!("{reason}; `{program}` printed {shown}"),
        attempts: 1,
        body: Bytes::copy_from_slice(stdout),
    }
}

/// A CLI that failed without printing what it prints on success: its exit status and
/// standard error, kept for the record.
pub(crate) fn exited(backend: &str, program: &str, finished: &process::Finished) -> Error {
    let stderr = crate::text::preview(&finished.stderr, 500);
    Error::Provider(Box::new(ProviderDetails {
        backend: backend.to_string(),
        status: 0,
        kind: Some("cli_exit".into()),
        code: finished.code.map(|c| c.to_string()),
        message: if stderr.is_empty() {
            format!(
                "`{program}` failed ({}) and printed nothing on standard error",
                finished.status_text()
            )
        } else {
            format!("`{program}` failed ({}): {stderr}", finished.status_text())
        },
        body: Bytes::copy_from_slice(&finished.stderr),
        ..ProviderDetails::default()
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::{Message, ToolCall, ToolResult};

    #[test]
    fn one_user_message_is_sent_as_is_and_system_goes_apart() {
        let p = flatten("b", &Request::user("hello").with_system("be brief")).unwrap();
        assert_eq!(p.text, "hello");
        assert_eq!(p.system.as_deref(), Some("be brief"));
        assert_eq!(
            p.with_instructions_inline(),
            "# Instructions\n\nbe brief\n\n# Task\n\nhello"
        );
    }

    #[test]
    fn a_conversation_becomes_a_transcript() {
        let mut r = Request::user("what is 2+2?");
        r.messages.push(Message {
            role: Role::Assistant,
            content: vec![Part::ToolCall(ToolCall {
                id: "c1".into(),
                name: "calc".into(),
                arguments: "{\"x\":\"2+2\"}".into(),
                kind: Default::default(),
                namespace: None,
                state: None,
            })],
        });
        r.messages.push(Message {
            role: Role::Tool,
            content: vec![Part::ToolResult(ToolResult {
                call_id: "c1".into(),
                name: None,
                content: vec![Part::text("4")],
                is_error: false,
                kind: Default::default(),
            })],
        });
        r.messages.push(Message::text(Role::User, "and doubled?"));
        let p = flatten("b", &r).unwrap();
        assert!(p.system.is_none());
        assert!(p.text.contains("## user\n\nwhat is 2+2?"), "{}", p.text);
        assert!(p.text.contains("[tool call c1: calc({\"x\":\"2+2\"})]"));
        assert!(p.text.contains("## tool\n\n[tool result c1: 4]"));
        assert!(p.text.ends_with("reply to the last turn."));
    }

    #[test]
    fn tools_and_images_are_refused() {
        let mut r = Request::user("x");
        r.tools.push(switchyard_wire::Tool {
            name: "t".into(),
            description: None,
            parameters: serde_json::json!({}),
            kind: Default::default(),
            strict: None,
            namespace: None,
        });
        assert!(matches!(flatten("b", &r), Err(Error::Unsupported(_))));
        let r = Request {
            messages: vec![Message {
                role: Role::User,
                content: vec![Part::Image(switchyard_wire::Image::Url {
                    url: "http://x/y.png".into(),
                })],
            }],
            ..Request::default()
        };
        let e = flatten("b", &r).unwrap_err().to_string();
        assert!(e.contains("image"), "{e}");
    }
}
