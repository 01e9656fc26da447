//! Door equivalence: the same role called through a [`switchyard::Run`] in Rust and
//! through `switchyard ask --role` is the same call — the same upstream body, the same
//! record apart from times and ids — and a setting refused at one door is refused at the
//! other with the same message. Both are assembled by the library's one assembly
//! (the gateway and `bind`: `doors_gateway.rs`).

mod common;

use common::doors::*;
use common::*;

#[test]
fn a_role_called_through_run_and_ask_role_sends_the_same_body_and_writes_the_same_record() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(tmp.path(), CONFIG);
    let base = mock_override(&mock);
    let run_log = tmp.path().join("by-run");
    let ask_log = tmp.path().join("by-ask");

    through_run(
        &config,
        &[base.clone(), format!("log={}", run_log.display())],
        "planner",
        "the same question",
    );
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path())
        .arg("--config")
        .arg(&config)
        .args([
            "ask",
            "--role",
            "planner",
            "the same question",
            "--no-stream",
        ])
        .arg(format!("log={}", ask_log.display()))
        .arg(&base));
    assert!(r.ok, "{}", r.err);

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "each door called the provider once");
    assert_eq!(requests[0].path, requests[1].path);
    let (by_run, by_ask) = (requests[0].json.clone(), requests[1].json.clone());
    assert_eq!(by_run, by_ask, "the same upstream body");
    let body = by_run.unwrap();
    assert_eq!(
        body["model"], "mock-small",
        "the route's first member: {body}"
    );
    assert_eq!(body["temperature"], 0.25, "{body}");

    let (run_record, ask_record) = (comparable(&run_log), comparable(&ask_log));
    assert_eq!(
        run_record, ask_record,
        "the same record apart from times and ids"
    );
    assert_eq!(run_record["role"], "planner");
    assert_eq!(run_record["route"], "pair");
    assert!(run_record["cost_usd"].as_f64().is_some(), "{run_record}");
    assert!(run_record["cache_key"].is_string(), "{run_record}");
}

#[test]
fn a_setting_refused_through_run_is_refused_by_ask_role_with_the_same_message() {
    let mock = mock();
    let tmp = tempfile::tempdir().unwrap();
    // `thinking_budget` is a setting of the Gemini dialect; the mock role is called in chat.
    let config = write_config(
        tmp.path(),
        "llm:\n  planner: {model: mock/echo, thinking_budget: 100}\n",
    );
    let base = mock_override(&mock);
    let env = switchyard::env::MapEnv::default();
    let refused = switchyard::Run::builder(&config)
        .overrides([base.clone()])
        .env(&env)
        .user_file(false)
        .open()
        .unwrap_err()
        .to_string();
    assert!(refused.contains("thinking_budget"), "{refused}");

    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path())
        .arg("--config")
        .arg(&config)
        .args(["ask", "--role", "planner", "hi", "--no-stream"])
        .arg(&base));
    assert!(!r.ok);
    // The message, line for line (the library's text starts with the file's name).
    for line in refused.lines() {
        assert!(r.err.contains(line.trim()), "`{line}` in {}", r.err);
    }
    assert_eq!(mock.received(), 0, "nothing was sent by either door");
}
