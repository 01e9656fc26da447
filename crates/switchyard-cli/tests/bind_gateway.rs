//! `switchyard bind` on a backend without the CLI's dialect: through a gateway started in
//! process (the stand-in CLIs call it with curl) or one already running.

#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

use switchyard_mock::{MockConfig, MockServer};

mod common;
use common::stand_in::{env_var, rec, stand_in};

const FAKE_KEY: &str = "sk-fake-chat-only-0123456789abcdef";

fn switchyard(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        // Nothing found at the default address by accident: a port nobody listens on.
        .env("SWITCHYARD_GATEWAY_URL", "http://127.0.0.1:9");
    c
}

fn run(c: &mut Command) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().expect("the binary runs");
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// Claude Code's call, as curl: a Messages request to `$ANTHROPIC_BASE_URL/v1/messages`
/// with the bound model and token, the prompt being the CLI's second argument.
const CLAUDE_CALL: &str = r#"curl -sS "$ANTHROPIC_BASE_URL/v1/messages" -H 'content-type: application/json' -H 'anthropic-version: 2023-06-01' -H "authorization: Bearer $ANTHROPIC_AUTH_TOKEN" -d "{\"model\":\"$ANTHROPIC_MODEL\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"$2\"}]}""#;

/// Codex's call, as curl: a Responses request to the bound provider's base URL and model,
/// both read from the `-c` arguments.
const CODEX_CALL: &str = r#"base=; model=
for a in "$@"; do case "$a" in
  model_providers.switchyard.base_url=*) base=$(printf '%s' "${a#*=}" | tr -d '"');;
  model=*) model=$(printf '%s' "${a#*=}" | tr -d '"');;
esac; done
curl -sS "$base/responses" -H 'content-type: application/json' -d "{\"model\":\"$model\",\"input\":\"hello codex\"}""#;

fn mock() -> MockServer {
    MockServer::start_in_thread("127.0.0.1:0".parse().unwrap(), MockConfig::default()).unwrap()
}

/// The overrides declaring `chat-only`: the mock, restricted to chat, with a key.
fn chat_only(mock: &MockServer) -> Vec<String> {
    vec![
        "backends.chat-only.from=mock".into(),
        "backends.chat-only.apis=[chat]".into(),
        format!("backends.chat-only.base_url={}", mock.base_url()),
        "backends.chat-only.api_key_env=CHAT_ONLY_KEY".into(),
        "backends.chat-only.key_required=true".into(),
    ]
}

/// Checks what the mock received: chat requests only, for `echo`, with the gateway's key.
fn assert_chat_reached_the_mock(mock: &MockServer) {
    let requests: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(requests.len(), 1, "{requests:?}");
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    let body = r.json.as_ref().expect("a JSON body");
    assert_eq!(body["model"], "echo", "{body}");
    let auth = r
        .headers
        .iter()
        .find(|(n, _)| n == "authorization")
        .map(|(_, v)| v.as_str());
    assert_eq!(auth, Some(format!("Bearer {FAKE_KEY}").as_str()));
}

/// The built-in `mock` backend restricted to chat: the gateway `bind` starts answers it
/// with a mock of its own, as `switchyard serve` does, so this works with nothing running.
#[test]
fn claude_on_the_built_in_mock_without_messages_is_answered_by_an_in_process_mock() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "claude", CLAUDE_CALL, 0);
    let (code, out, err) = run(switchyard(home.path())
        .args([
            "bind",
            "claude",
            "mock/echo",
            "backends.mock.apis=[chat]",
            "--",
            "-p",
            "hello from the built-in mock",
        ])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display())));
    assert_eq!(code, Some(0), "{out}\n{err}");
    let reply: serde_json::Value = serde_json::from_str(out.trim()).expect(&out);
    assert_eq!(
        reply["content"][0]["text"], "hello from the built-in mock",
        "{reply}"
    );
}

#[test]
fn claude_on_a_chat_only_backend_goes_through_a_gateway_started_in_process() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "claude", CLAUDE_CALL, 7);
    let mut args = vec!["bind".to_string(), "claude".into(), "chat-only/echo".into()];
    args.extend(chat_only(&mock));
    args.extend(["--".into(), "-p".into(), "hello through the gateway".into()]);
    let (code, out, err) = run(switchyard(home.path())
        .args(&args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("CHAT_ONLY_KEY", FAKE_KEY)
        .env("ANTHROPIC_API_KEY", "sk-ant-other-provider-key-0000000"));
    // The CLI's exit status, passed on once the gateway has stopped.
    assert_eq!(code, Some(7), "{out}\n{err}");
    let reply: serde_json::Value = serde_json::from_str(out.trim()).expect(&out);
    assert_eq!(reply["type"], "message", "{reply}");
    assert_eq!(reply["content"][0]["text"], "hello through the gateway");
    assert_chat_reached_the_mock(&mock);
    // One line on stderr says which gateway.
    let lines: Vec<_> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{err}");
    assert!(
        lines[0].contains("using a gateway started for this session at http://127.0.0.1:"),
        "{err}"
    );
    let env = rec(dir.path(), "env");
    let argv = rec(dir.path(), "argv");
    assert!(!env.contains(FAKE_KEY) && !argv.contains(FAKE_KEY), "{env}");
    assert_eq!(env_var(&env, "CHAT_ONLY_KEY"), None);
    assert_eq!(env_var(&env, "ANTHROPIC_API_KEY"), None);
    assert_eq!(
        env_var(&env, "ANTHROPIC_MODEL").as_deref(),
        Some("chat-only/echo")
    );
    assert_eq!(
        env_var(&env, "ANTHROPIC_AUTH_TOKEN").as_deref(),
        Some(switchyard::bind::NO_KEY_PLACEHOLDER)
    );
    assert_eq!(
        env_var(&env, "CLAUDE_CODE_MAX_CONTEXT_TOKENS").as_deref(),
        Some("32768")
    );
    assert_eq!(
        env_var(&env, "CLAUDE_CODE_ATTRIBUTION_HEADER").as_deref(),
        Some("0")
    );
    assert_eq!(argv, "-p\nhello through the gateway\n");
}

#[test]
fn codex_on_a_chat_only_backend_goes_through_a_gateway_started_in_process() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "codex", CODEX_CALL, 0);
    let mut args = vec!["bind".to_string(), "codex".into(), "chat-only/echo".into()];
    args.extend(chat_only(&mock));
    let (code, out, err) = run(switchyard(home.path())
        .args(&args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("CHAT_ONLY_KEY", FAKE_KEY));
    assert_eq!(code, Some(0), "{out}\n{err}");
    let reply: serde_json::Value = serde_json::from_str(out.trim()).expect(&out);
    assert_eq!(reply["object"], "response", "{reply}");
    let text = reply["output"][0]["content"][0]["text"].as_str();
    assert_eq!(text, Some("hello codex"), "{reply}");
    assert_chat_reached_the_mock(&mock);
    let argv = rec(dir.path(), "argv");
    assert!(argv.contains("model=\"chat-only/echo\"\n"), "{argv}");
    assert!(argv.contains("model_provider=\"switchyard\"\n"), "{argv}");
    assert!(argv.contains("wire_api=\"responses\"\n"), "{argv}");
    assert!(!argv.contains("env_key"), "{argv}");
    let env = rec(dir.path(), "env");
    assert!(!env.contains(FAKE_KEY) && !argv.contains(FAKE_KEY));
}

/// Codex's call with a developer message, as Codex sends its instructions.
const CODEX_DEVELOPER_CALL: &str = r#"base=; model=
for a in "$@"; do case "$a" in
  model_providers.switchyard.base_url=*) base=$(printf '%s' "${a#*=}" | tr -d '"');;
  model=*) model=$(printf '%s' "${a#*=}" | tr -d '"');;
esac; done
curl -sS "$base/responses" -H 'content-type: application/json' -d "{\"model\":\"$model\",\"input\":[{\"type\":\"message\",\"role\":\"developer\",\"content\":\"be brief\"},{\"type\":\"message\",\"role\":\"user\",\"content\":\"hello codex\"}]}""#;

/// A backend serving Codex's dialect whose encoding renames `developer` (as the built-in
/// `fireworks` does): Codex goes through the gateway, which sends `system` upstream, as
/// the library's own call to it would.
#[test]
fn codex_on_a_backend_with_developer_role_system_sends_system_through_the_gateway() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "codex", CODEX_DEVELOPER_CALL, 0);
    let overrides = vec![
        "backends.fw.from=mock".to_string(),
        "backends.fw.apis=[responses]".into(),
        "backends.fw.developer_role=system".into(),
        format!("backends.fw.base_url={}", mock.base_url()),
        "backends.fw.api_key_env=FW_KEY".into(),
        "backends.fw.key_required=true".into(),
    ];
    let mut args = vec!["bind".to_string(), "codex".into(), "fw/echo".into()];
    args.extend(overrides);
    let (code, out, err) = run(switchyard(home.path())
        .args(&args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("FW_KEY", FAKE_KEY));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(
        err.contains("backend `fw` has developer_role: system, which the gateway applies to what Codex sends"),
        "{err}"
    );
    let requests: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].path, "/v1/responses");
    let body = requests[0].json.as_ref().expect("a JSON body");
    assert_eq!(body["input"][0]["role"], "system", "{body}");
    assert_eq!(body["input"][1]["role"], "user", "{body}");
    assert!(!body.to_string().contains("developer"), "{body}");

    // The library's own call to the same backend sends the same messages.
    let env = switchyard::env::MapEnv::new([("FW_KEY", FAKE_KEY)]);
    let mut opts = switchyard::registry::LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = args[3..].to_vec();
    let config = switchyard::registry::Config::load(&opts).unwrap();
    let mut request = switchyard::Request::user("hello codex");
    request.messages.insert(
        0,
        switchyard::Message::text(switchyard::Role::Developer, "be brief"),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(
            switchyard::Llm::resolve(&config.registry, "fw/echo", &env)
                .unwrap()
                .complete(request),
        )
        .unwrap();
    let library = mock.requests().last().unwrap().json.clone().unwrap();
    assert_eq!(
        library["input"][0]["role"], body["input"][0]["role"],
        "{library}"
    );
    assert_eq!(
        library["input"][1]["role"], body["input"][1]["role"],
        "{library}"
    );
}

/// `switchyard serve` on a free port, returning the child and its URL once it listens.
fn serve(home: &Path, overrides: &[String]) -> (Child, String) {
    let mut child = switchyard(home)
        .args(["serve", "--listen", "127.0.0.1:0", "--no-mock"])
        .args(overrides)
        .env("CHAT_ONLY_KEY", FAKE_KEY)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line}"))
        .to_string();
    (child, url)
}

#[test]
fn a_running_gateway_is_reused_and_print_points_at_it() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let overrides = chat_only(&mock);
    let (mut gateway, url) = serve(home.path(), &overrides);

    let mut args = vec![
        "bind".to_string(),
        "claude".into(),
        "chat-only/echo".into(),
        "--print".into(),
    ];
    args.extend(overrides.clone());
    let (code, out, err) = run(switchyard(home.path())
        .args(&args)
        .env("SWITCHYARD_GATEWAY_URL", &url));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.lines()
            .any(|l| l.trim() == format!("ANTHROPIC_BASE_URL={url} \\")),
        "{out}"
    );
    assert!(out.contains("-u CHAT_ONLY_KEY \\"), "{out}");
    assert!(
        !err.contains("must") && !err.contains("none answers"),
        "{err}"
    );

    // Run for real: the stand-in's request goes through the running gateway.
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "claude", CLAUDE_CALL, 3);
    let mut args = vec!["bind".to_string(), "claude".into(), "chat-only/echo".into()];
    args.extend(overrides);
    args.extend(["--".into(), "-p".into(), "hello again".into()]);
    let (code, out, err) = run(switchyard(home.path())
        .args(&args)
        .env("SWITCHYARD_GATEWAY_URL", &url)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("CHAT_ONLY_KEY", FAKE_KEY));
    let _ = gateway.kill();
    let _ = gateway.wait();
    assert_eq!(code, Some(3), "{err}");
    assert!(
        err.contains(&format!("using the gateway at {url}")),
        "{err}"
    );
    let reply: serde_json::Value = serde_json::from_str(out.trim()).expect(&out);
    assert_eq!(reply["content"][0]["text"], "hello again");
    assert_chat_reached_the_mock(&mock);
    assert!(!rec(dir.path(), "env").contains(FAKE_KEY));
}

#[test]
fn print_without_a_running_gateway_says_to_start_one() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let mut args = vec![
        "bind".to_string(),
        "codex".into(),
        "chat-only/echo".into(),
        "--print".into(),
    ];
    args.extend(chat_only(&mock));
    let (code, out, err) = run(switchyard(home.path()).args(&args));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("-c 'model_providers.switchyard.base_url=\"http://127.0.0.1:9/v1\"' \\"),
        "{out}"
    );
    assert!(
        err.contains("none answers at http://127.0.0.1:9: start one there with `switchyard serve`"),
        "{err}"
    );
    // Without SWITCHYARD_GATEWAY_URL, the default address.
    let (code, out, _) = run(switchyard(home.path())
        .env_remove("SWITCHYARD_GATEWAY_URL")
        .args(&args));
    assert_eq!(code, Some(0));
    assert!(out.contains("http://127.0.0.1:8080/v1"), "{out}");
    assert!(mock.requests().is_empty());
}

#[test]
fn sigterm_to_bind_reaches_the_cli_and_the_gateway_stops_after_it() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    // A CLI that runs until told to stop (at most 30 s, so a failing test leaves no
    // process behind), and says how it was told.
    let body = r#"trap 'echo TERM > "$rec/signal"; exit 143' TERM
: > "$rec/ready"
i=0; while [ $i -lt 1500 ]; do sleep 0.02; i=$((i+1)); done"#;
    let bin = stand_in(dir.path(), "claude", body, 0);
    let mut args = vec!["bind".to_string(), "claude".into(), "chat-only/echo".into()];
    args.extend(chat_only(&mock));
    let mut bind = switchyard(home.path())
        .args(&args)
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("CHAT_ONLY_KEY", FAKE_KEY)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let ready = dir.path().join("rec/ready");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !ready.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the CLI never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pid = libc::pid_t::try_from(bind.id()).unwrap();
    // SAFETY: `kill` takes no pointer; `bind` is our child, not yet waited for.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(status) = bind.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "bind did not exit");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    // The CLI got the signal, and its exit status (143) is bind's.
    assert_eq!(rec(dir.path(), "signal"), "TERM\n");
    assert_eq!(status.code(), Some(143));
}
