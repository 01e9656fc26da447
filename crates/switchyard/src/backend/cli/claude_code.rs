//! `kind: claude-code`: one `claude -p --output-format json` run per call, with every tool,
//! MCP server, settings file and slash command off, from a fresh empty directory.
//!
//! The run prints one result object (`type: "result"`): `result` is the reply's text,
//! `usage` its tokens (Anthropic's meaning: cache reads and writes apart from
//! `input_tokens`), `session_id` its id, and on failure `is_error` with `subtype` and
//! `api_error_status` (the HTTP status Claude Code got from the API, if any).
//!
//! A streamed call runs `--output-format stream-json --verbose --include-partial-messages`
//! instead, read line by line as Claude Code writes it (`claude_stream.rs`): the text as it
//! is generated, then the same result object.

use super::claude_stream::{self, StreamJson};
use super::process::{self, Invocation, Scratch};
use super::{exited, flatten, malformed, output_stream, CliConfig, MAX_SYSTEM_ARG};
use crate::backend::{Backend, Call};
use crate::error::{Error, ProviderDetails, Result};
use crate::internal::classify;
use crate::reply_stream::ReplyStream;
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::Value;
use std::ffi::OsString;
use switchyard_wire::{FinishReason, Part, Reply, Usage};

/// Calls a model through Claude Code.
pub struct ClaudeCodeBackend {
    config: CliConfig,
}

/// The environment of a run: no nonessential traffic, and a role's `effort` (or thinking
/// budget) as Claude Code's `MAX_THINKING_TOKENS`, with the budgets the Messages dialect
/// uses for each effort level.
fn thinking_env(call: &Call) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![(
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".into(),
        "1".into(),
    )];
    let budget = call.request.reasoning.as_ref().and_then(|r| {
        r.budget_tokens.or_else(|| match r.effort.as_deref() {
            None | Some("") | Some("none") => None,
            Some(e) => Some(switchyard_wire::dialect::messages::request::effort_budget(
                e,
            )),
        })
    });
    if let Some(b) = budget {
        env.push(("MAX_THINKING_TOKENS".into(), b.to_string().into()));
    }
    env
}

impl ClaudeCodeBackend {
    /// A backend running `config.program`.
    pub fn new(config: CliConfig) -> Self {
        ClaudeCodeBackend { config }
    }

    /// The arguments and standard input of a run for `call`, printing its whole result.
    pub fn invocation(&self, call: &Call) -> Result<Invocation> {
        self.invocation_printing(call, &["--output-format", "json"])
    }

    /// The arguments and standard input of a streamed run for `call`: stream-json lines
    /// (which `-p` prints only with `--verbose`), the model's text deltas among them.
    pub fn stream_invocation(&self, call: &Call) -> Result<Invocation> {
        self.invocation_printing(
            call,
            &[
                "--output-format",
                "stream-json",
                "--verbose",
                "--include-partial-messages",
            ],
        )
    }

    fn invocation_printing(&self, call: &Call, output: &[&str]) -> Result<Invocation> {
        let prompt = flatten(&self.config.name, &call.request)?;
        let mut args: Vec<OsString> = self.config.leading_args.iter().map(Into::into).collect();
        args.push("-p".into());
        args.extend(output.iter().map(OsString::from));
        args.extend(
            [
                "--model",
                call.model.as_str(),
                // No built-in tools, no MCP server but the (empty) set given here, no
                // settings file (hooks, permissions, env) and no slash commands or skills.
                "--tools",
                "",
                "--strict-mcp-config",
                "--mcp-config",
                r#"{"mcpServers":{}}"#,
                "--setting-sources",
                "",
                "--disable-slash-commands",
                "--no-session-persistence",
            ]
            .map(OsString::from),
        );
        let stdin = match &prompt.system {
            Some(system) if system.len() <= MAX_SYSTEM_ARG => {
                args.push("--system-prompt".into());
                args.push(system.into());
                prompt.text.clone()
            }
            Some(_) => prompt.with_instructions_inline(),
            None => prompt.text.clone(),
        };
        // Set inside a Claude Code session; a nested `claude` would refuse to start.
        let removed: Vec<OsString> = vec!["CLAUDECODE".into()];
        Ok(Invocation {
            backend: self.config.name.clone(),
            program: self.config.program.clone(),
            args,
            env: self.config.child_env(thinking_env(call), &removed),
            env_remove: removed,
            stdin,
            timeout: self.config.timeout,
        })
    }
}

#[async_trait]
impl Backend for ClaudeCodeBackend {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn reported_cost(&self, raw: &[u8]) -> Option<f64> {
        reported_cost(raw)
    }

    async fn complete(&self, call: &Call) -> Result<Reply> {
        let invocation = self.invocation(call)?;
        let scratch = Scratch::new(&self.config.name)?;
        let finished = process::run(&invocation, &scratch.work()).await?;
        drop(scratch);
        let program = self.config.program.display().to_string();
        match find_result(&finished.stdout) {
            Some(result) => parse_result(&self.config.name, &call.model, &result, &finished.stdout),
            None if !finished.success() => Err(exited(&self.config.name, &program, &finished)),
            None => Err(malformed(
                &self.config.name,
                &program,
                "the output is not Claude Code's JSON result (an object with `type: \"result\"`)",
                &finished.stdout,
            )),
        }
    }

    /// Runs Claude Code printing stream-json and hands out its text as it is written.
    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        let invocation = self.stream_invocation(call)?;
        let scratch = Scratch::new(&self.config.name)?;
        let output = output_stream::stream(&invocation, scratch)?;
        let program = self.config.program.display().to_string();
        let decoder = StreamJson::new(&self.config.name, &call.model, &program);
        Ok(claude_stream::reply_stream(decoder, output))
    }
}

/// The result object in the output: the whole output, or else its last line that is one
/// (in case something printed a line before it; the last line of stream-json output).
pub(crate) fn find_result(stdout: &[u8]) -> Option<Value> {
    let is_result = |v: &Value| v.get("type").and_then(Value::as_str) == Some("result");
    if let Ok(v) = serde_json::from_slice::<Value>(stdout) {
        return is_result(&v).then_some(v);
    }
    let text = String::from_utf8_lossy(stdout);
    text.lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(is_result))
}

/// Claude Code's own cost figure (`total_cost_usd`, from Anthropic's price table) in a
/// reply's raw bytes, when it is there.
pub fn reported_cost(raw: &[u8]) -> Option<f64> {
    find_result(raw)?.get("total_cost_usd")?.as_f64()
}

/// Reads a result object: a reply, or the typed error it reports.
pub fn parse_result(backend: &str, model: &str, v: &Value, raw: &[u8]) -> Result<Reply> {
    if v.get("is_error").and_then(Value::as_bool) == Some(true) {
        return Err(error_of(backend, v, raw));
    }
    let subtype = v
        .get("subtype")
        .and_then(Value::as_str)
        .unwrap_or("success");
    if subtype != "success" {
        return Err(error_of(backend, v, raw));
    }
    let Some(text) = v.get("result").and_then(Value::as_str) else {
        return Err(malformed(
            backend,
            "claude",
            "the result object has no `result` text",
            raw,
        ));
    };
    let stop = v.get("stop_reason").and_then(Value::as_str);
    Ok(Reply {
        content: vec![Part::text(text)],
        finish: match stop {
            None | Some("end_turn") | Some("stop_sequence") => FinishReason::Stop,
            Some("max_tokens") | Some("model_context_window_exceeded") => FinishReason::Length,
            Some("refusal") => FinishReason::ContentFilter,
            Some(_) => FinishReason::Other,
        },
        finish_raw: stop.map(str::to_string),
        usage: v.get("usage").and_then(usage_of),
        model: Some(model_of(v).unwrap_or_else(|| model.to_string())),
        id: v
            .get("session_id")
            .and_then(Value::as_str)
            .map(str::to_string),
        raw: Bytes::copy_from_slice(raw),
    })
}

/// Anthropic usage to canonical: cache reads and writes are added to `input`.
fn usage_of(u: &Value) -> Option<Usage> {
    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
    let input = u.get("input_tokens").and_then(Value::as_u64)?;
    let output = u.get("output_tokens").and_then(Value::as_u64)?;
    let read = n("cache_read_input_tokens");
    let write = n("cache_creation_input_tokens");
    Some(Usage {
        input: input + read + write,
        cached_input: read,
        cache_write: write,
        output,
        reasoning: 0,
    })
}

/// The model that wrote most of the output, from `modelUsage` (Claude Code may also use a
/// small model for side tasks).
fn model_of(v: &Value) -> Option<String> {
    let models = v.get("modelUsage")?.as_object()?;
    models
        .iter()
        .max_by_key(|(_, u)| u.get("outputTokens").and_then(Value::as_u64).unwrap_or(0))
        .map(|(name, _)| name.clone())
}

/// The typed error of a failed run.
fn error_of(backend: &str, v: &Value, raw: &[u8]) -> Error {
    let subtype = v
        .get("subtype")
        .and_then(Value::as_str)
        .unwrap_or("success")
        .to_string();
    let text = v
        .get("result")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            // Error subtypes carry their messages in `errors` in recent versions.
            let errors: Vec<&str> = v
                .get("errors")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .collect();
            (!errors.is_empty()).then(|| errors.join("; "))
        })
        .unwrap_or_default();
    // "API Error: 429 {"type":"error","error":{...}}": read the provider's envelope.
    let envelope = text
        .find('{')
        .map(|at| classify::read_error_body(&text.as_bytes()[at..]))
        .unwrap_or_default();
    let status = v
        .get("api_error_status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok());
    let mut details = ProviderDetails {
        backend: backend.to_string(),
        status: status.unwrap_or(0),
        request_id: envelope.request_id,
        kind: envelope.kind,
        code: envelope.code,
        message: envelope.message.unwrap_or_else(|| text.clone()),
        headers: Vec::new(),
        body: Bytes::copy_from_slice(raw),
    };
    if status.is_some() {
        return classify::classify(details);
    }
    let turns = v.get("num_turns").and_then(Value::as_u64).unwrap_or(0);
    match subtype.as_str() {
        "error_max_turns" => {
            details.kind = Some(subtype);
            details.message = format!(
                "Claude Code stopped at its turn limit after {turns} turn(s) without a final answer"
            );
            Error::Provider(Box::new(details))
        }
        "error_max_budget_usd" => {
            details.kind = Some(subtype);
            details.message = "Claude Code stopped at its spending limit (--max-budget-usd)".into();
            Error::Provider(Box::new(details))
        }
        // `error_during_execution`, or `success` with `is_error` (a login or credit message).
        _ => {
            if details.kind.is_none() {
                details.kind = Some(subtype);
            }
            if details.message.is_empty() {
                details.message = "Claude Code reported an error without a message".into();
            }
            let lower = details.message.to_ascii_lowercase();
            if lower.contains("invalid api key")
                || lower.contains("/login")
                || lower.contains("oauth token")
            {
                return Error::Auth(Box::new(details));
            }
            classify::classify(details)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn parse(json: &str) -> Result<Reply> {
        let v: Value = serde_json::from_str(json).unwrap();
        parse_result("claude-code", "claude-opus-4-5", &v, json.as_bytes())
    }

    #[test]
    fn a_success_gives_text_usage_and_session() {
        let json = r#"{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":2100,"duration_api_ms":1900,"num_turns":1,"result":"Paris.","stop_reason":"end_turn","session_id":"5f1c","total_cost_usd":0.0123,"usage":{"input_tokens":12,"cache_creation_input_tokens":100,"cache_read_input_tokens":2000,"output_tokens":5},"modelUsage":{"claude-haiku-4-5":{"inputTokens":40,"outputTokens":1},"claude-opus-4-5":{"inputTokens":12,"outputTokens":5,"costUSD":0.012}},"permission_denials":[],"uuid":"u1"}"#;
        let r = parse(json).unwrap();
        assert_eq!(r.text(), "Paris.");
        assert_eq!(
            r.usage,
            Some(Usage {
                input: 2112,
                cached_input: 2000,
                cache_write: 100,
                output: 5,
                reasoning: 0
            })
        );
        assert_eq!(r.id.as_deref(), Some("5f1c"));
        assert_eq!(r.model.as_deref(), Some("claude-opus-4-5"));
        assert_eq!(reported_cost(&r.raw), Some(0.0123));
    }

    #[test]
    fn api_errors_are_typed() {
        let e = |status: u16, msg: &str| {
            let json = serde_json::json!({"type":"result","subtype":"success","is_error":true,
                "api_error_status":status,"result":msg,"session_id":"s"})
            .to_string();
            parse(&json).unwrap_err()
        };
        assert_eq!(e(429, "API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}").kind(), ErrorKind::RateLimited);
        assert_eq!(
            e(529, "API Error: Overloaded").kind(),
            ErrorKind::Overloaded
        );
        let ctx = e(400, "API Error: 400 {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"prompt is too long: 219898 tokens > 200000 maximum\"}}");
        match ctx {
            Error::ContextLengthExceeded {
                prompt_tokens,
                limit,
                ..
            } => assert_eq!((prompt_tokens, limit), (Some(219898), Some(200000))),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn max_turns_and_login_errors() {
        let e = parse(r#"{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"session_id":"s"}"#).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Provider);
        assert!(e.to_string().contains("turn limit after 3"), "{e}");
        let e = parse(r#"{"type":"result","subtype":"success","is_error":true,"result":"Invalid API key · Please run /login","session_id":"s"}"#).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth);
    }
}

#[cfg(test)]
mod effort_tests {
    use super::*;

    fn env_of(effort: Option<&str>, budget: Option<u64>) -> Vec<(String, String)> {
        let mut request = switchyard_wire::Request::user("hi");
        request.reasoning = Some(switchyard_wire::Reasoning {
            effort: effort.map(str::to_string),
            budget_tokens: budget,
            ..Default::default()
        });
        let call = Call::new("opus", request);
        thinking_env(&call)
            .into_iter()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.to_string_lossy().into_owned(),
                )
            })
            .collect()
    }

    #[test]
    fn effort_becomes_max_thinking_tokens() {
        let has = |env: &[(String, String)], v: &str| {
            env.iter()
                .any(|(k, val)| k == "MAX_THINKING_TOKENS" && val == v)
        };
        assert!(has(&env_of(Some("high"), None), "16384"));
        assert!(has(&env_of(Some("high"), Some(3000)), "3000"));
        assert!(!env_of(Some("none"), None)
            .iter()
            .any(|(k, _)| k == "MAX_THINKING_TOKENS"));
    }
}
