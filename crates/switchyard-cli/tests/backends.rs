//! `switchyard backends list|show`, run as the built binary in a clean environment.

use std::path::Path;
use std::process::{Command, Output};

/// A command with an empty environment except PATH, HOME and XDG_CONFIG_HOME in `home`.
fn switchyard(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"));
    c
}

fn run(c: &mut Command) -> (bool, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().expect("the binary runs");
    (
        status.success(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

#[test]
fn list_shows_every_builtin_with_key_status() {
    let home = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(switchyard(home.path())
        .args(["backends", "list"])
        .env("OPENAI_API_KEY", "sk-test-not-a-real-key"));
    assert!(ok, "{err}");
    let header = out.lines().next().unwrap();
    for col in ["NAME", "KIND", "BASE URL", "DIALECTS", "KEY", "LAYER"] {
        assert!(header.contains(col), "{header}");
    }
    let line = |name: &str| {
        out.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in\n{out}"))
            .to_string()
    };
    assert!(line("openai").contains("OPENAI_API_KEY (set)"), "{out}");
    assert!(
        line("anthropic").contains("ANTHROPIC_API_KEY (unset)"),
        "{out}"
    );
    assert!(line("vllm").contains("(not needed)"), "{out}");
    assert!(line("claude-code").contains("claude-code"), "{out}");
    assert!(line("mock").contains("http://127.0.0.1:4010/v1"), "{out}");
    assert!(!out.contains("sk-test-not-a-real-key"));
    // Columns are aligned: every row has KIND at the same offset.
    let at = header.find("KIND").unwrap();
    assert!(out
        .lines()
        .skip(1)
        .all(|l| l.as_bytes().get(at - 2) == Some(&b' ')));
}

#[test]
fn list_json_parses() {
    let home = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(switchyard(home.path()).args(["backends", "list", "--json"]));
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let backends = v["backends"].as_array().unwrap();
    let fw = backends.iter().find(|b| b["name"] == "fireworks").unwrap();
    assert_eq!(
        fw["base_url"]["value"],
        "https://api.fireworks.ai/inference/v1"
    );
    assert_eq!(fw["base_url"]["layer"], "builtin");
    assert_eq!(fw["key"], "unset");
    assert_eq!(v["prices_date"], "2026-11-29");
}

#[test]
fn show_keeps_the_slashes_of_a_fireworks_id() {
    let home = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(switchyard(home.path()).args([
        "backends",
        "show",
        "fireworks/accounts/fireworks/models/glm-5p3-flash",
    ]));
    assert!(ok, "{err}");
    assert!(
        has_row(&out, &["model", "accounts/fireworks/models/glm-5p3-flash"]),
        "{out}"
    );
    assert!(
        out.contains("https://api.fireworks.ai/inference/v1/chat/completions"),
        "{out}"
    );
    assert!(
        out.contains("https://api.fireworks.ai/inference/v1/messages"),
        "{out}"
    );
    assert!(out.contains("FIREWORKS_API_KEY (unset)"), "{out}");
    assert!(has_row(&out, &["price", "unknown"]), "{out}");
    assert!(has_row(&out, &["developer_role", "system"]), "{out}");
    // An OpenAI-compatible server's chat output limit: `max_tokens`, by default.
    assert!(has_row(&out, &["max_tokens_field", "max_tokens"]), "{out}");
}

/// Whether a line of `backends show`'s table starts with these words (the columns are
/// as wide as the longest field name).
fn has_row(out: &str, words: &[&str]) -> bool {
    out.lines().any(|l| {
        l.split_whitespace()
            .take(words.len())
            .eq(words.iter().copied())
    })
}

#[test]
fn show_moved_url_alias_and_layers() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("my-backends.yaml");
    std::fs::write(
        &file,
        "backends:\n  vllm:\n    models:\n      qwen: Qwen/Qwen3-30B-A3B-Instruct-2507-FP8\n",
    )
    .unwrap();
    let (ok, out, err) = run(switchyard(home.path())
        .args(["backends", "show", "vllm/qwen"])
        .env("SWITCHYARD_BACKENDS", &file)
        .env("VLLM_BASE_URL", "http://gpu-box:8000/v1"));
    assert!(ok, "{err}");
    let user = format!("user file {}", file.display());
    assert!(
        out.contains("Qwen/Qwen3-30B-A3B-Instruct-2507-FP8"),
        "{out}"
    );
    assert!(out.contains(&format!("alias `qwen` from {user}")), "{out}");
    assert!(
        out.contains("http://gpu-box:8000/v1/chat/completions"),
        "{out}"
    );
    let base = out.lines().find(|l| l.starts_with("base_url")).unwrap();
    assert!(
        base.contains("http://gpu-box:8000/v1") && base.ends_with("env VLLM_BASE_URL"),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.starts_with("apis") && l.ends_with("builtin")),
        "{out}"
    );

    let (ok, out, err) = run(switchyard(home.path())
        .args(["backends", "show", "vllm/qwen", "--json"])
        .env("SWITCHYARD_BACKENDS", &file)
        .env("VLLM_BASE_URL", "http://gpu-box:8000/v1"));
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"], "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8");
    assert_eq!(v["requested_model"], "qwen");
    assert_eq!(v["alias"]["layer"], user);
    assert_eq!(v["base_url"]["layer"], "env VLLM_BASE_URL");
    assert_eq!(
        v["endpoints"]["chat"]["url"],
        "http://gpu-box:8000/v1/chat/completions"
    );
    assert_eq!(v["price"], "unknown");
    assert_eq!(v["key"], "not needed");
}

#[test]
fn show_price_and_run_config_and_overrides() {
    let home = tempfile::tempdir().unwrap();
    let run_config = home.path().join("run.yaml");
    std::fs::write(
        &run_config,
        "model: mock/small\nbackends:\n  mock:\n    context_window: 1000\n",
    )
    .unwrap();
    let (ok, out, err) = run(switchyard(home.path()).args([
        "--config",
        run_config.to_str().unwrap(),
        "backends",
        "show",
        "mock/small",
        "--json",
        "backends.mock.developer_role=system",
    ]));
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"], "mock-small");
    assert_eq!(v["price"]["value"]["input"], 1.0);
    assert_eq!(v["price"]["layer"], "builtin");
    assert_eq!(v["context_window"]["value"], 1000);
    assert_eq!(
        v["context_window"]["layer"],
        format!("run config {}", run_config.display())
    );
    assert_eq!(v["developer_role"]["layer"], "override");
    assert_eq!(
        v["endpoints"]["gemini"]["url"],
        "http://127.0.0.1:4010/v1beta/models/mock-small:generateContent"
    );
}

#[test]
fn key_in_config_is_refused_with_variable_advice() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("config").join("switchyard");
    std::fs::create_dir_all(&dir).unwrap();
    let secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz";
    std::fs::write(
        dir.join("backends.yaml"),
        format!("backends:\n  anthropic:\n    api_key: {secret}\n"),
    )
    .unwrap();
    let (ok, out, err) = run(switchyard(home.path()).args(["backends", "list"]));
    assert!(!ok, "{out}");
    assert!(err.contains("backends.yaml:3:5:"), "{err}");
    assert!(
        err.contains("put it in an environment variable and name that variable with `api_key_env`"),
        "{err}"
    );
    assert!(!err.contains(secret), "{err}");
}

#[test]
fn unknown_field_lists_accepted_ones() {
    let home = tempfile::tempdir().unwrap();
    let run_config = home.path().join("run.yaml");
    std::fs::write(
        &run_config,
        "backends:\n  vllm:\n    base_uri: http://x/v1\n",
    )
    .unwrap();
    let (ok, _out, err) = run(switchyard(home.path()).args([
        "backends",
        "list",
        "--config",
        run_config.to_str().unwrap(),
    ]));
    assert!(!ok);
    assert!(
        err.contains("run.yaml:3:5: unknown backend field `base_uri` (did you mean `base_url`?)"),
        "{err}"
    );
    assert!(
        err.contains("accepted: kind, base_url, api_key_env, key_required, apis, messages_url"),
        "{err}"
    );
}

#[test]
fn unknown_backend_names_the_nearest() {
    let home = tempfile::tempdir().unwrap();
    let (ok, _out, err) = run(switchyard(home.path()).args(["backends", "show", "fireworx/m"]));
    assert!(!ok);
    assert!(
        err.contains("did you mean `fireworks`") && err.contains("known backends:"),
        "{err}"
    );
}

#[test]
fn help_reads_well() {
    let home = tempfile::tempdir().unwrap();
    for args in [
        vec!["--help"],
        vec!["backends", "--help"],
        vec!["backends", "list", "--help"],
        vec!["backends", "show", "--help"],
    ] {
        let (ok, out, err) = run(switchyard(home.path()).args(&args));
        assert!(ok, "{err}");
        assert!(out.contains("Usage:"), "{out}");
    }
    let (_, out, _) = run(switchyard(home.path()).args(["backends", "show", "--help"]));
    assert!(
        out.contains("<REFERENCE>") && out.contains("backends.<name>.<field>=<value>"),
        "{out}"
    );
}

/// A backend's name alone is shown as the backend, with a note that a reference needs a
/// model; fields a `from:` copied say where from.
#[test]
fn show_a_bare_backend_and_fields_copied_by_from() {
    let home = tempfile::tempdir().unwrap();
    let (ok, out, err) = run(switchyard(home.path()).args(["backends", "show", "mock"]));
    assert!(ok, "{err}");
    // The mock declares a default model: the note names it and its layer.
    assert!(
        err.contains("`mock` is a backend; named alone it calls its default model `mock/echo` (default_model, from builtin)"),
        "{err}"
    );
    assert!(!err.contains("did you mean"), "{err}");
    let (ok, _, err) = run(switchyard(home.path()).args(["backends", "show", "openai"]));
    assert!(ok, "{err}");
    assert!(
        err.contains("`openai` is a backend; a reference is `openai/<model id>`"),
        "{err}"
    );
    assert!(out.contains("models/{model}:generateContent"), "{out}");
    let (ok, out, err) = run(switchyard(home.path()).args([
        "backends",
        "show",
        "up/echo",
        "backends.up.from=mock",
        "backends.up.apis=[chat]",
    ]));
    assert!(ok, "{err}");
    let line = |field: &str| {
        out.lines()
            .find(|l| l.starts_with(field))
            .unwrap_or_default()
            .to_string()
    };
    assert!(line("base_url").ends_with("from mock (builtin)"), "{out}");
    assert!(line("auth ").ends_with("from mock (default)"), "{out}");
    assert!(line("apis").ends_with("override"), "{out}");
}

/// `--litellm`: what `litellm.completion(...)` needs for the same endpoint — the route
/// prefix before the model id (aliases expanded), the api_base, the key variable.
#[test]
fn show_litellm_hands_off_the_endpoint() {
    let home = tempfile::tempdir().unwrap();
    let show = |args: &[&str]| {
        let mut all = vec!["backends", "show"];
        all.extend_from_slice(args);
        run(switchyard(home.path())
            .args(&all)
            .env("VLLM_BASE_URL", "http://gpu-box:8000/v1"))
    };
    let (ok, out, err) = show(&["vllm/Qwen/Qwen3-8B", "--litellm"]);
    assert!(ok, "{err}");
    assert!(
        has_row(&out, &["model", "hosted_vllm/Qwen/Qwen3-8B"]),
        "{out}"
    );
    assert!(
        has_row(&out, &["api_base", "http://gpu-box:8000/v1"]),
        "{out}"
    );
    assert!(has_row(&out, &["api_key_env", "VLLM_API_KEY"]), "{out}");

    let (ok, out, err) = show(&["anthropic/sonnet", "--litellm", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        serde_json::json!({
            "model": "anthropic/claude-sonnet-4-5",
            "api_base": "https://api.anthropic.com",
            "api_key_env": "ANTHROPIC_API_KEY",
        })
    );

    let (ok, out, err) = show(&[
        "fireworks/accounts/fireworks/models/glm-4p6",
        "--litellm",
        "--json",
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"], "fireworks_ai/accounts/fireworks/models/glm-4p6");
    assert_eq!(v["api_base"], "https://api.fireworks.ai/inference/v1");

    // Google's routes know their endpoint; Vertex sends no key (ADC).
    let (ok, out, _) = show(&["vertex/gemini-2.5-pro", "--litellm", "--json"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["model"], "vertex_ai/gemini-2.5-pro");
    assert_eq!(v["api_base"], serde_json::Value::Null);
    assert_eq!(v["api_key_env"], serde_json::Value::Null);

    // The prefix shows in the plain output and in --json, the hand-off under `litellm`.
    let (ok, out, err) = show(&["ollama/llama3"]);
    assert!(ok, "{err}");
    assert!(
        has_row(&out, &["litellm", "ollama_chat", "builtin"]),
        "{out}"
    );
    let (ok, out, err) = show(&["ollama/llama3", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["litellm"]["model"], "ollama_chat/llama3");
    assert_eq!(v["litellm"]["api_base"], "http://127.0.0.1:11434");

    // A backend of the user's own takes a prefix like any other field; a bad one is refused.
    let (ok, out, err) = show(&[
        "box/m",
        "backends.box.base_url=http://10.0.0.2:9000/v1",
        "backends.box.litellm=openai",
        "--litellm",
    ]);
    assert!(ok, "{err}");
    assert!(has_row(&out, &["model", "openai/m"]), "{out}");
    assert!(
        has_row(&out, &["api_base", "http://10.0.0.2:9000/v1"]),
        "{out}"
    );
    assert!(has_row(&out, &["api_key_env", "BOX_API_KEY"]), "{out}");
    let (ok, _, err) = show(&[
        "box/m",
        "backends.box.base_url=http://h/v1",
        "backends.box.litellm=Open/AI",
    ]);
    assert!(!ok);
    assert!(err.contains("LiteLLM's route prefix"), "{err}");

    // No prefix: said, with what to do.
    let (ok, _, err) = show(&["claude-code/sonnet", "--litellm"]);
    assert!(!ok);
    assert!(err.contains("no `litellm` route prefix"), "{err}");
}
