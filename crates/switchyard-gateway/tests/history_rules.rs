//! Each multi-turn rule the mock enforces (as the providers do; the mock's own tests show
//! it refusing the bad history, crates/switchyard-mock/tests/history_rules.rs), met by the
//! gateway's translated history on its own: turn 1 through the gateway from a client of
//! another dialect, turn 2 built from what that client received, accepted upstream with
//! the upstream's own state in it.

mod common;

use common::Harness;
use serde_json::{json, Value};
use switchyard_mock::signing::{self, Kind};
use switchyard_wire::{
    Dialect, Message, Opaque, Part, Reasoning, Request, Role, Tool, ToolKind, ToolResult,
};

fn first_request() -> Request {
    let mut request = Request::user("weather and time in Paris?");
    request.reasoning = Some(Reasoning {
        budget_tokens: Some(2048),
        ..Reasoning::default()
    });
    for name in ["get_weather", "get_time"] {
        request.tools.push(Tool {
            name: name.into(),
            description: None,
            parameters: json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
            kind: ToolKind::Function,
            strict: None,
            namespace: None,
        });
    }
    request
}

/// Turn 1 through the gateway, and turn 2's request from what the client got (`edit`
/// may change the reply first, as a misbehaving client would).
async fn second_turn(
    h: &Harness,
    client: Dialect,
    model: &str,
    edit: impl FnOnce(&mut Vec<Part>),
) -> Request {
    let mut request = first_request();
    let reply = h.ask(client, model, &request, false).await;
    let calls: Vec<_> = reply.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2, "{reply:?}");
    let mut content = reply.content;
    edit(&mut content);
    request.messages.push(Message {
        role: Role::Assistant,
        content,
    });
    request.messages.push(Message {
        role: Role::Tool,
        content: calls
            .iter()
            .map(|c| {
                Part::ToolResult(ToolResult {
                    call_id: c.id.clone(),
                    name: Some(c.name.clone()),
                    content: vec![Part::text("sunny")],
                    is_error: false,
                    kind: ToolKind::Function,
                })
            })
            .collect(),
    });
    request
}

/// The first `functionCall` part of the model's turn in a Gemini body.
fn first_call(sent: &Value) -> Value {
    sent["contents"][1]["parts"]
        .as_array()
        .and_then(|parts| parts.iter().find(|p| p.get("functionCall").is_some()))
        .cloned()
        .unwrap_or_else(|| panic!("no function call in the model's turn: {sent}"))
}

/// Turn 2 must be accepted; the body that reached the mock.
async fn accepted(h: &Harness, client: Dialect, model: &str, request: &Request) -> Value {
    let reply = h.ask(client, model, request, false).await;
    assert_eq!(reply.tool_calls().count(), 1, "the second round: {reply:?}");
    let last = h.mock.requests().pop().unwrap();
    last.json.unwrap()
}

#[tokio::test]
async fn gemini_3_gets_its_function_call_signature_back() {
    let h = Harness::start().await;
    let model = "up-gemini/gemini-3-pro+agent+think";
    let request = second_turn(&h, Dialect::Messages, model, |_| {}).await;
    let sent = accepted(&h, Dialect::Messages, model, &request).await;
    let call = first_call(&sent);
    let signature = call["thoughtSignature"].as_str().unwrap();
    assert!(
        signing::verify_unbound(Kind::ThoughtSignature, signature),
        "{call}"
    );
}

#[tokio::test]
async fn anthropic_gets_its_signed_thinking_before_the_tool_use() {
    let h = Harness::start().await;
    let model = "up-messages/agent+think";
    let request = second_turn(&h, Dialect::Responses, model, |_| {}).await;
    let sent = accepted(&h, Dialect::Responses, model, &request).await;
    assert!(sent.get("thinking").is_some(), "thinking stays on: {sent}");
    let first = &sent["messages"][1]["content"][0];
    assert_eq!(first["type"], "thinking", "{sent}");
    assert!(signing::verify_thinking(
        first["thinking"].as_str().unwrap(),
        first["signature"].as_str().unwrap()
    ));
}

#[tokio::test]
async fn a_tampered_envelope_is_dropped_and_the_turn_still_goes_up() {
    let h = Harness::start().await;
    let model = "up-messages/agent+think";
    let request = second_turn(&h, Dialect::Gemini, model, |content| {
        for part in content {
            if let Part::Thinking(t) = part {
                if let Some(state) = &mut t.state {
                    // One character of the envelope changed: its MAC no longer verifies.
                    let mut bytes = state.value.clone().into_bytes();
                    let i = bytes.len() / 2;
                    bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
                    state.value = String::from_utf8(bytes).unwrap();
                }
            }
        }
    })
    .await;
    let sent = accepted(&h, Dialect::Gemini, model, &request).await;
    assert!(
        !sent.to_string().contains("signature"),
        "nothing forged reaches Anthropic: {sent}"
    );
    assert!(
        sent.get("thinking").is_none(),
        "thinking off for the unsigned turn: {sent}"
    );

    // A native signature tampered with on the pass-through path is Anthropic's to refuse,
    // and its refusal reaches the client as it is.
    let request = second_turn(&h, Dialect::Messages, model, |content| {
        if let Some(Part::Thinking(t)) = content.first_mut() {
            t.state = Some(Opaque::new(
                Dialect::Messages,
                signing::thinking_signature("other text", 1),
            ));
        }
    })
    .await;
    let (status, body) = h.send(Dialect::Messages, model, &request, false).await;
    assert_eq!(status, 400);
    assert!(
        String::from_utf8_lossy(&body).contains("Invalid `signature` in `thinking` block"),
        "{}",
        String::from_utf8_lossy(&body)
    );
}

#[tokio::test]
async fn openai_gets_its_encrypted_reasoning_and_matching_calls() {
    let h = Harness::start().await;
    let model = "up-responses/agent+think";
    let request = second_turn(&h, Dialect::Messages, model, |_| {}).await;
    let sent = accepted(&h, Dialect::Messages, model, &request).await;
    let input = sent["input"].as_array().unwrap();
    let reasoning = input
        .iter()
        .find(|i| i["type"] == "reasoning")
        .expect("reasoning sent back");
    assert!(signing::verify_unbound(
        Kind::EncryptedContent,
        reasoning["encrypted_content"].as_str().unwrap()
    ));
    let calls: Vec<_> = input
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| &i["call_id"])
        .collect();
    let outputs: Vec<_> = input
        .iter()
        .filter(|i| i["type"] == "function_call_output")
        .map(|i| &i["call_id"])
        .collect();
    assert_eq!(calls, outputs, "every output answers a call sent before it");
}

#[tokio::test]
async fn chat_gets_tool_messages_answering_its_tool_calls() {
    let h = Harness::start().await;
    let model = "up-chat/agent+think";
    let request = second_turn(&h, Dialect::Gemini, model, |_| {}).await;
    let sent = accepted(&h, Dialect::Gemini, model, &request).await;
    let messages = sent["messages"].as_array().unwrap();
    let ids: Vec<_> = messages[1]["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["id"])
        .collect();
    let answered: Vec<_> = messages[2..].iter().map(|m| &m["tool_call_id"]).collect();
    assert_eq!(ids, answered, "{sent}");
}

#[tokio::test]
async fn an_envelope_for_another_backend_is_dropped_never_sent() {
    // Two Gemini backends on one mock: state the first issued is never sent to the second.
    let mock = switchyard_mock::MockServer::start().await;
    let extra = [
        "backends.other-gemini.from=mock".to_string(),
        "backends.other-gemini.apis=[gemini]".to_string(),
    ];
    let config = switchyard_gateway::GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        ..Default::default()
    };
    let gateway = common::gateway_for(&mock.base_url(), config, Default::default(), &extra);
    let running = switchyard_gateway::start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let h = Harness {
        url: running.url(),
        mock,
        gateway: Some(running),
        http: reqwest::Client::new(),
    };
    let issuing = "up-gemini/gemini-3-pro+agent+think";
    let request = second_turn(&h, Dialect::Messages, issuing, |_| {}).await;
    let sent = accepted(
        &h,
        Dialect::Messages,
        "other-gemini/gemini-3-pro+agent+think",
        &request,
    )
    .await;
    let call = first_call(&sent);
    assert_eq!(
        call["thoughtSignature"], "skip_thought_signature_validator",
        "the other backend gets Google's placeholder, not the first backend's signature: {call}"
    );
}

#[tokio::test]
async fn a_client_moving_to_a_backend_of_its_own_dialect_sends_no_envelope_there() {
    // A Messages client's history from a Gemini backend holds envelopes; sent to an
    // Anthropic backend (its own dialect, normally passed through untouched) the body is
    // opened instead, and only what Anthropic can take goes up.
    let h = Harness::start().await;
    let request = second_turn(
        &h,
        Dialect::Messages,
        "up-gemini/gemini-3-pro+agent+think",
        |_| {},
    )
    .await;
    let sent = accepted(&h, Dialect::Messages, "up-messages/agent+think", &request).await;
    let text = sent.to_string();
    assert!(
        !text.contains("U1kB"),
        "no envelope reaches the upstream: {text}"
    );
    assert!(
        !text.contains("signature"),
        "Gemini's state is not Anthropic's: {text}"
    );
    assert!(
        sent.get("thinking").is_none(),
        "the unsigned tool turn goes up with thinking off: {text}"
    );
}
