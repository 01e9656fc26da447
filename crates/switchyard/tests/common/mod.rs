//! What the library's HTTP tests share: a registry whose `mock` backend points at a test
//! server, a handle forced to one dialect, and readers for what reached the server.

#![allow(dead_code)]

use serde_json::{json, Value};
use std::sync::Arc;
use switchyard::env::MapEnv;
use switchyard::model_id::escape_segment as escape;
use switchyard::registry::{LoadOptions, Registry};
use switchyard::wire::{Tool, ToolKind};
use switchyard::{connect, Dialect, Llm};
use switchyard_mock::{MockServer, RecordedRequest};

/// The built-in registry (no user file) with `backends.mock.base_url` set to the test
/// server, plus `overrides`.
pub(crate) fn registry(mock: &MockServer, overrides: &[&str], env: &MapEnv) -> Registry {
    let mut opts = LoadOptions::new(env);
    opts.user_file = false;
    opts.overrides = vec![format!("backends.mock.base_url={}", mock.base_url())];
    opts.overrides
        .extend(overrides.iter().map(|o| o.to_string()));
    match Registry::load(&opts) {
        Ok(r) => r,
        Err(e) => panic!("the test registry does not load: {e}"),
    }
}

/// A handle on the `mock` backend for `model`, speaking `dialect`.
pub(crate) fn llm_with(registry: &Registry, dialect: Dialect, model: &str, env: &MapEnv) -> Llm {
    let backend = registry
        .backend("mock")
        .expect("the mock backend is built in");
    let http = connect::http_backend(backend, model, Some(dialect), env)
        .unwrap_or_else(|e| panic!("{dialect}: {e}"));
    Llm::new(format!("mock/{model}"), Arc::new(http), model)
}

/// A handle with no overrides and no keys.
pub(crate) fn llm(mock: &MockServer, dialect: Dialect, model: &str) -> Llm {
    let env = MapEnv::default();
    llm_with(&registry(mock, &[], &env), dialect, model, &env)
}

/// The last request the mock received.
pub(crate) fn last(mock: &MockServer) -> RecordedRequest {
    mock.requests().pop().expect("the mock received a request")
}

/// The JSON body of a recorded request.
pub(crate) fn body(r: &RecordedRequest) -> Value {
    r.json
        .clone()
        .unwrap_or_else(|| panic!("the body is not JSON: {}", r.body_text()))
}

/// The path (and query) a dialect's call for `model` reaches on the mock.
pub(crate) fn expected_path(
    d: Dialect,
    model: &str,
    stream: bool,
) -> (String, Option<&'static str>) {
    match d {
        Dialect::Chat => ("/v1/chat/completions".into(), None),
        Dialect::Responses => ("/v1/responses".into(), None),
        Dialect::Messages => ("/v1/messages".into(), None),
        // The id is one path segment: every byte but the unreserved ones escaped.
        Dialect::Gemini if stream => (
            format!("/v1beta/models/{}:streamGenerateContent", escape(model)),
            Some("alt=sse"),
        ),
        Dialect::Gemini => (
            format!("/v1beta/models/{}:generateContent", escape(model)),
            None,
        ),
    }
}

/// Asserts method, path and query, and the headers every dialect must send.
pub(crate) fn assert_route(r: &RecordedRequest, d: Dialect, model: &str, stream: bool) {
    let (path, query) = expected_path(d, model, stream);
    assert_eq!(r.method, "POST", "{d}");
    assert_eq!(r.path, path, "{d}");
    assert_eq!(r.query.as_deref(), query, "{d}");
    assert_eq!(r.header("content-type"), Some("application/json"), "{d}");
    if stream {
        assert_eq!(r.header("accept"), Some("text/event-stream"), "{d}");
    }
    let version = r.header("anthropic-version");
    if d == Dialect::Messages {
        assert_eq!(
            version,
            Some("2023-06-01"),
            "messages needs anthropic-version"
        );
    } else {
        assert_eq!(version, None, "{d} sends no anthropic-version");
    }
    let body = body(r);
    match d {
        // Gemini names the model in the URL only.
        Dialect::Gemini => assert!(body.get("model").is_none(), "gemini body: {body}"),
        _ => assert_eq!(body["model"], model, "{d}"),
    }
}

/// The one tool the tests offer.
pub(crate) fn weather_tool() -> Tool {
    Tool {
        name: "get_weather".into(),
        description: Some("The weather in a city".into()),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"]
        }),
        kind: ToolKind::Function,
        strict: None,
        namespace: None,
    }
}

/// A handle on the mock's `model` in `dialect` with the default retry policy and
/// `timeouts`; the returned sleeper records the waits asked for (none is real).
pub(crate) fn handle(
    mock: &MockServer,
    dialect: Dialect,
    model: &str,
    timeouts: switchyard::backend::http::Timeouts,
) -> (Llm, switchyard::RecordingSleeper) {
    let env = MapEnv::default();
    let registry = registry(mock, &[], &env);
    let backend = registry
        .backend("mock")
        .expect("the mock backend is built in");
    let http = connect::http_backend_with(backend, model, Some(dialect), &env, timeouts)
        .unwrap_or_else(|e| panic!("{dialect}: {e}"));
    let sleeper = switchyard::RecordingSleeper::new();
    let llm = Llm::new(format!("mock/{model}"), Arc::new(http), model)
        .with_retry(switchyard::RetryPolicy::default())
        .with_sleeper(Arc::new(sleeper.clone()));
    (llm, sleeper)
}

/// The default timeouts of a connected backend.
pub(crate) fn default_timeouts() -> switchyard::backend::http::Timeouts {
    connect::DEFAULT_TIMEOUTS
}

/// Every dialect the mock speaks.
pub(crate) const DIALECTS: [Dialect; 4] = [
    Dialect::Chat,
    Dialect::Responses,
    Dialect::Messages,
    Dialect::Gemini,
];
