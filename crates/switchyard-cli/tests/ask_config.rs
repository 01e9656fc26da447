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
