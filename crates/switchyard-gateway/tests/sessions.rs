//! Whole agent sessions through the gateway, driven by the official SDKs (OpenAI chat and
//! Responses, Anthropic, google-genai: tests/python/sdk_sessions.py), for every client
//! dialect x every upstream dialect x streamed or not, against the mock enforcing each
//! provider's multi-turn rules. Then every upstream request the mock received is read:
//! each assistant tool turn a client could carry state for went up with exactly the state
//! the mock issued (it verifies), no envelope ever reached an upstream, and a chat
//! client's turns went up in the documented fallback form.

mod common;

use common::python::run_sdk_script;
use common::Harness;
use serde_json::Value;
use switchyard_mock::signing::{self, Kind};
use switchyard_mock::RecordedRequest;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_sessions_keep_their_state_across_every_pair_of_dialects() {
    let h = Harness::start().await;
    let test = "agent_sessions_keep_their_state_across_every_pair_of_dialects";
    let Some(out) = run_sdk_script(test, "sdk_sessions.py", &h.url).await else {
        return;
    };
    assert_eq!(
        out.lines().filter(|l| l.starts_with("ok ")).count(),
        32,
        "{out}"
    );

    let requests = h.mock.requests();
    assert_eq!(requests.len(), 32 * 6, "six upstream requests per session");
    let mut checked_turns = 0;
    for request in &requests {
        checked_turns += check_upstream_request(request);
    }
    // Every session of a client that can carry state, to an upstream that has state (3 x 3
    // pairs, whole and streamed), sends 1 + 2 + 2 + 3 + 4 tool turns back over its six
    // requests.
    assert_eq!(checked_turns, 18 * 12, "tool turns checked");
}

/// The client dialect that started the session: its tag leads the first user text.
fn client_of(body: &str) -> &'static str {
    for client in ["chat", "responses", "messages", "gemini"] {
        if body.contains(&format!("[{client} ")) {
            return client;
        }
    }
    panic!("no session tag in {body}")
}

/// Checks one upstream request; returns how many assistant tool turns carried state.
fn check_upstream_request(request: &RecordedRequest) -> usize {
    let body = request.body_text();
    assert!(
        !body.contains("\"U1kB"),
        "an envelope reached the upstream: {body}"
    );
    let json = request.json.clone().expect("upstream bodies are JSON");
    let client = client_of(&body);
    let path = request.path.as_str();
    if path.ends_with("/messages") {
        messages_turns(&json, client)
    } else if path.ends_with("/responses") {
        responses_turns(&json, client)
    } else if path.contains(":generateContent") || path.contains(":streamGenerateContent") {
        gemini_turns(&json, client)
    } else {
        // Chat has no opaque state; its tool ids the mock checks itself.
        0
    }
}

fn messages_turns(body: &Value, client: &str) -> usize {
    let mut turns = 0;
    let messages = body["messages"].as_array().unwrap();
    let last_assistant = messages.iter().rposition(|m| m["role"] == "assistant");
    for (i, m) in messages.iter().enumerate() {
        let Some(content) = m["content"].as_array() else {
            continue;
        };
        if m["role"] != "assistant" || !content.iter().any(|b| b["type"] == "tool_use") {
            continue;
        }
        if client == "chat" {
            // Nothing to carry: the last tool turn goes up with thinking off.
            if Some(i) == last_assistant {
                assert!(body.get("thinking").is_none(), "{body}");
            }
            continue;
        }
        let first = &content[0];
        assert_eq!(
            first["type"], "thinking",
            "turn {i} lost its thinking: {body}"
        );
        let text = first["thinking"].as_str().unwrap();
        let signature = first["signature"].as_str().unwrap();
        assert!(
            signing::verify_thinking(text, signature),
            "turn {i}'s thinking is not what the mock signed: {first}"
        );
        turns += 1;
    }
    turns
}

fn responses_turns(body: &Value, client: &str) -> usize {
    let mut turns = 0;
    let items = body["input"].as_array().unwrap();
    let mut reasoning_since_last_call_group = false;
    let mut previous_was_call = false;
    for item in items {
        match item["type"].as_str() {
            Some("reasoning") => {
                let enc = item["encrypted_content"].as_str().unwrap_or_default();
                assert!(
                    signing::verify_unbound(Kind::EncryptedContent, enc),
                    "a reasoning item the mock did not issue: {item}"
                );
                reasoning_since_last_call_group = true;
            }
            Some("function_call") => {
                if !previous_was_call {
                    if client != "chat" {
                        assert!(
                            reasoning_since_last_call_group,
                            "a tool turn went up without its reasoning: {body}"
                        );
                        turns += 1;
                    }
                    reasoning_since_last_call_group = false;
                }
                previous_was_call = true;
                continue;
            }
            _ => {}
        }
        previous_was_call = false;
    }
    turns
}

fn gemini_turns(body: &Value, client: &str) -> usize {
    let mut turns = 0;
    for content in body["contents"].as_array().unwrap() {
        if content["role"] != "model" {
            continue;
        }
        let parts = content["parts"].as_array().unwrap();
        let Some(first_call) = parts.iter().find(|p| p.get("functionCall").is_some()) else {
            continue;
        };
        // google-genai holds signatures as bytes and sends them back URL-safe; Google
        // reads either alphabet.
        let raw = first_call["thoughtSignature"].as_str().unwrap_or_default();
        if client == "chat" {
            assert_eq!(raw, "skip_thought_signature_validator", "{content}");
            continue;
        }
        let signature = raw.replace('-', "+").replace('_', "/");
        assert!(
            signing::verify_unbound(Kind::ThoughtSignature, &signature),
            "a function call went up without the signature the mock gave it: {content}"
        );
        turns += 1;
    }
    turns
}
