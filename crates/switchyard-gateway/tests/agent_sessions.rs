//! Real Claude Code and Codex sessions through a gateway on 127.0.0.1:0 in front of the
//! mock: each CLI, thinking on, with its own tools, is pointed at the gateway as its users
//! point it and runs one task — write a file, `cat` it, say what it printed — against a
//! backend of its own dialect (passed through) and a chat-completions-only one
//! (translated), named by the whole reference (`up-messages/cli-agent+think`) and by a
//! client-side alias of the gateway's `models:` table (`claude-sonnet-4-5`, `gpt-5.5`).
//! The mock's `cli-agent` behaviour plays the model (`switchyard_mock::cli_agent`).
//!
//! Each session must end with the file written with the mock's content and the CLI's
//! answer quoting it; what reached the mock shows, turn by turn, the thinking the upstream
//! issued sent back to it: a verified `signature` (Messages), a verified
//! `encrypted_content` (Responses), the reasoning text (chat). The mock refuses a
//! Messages history that lost its thinking and a tampered signature, so a session that
//! dropped them fails at the turn that did.
//!
//! Needs Node and `tests/agents`'s pinned packages (`npm ci` there, which `scripts/test`
//! runs, and this test runs when they are missing). Under CI (`CI` set) a CLI that cannot
//! be installed or started fails the test; elsewhere the test says loudly why it did not
//! run.

mod common;

use common::Harness;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use switchyard_gateway::GatewayConfig;
use switchyard_mock::cli_agent::{ANSWER_PREFIX, FILE_CONTENT};
use switchyard_mock::signing::{self, Kind};
use switchyard_mock::RecordedRequest;

/// The model behind every session: the CLI's tools played as a coding agent, with signed
/// thinking in every reply.
const BEHAVIOUR: &str = "cli-agent+think";
/// How long one CLI session may take before it is killed and the test fails.
const SESSION_LIMIT: Duration = Duration::from_secs(180);

fn agents_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/agents")
}

/// A coding CLI under test.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Cli {
    Claude,
    Codex,
}

impl Cli {
    fn bin(self) -> PathBuf {
        let name = match self {
            Cli::Claude => "claude",
            Cli::Codex => "codex",
        };
        agents_dir().join("node_modules/.bin").join(name)
    }

    /// The alias a user of this CLI gives the gateway's `models:` table: a name the CLI
    /// knows, so it sends what it sends its own vendor's model.
    fn alias(self) -> &'static str {
        match self {
            Cli::Claude => "claude-sonnet-4-5",
            Cli::Codex => "gpt-5.5",
        }
    }
}

/// Whether `cli --version` runs.
fn starts(cli: Cli) -> Result<(), String> {
    let out = std::process::Command::new(cli.bin())
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", cli.bin().display()))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{} --version failed: {}",
            cli.bin().display(),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Why the CLIs cannot run here, if they cannot: packages that would not install, or a
/// CLI that does not start.
fn missing() -> Option<String> {
    if [Cli::Claude, Cli::Codex].iter().any(|c| !c.bin().exists()) {
        let dir = agents_dir();
        if let Some(why) = common::npm::ci(&dir) {
            return Some(why);
        }
    }
    [Cli::Claude, Cli::Codex]
        .into_iter()
        .find_map(|c| starts(c).err())
}

/// Whether the CLIs can run; under CI they must.
fn ready(test: &str) -> bool {
    static WHY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    match WHY.get_or_init(missing) {
        None => true,
        Some(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the coding CLIs cannot run under CI: {why}"
            );
            eprintln!("\n\n*** SKIPPED {test}: {why} ***\n\n");
            false
        }
    }
}

/// A gateway in front of a fresh mock whose `models:` table maps `alias` to `target`.
/// The backends declare a 200k-token window, as the models these CLIs are made for: on
/// the mock's own 32k, Claude Code's `max_tokens: 32000` beside its ~12k-token prompt is
/// refused before it leaves the gateway, as such a server would refuse it.
async fn gateway(alias: &str, target: &str) -> Harness {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        models: BTreeMap::from([(alias.to_string(), target.to_string())]),
        ..GatewayConfig::default()
    };
    let mock = switchyard_mock::MockServer::start().await;
    let windows: Vec<String> = common::DIALECTS
        .iter()
        .map(|d| format!("backends.up-{d}.context_window=200000"))
        .collect();
    Harness::around(mock, config, switchyard::env::MapEnv::default(), &windows).await
}

/// What a session left: the CLI's output and the file it was asked to write.
struct Session {
    stdout: String,
    stderr: String,
    file: Option<String>,
}

/// The environment a CLI starts with: nothing of this machine's but `PATH`, a home of its
/// own, and what points it at the gateway.
fn command(cli: Cli, home: &Path, work: &Path) -> tokio::process::Command {
    let mut c = tokio::process::Command::new(cli.bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TMPDIR", home)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    c
}

/// Runs one session of `cli` against the gateway at `url` with model `model`: asked to
/// write `note.txt` in a fresh directory, `cat` it and say what it printed.
async fn run(cli: Cli, url: &str, model: &str) -> Session {
    let temp = tempfile::tempdir().unwrap();
    let (home, work) = (temp.path().join("home"), temp.path().join("work"));
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    let file = work.join("note.txt");
    let prompt = format!(
        "Write the file {} with one line, then run cat on it and tell me what it printed.",
        file.display()
    );
    let mut c = command(cli, &home, &work);
    match cli {
        Cli::Claude => {
            c.env("ANTHROPIC_BASE_URL", url)
                .env("ANTHROPIC_API_KEY", "sk-switchyard-agent-test")
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .env("DISABLE_TELEMETRY", "1")
                .env("MAX_THINKING_TOKENS", "4000")
                .args(["-p", &prompt, "--model", model])
                // Root may not bypass permissions; these two tools are what the task needs.
                .args([
                    "--allowedTools",
                    "Write,Bash",
                    "--permission-mode",
                    "acceptEdits",
                ]);
        }
        Cli::Codex => {
            let codex_home = home.join(".codex");
            std::fs::create_dir_all(&codex_home).unwrap();
            std::fs::write(codex_home.join("config.toml"), codex_config(url, model)).unwrap();
            c.env("CODEX_HOME", &codex_home)
                .env("SWITCHYARD_GATEWAY_KEY", "sk-switchyard-agent-test")
                .args(["exec", "--skip-git-repo-check", &prompt]);
        }
    }
    let output = tokio::time::timeout(SESSION_LIMIT, c.output())
        .await
        .unwrap_or_else(|_| panic!("{cli:?} → {model}: no end after {SESSION_LIMIT:?}"))
        .unwrap_or_else(|e| panic!("{cli:?} does not start: {e}"));
    let session = Session {
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        file: std::fs::read_to_string(&file).ok(),
    };
    assert!(
        output.status.success(),
        "{cli:?} → {model} failed ({}):\n{}\n{}",
        output.status,
        session.stdout,
        session.stderr
    );
    session
}

/// Codex's `config.toml`: the gateway as a Responses provider, thinking on, free to write
/// files and run commands without asking, and nothing else reached: without the last two
/// tables Codex looks up `github.com` and `chatgpt.com` (its plugins, its analytics).
fn codex_config(url: &str, model: &str) -> String {
    format!(
        r#"model = "{model}"
model_provider = "switchyard"
model_reasoning_effort = "high"
approval_policy = "never"
sandbox_mode = "danger-full-access"
web_search = "disabled"
check_for_update_on_startup = false

[model_providers.switchyard]
name = "Switchyard gateway"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "SWITCHYARD_GATEWAY_KEY"

[analytics]
enabled = false

[features]
plugins = false
"#
    )
}

/// The model calls that reached the mock, in order.
fn model_calls(h: &Harness) -> Vec<Value> {
    h.mock
        .requests()
        .into_iter()
        .filter(|r: &RecordedRequest| r.method == "POST" && !r.path.ends_with("count_tokens"))
        .map(|r| r.json.unwrap_or_else(|| panic!("{} sent no JSON", r.path)))
        .collect()
}

/// The thinking each earlier turn's reply carried, as it reached the upstream in `body`
/// (the upstream's dialect `upstream`): verified signatures (Messages), verified
/// encrypted reasoning (Responses), reasoning texts (chat).
fn thinking_sent_back(upstream: &str, body: &Value) -> Vec<String> {
    let empty = Vec::new();
    match upstream {
        "messages" => body["messages"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter(|m| m["role"] == "assistant")
            .flat_map(|m| m["content"].as_array().unwrap_or(&empty).iter())
            .filter(|b| b["type"] == "thinking")
            .map(|b| {
                let text = b["thinking"].as_str().unwrap_or_default();
                let signature = b["signature"].as_str().unwrap_or_default();
                assert!(
                    signing::verify_thinking(text, signature),
                    "a thinking block's signature does not verify: {b}"
                );
                text.to_string()
            })
            .collect(),
        "responses" => body["input"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter(|i| i["type"] == "reasoning")
            .map(|i| {
                let sealed = i["encrypted_content"].as_str().unwrap_or_default();
                assert!(
                    signing::verify_unbound(Kind::EncryptedContent, sealed),
                    "a reasoning item's encrypted_content does not verify: {i}"
                );
                i["summary"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect(),
        _ => body["messages"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter(|m| m["role"] == "assistant")
            .filter_map(|m| m["reasoning_content"].as_str().map(str::to_string))
            .collect(),
    }
}

/// The tools the model called in the earlier turns, as `body` (in the upstream's dialect
/// `upstream`) sends the calls back.
fn tools_called(upstream: &str, body: &Value) -> Vec<String> {
    let empty = Vec::new();
    let name = |v: &Value| v.as_str().unwrap_or_default().to_string();
    match upstream {
        "messages" => body["messages"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .flat_map(|m| m["content"].as_array().unwrap_or(&empty).iter())
            .filter(|b| b["type"] == "tool_use")
            .map(|b| name(&b["name"]))
            .collect(),
        "responses" => body["input"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .filter(|i| i["type"] == "function_call" || i["type"] == "custom_tool_call")
            .map(|i| name(&i["name"]))
            .collect(),
        _ => body["messages"]
            .as_array()
            .unwrap_or(&empty)
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().unwrap_or(&empty).iter())
            .map(|c| name(&c["function"]["name"]))
            .collect(),
    }
}

/// The fields of a request that carry state between turns, for the log.
fn stateful_fields(body: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for key in [
        "store",
        "previous_response_id",
        "include",
        "thread",
        "context_management",
        "thinking",
        "reasoning",
        "reasoning_effort",
        "conversation",
    ] {
        if let Some(v) = body.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    let refs = body.to_string().matches("\"item_reference\"").count();
    out.insert("item_references".into(), refs.into());
    Value::Object(out)
}

/// One session of `cli` through the gateway to the backend `upstream` (`up-<upstream>`),
/// named by the whole reference and by the CLI's alias: the file written, the answer
/// quoting it, three upstream turns, and each turn's thinking sent back on the next.
async fn sessions(cli: Cli, upstream: &str) {
    let reference = format!("up-{upstream}/{BEHAVIOUR}");
    for model in [reference.as_str(), cli.alias()] {
        let h = gateway(cli.alias(), &reference).await;
        let case = format!("{cli:?} → {model} → {upstream}");
        let session = run(cli, &h.url, model).await;
        assert_eq!(
            session.file.as_deref(),
            Some(FILE_CONTENT),
            "{case}: the file\n{}\n{}",
            session.stdout,
            session.stderr
        );
        // The answer quotes the command's output as the CLI gave it back (Codex's
        // `exec_command` heads it with its own lines).
        let answer = session.stdout.split_once(ANSWER_PREFIX).map(|(_, a)| a);
        assert!(
            answer.is_some_and(|a| a.contains(FILE_CONTENT.trim_end())),
            "{case}: the answer\n{}\n{}",
            session.stdout,
            session.stderr
        );

        let calls = model_calls(&h);
        for (i, body) in calls.iter().enumerate() {
            eprintln!("{case}: turn {}: {}", i + 1, stateful_fields(body));
        }
        assert_eq!(calls.len(), 3, "{case}: write, cat, answer");
        // The CLI's own tools: Claude Code's `Write` and `Bash`; Codex's `apply_patch`
        // where it knows the model (the alias names one of its own), else its shell.
        let used = match (cli, model == cli.alias()) {
            (Cli::Claude, _) => ["Write", "Bash"],
            (Cli::Codex, true) => ["apply_patch", "exec_command"],
            (Cli::Codex, false) => ["exec_command", "exec_command"],
        };
        assert_eq!(tools_called(upstream, &calls[2]), used, "{case}");
        for (turn, body) in calls.iter().enumerate() {
            let back = thinking_sent_back(upstream, body);
            assert_eq!(
                back.len(),
                turn,
                "{case}: turn {} carries the thinking of each turn before it: {back:?}",
                turn + 1
            );
            if let Some(first) = back.first() {
                assert!(first.starts_with("I will use "), "{case}: {back:?}");
            }
            if upstream == "messages" {
                // Passed through: thinking asked for as Claude Code asks for it (adaptive
                // for a model it does not know, a budget for one it does).
                let kind = &body["thinking"]["type"];
                assert!(kind == "adaptive" || kind == "enabled", "{case}: {kind}");
            }
            if upstream == "responses" {
                // Codex keeps its own history: no stored response is asked for or named;
                // the reasoning comes back whole, sealed, in every request.
                assert_eq!(body["store"], false, "{case}");
                assert!(body.get("previous_response_id").is_none(), "{case}");
                assert_eq!(stateful_fields(body)["item_references"], 0, "{case}");
                assert!(
                    body["include"]
                        .as_array()
                        .is_some_and(|i| i.contains(&"reasoning.encrypted_content".into())),
                    "{case}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_through_the_gateway_to_a_messages_backend() {
    if ready("claude_code_through_the_gateway_to_a_messages_backend") {
        sessions(Cli::Claude, "messages").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_through_the_gateway_to_a_chat_backend() {
    if ready("claude_code_through_the_gateway_to_a_chat_backend") {
        sessions(Cli::Claude, "chat").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_through_the_gateway_to_a_responses_backend() {
    if ready("codex_through_the_gateway_to_a_responses_backend") {
        sessions(Cli::Codex, "responses").await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_through_the_gateway_to_a_chat_backend() {
    if ready("codex_through_the_gateway_to_a_chat_backend") {
        sessions(Cli::Codex, "chat").await;
    }
}
