//! `switchyard ask`, run as the built binary against a mock provider.

mod common;

use common::*;
use serde_json::{json, Value};

/// `switchyard ask <reference> <prompt> [extra…] backends.mock.base_url=<mock>`.
fn ask(mock: &switchyard_mock::MockServer, args: &[&str]) -> Run {
    let home = tempfile::tempdir().unwrap();
    run(switchyard(home.path())
        .arg("ask")
        .args(args)
        .arg(mock_override(mock)))
}

fn sent(mock: &switchyard_mock::MockServer) -> Value {
    let r = mock.requests().pop().expect("the mock received a request");
    assert_eq!(r.path, "/v1/chat/completions", "mock speaks chat first");
    r.json.expect("a JSON body")
}

#[test]
fn prints_the_reply_and_a_usage_line() {
    let mock = mock();
    let r = ask(&mock, &["mock/echo", "hello", "--no-stream"]);
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "hello\n");
    let usage = r.err.lines().last().unwrap();
    assert!(usage.starts_with("[mock/echo · echo · "), "{usage}");
    assert!(usage.contains("2 in · 2 out"), "{usage}");
    assert!(usage.contains("finish stop"), "{usage}");
    let b = sent(&mock);
    assert_eq!(b["model"], "echo");
    assert_eq!(b["messages"], json!([{"role": "user", "content": "hello"}]));
    assert!(b.get("stream").is_none(), "{b}");
}

#[test]
fn a_pipe_gets_the_whole_reply_by_default() {
    // Standard output is not a terminal here: no streaming unless asked.
    let mock = mock();
    let r = ask(&mock, &["mock/echo", "hello"]);
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "hello\n");
    assert!(sent(&mock).get("stream").is_none());
}

#[test]
fn usage_line_shows_cache_and_reasoning() {
    let mock = mock();
    let r = ask(&mock, &["mock/think+cache-100-0", "hello", "--no-stream"]);
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "hello\n");
    assert!(r.err.contains("[thinking] The user wrote"), "{}", r.err);
    let usage = r.err.lines().last().unwrap();
    assert!(
        usage.contains("102 in (100 cached, 0 cache write)"),
        "{usage}"
    );
    assert!(usage.contains("reasoning)"), "{usage}");
}

#[test]
fn stream_prints_the_text_as_it_comes() {
    let mock = mock();
    let r = ask(
        &mock,
        &["mock/think+chunk-2", "a streamed hello", "--stream"],
    );
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "a streamed hello\n");
    // Thinking goes to standard error, before the usage line.
    assert!(r.err.contains("The user wrote"), "{}", r.err);
    assert!(
        r.err.lines().last().unwrap().contains("finish stop"),
        "{}",
        r.err
    );
    let b = sent(&mock);
    assert_eq!(b["stream"], true);
    assert_eq!(b["stream_options"], json!({"include_usage": true}));
}

#[test]
fn json_prints_the_whole_reply() {
    let mock = mock();
    let r = ask(&mock, &["mock/echo+cache", "hello", "--json"]);
    assert!(r.ok, "{}", r.err);
    let reply: Value = serde_json::from_str(&r.out).unwrap_or_else(|e| panic!("{e}: {}", r.out));
    assert_eq!(reply["content"], json!([{"type": "text", "text": "hello"}]));
    assert_eq!(reply["finish"], "stop");
    assert_eq!(reply["model"], "echo+cache");
    assert_eq!(reply["usage"]["cached_input"], 1024);
    assert!(reply["usage"]["input"].as_u64().unwrap() > 1024);
    assert!(reply["id"].is_string());
}

#[test]
fn system_and_max_tokens_reach_the_server() {
    let mock = mock();
    let r = ask(
        &mock,
        &[
            "mock/echo",
            "hello",
            "--system",
            "be brief",
            "--max-tokens",
            "7",
            "--no-stream",
        ],
    );
    assert!(r.ok, "{}", r.err);
    let b = sent(&mock);
    assert_eq!(
        b["messages"],
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hello"}
        ])
    );
    assert_eq!(b["max_completion_tokens"], 7);
}

#[test]
fn mock_base_url_variable_points_the_backend_too() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path())
        .args(["ask", "mock/say:from the variable", "hi"])
        .env("MOCK_BASE_URL", mock.base_url()));
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "from the variable\n");
}

#[test]
fn an_unknown_backend_lists_the_known_ones_and_the_nearest() {
    let mock = mock();
    let r = ask(&mock, &["mokc/echo", "hello"]);
    assert!(!r.ok);
    assert_eq!(r.code, Some(1));
    assert!(r.out.is_empty(), "{}", r.out);
    // The message a run's role gets: `ask` resolves its model by the same assembly.
    assert!(r.err.contains("no backend is called `mokc`"), "{}", r.err);
    assert!(r.err.contains("did you mean `mock`?"), "{}", r.err);
    for known in ["openai", "anthropic", "vertex", "mock"] {
        assert!(r.err.contains(known), "{known} in {}", r.err);
    }
    assert!(mock.requests().is_empty());
}

#[test]
fn a_provider_fault_is_a_clear_error_and_a_failure() {
    let mock = mock();
    for (model, words) in [
        ("mock/quota", "quota exhausted"),
        ("mock/fault-401", "the key was refused"),
        ("mock/context-overflow", "context length exceeded"),
        ("mock/no-usage", "no token usage"),
    ] {
        for mode in ["--no-stream", "--stream"] {
            // --no-retry: a malformed reply is otherwise asked again after 5 s and 30 s.
            let r = ask(&mock, &[model, "hello", mode, "--no-retry"]);
            assert!(!r.ok, "{model} {mode}: {}", r.out);
            assert_eq!(r.code, Some(1), "{model} {mode}");
            assert!(r.err.starts_with("error: "), "{model} {mode}: {}", r.err);
            assert!(r.err.contains(words), "{model} {mode}: {}", r.err);
            assert!(!r.err.contains("panicked"), "{model} {mode}: {}", r.err);
        }
    }
}

#[test]
fn a_missing_key_names_the_variable() {
    let mock = mock();
    let r = ask(
        &mock,
        &["mock/echo", "hello", "backends.mock.key_required=true"],
    );
    assert!(!r.ok);
    assert!(r.err.contains("MOCK_API_KEY"), "{}", r.err);
    assert!(mock.requests().is_empty());
}

#[test]
fn the_usage_line_keeps_the_case_of_the_reference() {
    // Model ids are case-sensitive; only the finish reason is spelled as in JSON.
    let mock = mock();
    let r = ask(&mock, &["mock/say:Hello World", "hi", "--no-stream"]);
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "Hello World\n");
    let usage = r.err.lines().last().unwrap();
    assert!(
        usage.starts_with("[mock/say:Hello World · say:Hello World · "),
        "{usage}"
    );
}

#[test]
fn a_tool_call_is_printed_with_its_arguments() {
    let mock = mock();
    for mode in ["--no-stream", "--stream"] {
        let r = ask(&mock, &["mock/tools", "weather?", mode]);
        assert!(r.ok, "{mode}: {}", r.err);
        let line = r.out.lines().next().unwrap_or_default();
        assert!(line.starts_with("[tool call call_"), "{mode}: {}", r.out);
        assert!(
            line.ends_with("] get_weather({\"city\":\"Paris\"})"),
            "{mode}: {}",
            r.out
        );
        assert!(r.err.contains("finish tool_calls"), "{mode}: {}", r.err);
    }
}

#[test]
fn a_proxy_named_in_the_environment_carries_the_call() {
    // The backend's host does not resolve: only a call through the proxy reaches the mock
    // (which answers the absolute-form request a proxy receives like any other).
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path())
        .env("HTTP_PROXY", mock.url())
        .args(["ask", "mock/echo", "through the proxy", "--no-stream"])
        .arg("backends.mock.base_url=http://upstream.invalid/v1"));
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "through the proxy\n");
    assert_eq!(sent(&mock)["model"], "echo");
}
