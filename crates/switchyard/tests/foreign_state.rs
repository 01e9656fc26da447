//! History made by one backend, replayed to another through the library: opaque state goes
//! back only to the backend that issued it (exactly as issued), is dropped for any other
//! (another dialect, or the same dialect on another backend), and the turn is fitted to
//! the target's rule rather than refused. The mock enforces each provider's rules.

mod common;

use common::*;
use serde_json::json;
use switchyard::wire::{Reasoning, ToolResult};
use switchyard::{Dialect, Llm, Message, Part, Request, Role};
use switchyard_mock::MockServer;

fn weather_tools(request: &mut Request) {
    for name in ["get_weather", "get_time"] {
        request.tools.push(switchyard::wire::Tool {
            name: name.into(),
            description: None,
            parameters: json!({"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}),
            kind: switchyard::wire::ToolKind::Function,
            strict: None,
            namespace: None,
        });
    }
}

/// Turn 1 on `first`, then the history with the tools' results.
async fn first_turn(first: &Llm) -> Request {
    let mut request = Request::user("weather and time in Paris?");
    request.reasoning = Some(Reasoning {
        budget_tokens: Some(2048),
        ..Reasoning::default()
    });
    weather_tools(&mut request);
    let reply = first.complete(request.clone()).await.unwrap();
    let calls: Vec<_> = reply.tool_calls().cloned().collect();
    assert_eq!(calls.len(), 2, "{reply:?}");
    request.messages.push(Message {
        role: Role::Assistant,
        content: reply.content.clone(),
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
                    kind: Default::default(),
                })
            })
            .collect(),
    });
    request
}

fn twin(mock: &MockServer, dialect: Dialect, model: &str) -> Llm {
    let env = switchyard::env::MapEnv::default();
    let registry = registry(
        mock,
        &[
            &format!("backends.twin.base_url={}", mock.base_url()),
            "backends.twin.from=mock",
        ],
        &env,
    );
    let backend = registry
        .backend("twin")
        .expect("the twin backend is declared");
    let http = switchyard::connect::http_backend(backend, model, Some(dialect), &env).unwrap();
    Llm::new(format!("twin/{model}"), std::sync::Arc::new(http), model)
}

#[tokio::test]
async fn state_goes_back_to_its_own_backend_only() {
    let mock = MockServer::start().await;
    let model = "agent+think";
    let anthropic = llm(&mock, Dialect::Messages, model);
    let history = first_turn(&anthropic).await;
    let signature = match &history.messages[1].content[0] {
        Part::Thinking(t) => t.state.clone().unwrap(),
        other => panic!("the reply starts with signed thinking: {other:?}"),
    };
    assert_eq!(signature.backend.as_deref(), Some("mock"));

    // The same backend gets its signature back, byte for byte.
    anthropic.complete(history.clone()).await.unwrap();
    let sent = body(&last(&mock));
    assert_eq!(
        sent["messages"][1]["content"][0]["signature"],
        signature.value.as_str()
    );
    assert!(sent.get("thinking").is_some());

    // The same dialect on another backend: the signature would be refused there, so it is
    // dropped, and the tool turn goes up with thinking off, as Anthropic requires.
    twin(&mock, Dialect::Messages, model)
        .complete(history.clone())
        .await
        .expect("the twin accepts the fitted history");
    let sent = body(&last(&mock));
    assert!(!sent.to_string().contains(&signature.value), "{sent}");
    assert!(sent.get("thinking").is_none(), "{sent}");

    // Another dialect (Gemini 3): the Anthropic state is not sendable; the calls Gemini
    // did not sign go up with Google's placeholder.
    llm(&mock, Dialect::Gemini, "gemini-3-pro+agent+think")
        .complete(history.clone())
        .await
        .expect("Gemini 3 accepts the fitted history");
    let sent = body(&last(&mock));
    assert!(!sent.to_string().contains(&signature.value), "{sent}");
    assert_eq!(
        sent["contents"][1]["parts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p.get("functionCall").is_some())
            .unwrap()["thoughtSignature"],
        "skip_thought_signature_validator"
    );
}
