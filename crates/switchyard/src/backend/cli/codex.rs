//! `kind: codex`: one `codex exec --json` run per call, with its own empty config home (no
//! `config.toml`, so no MCP servers, profiles or instructions of the user's), a read-only
//! sandbox, from a fresh empty directory.
//!
//! The run prints JSON events, one per line: `thread.started{thread_id}`,
//! `item.completed{item}` (the last `agent_message` item is the reply),
//! `turn.completed{usage}` (the only usage; cached tokens are part of input), and on
//! failure `turn.failed{error:{message}}` or `error{message}`. Codex also reports a
//! transient problem it recovered from as an `error` event, so an error followed by a
//! completed turn is not a failure.
//!
//! Authentication: Codex reads `CODEX_API_KEY` (or `OPENAI_API_KEY`) from the inherited
//! environment; a ChatGPT login's `auth.json` in the user's Codex home
//! (`$CODEX_HOME`, else `~/.codex`) is linked, not copied, into the empty home, so a
//! refreshed token lands in the user's file.

use super::process::{self, Invocation, Scratch};
use super::{exited, flatten, malformed, CliConfig};
use crate::backend::{Backend, Call};
use crate::env::EnvSource;
use crate::error::{Error, ProviderDetails, Result};
use crate::internal::classify;
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;
use std::ffi::OsString;
use std::path::PathBuf;
use switchyard_wire::{FinishReason, Part, Reply, Thinking, Usage};

/// Calls a model through Codex.
pub struct CodexBackend {
    config: CliConfig,
    auth_file: Option<PathBuf>,
}

impl CodexBackend {
    /// A backend running `config.program`, without the user's Codex login.
    pub fn new(config: CliConfig) -> Self {
        CodexBackend {
            config,
            auth_file: None,
        }
    }

    /// Links the user's Codex login (`auth.json` in `$CODEX_HOME`, else `~/.codex`, read
    /// from `env`) into each run's empty home, when there is one.
    pub fn with_user_login(mut self, env: &dyn EnvSource) -> Self {
        let home = env
            .var("CODEX_HOME")
            .map(PathBuf::from)
            .or_else(|| env.var("HOME").map(|h| PathBuf::from(h).join(".codex")));
        self.auth_file = home.map(|h| h.join("auth.json")).filter(|p| p.is_file());
        self
    }

    /// The arguments and standard input of a run for `call` (`CODEX_HOME` is added when
    /// the run's home exists).
    pub fn invocation(&self, call: &Call) -> Result<Invocation> {
        let prompt = flatten(&self.config.name, &call.request)?;
        let mut args: Vec<OsString> = self.config.leading_args.iter().map(Into::into).collect();
        args.extend(
            [
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--sandbox",
                "read-only",
                "-m",
                call.model.as_str(),
                // The home is empty already; this also clears servers a future default
                // might add.
                "-c",
                "mcp_servers={}",
                // Read the prompt from standard input.
                "-",
            ]
            .map(OsString::from),
        );
        // A role's `effort` (the request's reasoning effort) as Codex's own setting, placed
        // before the `-` that ends the arguments.
        if let Some(effort) = effort_of(call) {
            let dash = args.pop();
            args.push("-c".into());
            args.push(format!("model_reasoning_effort=\"{effort}\"").into());
            args.extend(dash);
        }
        Ok(Invocation {
            backend: self.config.name.clone(),
            program: self.config.program.clone(),
            args,
            env: self.config.child_env(Vec::new(), &[]),
            env_remove: Vec::new(),
            // Codex has no system prompt flag: instructions go in front of the task.
            stdin: prompt.with_instructions_inline(),
            timeout: self.config.timeout,
        })
    }

    fn prepare_home(&self, scratch: &Scratch) -> Result<PathBuf> {
        let home = scratch.subdir(&self.config.name, "codex-home")?;
        #[cfg(unix)]
        if let Some(auth) = &self.auth_file {
            // A failed link leaves Codex without the login; it then says so itself.
            let _ = std::os::unix::fs::symlink(auth, home.join("auth.json"));
        }
        Ok(home)
    }
}

#[async_trait]
impl Backend for CodexBackend {
    fn name(&self) -> &str {
        &self.config.name
    }

    async fn complete(&self, call: &Call) -> Result<Reply> {
        let mut invocation = self.invocation(call)?;
        let scratch = Scratch::new(&self.config.name)?;
        let home = self.prepare_home(&scratch)?;
        invocation
            .env
            .push(("CODEX_HOME".into(), home.into_os_string()));
        let finished = process::run(&invocation, &scratch.work()).await?;
        drop(scratch);
        let program = self.config.program.display().to_string();
        parse_events(&self.config.name, &call.model, &program, &finished)
    }
}

/// What the events of one run said.
#[derive(Default)]
struct Events {
    any: bool,
    thread_id: Option<String>,
    message: Option<String>,
    reasoning: Vec<String>,
    usage: Option<Usage>,
    completed: bool,
    failure: Option<String>,
}

/// Reads a run's JSONL output: the reply, or the typed error it reports.
pub fn parse_events(
    backend: &str,
    model: &str,
    program: &str,
    finished: &process::Finished,
) -> Result<Reply> {
    let raw = &finished.stdout;
    let text = String::from_utf8_lossy(raw);
    let mut ev = Events::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            if !ev.any && !finished.success() {
                return Err(exited(backend, program, finished));
            }
            return Err(malformed(
                backend,
                program,
                &format!("line {} of the output is not a JSON event", n + 1),
                raw,
            ));
        };
        ev.any = true;
        let str_at = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        match v.get("type").and_then(Value::as_str).unwrap_or("") {
            "thread.started" => ev.thread_id = str_at(&v, "thread_id"),
            "item.completed" => {
                let item = v.get("item").unwrap_or(&Value::Null);
                match item.get("type").and_then(Value::as_str) {
                    Some("agent_message") => ev.message = str_at(item, "text"),
                    Some("reasoning") => ev.reasoning.extend(str_at(item, "text")),
                    _ => {}
                }
            }
            "turn.completed" => {
                ev.completed = true;
                ev.failure = None;
                ev.usage = v.get("usage").and_then(usage_of);
            }
            "turn.failed" => {
                ev.completed = false;
                ev.failure = Some(
                    v.get("error")
                        .and_then(|e| str_at(e, "message"))
                        .unwrap_or_else(|| "the turn failed without a message".into()),
                );
            }
            "error" => {
                ev.failure = Some(
                    str_at(&v, "message").unwrap_or_else(|| "an error without a message".into()),
                )
            }
            _ => {}
        }
    }
    if let Some(message) = ev.failure {
        return Err(error_of(backend, &message, raw));
    }
    if !ev.any {
        if !finished.success() {
            return Err(exited(backend, program, finished));
        }
        return Err(malformed(
            backend,
            program,
            "the output holds no Codex JSON event",
            raw,
        ));
    }
    if !ev.completed {
        if !finished.success() {
            return Err(exited(backend, program, finished));
        }
        return Err(malformed(
            backend,
            program,
            "the events end without `turn.completed`",
            raw,
        ));
    }
    let Some(message) = ev.message else {
        return Err(malformed(
            backend,
            program,
            "the turn completed without an `agent_message` item",
            raw,
        ));
    };
    let mut content = Vec::new();
    if !ev.reasoning.is_empty() {
        content.push(Part::Thinking(Thinking {
            text: ev.reasoning.join("\n\n"),
            ..Thinking::default()
        }));
    }
    content.push(Part::text(message));
    Ok(Reply {
        content,
        finish: FinishReason::Stop,
        finish_raw: None,
        usage: ev.usage,
        model: Some(model.to_string()),
        id: ev.thread_id,
        raw: Bytes::copy_from_slice(raw),
    })
}

/// Codex usage to canonical: cached tokens (and cache writes) are already inside
/// `input_tokens`, reasoning inside `output_tokens`.
fn usage_of(u: &Value) -> Option<Usage> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input: u.get("input_tokens").and_then(Value::as_u64)?,
        cached_input: n("cached_input_tokens"),
        cache_write: n("cache_write_input_tokens"),
        output: u.get("output_tokens").and_then(Value::as_u64)?,
        reasoning: n("reasoning_output_tokens"),
    })
}

/// Codex's error codes, as they appear inside its messages.
const CODES: &[&str] = &[
    "context_length_exceeded",
    "insufficient_quota",
    "usage_not_included",
    "rate_limit_exceeded",
    "server_is_overloaded",
    "slow_down",
];

/// The typed error of a failure message: the HTTP status and error code it quotes
/// (`unexpected status 429 Too Many Requests: {...}`), read by the usual rules.
fn error_of(backend: &str, message: &str, raw: &[u8]) -> Error {
    let lower = message.to_ascii_lowercase();
    let envelope = message
        .find('{')
        .map(|at| classify::read_error_body(&message.as_bytes()[at..]))
        .unwrap_or_default();
    let mut code = envelope.code.clone().or_else(|| {
        CODES
            .iter()
            .find(|c| lower.contains(*c))
            .map(|c| c.to_string())
    });
    if code.is_none() && lower.contains("context window") {
        code = Some("context_length_exceeded".into());
    }
    if code.is_none() && (lower.contains("quota exceeded") || lower.contains("usage limit")) {
        code = Some("insufficient_quota".into());
    }
    let status = quoted_status(&lower);
    let mut details = ProviderDetails {
        backend: backend.to_string(),
        status: status.unwrap_or(0),
        request_id: envelope.request_id,
        kind: envelope.kind,
        code,
        message: message.to_string(),
        headers: Vec::new(),
        body: Bytes::copy_from_slice(raw),
    };
    if matches!(
        details.code.as_deref(),
        Some("server_is_overloaded") | Some("slow_down")
    ) {
        return Error::Overloaded(Box::new(details));
    }
    if details.status == 0 && details.kind.is_none() {
        details.kind = Some("codex_error".into());
    }
    classify::classify(details)
}

/// The HTTP status a message quotes after `status` (`unexpected status 401`,
/// `last status: 429`).
fn quoted_status(lower: &str) -> Option<u16> {
    let at = lower.find("status")? + "status".len();
    let rest = lower[at..].trim_start_matches([':', ' ']);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    match digits.parse::<u16>() {
        Ok(s) if (100..600).contains(&s) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn run(stdout: &str, code: i32) -> Result<Reply> {
        let f = process::Finished {
            code: Some(code),
            stdout: stdout.as_bytes().to_vec(),
            stderr: b"boom".to_vec(),
        };
        parse_events("codex", "gpt-5", "codex", &f)
    }

    const OK: &str = r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Answering**"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"first"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"Paris."}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122,"reasoning_output_tokens":64}}
"#;

    #[test]
    fn the_last_agent_message_is_the_reply() {
        let r = run(OK, 0).unwrap();
        assert_eq!(r.text(), "Paris.");
        assert_eq!(r.thinking(), "**Answering**");
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 24763,
                cached_input: 24448,
                cache_write: 0,
                output: 122,
                reasoning: 64
            })
        );
        assert_eq!(
            r.id.as_deref(),
            Some("0199a213-81c0-7800-8aa1-bbab2a035a53")
        );
    }

    #[test]
    fn failures_are_typed() {
        let failed = |msg: &str| {
            let out = format!(
                "{{\"type\":\"thread.started\",\"thread_id\":\"t\"}}\n{{\"type\":\"turn.started\"}}\n{{\"type\":\"error\",\"message\":{m}}}\n{{\"type\":\"turn.failed\",\"error\":{{\"message\":{m}}}}}\n",
                m = serde_json::to_string(msg).unwrap()
            );
            run(&out, 1).unwrap_err()
        };
        assert_eq!(
            failed("exceeded retry limit, last status: 429 Too Many Requests").kind(),
            ErrorKind::RateLimited
        );
        assert_eq!(
            failed("unexpected status 401 Unauthorized: {\"error\":{\"message\":\"bad key\"}}")
                .kind(),
            ErrorKind::Auth
        );
        assert_eq!(
            failed("Codex ran out of room in the model's context window. Start a new thread.")
                .kind(),
            ErrorKind::ContextLengthExceeded
        );
        assert_eq!(
            failed("Quota exceeded. Check your plan and billing details.").kind(),
            ErrorKind::ProviderQuotaExhausted
        );
    }

    #[test]
    fn a_recovered_error_is_not_a_failure() {
        let out = OK.replace(
            "{\"type\":\"turn.started\"}\n",
            "{\"type\":\"turn.started\"}\n{\"type\":\"error\",\"message\":\"Reconnecting... 1/5\"}\n",
        );
        assert_eq!(run(&out, 0).unwrap().text(), "Paris.");
    }

    #[test]
    fn broken_outputs_are_malformed_or_exits() {
        assert_eq!(
            run("Not JSON at all\n", 0).unwrap_err().kind(),
            ErrorKind::ProviderReplyMalformed
        );
        assert_eq!(
            run("", 0).unwrap_err().kind(),
            ErrorKind::ProviderReplyMalformed
        );
        let e = run("", 2).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Provider);
        assert!(e.to_string().contains("exit status 2"), "{e}");
        assert!(e.to_string().contains("boom"), "{e}");
        let no_message =
            "{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}\n";
        let e = run(no_message, 0).unwrap_err();
        assert!(e.to_string().contains("agent_message"), "{e}");
    }
}

/// The reasoning effort a call asks for, if any (`none` asks for none).
pub(crate) fn effort_of(call: &Call) -> Option<&str> {
    call.request
        .reasoning
        .as_ref()
        .and_then(|r| r.effort.as_deref())
        .filter(|e| !e.is_empty())
}

#[cfg(test)]
mod effort_tests {
    use super::*;

    #[test]
    fn effort_becomes_model_reasoning_effort() {
        let backend = CodexBackend::new(CliConfig {
            name: "codex".into(),
            program: "codex".into(),
            leading_args: Vec::new(),
            timeout: None,
            env: Vec::new(),
        });
        let mut request = switchyard_wire::Request::user("hi");
        request.reasoning = Some(switchyard_wire::Reasoning {
            effort: Some("high".into()),
            ..Default::default()
        });
        let call = Call::new("gpt-5", request);
        let args: Vec<String> = backend
            .invocation(&call)
            .unwrap()
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let n = args.len();
        assert_eq!(
            args[n - 3..],
            ["-c", "model_reasoning_effort=\"high\"", "-"]
        );
    }
}
