//! What a backend's registry entry does to the request on the wire, checked at the mock:
//! each auth style, `extra_body` (its main dialect's), `developer_role: system`, `max_tokens_field`, a missing
//! key, and a redirect (reported, not followed).

mod common;

use common::*;
use futures::StreamExt;
use serde_json::json;
use switchyard::backend::http::RawRequest;
use switchyard::env::MapEnv;
use switchyard::{connect, Dialect, ErrorKind, Llm, Message, Request, Role};
use switchyard_mock::{MockServer, RecordedRequest};

const KEY: &str = "sk-mock-test-0123456789";

/// The credential headers a request carried.
fn credentials(r: &RecordedRequest) -> (Option<&str>, Option<&str>, Option<&str>) {
    (
        r.header("authorization"),
        r.header("x-api-key"),
        r.header("x-goog-api-key"),
    )
}

async fn call(registry: &switchyard::Registry, d: Dialect, env: &MapEnv) {
    let reply = llm_with(registry, d, "echo", env)
        .complete(Request::user("hi"))
        .await
        .unwrap_or_else(|e| panic!("{d}: {e}"));
    assert_eq!(reply.text(), "hi", "{d}");
}

#[tokio::test]
async fn bearer_key_is_sent_as_authorization() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let registry = registry(&mock, &["backends.mock.auth=bearer"], &env);
    for d in [Dialect::Chat, Dialect::Responses, Dialect::Messages] {
        call(&registry, d, &env).await;
        let bearer = format!("Bearer {KEY}");
        assert_eq!(
            credentials(&last(&mock)),
            (Some(bearer.as_str()), None, None),
            "{d}"
        );
    }
    // The native Gemini API takes a key only as x-goog-api-key.
    call(&registry, Dialect::Gemini, &env).await;
    assert_eq!(credentials(&last(&mock)), (None, None, Some(KEY)));
}

#[tokio::test]
async fn x_api_key_is_sent_with_anthropic_version() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let registry = registry(&mock, &["backends.mock.auth=x-api-key"], &env);
    call(&registry, Dialect::Messages, &env).await;
    let sent = last(&mock);
    assert_eq!(credentials(&sent), (None, Some(KEY), None));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
}

#[tokio::test]
async fn a_callers_headers_replace_the_defaults_and_keep_every_value() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let registry = registry(&mock, &["backends.mock.auth=x-api-key"], &env);
    let backend = registry
        .backend("mock")
        .expect("the mock backend is built in");
    let http = connect::http_backend(backend, "echo", Some(Dialect::Messages), &env).unwrap();
    let body =
        json!({"model": "echo", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]});
    let mut request = RawRequest::new(body.to_string().into(), false);
    request.headers = vec![
        (
            "anthropic-version".parse().unwrap(),
            "2024-01-01".parse().unwrap(),
        ),
        ("anthropic-beta".parse().unwrap(), "flag-a".parse().unwrap()),
        ("anthropic-beta".parse().unwrap(), "flag-b".parse().unwrap()),
    ];
    http.send_raw(&request).await.unwrap();
    let sent = last(&mock);
    let values = |name: &str| -> Vec<&str> {
        sent.headers
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(values("anthropic-version"), ["2024-01-01"]);
    assert_eq!(values("anthropic-beta"), ["flag-a", "flag-b"]);
    assert_eq!(values("x-api-key"), [KEY]);
    assert_eq!(values("content-type"), ["application/json"]);
}

#[tokio::test]
async fn x_goog_api_key_is_sent_for_gemini() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let registry = registry(&mock, &["backends.mock.auth=x-goog-api-key"], &env);
    call(&registry, Dialect::Gemini, &env).await;
    let sent = last(&mock);
    assert_eq!(credentials(&sent), (None, None, Some(KEY)));
    // Streaming sends it too.
    let stream = llm_with(&registry, Dialect::Gemini, "echo", &env)
        .stream(Request::user("hi"))
        .await
        .unwrap();
    assert_eq!(stream.into_reply().await.unwrap().text(), "hi");
    let sent = last(&mock);
    assert_eq!(sent.query.as_deref(), Some("alt=sse"));
    assert_eq!(credentials(&sent), (None, None, Some(KEY)));
}

#[tokio::test]
async fn no_credential_when_no_key_is_required_and_none_is_set() {
    // The built-in mock backend has `key_required: false`.
    let mock = MockServer::start().await;
    let env = MapEnv::default();
    let registry = registry(&mock, &[], &env);
    for d in Dialect::ALL {
        call(&registry, d, &env).await;
        assert_eq!(credentials(&last(&mock)), (None, None, None), "{d}");
    }
}

#[tokio::test]
async fn auth_none_sends_no_key_even_when_one_is_set() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let registry = registry(&mock, &["backends.mock.auth=none"], &env);
    for d in Dialect::ALL {
        call(&registry, d, &env).await;
        let sent = last(&mock);
        assert_eq!(credentials(&sent), (None, None, None), "{d}");
        assert!(!sent.headers.iter().any(|(_, v)| v.contains(KEY)), "{d}");
    }
}

#[tokio::test]
async fn a_key_read_from_a_named_variable() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MY_MOCK_KEY", KEY)]);
    let registry = registry(&mock, &["backends.mock.api_key_env=MY_MOCK_KEY"], &env);
    call(&registry, Dialect::Chat, &env).await;
    let bearer = format!("Bearer {KEY}");
    assert_eq!(credentials(&last(&mock)).0, Some(bearer.as_str()));
}

#[tokio::test]
async fn missing_required_key_names_the_variable_before_any_call() {
    let mock = MockServer::start().await;
    let env = MapEnv::default();
    for (overrides, variable) in [
        (vec!["backends.mock.key_required=true"], "MOCK_API_KEY"),
        (
            vec![
                "backends.mock.key_required=true",
                "backends.mock.api_key_env=MY_MOCK_KEY",
            ],
            "MY_MOCK_KEY",
        ),
    ] {
        let registry = registry(&mock, &overrides, &env);
        let backend = registry.backend("mock").unwrap();
        for d in Dialect::ALL {
            let e = connect::http_backend(backend, "echo", Some(d), &env)
                .err()
                .unwrap_or_else(|| panic!("{d}: a backend without its key"));
            assert_eq!(e.kind(), ErrorKind::MissingKey, "{d}");
            let message = e.to_string();
            assert!(message.contains(variable), "{d}: {message}");
            assert!(message.contains("mock"), "{d}: {message}");
        }
        // The same through a reference.
        let e = Llm::resolve(&registry, "mock/echo", &env).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::MissingKey);
        assert!(e.to_string().contains(variable), "{e}");
    }
    assert!(mock.requests().is_empty(), "nothing was sent");
}

#[tokio::test]
async fn extra_body_is_merged_into_every_request_of_the_main_dialect_and_wins() {
    let mock = MockServer::start().await;
    let env = MapEnv::default();
    let registry = registry(
        &mock,
        &[
            "backends.mock.extra_body.chat_template_kwargs={enable_thinking: false}",
            "backends.mock.extra_body.top_k=20",
            "backends.mock.extra_body.temperature=0.7",
        ],
        &env,
    );
    // The mock's main dialect (the first in `apis`) is chat: its fields are written for
    // chat; the other dialects get none (tests/config_forms.rs).
    for d in [Dialect::Chat] {
        let llm = llm_with(&registry, d, "echo", &env);
        let mut request = Request::user("hi");
        request.temperature = Some(0.1);
        let reply = llm.complete(request.clone()).await.unwrap();
        assert_eq!(reply.text(), "hi", "{d}");
        let mut stream = llm.stream(request).await.unwrap();
        while let Some(e) = stream.next().await {
            e.unwrap();
        }
        let sent = mock.requests();
        for r in &sent[sent.len() - 2..] {
            let b = body(r);
            assert_eq!(
                b["chat_template_kwargs"],
                json!({"enable_thinking": false}),
                "{d}"
            );
            assert_eq!(b["top_k"], 20, "{d}");
            // extra_body wins over what the codec wrote (top level).
            assert_eq!(b["temperature"], 0.7, "{d}: {b}");
        }
    }
}

fn with_developer() -> Request {
    let mut r = Request::user("hi");
    r.messages
        .insert(0, Message::text(Role::Developer, "answer in French"));
    r
}

#[tokio::test]
async fn developer_role_system_renames_developer_messages() {
    let mock = MockServer::start().await;
    let env = MapEnv::default();

    // As is: the developer role reaches the server.
    let plain = registry(&mock, &[], &env);
    llm_with(&plain, Dialect::Chat, "echo", &env)
        .complete(with_developer())
        .await
        .unwrap();
    assert_eq!(
        body(&last(&mock))["messages"][0],
        json!({"role": "developer", "content": "answer in French"})
    );
    llm_with(&plain, Dialect::Responses, "echo", &env)
        .complete(with_developer())
        .await
        .unwrap();
    assert_eq!(body(&last(&mock))["input"][0]["role"], "developer");

    // `developer_role: system`: sent as a system message, streamed or not.
    let system = registry(&mock, &["backends.mock.developer_role=system"], &env);
    let llm = llm_with(&system, Dialect::Chat, "echo", &env);
    llm.complete(with_developer()).await.unwrap();
    let expected = json!({"role": "system", "content": "answer in French"});
    assert_eq!(body(&last(&mock))["messages"][0], expected);
    llm.stream(with_developer())
        .await
        .unwrap()
        .into_reply()
        .await
        .unwrap();
    assert_eq!(body(&last(&mock))["messages"][0], expected);
    // Responses: the message item keeps its place as a system one, as the gateway's
    // pass-through sends it (one rule, `backend::http::edits`, for both).
    llm_with(&system, Dialect::Responses, "echo", &env)
        .complete(with_developer())
        .await
        .unwrap();
    let b = body(&last(&mock));
    assert_eq!(b["input"][0]["role"], "system", "{b}");
    assert_eq!(
        b["input"][0]["content"][0]["text"], "answer in French",
        "{b}"
    );
    assert!(!b.to_string().contains("developer"), "{b}");
}

#[tokio::test]
async fn the_key_never_appears_in_an_error() {
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let registry = registry(&mock, &["backends.mock.auth=bearer"], &env);
    for d in Dialect::ALL {
        let e = llm_with(&registry, d, "fault-401", &env)
            .complete(Request::user("hi"))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{d}: {e}");
        assert!(!e.to_string().contains(KEY), "{d}: {e}");
        assert!(!format!("{e:?}").contains(KEY), "{d}: {e:?}");
    }
}

/// A backend whose key is optional was sent none: its 401 says so, and which variable.
#[tokio::test]
async fn a_refusal_without_a_key_sent_says_that_no_key_was_sent() {
    let mock = MockServer::start().await;
    let env = MapEnv::default();
    let keyless = registry(&mock, &[], &env);
    for d in Dialect::ALL {
        let e = llm_with(&keyless, d, "fault-401", &env)
            .complete(Request::user("hi"))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{d}: {e}");
        assert!(
            e.to_string()
                .contains("no key was sent: MOCK_API_KEY is unset"),
            "{d}: {e}"
        );
    }
    // With a key sent, the provider's words alone.
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let keyed = registry(&mock, &[], &env);
    let e = llm_with(&keyed, Dialect::Chat, "fault-401", &env)
        .complete(Request::user("hi"))
        .await
        .unwrap_err();
    assert!(!e.to_string().contains("no key was sent"), "{e}");
}

#[test]
fn vertex_urls_come_from_project_and_location() {
    let registry = switchyard::Registry::builtin().unwrap();
    let vertex = registry.backend("vertex").unwrap();
    let env = |location: &str| {
        MapEnv::new([
            ("GOOGLE_CLOUD_PROJECT", "test-proj"),
            ("GOOGLE_CLOUD_LOCATION", location),
        ])
    };
    let gemini = |location: &str, model: &str| {
        let b = connect::http_backend(vertex, model, None, &env(location)).unwrap();
        assert_eq!(b.config().dialect, Dialect::Gemini);
        // Application Default Credentials: a token source, no key variable.
        assert_eq!(format!("{:?}", b.config().auth), "Credential::Token");
        b.config().endpoint.clone()
    };

    let regional = gemini("us-central1", "gemini-2.5-flash");
    assert_eq!(
        regional.complete.as_str(),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/test-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
    );
    assert_eq!(
        regional.stream.as_str(),
        "https://us-central1-aiplatform.googleapis.com/v1/projects/test-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    // `global` (what Gemini 3 models need) has no regional host.
    let global = gemini("global", "gemini-3-pro-preview");
    assert_eq!(
        global.complete.as_str(),
        "https://aiplatform.googleapis.com/v1/projects/test-proj/locations/global/publishers/google/models/gemini-3-pro-preview:generateContent"
    );
    let chat = connect::http_backend(
        vertex,
        "google/gemini-3-pro-preview",
        Some(Dialect::Chat),
        &env("global"),
    )
    .unwrap();
    assert_eq!(
        chat.config().endpoint.complete.as_str(),
        "https://aiplatform.googleapis.com/v1beta1/projects/test-proj/locations/global/endpoints/openapi/chat/completions"
    );

    // The project unset: an error naming the variable, before any call.
    let e = connect::http_backend(
        vertex,
        "gemini-2.5-flash",
        None,
        &MapEnv::new([("GOOGLE_CLOUD_LOCATION", "global")]),
    )
    .err()
    .unwrap();
    assert_eq!(e.kind(), ErrorKind::Config);
    assert!(e.to_string().contains("GOOGLE_CLOUD_PROJECT"), "{e}");
    assert!(e.to_string().contains("vertex"), "{e}");
}

#[tokio::test]
async fn a_redirect_is_reported_and_not_followed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mock = MockServer::start().await;
    // A server that answers every request with a redirect to the mock.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let location = format!("{}/chat/completions", mock.base_url());
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 64 * 1024];
            let _ = socket.read(&mut buf).await;
            let reply = format!(
                "HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = socket.write_all(reply.as_bytes()).await;
        }
    });
    let env = MapEnv::default();
    let base = format!("backends.mock.base_url=http://127.0.0.1:{port}/v1");
    let registry = registry(&mock, &[base.as_str()], &env);
    let e = llm_with(&registry, Dialect::Chat, "echo", &env)
        .with_retry(switchyard::RetryPolicy::never())
        .complete(Request::user("hi"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Provider, "{e}");
    assert!(e.to_string().contains("307"), "{e}");
    assert!(
        mock.requests().is_empty(),
        "the prompt went to the redirect's target"
    );
}

#[tokio::test]
async fn max_tokens_field_moves_a_chat_limit_to_max_tokens() {
    let mock = MockServer::start().await;
    let env = MapEnv::default();
    let request = Request::user("hi").with_max_tokens(40);
    // The default: OpenAI's current field.
    let plain = registry(&mock, &[], &env);
    call(&plain, Dialect::Chat, &env).await;
    llm_with(&plain, Dialect::Chat, "echo", &env)
        .complete(request.clone())
        .await
        .unwrap();
    let b = body(&last(&mock));
    assert_eq!(b["max_completion_tokens"], 40, "{b}");
    assert!(b.get("max_tokens").is_none(), "{b}");
    // `max_tokens_field: max_tokens`, whole and streamed; other dialects keep their own.
    let legacy = registry(&mock, &["backends.mock.max_tokens_field=max_tokens"], &env);
    let llm = llm_with(&legacy, Dialect::Chat, "echo", &env);
    llm.complete(request.clone()).await.unwrap();
    let mut stream = llm.stream(request.clone()).await.unwrap();
    while let Some(e) = stream.next().await {
        e.unwrap();
    }
    for r in &mock.requests()[mock.requests().len() - 2..] {
        let b = body(r);
        assert_eq!(b["max_tokens"], 40, "{b}");
        assert!(b.get("max_completion_tokens").is_none(), "{b}");
    }
    llm_with(&legacy, Dialect::Messages, "echo", &env)
        .complete(request)
        .await
        .unwrap();
    assert_eq!(body(&last(&mock))["max_tokens"], 40);
}
