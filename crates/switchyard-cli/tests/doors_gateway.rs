//! Door equivalence at the gateway and `bind`: the role `doors.rs` calls through a `Run`
//! and `ask --role`, called by a client of the gateway (`switchyard serve`) and by a CLI
//! bound with `switchyard bind` (through the gateway it starts), sends the same upstream
//! body and writes the same record apart from times, ids, the caller's role and the
//! client's dialect; a backend named alone and a refused policy are treated alike at
//! every door.

mod common;

use common::doors::*;
use common::*;

/// The request a client of the gateway sends for the planner's call: the route's name as
/// its model and the role's settings as the fields of its dialect.
fn planner_as_a_client(prompt: &str) -> String {
    serde_json::json!({
        "model": "pair",
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0.25,
        "max_completion_tokens": 50,
        "stop": ["END"],
    })
    .to_string()
}

#[test]
fn a_role_called_through_the_gateway_sends_the_body_run_sends_and_prices_it_alike() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    // The mock's address in the file, so that every door reads the very same config.
    let config = write_config(
        tmp.path(),
        &format!(
            "backends: {{mock: {{base_url: \"{}\", max_tokens_field: max_tokens}}}}\n{CONFIG}",
            mock.base_url()
        ),
    );
    let run_log = tmp.path().join("by-run");
    // Apart from the run's log: a gateway's store beside a run directory answers from it.
    let elsewhere = tempfile::tempdir().unwrap();
    let store = elsewhere.path().join("by-gateway");
    through_run(
        &config,
        &[format!("log={}", run_log.display())],
        "planner",
        "the same question",
    );
    let home = tempfile::tempdir().unwrap();
    let (child, addr) = common::serving::serve(
        home.path(),
        &[],
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--data-dir".as_ref(),
            store.as_os_str(),
        ],
    );
    let (status, reply) = common::serving::exchange(
        &addr,
        "POST",
        "/v1/chat/completions",
        &planner_as_a_client("the same question"),
    );
    let (code, err) = common::serving::stop(child);
    assert_eq!(status, 200, "{reply}");
    assert_eq!(code, Some(0), "{err}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "each door called the provider once");
    assert_eq!(requests[0].path, requests[1].path);
    assert_eq!(requests[0].json, requests[1].json, "the same upstream body");
    let body = requests[0].json.clone().unwrap();
    // The backend's encoding rule, applied at both doors: its limit field is `max_tokens`.
    assert_eq!(body["max_tokens"], 50, "{body}");
    assert_eq!(
        body["model"], "mock-small",
        "the route's first member: {body}"
    );

    let (mut by_run, mut by_gateway) = (comparable(&run_log), comparable(&store));
    // What only one door knows: the caller's role (a client of the gateway is none), the
    // dialect a client spoke.
    assert_eq!(by_run["role"], "planner");
    assert_eq!(by_gateway["client_dialect"], "chat");
    for record in [&mut by_run, &mut by_gateway] {
        let record = record.as_object_mut().unwrap();
        record.remove("role");
        record.remove("client_dialect");
    }
    assert_eq!(
        by_run, by_gateway,
        "the same record apart from times, ids and the caller"
    );
    assert!(by_run["cache_key"].is_string(), "{by_run}");
    assert_eq!(by_run["parameters"]["temperature"], 0.25, "{by_run}");
    assert!(
        by_run["cost_usd"].as_f64().is_some_and(|c| c > 0.0),
        "{by_run}"
    );
}

#[test]
fn a_backend_named_alone_is_its_default_model_at_ask_the_gateway_and_bind() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(
        tmp.path(),
        &format!(
            "backends: {{mock: {{base_url: \"{}\"}}}}\n",
            mock.base_url()
        ),
    );
    let home = tempfile::tempdir().unwrap();
    let asked = run(switchyard(home.path()).arg("--config").arg(&config).args([
        "ask",
        "mock",
        "by ask",
        "--no-stream",
    ]));
    assert!(asked.ok, "{}", asked.err);
    let refused = run(switchyard(home.path()).arg("--config").arg(&config).args([
        "ask",
        "openai",
        "hi",
        "--no-stream",
    ]));
    assert!(!refused.ok);

    let (child, addr) =
        common::serving::serve(home.path(), &[], &["--config".as_ref(), config.as_os_str()]);
    let post = |model: &str| {
        let body = serde_json::json!({
            "model": model, "messages": [{"role": "user", "content": "by the gateway"}]
        });
        common::serving::exchange(&addr, "POST", "/v1/chat/completions", &body.to_string())
    };
    let (ok, reply) = post("mock");
    let (not_found, message) = post("openai");
    common::serving::stop(child);
    assert_eq!(ok, 200, "{reply}");
    let sent: Vec<_> = mock
        .requests()
        .into_iter()
        .filter_map(|r| r.json)
        .map(|b| b["model"].clone())
        .collect();
    assert_eq!(
        sent,
        ["echo", "echo"],
        "ask, then the gateway: the default model"
    );
    // A backend with no default model: the same words at both doors.
    assert_eq!(not_found, 404, "{message}");
    let said = "names a backend that declares no default model: name one (`openai/<model id>`), \
                or give the backend `default_model: <model id>`";
    assert!(refused.err.contains(said), "{}", refused.err);
    assert!(message.contains(said), "{message}");

    // `bind`: the same model, the same refusal.
    let printed = run(switchyard(home.path())
        .arg("--config")
        .arg(&config)
        .args(["bind", "claude", "mock", "--print"]));
    assert!(printed.ok, "{}", printed.err);
    assert!(
        printed.out.contains("ANTHROPIC_MODEL=echo"),
        "{}",
        printed.out
    );
    let unbound = run(switchyard(home.path())
        .arg("--config")
        .arg(&config)
        .args(["bind", "claude", "openai", "--print"]));
    assert!(!unbound.ok);
    assert!(unbound.err.contains(said), "{}", unbound.err);
}

/// Codex's call, as curl: a Responses request to the bound provider's base URL and model
/// (both read from its `-c` arguments), the prompt being its last argument.
#[cfg(unix)]
const CODEX_CALL: &str = r#"base=; model=; prompt=
for a in "$@"; do case "$a" in
  model_providers.switchyard.base_url=*) base=$(printf '%s' "${a#*=}" | tr -d '"');;
  model=*) model=$(printf '%s' "${a#*=}" | tr -d '"');;
  *) prompt="$a";;
esac; done
curl -sS "$base/responses" -H 'content-type: application/json' -d "{\"model\":\"$model\",\"input\":\"$prompt\"}""#;

/// `bind codex` on a route of chat-only members goes through the gateway it starts: the
/// provider is sent what a run's role of that route sends for the same prompt, and the
/// call is recorded as the run records it.
#[cfg(unix)]
#[test]
fn a_role_bound_to_codex_sends_the_body_run_sends_and_records_it_alike() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let store = elsewhere.path().join("by-bind");
    let config = write_config(
        tmp.path(),
        &format!(
            "backends: {{mock: {{base_url: \"{}\", apis: [chat]}}}}\n\
             routes:\n  pair: {{pick: order, members: [{{model: mock/mock-small}}, {{model: mock/mock-large}}]}}\n\
             llm:\n  coder: pair\n\
             store: {}\n",
            mock.base_url(),
            store.display()
        ),
    );
    let run_log = tmp.path().join("by-run");
    through_run(
        &config,
        &[format!("log={}", run_log.display())],
        "coder",
        "hello codex",
    );

    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let bin = common::stand_in::stand_in(dir.path(), "codex", CODEX_CALL, 0);
    let bound = run(switchyard(home.path())
        .arg("--config")
        .arg(&config)
        .args(["bind", "codex", "pair", "--", "hello codex"])
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .env("SWITCHYARD_GATEWAY_URL", "http://127.0.0.1:9"));
    assert!(bound.ok, "{}\n{}", bound.out, bound.err);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "each door called the provider once");
    assert_eq!(requests[0].path, requests[1].path);
    assert_eq!(requests[0].json, requests[1].json, "the same upstream body");
    let (mut by_run, mut by_bind) = (comparable(&run_log), comparable(&store));
    assert_eq!(by_run["role"], "coder");
    assert_eq!(by_bind["client_dialect"], "responses");
    for record in [&mut by_run, &mut by_bind] {
        let record = record.as_object_mut().unwrap();
        record.remove("role");
        record.remove("client_dialect");
    }
    assert_eq!(
        by_run, by_bind,
        "the same record apart from times, ids and the caller"
    );
}

/// A `retry:` a run refuses is refused by `ask --role`, the gateway (`serve`) and `bind`
/// (direct, and through the gateway it would start), each saying the reader's words.
#[test]
fn a_policy_refused_by_a_run_is_refused_by_ask_the_gateway_and_bind_in_the_same_words() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(
        tmp.path(),
        &format!(
            "backends: {{mock: {{base_url: \"{}\"}}}}\n\
             routes:\n  pair: {{pick: order, members: [{{model: mock/mock-small}}, {{model: mock/mock-large}}]}}\n\
             llm:\n  planner: pair\n\
             log: {}\n\
             retry: {{rate_limited: [\"soon\"]}}\n",
            mock.base_url(),
            tmp.path().join("log").display()
        ),
    );
    let said = "`soon` is not a wait; write a number of seconds (30, 1.5) or a text with a unit \
                (\"500ms\", \"30s\", \"2m\", \"1h\")";
    let env = switchyard::env::MapEnv::default();
    let by_run = switchyard::Run::builder(&config)
        .env(&env)
        .user_file(false)
        .open()
        .unwrap_err()
        .to_string();
    assert!(by_run.contains(said), "{by_run}");

    let home = tempfile::tempdir().unwrap();
    let door = |args: &[&str]| {
        let r = run(switchyard(home.path())
            .arg("--config")
            .arg(&config)
            .args(args)
            .env("SWITCHYARD_GATEWAY_URL", "http://127.0.0.1:9"));
        assert!(!r.ok, "{args:?} was not refused: {}", r.out);
        r.err
    };
    for (name, err) in [
        (
            "ask --role",
            door(&["ask", "--role", "planner", "hi", "--no-stream"]),
        ),
        ("serve", door(&["serve", "--listen", "127.0.0.1:0"])),
        (
            "bind (direct)",
            door(&["bind", "claude", "mock/echo", "--print"]),
        ),
        (
            "bind (gateway)",
            door(&["bind", "codex", "pair", "--print"]),
        ),
    ] {
        assert!(err.contains(said), "{name}: {err}");
    }
    assert_eq!(mock.received(), 0, "no door called the provider");
}
