//! Real JavaScript clients through a gateway on 127.0.0.1:0 in front of the mock: the
//! Vercel AI SDK's OpenAI (Responses, store on and off), Anthropic and Google providers,
//! and the Anthropic TypeScript SDK's `toolRunner` with its defaults, each a script of
//! `tests/js/` (`node <script> <gateway URL> <model> …`, one JSON line out). They check
//! what the client got and, turn by turn, what reached the upstream: the thinking state
//! sent back on a tool conversation's second turn where the upstream's dialect carries it
//! (an `item_reference` expanded from the state the gateway keeps), and the whole history
//! where the SDK threads (served by a gateway that keeps conversations) or began with a
//! thread a gateway without a store refused. A thread reaches the upstream only passed
//! through to the first-party Anthropic API (here the mock behind a URL naming
//! `api.anthropic.com`), which keeps it or refuses it itself.
//!
//! Needs Node and `tests/js`'s pinned packages (`npm ci` there, which `scripts/test` runs,
//! and this test runs when they are missing). Under CI (`CI` set) a missing one fails the
//! test; elsewhere the test says loudly why it did not run.

mod common;

use common::Harness;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use switchyard_mock::RecordedRequest;

/// The prompt `text.mjs` sends; the mock's `echo` answers it back.
const HELLO: &str = "Hello from the AI SDK.";
/// The final answer of the mock's `tools` model once `get_weather` returned.
const ANSWER: &str = "The tool returned: sunny in Paris";

fn js_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/js")
}

/// Why the clients cannot run here, if they cannot: no Node, or packages that would not
/// install.
fn missing() -> Option<String> {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        return Some("no `node` on PATH".into());
    }
    let dir = js_dir();
    let installed = ["ai", "@ai-sdk/openai", "@anthropic-ai/sdk"]
        .iter()
        .all(|p| dir.join("node_modules").join(p).exists());
    if !installed {
        if let Some(why) = common::npm::ci(&dir) {
            return Some(why);
        }
    }
    None
}

/// Whether the clients can run; under CI they must.
fn ready(test: &str) -> bool {
    static WHY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    match WHY.get_or_init(missing) {
        None => true,
        Some(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "the JavaScript clients cannot run under CI: {why}"
            );
            eprintln!("\n\n*** SKIPPED {test}: {why} ***\n\n");
            false
        }
    }
}

/// Runs `tests/js/<script> <url> <args…>`: its JSON result, the test failing with the
/// script's output when it failed.
async fn node(script: &str, url: &str, args: &[&str]) -> Value {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(js_dir().join(script))
        .arg(url)
        .args(args)
        .current_dir(js_dir())
        .stdin(Stdio::null());
    // The clients must reach the gateway only, with the script's own key.
    for name in [
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_GENERATIVE_AI_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
    ] {
        command.env_remove(name);
    }
    let output = command.output().await.expect("node runs");
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{script} {args:?} failed:\n{out}\n{err}"
    );
    let last = out.lines().last().unwrap_or_default();
    serde_json::from_str(last)
        .unwrap_or_else(|e| panic!("{script} {args:?} printed no JSON ({e}):\n{out}\n{err}"))
}

/// The model calls the mock received since it was last cleared, in order.
fn model_calls(h: &Harness) -> Vec<RecordedRequest> {
    h.mock
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && !r.path.ends_with("countTokens"))
        .collect()
}

fn body(r: &RecordedRequest) -> &Value {
    r.json
        .as_ref()
        .unwrap_or_else(|| panic!("{} sent no JSON", r.path))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_google_provider_takes_a_backend_model_id() {
    if !ready("the_ai_sdk_google_provider_takes_a_backend_model_id") {
        return;
    }
    let h = Harness::start().await;
    // `mock/echo` is a path to the provider: `/v1beta/mock/echo:generateContent`.
    let out = node("text.mjs", &h.url, &["mock/echo", "google"]).await;
    assert_eq!(out["text"], HELLO, "{out}");
    assert_eq!(out["streamed"], HELLO, "{out}");
    assert_eq!(out["finish"], "stop", "{out}");
    let sent = model_calls(&h);
    assert_eq!(sent.len(), 2, "a whole call and a stream");
    for r in &sent {
        let b = body(r);
        let text = b["contents"][0]["parts"][0]["text"]
            .as_str()
            .or_else(|| b["messages"][0]["content"].as_str())
            .or_else(|| b["messages"][0]["content"][0]["text"].as_str());
        assert_eq!(text, Some(HELLO), "{}: {b}", r.path);
    }
}

/// The ids a Responses stream gives its reasoning items in `response.output_item.added`
/// and in `response.output_item.done`.
fn reasoning_ids(stream: &str) -> (Vec<String>, Vec<String>) {
    let (mut added, mut done) = (Vec::new(), Vec::new());
    for line in stream.lines() {
        let Some(data) = line.strip_prefix("data: ") else {
            continue;
        };
        let Ok(event) = serde_json::from_str::<Value>(data) else {
            continue;
        };
        if event["item"]["type"] != "reasoning" {
            continue;
        }
        let id = event["item"]["id"].as_str().unwrap_or_default().to_string();
        match event["type"].as_str() {
            Some("response.output_item.added") => added.push(id),
            Some("response.output_item.done") => done.push(id),
            _ => {}
        }
    }
    (added, done)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_responses_stream_with_reasoning_reaches_the_ai_sdk() {
    if !ready("a_responses_stream_with_reasoning_reaches_the_ai_sdk") {
        return;
    }
    let h = Harness::start().await;
    // Passed through to a Responses backend, and written by the gateway's own Responses
    // encoder from a Messages and a chat backend's thinking.
    for model in ["up-responses/think", "up-messages/think", "up-chat/think"] {
        h.mock.clear();
        let out = node("text.mjs", &h.url, &[model, "openai", "--thinking"]).await;
        assert_eq!(out["text"], HELLO, "{model}: {out}");
        assert_eq!(out["streamed"], HELLO, "{model}: {out}");
        let reasoning = out["streamedReasoning"].as_str().unwrap_or_default();
        assert!(reasoning.starts_with("The user wrote"), "{model}: {out}");
        assert_eq!(
            out["reasoning"], reasoning,
            "{model}: whole and streamed agree"
        );
        for part in ["reasoning-start", "reasoning-delta", "reasoning-end"] {
            assert!(
                out["streamParts"]
                    .as_array()
                    .unwrap()
                    .contains(&json!(part)),
                "{model}: {out}"
            );
        }
        assert_eq!(model_calls(&h).len(), 2, "{model}");

        // On the wire: one id per reasoning item, from `added` to `done`.
        let stream = h
            .http
            .post(format!("{}/v1/responses", h.url))
            .json(&json!({"model": model, "input": "hi", "stream": true}))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let (added, done) = reasoning_ids(&stream);
        assert_eq!(added.len(), 1, "{model}: {stream}");
        assert_eq!(added, done, "{model}: {stream}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_anthropic_provider_streams_thinking() {
    if !ready("the_ai_sdk_anthropic_provider_streams_thinking") {
        return;
    }
    let h = Harness::start().await;
    for model in ["up-messages/think", "up-responses/think", "up-gemini/think"] {
        h.mock.clear();
        let out = node("text.mjs", &h.url, &[model, "anthropic", "--thinking"]).await;
        assert_eq!(out["text"], HELLO, "{model}: {out}");
        assert_eq!(out["streamed"], HELLO, "{model}: {out}");
        let reasoning = out["streamedReasoning"].as_str().unwrap_or_default();
        assert!(reasoning.starts_with("The user wrote"), "{model}: {out}");
        assert_eq!(out["reasoning"], reasoning, "{model}: {out}");
        let sent = model_calls(&h);
        assert_eq!(sent.len(), 2, "{model}");
        if model.starts_with("up-messages") {
            // Passed through: the client's thinking request as it sent it.
            for r in &sent {
                assert_eq!(body(r)["thinking"]["type"], "enabled", "{}", body(r));
            }
        }
    }
}

/// Where `dialect` carries thinking state from one turn to the next, whether turn 2's
/// upstream body `b` holds it: a signed `thinking` block (Messages), a reasoning item with
/// its `encrypted_content` or a reference to one the server holds (Responses), a
/// `thoughtSignature` (Gemini). `None` for chat, which carries none.
fn carries_thinking(upstream: &str, b: &Value) -> Option<bool> {
    let empty = Vec::new();
    let items = |key: &str| b[key].as_array().unwrap_or(&empty).clone();
    let found = match upstream {
        "messages" => items("messages").iter().any(|m| {
            m["role"] == "assistant"
                && m["content"].as_array().is_some_and(|blocks| {
                    blocks.iter().any(|c| {
                        c["type"] == "thinking"
                            && c["signature"].as_str().is_some_and(|s| !s.is_empty())
                    })
                })
        }),
        "responses" => {
            items("input").iter().any(|i| {
                (i["type"] == "reasoning"
                    && i["encrypted_content"]
                        .as_str()
                        .is_some_and(|s| !s.is_empty()))
                    || (i["type"] == "item_reference"
                        && i["id"].as_str().is_some_and(|id| id.starts_with("rs_")))
            }) || b["previous_response_id"].is_string()
        }
        "gemini" => items("contents").iter().any(|c| {
            c["role"] == "model"
                && c["parts"].as_array().is_some_and(|parts| {
                    parts.iter().any(|p| {
                        p["thoughtSignature"].is_string() || p["thought_signature"].is_string()
                    })
                })
        }),
        _ => return None,
    };
    Some(found)
}

/// Whether turn 2's upstream body `b` holds the tool's call and its result, in the
/// upstream's dialect.
fn carries_the_tool_round(upstream: &str, b: &Value) -> bool {
    let text = b.to_string();
    let result = text.contains("sunny in Paris");
    let call = match upstream {
        "chat" => text.contains("\"tool_calls\""),
        "responses" => text.contains("\"function_call\"") || b["previous_response_id"].is_string(),
        "messages" => text.contains("\"tool_use\""),
        _ => text.contains("\"functionCall\"") || text.contains("\"function_call\""),
    };
    call && result
}

/// A two-turn tool conversation with thinking through `provider` to each backend dialect,
/// whole and streamed: the tool called with its arguments, the final answer, and at turn
/// 2 what reached the upstream. `store` false: the OpenAI provider with `store: false`.
async fn tool_conversations(provider: &str, store: bool) {
    let dir = tempfile::tempdir().unwrap();
    let h = keeping_harness(dir.path()).await;
    for upstream in ["chat", "responses", "messages", "gemini"] {
        for stream in [false, true] {
            h.mock.clear();
            let model = format!("up-{upstream}/think+tools");
            let mut args = vec![model.as_str(), provider];
            if stream {
                args.push("--stream");
            }
            if !store {
                args.push("--no-store");
            }
            let case = format!("{provider} → {model} (stream {stream}, store {store})");
            let out = node("tools.mjs", &h.url, &args).await;
            // The Google provider returns a tool's result as Gemini's `functionResponse`
            // object, `{"name": …, "content": …}`, which reaches another dialect's
            // backend as that object's JSON text; the mock quotes it whole.
            let text = out["text"].as_str().unwrap_or_default();
            match provider {
                "google" => assert!(
                    text.starts_with("The tool returned: ") && text.contains("sunny in Paris"),
                    "{case}: {out}"
                ),
                _ => assert_eq!(text, ANSWER, "{case}: {out}"),
            }
            assert_eq!(out["calls"], json!([{"city": "Paris"}]), "{case}: {out}");
            let steps = out["steps"].as_array().unwrap();
            assert_eq!(steps.len(), 2, "{case}: {out}");
            assert_eq!(
                steps[0]["toolCalls"],
                json!([{"name": "get_weather", "input": {"city": "Paris"}}]),
                "{case}: {out}"
            );
            for step in steps {
                let thought = step["reasoning"].as_str().unwrap_or_default();
                assert!(thought.starts_with("The user wrote"), "{case}: {out}");
            }

            let sent = model_calls(&h);
            assert_eq!(sent.len(), 2, "{case}: one upstream call a turn");
            let (first, second) = (body(&sent[0]), body(&sent[1]));
            assert!(first.to_string().contains("get_weather"), "{case}: {first}");
            assert!(
                carries_the_tool_round(upstream, second),
                "{case}: turn 2 upstream: {second}"
            );
            // With `store` on, the AI SDK sends its reasoning back as an `item_reference`:
            // the gateway keeps what it stands for and expands it for any backend.
            if let Some(found) = carries_thinking(upstream, second) {
                assert!(found, "{case}: turn 2 lost its thinking state: {second}");
            }
            let refers = second.to_string().contains("\"item_reference\"");
            if provider == "openai" && upstream == "responses" {
                // Passed through as the SDK sent it: a reference to the item the mock made
                // (and holds) with `store` on, the reasoning itself without.
                assert_eq!(refers, store, "{case}: {second}");
            } else {
                assert!(
                    !refers,
                    "{case}: a reference went to a backend that never made it: {second}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_openai_provider_completes_tool_turns_on_every_backend() {
    if !ready("the_ai_sdk_openai_provider_completes_tool_turns_on_every_backend") {
        return;
    }
    tool_conversations("openai", true).await;
    tool_conversations("openai", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_anthropic_provider_completes_tool_turns_on_every_backend() {
    if !ready("the_ai_sdk_anthropic_provider_completes_tool_turns_on_every_backend") {
        return;
    }
    tool_conversations("anthropic", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_google_provider_completes_tool_turns_on_every_backend() {
    if !ready("the_ai_sdk_google_provider_completes_tool_turns_on_every_backend") {
        return;
    }
    tool_conversations("google", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_tool_runner_falls_back_from_threads_and_completes() {
    if !ready("the_anthropic_tool_runner_falls_back_from_threads_and_completes") {
        return;
    }
    // Without a store the gateway keeps no thread: the SDK falls back.
    tool_runner(&Harness::start().await, false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_anthropic_tool_runner_threads_through_a_gateway_that_keeps_them() {
    if !ready("the_anthropic_tool_runner_threads_through_a_gateway_that_keeps_them") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    tool_runner(&keeping_harness(dir.path()).await, true).await;
}

/// The Anthropic SDK's `toolRunner` with its defaults, a two-turn tool conversation with
/// thinking to each backend dialect, whole and streamed, through a gateway that keeps
/// threads (`kept`: turn 2 sends only the tool's result, and the gateway the whole
/// history) or keeps none (the SDK falls back to sending the whole history itself).
async fn tool_runner(h: &Harness, kept: bool) {
    for upstream in ["chat", "messages", "responses", "gemini"] {
        for stream in [false, true] {
            h.mock.clear();
            let model = format!("up-{upstream}/think+tools");
            let mut args = vec![model.as_str()];
            if stream {
                args.push("--stream");
            }
            let case = format!("toolRunner → {model} (stream {stream}, kept {kept})");
            let out = node("tool_runner.mjs", &h.url, &args).await;
            assert_eq!(out["text"], ANSWER, "{case}: {out}");
            assert_eq!(out["calls"], json!([{"city": "Paris"}]), "{case}: {out}");
            let turns = out["turns"].as_array().unwrap();
            assert_eq!(turns.len(), 2, "{case}: {out}");
            // Thinking first, then the call; from a Gemini backend a text-less thinking
            // block between them carries the call's `thoughtSignature` (the envelope).
            let blocks = turns[0]["blocks"].as_array().unwrap();
            assert_eq!(blocks.first(), Some(&json!("thinking")), "{case}: {out}");
            assert_eq!(blocks.last(), Some(&json!("tool_use")), "{case}: {out}");
            assert!(
                blocks[..blocks.len() - 1].iter().all(|b| b == "thinking"),
                "{case}: {out}"
            );
            assert_eq!(
                turns[0]["toolUses"],
                json!([{"name": "get_weather", "input": {"city": "Paris"}}]),
                "{case}"
            );
            assert_eq!(turns[1]["blocks"], json!(["thinking", "text"]), "{case}");

            let exchanges = out["exchanges"].as_array().unwrap();
            if kept {
                // The SDK's defaults, served: a thread made, then continued with only the
                // tool's result.
                assert_eq!(exchanges.len(), 2, "{case}: {out}");
                assert_eq!(exchanges[0]["thread"], json!({"type": "create"}), "{case}");
                assert_eq!(exchanges[1]["thread"]["type"], "continue", "{case}: {out}");
                assert_eq!(exchanges[1]["messages"], 1, "{case}: {out}");
                for exchange in exchanges {
                    assert_eq!(exchange["status"], 200, "{case}: {exchange}");
                }
            }
            // Without: a thread, asked for under its beta; the gateway's refusal with the
            // signal; then the whole history, every turn, without `thread`.
            if !kept {
                assert_eq!(exchanges.len(), 3, "{case}: {out}");
                let refused = &exchanges[0];
                assert_eq!(refused["thread"], json!({"type": "create"}), "{case}");
                assert!(
                    refused["beta"]
                        .as_str()
                        .is_some_and(|b| b.contains("message-threads-")),
                    "{case}: {refused}"
                );
                assert_eq!(refused["status"], 400, "{case}: {refused}");
                assert_eq!(
                    refused["error"]["error"]["details"]["error_code"],
                    "thread_unsupported_request",
                    "{case}: {refused}"
                );
                for (exchange, messages) in exchanges[1..].iter().zip([1, 3]) {
                    assert_eq!(exchange["status"], 200, "{case}: {exchange}");
                    assert_eq!(exchange["thread"], Value::Null, "{case}: {exchange}");
                    assert_eq!(exchange["messages"], messages, "{case}: {exchange}");
                }
            }

            // Upstream: no thread; turn 2 is the whole history.
            let sent = model_calls(h);
            assert_eq!(sent.len(), 2, "{case}");
            for r in &sent {
                assert!(body(r).get("thread").is_none(), "{case}: {}", body(r));
            }
            let second = body(&sent[1]);
            assert!(
                second.to_string().contains("What is the weather in Paris?"),
                "{case}: turn 2 upstream lacks the history: {second}"
            );
            assert!(
                carries_the_tool_round(upstream, second),
                "{case}: turn 2 upstream: {second}"
            );
            if let Some(found) = carries_thinking(upstream, second) {
                assert!(found, "{case}: turn 2 lost its thinking state: {second}");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_thread_is_refused_with_the_signal_the_sdk_falls_back_on() {
    let h = Harness::start().await;
    for upstream in ["chat", "messages", "responses", "gemini"] {
        let model = format!("up-{upstream}/echo");
        for thread in [
            json!({"type": "create"}),
            json!({"type": "continue", "previous_message_id": "msg_1"}),
        ] {
            h.mock.clear();
            let request = json!({
                "model": model,
                "max_tokens": 64,
                "thread": thread,
                "messages": [{"role": "user", "content": "hi"}],
            });
            let r = h
                .http
                .post(format!("{}/v1/messages", h.url))
                .header("anthropic-beta", "message-threads-2026-08-12")
                .json(&request)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 400, "{model} {thread}");
            assert_eq!(r.headers()["content-type"], "application/json");
            let b: Value = r.json().await.unwrap();
            assert_eq!(b["type"], "error", "{b}");
            assert_eq!(b["error"]["type"], "invalid_request_error", "{b}");
            assert_eq!(
                b["error"]["details"],
                json!({"error_code": "thread_unsupported_request"}),
                "{b}"
            );
            let message = b["error"]["message"].as_str().unwrap();
            assert!(message.contains("`thread`"), "{message}");
            assert!(message.contains(&format!("`up-{upstream}`")), "{message}");
            assert!(message.contains("without `thread`"), "{message}");
            assert!(
                h.mock.requests().is_empty(),
                "{model}: nothing went upstream"
            );
        }

        // Without `thread` (or with `null`), the same request is served.
        for thread in [None, Some(Value::Null)] {
            let mut request = json!({
                "model": model,
                "max_tokens": 64,
                "messages": [{"role": "user", "content": "hi"}],
            });
            if let Some(t) = thread {
                request["thread"] = t;
            }
            let r = h
                .http
                .post(format!("{}/v1/messages", h.url))
                .json(&request)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200, "{model}");
            let b: Value = r.json().await.unwrap();
            assert_eq!(b["content"][0]["text"], "hi", "{b}");
        }
    }
}

/// A gateway recording into `dir`, which keeps conversations there.
async fn keeping_harness(dir: &std::path::Path) -> Harness {
    let config = switchyard_gateway::GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(dir.to_path_buf()),
        ..switchyard_gateway::GatewayConfig::default()
    };
    Harness::start_with(config, switchyard::env::MapEnv::default()).await
}

/// A gateway whose backend `claude` the gateway takes for the first-party Anthropic API
/// (its Messages URL names `api.anthropic.com`), reached on the mock: the URL's user part
/// is `api.anthropic.com`, its host 127.0.0.1.
async fn first_party_harness() -> Harness {
    let mock = switchyard_mock::MockServer::start().await;
    let authority = mock.url().replace("http://", "http://api.anthropic.com@");
    let extra = [
        "backends.claude.from=mock".to_string(),
        "backends.claude.apis=[messages]".to_string(),
        format!("backends.claude.base_url={authority}/v1"),
    ];
    let config = switchyard_gateway::GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        ..switchyard_gateway::GatewayConfig::default()
    };
    Harness::around(mock, config, switchyard::env::MapEnv::default(), &extra).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_passes_through_to_the_anthropic_api_that_keeps_it() {
    if !ready("a_thread_passes_through_to_the_anthropic_api_that_keeps_it") {
        return;
    }
    let h = first_party_harness().await;
    // A server that keeps threads (the mock does, as the API): each turn only its news.
    for stream in [false, true] {
        h.mock.clear();
        let mut args = vec!["claude/think+tools"];
        if stream {
            args.push("--stream");
        }
        let case = format!("toolRunner → claude (stream {stream})");
        let out = node("tool_runner.mjs", &h.url, &args).await;
        assert_eq!(out["text"], ANSWER, "{case}: {out}");
        assert_eq!(out["calls"], json!([{"city": "Paris"}]), "{case}: {out}");
        let exchanges = out["exchanges"].as_array().unwrap();
        assert_eq!(exchanges.len(), 2, "{case}: {out}");
        assert!(
            exchanges.iter().all(|e| e["status"] == 200),
            "{case}: {out}"
        );
        let sent = model_calls(&h);
        assert_eq!(sent.len(), 2, "{case}");
        for r in &sent {
            let beta = r.header("anthropic-beta").unwrap_or_default();
            assert!(beta.contains("message-threads-"), "{case}: {beta}");
        }
        assert_eq!(
            body(&sent[0])["thread"],
            json!({"type": "create"}),
            "{case}"
        );
        let second = body(&sent[1]);
        assert_eq!(second["thread"]["type"], "continue", "{case}: {second}");
        assert!(
            second["thread"]["previous_message_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("msg_mock_")),
            "{case}: {second}"
        );
        let messages = second["messages"].as_array().unwrap();
        assert_eq!(
            messages.len(),
            1,
            "{case}: only the tool's result: {second}"
        );
        assert_eq!(messages[0]["content"][0]["type"], "tool_result", "{case}");
    }

    // A server that keeps none: its own refusal reaches the SDK, which falls back.
    h.mock.clear();
    let out = node(
        "tool_runner.mjs",
        &h.url,
        &["claude/think+tools+no-threads"],
    )
    .await;
    assert_eq!(out["text"], ANSWER, "{out}");
    let exchanges = out["exchanges"].as_array().unwrap();
    assert_eq!(exchanges.len(), 3, "{out}");
    assert_eq!(exchanges[0]["status"], 400, "{out}");
    assert_eq!(
        exchanges[0]["error"]["error"]["details"]["error_code"],
        "thread_unsupported_request"
    );
    let sent = model_calls(&h);
    assert_eq!(sent.len(), 3, "the refusal was the upstream's");
    let last = body(&sent[2]);
    assert!(last.get("thread").is_none(), "{last}");
    assert_eq!(last["messages"].as_array().unwrap().len(), 3, "{last}");
    assert_eq!(carries_thinking("messages", last), Some(true), "{last}");
}
