//! Scenario files: steps served in order, the last repeating, per conversation.

mod common;

use common::*;
use switchyard_mock::{MockConfig, MockServer};
use switchyard_wire::{codec, Dialect, EncodeOptions, Message, Request, Role};

const FILE: &str = r#"
scenarios:
  agent:
    steps:
      - behaviour: fault-429-retry-1
      - thinking: "need the weather"
        tool_calls:
          - name: get_weather
            arguments: {city: Paris}
      - text: "It is sunny."
        usage: {input: 100, output: 4, cached_input: 60}
  flaky:
    per: model
    steps:
      - behaviour: fault-500
      - behaviour: say:recovered
"#;

async fn send(mock: &MockServer, d: Dialect, model: &str, request: &Request) -> reqwest::Response {
    let body = codec(d)
        .encode_request(
            request,
            &EncodeOptions {
                model,
                stream: false,
            },
        )
        .unwrap();
    client()
        .post(endpoint(mock, d, model, false))
        .json(&body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn scenario_steps_advance_per_conversation() {
    let path = std::env::temp_dir().join(format!("switchyard-mock-{}.yaml", std::process::id()));
    std::fs::write(&path, FILE).unwrap();
    let config = MockConfig::from_file(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    let mock = MockServer::start_with(config).await;
    for d in [Dialect::Chat, Dialect::Messages] {
        let mut request = Request::user(format!("weather please ({d})"));
        let r = send(&mock, d, "mock/agent", &request).await;
        assert_eq!(r.status().as_u16(), 429, "{d} step 1");
        let reply = decode_reply(d, send(&mock, d, "agent", &request).await).await;
        assert_eq!(
            reply.tool_calls().next().unwrap().name,
            "get_weather",
            "{d} step 2"
        );
        // The next turn of the same conversation takes the next step.
        request
            .messages
            .push(Message::text(Role::Assistant, "calling"));
        request.messages.push(Message::text(Role::User, "and?"));
        let reply = decode_reply(d, send(&mock, d, "agent", &request).await).await;
        assert_eq!(reply.text(), "It is sunny.", "{d} step 3");
        assert_eq!(reply.usage.unwrap().cached_input, 60, "{d}");
        let reply = decode_reply(d, send(&mock, d, "agent", &request).await).await;
        assert_eq!(reply.text(), "It is sunny.", "{d}: the last step repeats");
    }
}

#[tokio::test]
async fn per_model_counts_across_prompts() {
    let mock = MockServer::start_with(MockConfig::from_yaml(FILE).unwrap()).await;
    let r = send(&mock, Dialect::Chat, "flaky", &Request::user("a")).await;
    assert_eq!(r.status().as_u16(), 500);
    let reply = decode_reply(
        Dialect::Chat,
        send(&mock, Dialect::Chat, "flaky", &Request::user("b")).await,
    )
    .await;
    assert_eq!(reply.text(), "recovered");
    let list = client()
        .get(format!("{}/models", mock.base_url()))
        .send()
        .await
        .unwrap();
    let text = list.text().await.unwrap();
    assert!(
        text.contains("\"agent\"") && text.contains("\"flaky\""),
        "{text}"
    );
}

#[test]
fn a_bad_file_names_the_file_and_line() {
    let path =
        std::env::temp_dir().join(format!("switchyard-mock-bad-{}.yaml", std::process::id()));
    std::fs::write(&path, "scenarios:\n  a:\n    steps:\n      - text: [oops\n").unwrap();
    let err = MockConfig::from_file(&path).unwrap_err().to_string();
    let _ = std::fs::remove_file(&path);
    assert!(
        err.contains("switchyard-mock-bad-") && err.contains(":4:") || err.contains(":5:"),
        "{err}"
    );
}
