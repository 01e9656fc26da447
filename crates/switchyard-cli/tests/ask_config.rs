//! `switchyard ask` honours what the run config and the environment say, as the roles of
//! a run do: `retry:` and `timeouts:`, the default model, the budget across `--resume`,
//! and a role; and refuses an output limit of 0.

mod common;

use common::*;
use std::path::Path;
use std::time::{Duration, Instant};

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `switchyard [--config FILE] ask ARGS… backends.mock.base_url=<mock>`, with `env`.
fn ask(
    mock: &switchyard_mock::MockServer,
    config: Option<&Path>,
    env: &[(&str, &str)],
    args: &[&str],
) -> Run {
    let home = tempfile::tempdir().unwrap();
    let mut c = switchyard(home.path());
    if let Some(config) = config {
        c.arg("--config").arg(config);
    }
    c.envs(env.iter().copied())
        .arg("ask")
        .args(args)
        .arg(mock_override(mock));
    run(&mut c)
}

#[test]
fn the_config_retry_schedule_is_the_one_waited() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write(
        tmp.path(),
        "run.yaml",
        "retry:\n  rate_limited: [\"10ms\"]\n",
    );
    let started = Instant::now();
    let r = ask(
        &mock,
        Some(&config),
        &[],
        &["mock/fault-429-then-ok", "hi", "--no-stream"],
    );
    assert!(r.ok, "{}", r.err);
    assert!(r.err.contains("waiting 10 ms"), "{}", r.err);
    // Before, the built-in 30 s schedule was waited whatever the file said.
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(mock.received(), 2);
}

#[test]
fn the_config_timeouts_cut_a_slow_first_byte() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write(
        tmp.path(),
        "run.yaml",
        "timeouts:\n  first_byte_timeout_seconds: 1\n",
    );
    let started = Instant::now();
    let r = ask(
        &mock,
        Some(&config),
        &[],
        &["mock/slow-first-byte-4s", "hi", "--no-stream"],
    );
    assert!(!r.ok);
    assert!(
        r.err
            .contains("timed out waiting for the first byte after 1 s"),
        "{}",
        r.err
    );
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[test]
fn the_model_may_come_from_switchyard_model_or_the_config() {
    let mock = mock();
    let r = ask(
        &mock,
        None,
        &[("SWITCHYARD_MODEL", "mock/echo")],
        &["hello", "--no-stream"],
    );
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "hello\n");
    assert!(r.err.contains("[mock/echo · echo"), "{}", r.err);

    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", "model: mock/mock-small\n");
    let r = ask(&mock, Some(&config), &[], &["from the file", "--no-stream"]);
    assert!(r.ok, "{}", r.err);
    assert!(r.err.contains("[mock/mock-small · mock-small"), "{}", r.err);

    // A reference given wins; `model=` names one too.
    let r = ask(&mock, None, &[], &["hi", "model=mock/echo", "--no-stream"]);
    assert!(r.ok, "{}", r.err);

    let r = ask(&mock, None, &[], &["hello", "--no-stream"]);
    assert!(!r.ok);
    assert!(
        r.err.contains("no model") && r.err.contains("SWITCHYARD_MODEL"),
        "{}",
        r.err
    );
}

#[test]
fn an_output_limit_of_zero_is_refused_with_the_accepted_range() {
    let mock = mock();
    let r = ask(&mock, None, &[], &["mock/echo", "hi", "--max-tokens", "0"]);
    assert!(!r.ok);
    assert!(r.err.contains("give 1 or more"), "{}", r.err);
    assert_eq!(mock.received(), 0, "nothing was sent");
}

#[test]
fn streamed_thinking_is_labelled_and_ends_its_line() {
    let mock = mock();
    let r = ask(&mock, None, &[], &["mock/think", "hi", "--stream"]);
    assert!(r.ok, "{}", r.err);
    let lines: Vec<&str> = r.err.lines().collect();
    assert!(
        lines[0].starts_with("[thinking] The user wrote"),
        "{}",
        r.err
    );
    assert!(
        lines.last().unwrap().starts_with("[mock/think · "),
        "{}",
        r.err
    );
}

#[test]
fn a_budget_spans_the_run_directory_across_resumed_asks() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", "budget:\n  max_calls: 1\n");
    let log = tmp.path().join("run");
    let log = log.to_str().unwrap();
    let first = ask(
        &mock,
        Some(&config),
        &[],
        &["mock/echo", "one", "--log", log, "--no-stream"],
    );
    assert!(first.ok, "{}", first.err);
    let second = ask(
        &mock,
        Some(&config),
        &[],
        &["mock/echo", "two", "--log", log, "--resume", "--no-stream"],
    );
    assert!(!second.ok, "a second call passed max_calls: 1");
    assert!(
        second
            .err
            .contains("max_calls is 1 call, and spent so far: 1 call"),
        "{}",
        second.err
    );
    assert_eq!(mock.received(), 1);
}

#[test]
fn ask_records_under_a_role_and_a_role_replays_a_run_recorded_without_one() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let plain = plain.to_str().unwrap();
    let r = ask(
        &mock,
        None,
        &[],
        &["mock/echo", "plan", "--log", plain, "--no-stream"],
    );
    assert!(r.ok, "{}", r.err);
    // Before: `no calls of role planner; its roles: (none)`.
    let r = ask(
        &mock,
        None,
        &[],
        &[
            "plan",
            "--replay",
            plain,
            "--role",
            "planner",
            "--no-stream",
        ],
    );
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "plan\n");

    let named = tmp.path().join("named");
    let named = named.to_str().unwrap();
    let r = ask(
        &mock,
        None,
        &[],
        &[
            "mock/echo",
            "plan",
            "--role",
            "planner",
            "--log",
            named,
            "--no-stream",
        ],
    );
    assert!(r.ok, "{}", r.err);
    let records = switchyard::record::read_records(Path::new(named)).unwrap();
    assert_eq!(records[0].role.as_deref(), Some("planner"));
    let r = ask(
        &mock,
        None,
        &[],
        &["plan", "--replay", named, "--role", "coder", "--no-stream"],
    );
    assert!(!r.ok);
    assert!(r.err.contains("its roles: planner"), "{}", r.err);
}

/// The run config of the role tests: a default model, and a planner with its own model,
/// settings and retry schedule.
const ROLES: &str = "model: mock/echo\nllm:\n  planner: {model: mock/mock-small, max_tokens: 77, temperature: 0.25}\n  reviewer: mock/echo\n";

#[test]
fn ask_role_calls_the_config_role_with_its_model_and_settings() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write(tmp.path(), "run.yaml", ROLES);
    let r = ask(
        &mock,
        Some(&config),
        &[],
        &["--role", "planner", "plan it", "--no-stream"],
    );
    assert!(r.ok, "{}", r.err);
    // Before: the default model (`mock/echo`), and none of the planner's settings.
    assert!(r.err.contains("[mock/mock-small · mock-small"), "{}", r.err);
    let body = mock.requests()[0].json.clone().unwrap();
    assert_eq!(body["model"], "mock-small", "{body}");
    assert_eq!(body["temperature"], 0.25, "{body}");
    let limit = body
        .get("max_tokens")
        .or_else(|| body.get("max_completion_tokens"));
    assert_eq!(limit, Some(&serde_json::json!(77)), "{body}");

    // A reference given wins over the role's model; the role's settings still apply.
    let r = ask(
        &mock,
        Some(&config),
        &[],
        &[
            "mock/mock-large",
            "--role",
            "planner",
            "plan it",
            "--no-stream",
        ],
    );
    assert!(r.ok, "{}", r.err);
    let body = mock.requests()[1].json.clone().unwrap();
    assert_eq!(body["model"], "mock-large", "{body}");
    assert_eq!(body["temperature"], 0.25, "{body}");
}

#[test]
fn ask_honours_the_config_cache_the_second_question_reaches_no_provider() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("run");
    let config = write(
        tmp.path(),
        "run.yaml",
        &format!(
            "model: mock/echo\nlog: {}\ncache: read-write\n",
            log.display()
        ),
    );
    let first = ask(&mock, Some(&config), &[], &["same question", "--no-stream"]);
    assert!(first.ok, "{}", first.err);
    let second = ask(
        &mock,
        Some(&config),
        &[],
        &["same question", "--resume", "--no-stream"],
    );
    assert!(second.ok, "{}", second.err);
    assert_eq!(second.out, "same question\n");
    // Before: `cache:` was ignored by `ask`, and both reached the provider.
    assert_eq!(mock.received(), 1, "the second answer came from the cache");

    // The run directory may come from `--log` instead of `log:`.
    let mock = common::mock();
    let config = write(
        tmp.path(),
        "cached.yaml",
        "model: mock/echo\ncache: read-write\n",
    );
    let dir = tmp.path().join("by-flag");
    let dir = dir.to_str().unwrap();
    for resume in [false, true] {
        let mut args = vec!["asked twice", "--no-stream", "--log", dir];
        if resume {
            args.push("--resume");
        }
        let r = ask(&mock, Some(&config), &[], &args);
        assert!(r.ok, "{}", r.err);
    }
    assert_eq!(mock.received(), 1, "the second answer came from the cache");
}

#[test]
fn ask_shows_the_cost_on_its_usage_line_and_in_json() {
    let mock = mock();
    // `mock-small` is priced 1 $/M input, 2 $/M output.
    let r = ask(
        &mock,
        None,
        &[],
        &["mock/mock-small", "hello", "--no-stream"],
    );
    assert!(r.ok, "{}", r.err);
    assert!(r.err.contains(" · $0.0"), "{}", r.err);
    let r = ask(&mock, None, &[], &["mock/mock-small", "hello", "--json"]);
    assert!(r.ok, "{}", r.err);
    let reply: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    let usage = &reply["usage"];
    let expected =
        usage["input"].as_f64().unwrap() * 1e-6 + usage["output"].as_f64().unwrap() * 2e-6;
    let cost = reply["cost_usd"].as_f64().expect("cost_usd in --json");
    assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    // An unpriced model says so rather than $0.
    let r = ask(&mock, None, &[], &["mock/echo", "hello", "--no-stream"]);
    assert!(r.err.contains("cost unknown"), "{}", r.err);
    let r = ask(&mock, None, &[], &["mock/echo", "hello", "--json"]);
    let reply: serde_json::Value = serde_json::from_str(&r.out).unwrap();
    assert!(reply["cost_usd"].is_null(), "{reply}");
}

#[test]
fn a_backend_named_alone_is_its_default_model_and_switchyard_backend_picks_one() {
    let mock = mock();
    let r = ask(&mock, None, &[], &["mock", "hello", "--no-stream"]);
    assert!(r.ok, "{}", r.err);
    assert!(r.err.contains("[mock/echo · echo"), "{}", r.err);
    let r = ask(
        &mock,
        None,
        &[("SWITCHYARD_BACKEND", "mock")],
        &["hello", "--no-stream"],
    );
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "hello\n");
    // SWITCHYARD_MODEL wins over SWITCHYARD_BACKEND; a model given wins over both.
    let r = ask(
        &mock,
        None,
        &[
            ("SWITCHYARD_BACKEND", "mock"),
            ("SWITCHYARD_MODEL", "mock/mock-small"),
        ],
        &["hello", "--no-stream"],
    );
    assert!(r.err.contains("[mock/mock-small · "), "{}", r.err);
    let r = ask(
        &mock,
        None,
        &[("SWITCHYARD_MODEL", "mock/mock-small")],
        &["mock/mock-large", "hello", "--no-stream"],
    );
    assert!(r.err.contains("[mock/mock-large · "), "{}", r.err);
    // `backends show` says where the default came from.
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(["backends", "show", "vertex"]));
    assert!(r.ok, "{}", r.err);
    let line = r
        .out
        .lines()
        .find(|l| l.starts_with("default_model"))
        .unwrap();
    assert!(
        line.contains("gemini-2.5-flash") && line.contains("builtin"),
        "{}",
        r.out
    );
    assert!(
        r.err
            .contains("its default model `vertex/gemini-2.5-flash`"),
        "{}",
        r.err
    );
    // A backend that declares no default model says how to name one.
    let r = ask(&mock, None, &[], &["openai", "hello", "--no-stream"]);
    assert!(!r.ok);
    assert!(r.err.contains("declares no default model"), "{}", r.err);
}

#[test]
fn a_setting_the_role_s_backend_does_not_take_is_refused_before_any_call() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write(
        tmp.path(),
        "run.yaml",
        "llm:\n  planner: {model: mock/echo, thinking_budget: 100}\n",
    );
    let r = ask(
        &mock,
        Some(&config),
        &[],
        &["--role", "planner", "hi", "--no-stream"],
    );
    assert!(!r.ok);
    assert!(r.err.contains("thinking_budget"), "{}", r.err);
    assert_eq!(mock.received(), 0);
}

#[test]
fn ask_help_shows_role() {
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(["ask", "--help"]));
    assert!(r.ok, "{}", r.err);
    assert!(r.out.contains("--role <NAME>"), "{}", r.out);
    assert!(r.out.contains("role of the run config"), "{}", r.out);
}

#[test]
fn separate_asks_on_a_weighted_route_spread_across_its_members() {
    let mock = mock();
    let route = "routes.w={pick: weighted, members: [{model: mock/mock-small, weight: 3}, {model: mock/mock-large, weight: 1}]}";
    for _ in 0..40 {
        let r = ask(&mock, None, &[], &["w", "hi", "--no-stream", route]);
        assert!(r.ok, "{}", r.err);
    }
    let large = mock
        .requests()
        .iter()
        .filter(|q| q.json.as_ref().is_some_and(|j| j["model"] == "mock-large"))
        .count();
    // Before: all 40 on `mock-small` (each process started at the heaviest member).
    // About 10 expected; none at all has a chance of 0.75^40 (1 in 100,000).
    assert!(
        (1..=25).contains(&large),
        "{large} of 40 calls on the lighter member"
    );
}
