//! `switchyard bind`, `backends check` and `backends shell`, run as the built binary in a
//! clean environment, with stand-in `claude` and `codex` scripts and the mock provider.

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Output};

use switchyard_mock::{MockConfig, MockServer};

mod common;
use common::stand_in::{env_var, rec, stand_in};

/// What the stand-ins of these tests print.
const RAN: &str = "echo 'stand-in ran'";

const FAKE_KEY: &str = "sk-fake-deepseek-0123456789abcdef";

/// A command with an empty environment except PATH, HOME and XDG_CONFIG_HOME in `home`.
fn switchyard(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"));
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

#[test]
fn bind_print_claude_on_a_keyed_hosted_backend_names_the_variable_and_pastes() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(switchyard(home.path())
        .args([
            "bind",
            "claude",
            "deepseek/deepseek-chat",
            "--print",
            "--",
            "-p",
            "it's ok",
        ])
        .env("DEEPSEEK_API_KEY", FAKE_KEY));
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains(FAKE_KEY) && !err.contains(FAKE_KEY));
    for line in [
        "env \\",
        "-u ANTHROPIC_API_KEY \\",
        "ANTHROPIC_BASE_URL=https://api.deepseek.com/anthropic \\",
        "ANTHROPIC_AUTH_TOKEN=\"$DEEPSEEK_API_KEY\" \\",
        "ANTHROPIC_MODEL=deepseek-chat \\",
        "ANTHROPIC_DEFAULT_OPUS_MODEL=deepseek-chat \\",
        "ANTHROPIC_DEFAULT_SONNET_MODEL=deepseek-chat \\",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL=deepseek-chat \\",
        "ANTHROPIC_DEFAULT_FABLE_MODEL=deepseek-chat \\",
        "CLAUDE_CODE_SUBAGENT_MODEL=deepseek-chat \\",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \\",
        "CLAUDE_CODE_MAX_CONTEXT_TOKENS=128000 \\",
        "claude \\",
        "-p 'it'\\''s ok'",
    ] {
        assert!(
            out.lines().any(|l| l.trim() == line),
            "no `{line}` in\n{out}"
        );
    }
    // Pasted into a shell where the key is set, it runs claude with the key's value.
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "claude", RAN, 0);
    let (code, shell_out, err) = run(Command::new("/bin/sh")
        .args(["-c", &out])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("DEEPSEEK_API_KEY", FAKE_KEY)
        .env("ANTHROPIC_API_KEY", "sk-ant-other-provider-key-0000000"));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(shell_out.trim(), "stand-in ran");
    let env = rec(dir.path(), "env");
    assert_eq!(
        env_var(&env, "ANTHROPIC_AUTH_TOKEN").as_deref(),
        Some(FAKE_KEY)
    );
    assert_eq!(env_var(&env, "ANTHROPIC_API_KEY"), None);
    assert_eq!(rec(dir.path(), "argv"), "-p\nit's ok\n");
}

/// Printing writes the key as its variable, so it needs no key (running does).
#[test]
fn bind_print_needs_no_key_and_says_which_variable_running_will() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) =
        run(switchyard(home.path()).args(["bind", "claude", "deepseek/deepseek-chat", "--print"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ANTHROPIC_AUTH_TOKEN=\"$DEEPSEEK_API_KEY\""),
        "{out}"
    );
    assert!(err.contains("DEEPSEEK_API_KEY is unset here"), "{err}");
    // Running it still needs the key.
    let (code, _, err) =
        run(switchyard(home.path()).args(["bind", "claude", "deepseek/deepseek-chat"]));
    assert_ne!(code, Some(0));
    assert!(err.contains("DEEPSEEK_API_KEY"), "{err}");
}

#[test]
fn bind_print_codex_on_a_keyed_hosted_backend() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(switchyard(home.path())
        .args([
            "bind",
            "codex",
            "deepseek/deepseek-chat",
            "--print",
            "--",
            "-c",
            "model_context_window=64000",
            "exec",
            "hi",
        ])
        .env("DEEPSEEK_API_KEY", FAKE_KEY));
    assert_eq!(code, Some(0), "{err}");
    assert!(!out.contains(FAKE_KEY));
    let expected = "codex \\\n  \
        -c 'model_provider=\"deepseek\"' \\\n  \
        -c 'model=\"deepseek-chat\"' \\\n  \
        -c 'model_providers.deepseek.name=\"deepseek\"' \\\n  \
        -c 'model_providers.deepseek.base_url=\"https://api.deepseek.com\"' \\\n  \
        -c 'model_providers.deepseek.wire_api=\"responses\"' \\\n  \
        -c 'model_providers.deepseek.env_key=\"DEEPSEEK_API_KEY\"' \\\n  \
        -c model_context_window=128000 \\\n  \
        -c 'web_search=\"disabled\"' \\\n  \
        -c model_context_window=64000 exec hi\n";
    assert_eq!(out, expected);
    // Pasted, codex gets the settings as separate arguments, the user's last.
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "codex", RAN, 0);
    let (code, _, err) = run(Command::new("/bin/sh")
        .args(["-c", &out])
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display())));
    assert_eq!(code, Some(0), "{err}");
    let argv: Vec<String> = rec(dir.path(), "argv")
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(argv[1], "model_provider=\"deepseek\"");
    assert_eq!(argv[argv.len() - 3], "model_context_window=64000");
}

#[test]
fn bind_print_on_a_keyless_local_server() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) =
        run(switchyard(home.path()).args(["bind", "claude", "vllm/qwen", "--print"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:8000 \\"),
        "{out}"
    );
    assert!(
        out.contains("ANTHROPIC_AUTH_TOKEN=switchyard-no-key \\"),
        "{out}"
    );
    assert!(!out.contains("CLAUDE_CODE_MAX_CONTEXT_TOKENS"), "{out}");
    let (code, out, err) =
        run(switchyard(home.path()).args(["bind", "codex", "vllm/qwen", "--print"]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("model_providers.vllm.base_url=\"http://127.0.0.1:8000/v1\""),
        "{out}"
    );
    assert!(!out.contains("env_key"), "{out}");
    assert!(!out.contains("model_context_window"), "{out}");
}

#[test]
fn bind_print_with_a_context_window() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(switchyard(home.path()).args([
        "bind",
        "claude",
        "vllm/qwen",
        "--print",
        "backends.vllm.context_window=32768",
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.contains("CLAUDE_CODE_MAX_CONTEXT_TOKENS=32768 \\"),
        "{out}"
    );
    let (code, out, err) = run(switchyard(home.path()).args([
        "bind",
        "codex",
        "vllm/qwen",
        "--print",
        "backends.vllm.context_window=32768",
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("-c model_context_window=32768 \\"), "{out}");
}

#[test]
fn bind_runs_the_cli_with_the_key_only_in_its_environment() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "claude", RAN, 7);
    let (code, out, err) = run(switchyard(home.path())
        .args([
            "bind",
            "claude",
            "deepseek/deepseek-chat",
            "--",
            "--verbose",
        ])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("DEEPSEEK_API_KEY", FAKE_KEY)
        .env("ANTHROPIC_API_KEY", "sk-ant-other-provider-key-0000000"));
    // switchyard became the CLI: its output and exit status.
    assert_eq!(code, Some(7), "{err}");
    assert_eq!(out.trim(), "stand-in ran");
    let env = rec(dir.path(), "env");
    assert_eq!(
        env_var(&env, "ANTHROPIC_AUTH_TOKEN").as_deref(),
        Some(FAKE_KEY)
    );
    assert_eq!(
        env_var(&env, "ANTHROPIC_API_KEY"),
        None,
        "another provider's key leaked"
    );
    assert_eq!(
        env_var(&env, "ANTHROPIC_BASE_URL").as_deref(),
        Some("https://api.deepseek.com/anthropic")
    );
    let argv = rec(dir.path(), "argv");
    assert_eq!(argv, "--verbose\n");
    assert!(!argv.contains(FAKE_KEY));

    // Codex: the key stays in its variable, named by env_key.
    let bin = stand_in(dir.path(), "codex", RAN, 0);
    let (code, _, err) = run(switchyard(home.path())
        .args(["bind", "codex", "deepseek/deepseek-chat"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("DEEPSEEK_API_KEY", FAKE_KEY));
    assert_eq!(code, Some(0), "{err}");
    let argv = rec(dir.path(), "argv");
    assert!(
        argv.contains("model_providers.deepseek.env_key=\"DEEPSEEK_API_KEY\""),
        "{argv}"
    );
    assert!(!argv.contains(FAKE_KEY));
}

#[test]
fn bind_finds_the_cli_through_the_command_field_or_says_it_is_missing() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = stand_in(dir.path(), "my-claude", RAN, 0);
    let program = bin.join("my-claude");
    let (code, out, err) = run(switchyard(home.path()).args([
        "bind",
        "claude",
        "vllm/qwen",
        &format!("backends.claude-code.command={}", program.display()),
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out.trim(), "stand-in ran");
    let (code, out, err) = run(switchyard(home.path()).args([
        "backends",
        "show",
        "codex/gpt-5",
        "backends.codex.command=[npx, -y, \"@openai/codex\"]",
    ]));
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.lines().any(|l| l.starts_with("command")
            && l.contains("npx -y @openai/codex")
            && l.contains("override")),
        "{out}"
    );
    let (code, _, err) = run(switchyard(home.path()).args(["bind", "codex", "vllm/qwen"]));
    assert_eq!(code, Some(1));
    assert!(err.contains("`codex` was not found on PATH"), "{err}");
    assert!(err.contains("backends.codex.command="), "{err}");
}

#[test]
fn bind_refuses_a_backend_that_is_not_http() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) =
        run(switchyard(home.path()).args(["bind", "claude", "codex/gpt-5", "--print"]));
    assert_eq!(code, Some(1));
    assert!(out.is_empty());
    assert!(
        err.contains(
            "backend `codex` is of kind `codex`: Claude Code can only be bound to an http backend"
        ),
        "{err}"
    );
}

fn mock() -> MockServer {
    MockServer::start_in_thread("127.0.0.1:0".parse().unwrap(), MockConfig::default()).unwrap()
}

#[test]
fn backends_check_against_the_mock_passes_every_claim() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(switchyard(home.path()).args([
        "backends",
        "check",
        "mock/echo",
        &format!("backends.mock.base_url={}", mock.base_url()),
    ]));
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert!(out.contains("`echo` is listed"), "{out}");
    for label in [
        "chat",
        "responses",
        "responses + namespace tool",
        "messages",
        "gemini",
    ] {
        let row = out
            .lines()
            .find(|l| l.starts_with(&format!("{label}  ")))
            .unwrap_or_else(|| panic!("no {label} row in\n{out}"));
        let cells: Vec<&str> = row[label.len()..].split_whitespace().collect();
        assert_eq!(&cells[..2], ["yes", "yes"], "{row}");
    }
    // Progress went to standard error as it went.
    assert!(err.contains("GET /models"), "{err}");
    assert!(err.contains("responses + namespace tool … ok"), "{err}");
    // One request per step reached the mock, the namespace tool among them.
    let requests = mock.requests();
    let ns = requests
        .iter()
        .filter(|r| r.path.ends_with("/responses"))
        .any(|r| String::from_utf8_lossy(&r.body).contains("\"type\":\"namespace\""));
    assert!(ns, "no responses request carried a namespace tool");
}

#[test]
fn backends_check_fails_a_dialect_the_backend_does_not_serve() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(switchyard(home.path()).args([
        "backends",
        "check",
        "liar/echo",
        "backends.liar.from=mock",
        &format!("backends.liar.base_url={}", mock.base_url()),
        // Claims messages, but its messages root is a path nothing answers on.
        &format!("backends.liar.messages_url={}/nowhere", mock.url()),
        "backends.liar.apis=[chat, messages]",
    ]));
    assert_eq!(code, Some(1), "{out}\n{err}");
    let row = out
        .lines()
        .find(|l| l.starts_with("messages "))
        .unwrap_or_else(|| panic!("no messages row in\n{out}"));
    assert!(row.contains("yes") && row.contains("NO"), "{row}");
    assert!(row.contains("404"), "{row}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("chat ") && !l.contains("NO")),
        "{out}"
    );
    assert!(out.contains("not claimed, not tried"), "{out}");
    assert!(
        err.contains("a claimed dialect does not work on liar/echo (messages)"),
        "{err}"
    );
}

#[test]
fn backends_check_json_gives_the_same_findings_as_data() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(switchyard(home.path()).args([
        "backends",
        "check",
        "liar/echo",
        "--json",
        "backends.liar.from=mock",
        &format!("backends.liar.base_url={}", mock.base_url()),
        &format!("backends.liar.messages_url={}/nowhere", mock.url()),
        "backends.liar.apis=[chat, messages]",
    ]));
    // A claim that does not hold still fails the command, after the JSON.
    assert_eq!(code, Some(1), "{out}\n{err}");
    assert!(err.contains("a claimed dialect does not work on liar/echo (messages)"));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["reference"], "liar/echo");
    assert_eq!(v["backend"], "liar");
    assert_eq!(v["model"], "echo");
    assert_eq!(v["base_url"], mock.base_url());
    // `from: mock` copies its key variable; set or not, its value is never shown.
    assert_eq!(v["api_key_env"], "MOCK_API_KEY");
    assert!(v["key"].is_string());
    assert_eq!(v["ok"], false);
    assert_eq!(v["models"]["listed"], true, "{v}");
    let dialect = |label: &str| {
        v["dialects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["label"] == label)
            .cloned()
            .unwrap_or_else(|| panic!("no {label} in {v}"))
    };
    let chat = dialect("chat");
    assert_eq!(
        (&chat["claimed"], &chat["working"]),
        (&true.into(), &true.into())
    );
    assert!(
        chat["reply"].is_string() && chat["error"].is_null(),
        "{chat}"
    );
    let messages = dialect("messages");
    assert_eq!(messages["working"], false);
    assert!(
        messages["error"].as_str().unwrap().contains("404"),
        "{messages}"
    );
    let gemini = dialect("gemini");
    assert_eq!(gemini["claimed"], false);
    assert!(
        gemini["working"].is_null() && gemini["ms"].is_null(),
        "{gemini}"
    );
}

#[test]
fn backends_check_all_checks_the_backends_whose_key_is_set() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) = run(switchyard(home.path())
        .args([
            "backends",
            "check",
            "--all",
            &format!("backends.mock.base_url={}", mock.base_url()),
            // The built-in aliases name priced models the mock does not serve; the first
            // alias by name is the one checked.
            "backends.mock.models.a-check=echo",
        ])
        .env("MOCK_API_KEY", "not-a-secret"));
    assert_eq!(code, Some(0), "{out}\n{err}");
    // The mock is keyless but its key is set, so it is checked with its first alias.
    assert!(out.starts_with("mock/echo"), "{out}");
    assert!(err.contains("skipping backends that need no key"), "{err}");
    assert!(err.contains("vllm"), "{err}");
    assert!(!out.contains("openai"), "{out}");
    // The key was sent.
    assert!(mock.requests().iter().all(|r| r
        .headers
        .iter()
        .any(|(k, v)| k == "authorization" && v == "Bearer not-a-secret")
        || r.path.contains("v1beta")));
}

#[test]
fn backends_shell_prints_origin_and_path() {
    let home = tempfile::tempdir().unwrap();
    let (code, out, err) =
        run(switchyard(home.path()).args(["backends", "shell", "deepseek/deepseek-chat"]));
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(
        out,
        "origin=https://api.deepseek.com path='' messages_path=/anthropic\n"
    );
    let (code, out, _) = run(switchyard(home.path()).args(["backends", "shell", "fireworks"]));
    assert_eq!(code, Some(0));
    assert_eq!(
        out,
        "origin=https://api.fireworks.ai path=/inference/v1 messages_path=/inference\n"
    );
    let (code, _, err) = run(switchyard(home.path()).args(["backends", "shell", "codex"]));
    assert_eq!(code, Some(1));
    assert!(err.contains("kind `codex`"), "{err}");
}
