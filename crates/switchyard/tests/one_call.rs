//! A run of one call (`RunBuilder::one_call`): what `switchyard ask` opens and what the
//! Python package's `llm()` is to open. Its model, its settings (read and refused by the
//! role reader, with a run config's message), and its default model. Calls go to the mock
//! on 127.0.0.1.

use switchyard::env::MapEnv;
use switchyard::run::{OneCall, Run};
use switchyard::Request;
use switchyard_mock::{MockConfig, MockServer};

fn mock() -> MockServer {
    MockServer::start_in_thread(([127, 0, 0, 1], 0).into(), MockConfig::default()).unwrap()
}

fn one_call(mock: &MockServer, call: OneCall, env: &MapEnv) -> switchyard::Result<Run> {
    Run::builder_without_config()
        .overrides([format!("backends.mock.base_url={}", mock.base_url())])
        .env(env)
        .user_file(false)
        .one_call(call)
        .open()
}

fn settings(pairs: &[(&str, serde_json::Value)]) -> Vec<(String, serde_json::Value)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect()
}

#[tokio::test]
async fn the_settings_given_reach_the_body_and_the_handle_has_no_role() {
    let mock = mock();
    let call = OneCall {
        reference: Some("mock/mock-small".into()),
        settings: settings(&[("temperature", serde_json::json!(0.5))]),
        ..OneCall::default()
    };
    let run = one_call(&mock, call, &MapEnv::default()).unwrap();
    let llm = run.call_llm().unwrap();
    assert_eq!(llm.role(), None);
    llm.complete(Request::user("hi")).await.unwrap();
    let body = mock.requests()[0].json.clone().unwrap();
    assert_eq!(body["model"], "mock-small");
    assert_eq!(body["temperature"], 0.5);
}

#[test]
fn a_setting_the_backend_does_not_take_is_refused_as_in_a_run_config() {
    let mock = mock();
    let call = OneCall {
        reference: Some("mock/echo".into()),
        settings: settings(&[("thinking_budget", serde_json::json!(100))]),
        ..OneCall::default()
    };
    let given = one_call(&mock, call, &MapEnv::default())
        .unwrap_err()
        .to_string();
    // The same setting written in a run config's role.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("run.yaml");
    std::fs::write(
        &path,
        "llm:\n  r: {model: mock/echo, thinking_budget: 100}\n",
    )
    .unwrap();
    let written = Run::builder(&path)
        .env(&MapEnv::default())
        .user_file(false)
        .open()
        .unwrap_err()
        .to_string();
    let what = "backend `mock` (kind http, dialect chat) does not take `thinking_budget`";
    assert!(given.starts_with(what), "{given}");
    // The same message, past where each was written.
    let tail = |t: &str| {
        t[t.find(what).unwrap()..]
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(tail(&given), tail(&written));
    // An unknown key lists what a role accepts.
    let call = OneCall {
        reference: Some("mock/echo".into()),
        settings: settings(&[("temprature", serde_json::json!(0.5))]),
        ..OneCall::default()
    };
    let e = one_call(&mock, call, &MapEnv::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("did you mean `temperature`"), "{e}");
    assert_eq!(mock.received(), 0);
}

#[test]
fn a_role_of_no_config_gets_the_default_model_of_switchyard_backend() {
    let mock = mock();
    let env = MapEnv::new([("SWITCHYARD_BACKEND", "mock")]);
    let run = one_call(&mock, OneCall::default(), &env).unwrap();
    assert_eq!(run.call_llm().unwrap().label(), "mock/echo");
    let role = &run.roles()[0];
    assert_eq!(role.model_from, switchyard::run::ModelSource::BackendVar);
}

#[test]
fn a_backend_without_a_default_model_named_by_the_environment_says_so() {
    let mock = mock();
    // `openai` declares no default model.
    let env = MapEnv::new([("SWITCHYARD_BACKEND", "openai")]);
    let e = one_call(&mock, OneCall::default(), &env)
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "{} (from environment variable SWITCHYARD_BACKEND)",
            switchyard::run::no_default_model("openai")
        )
    );
}

#[test]
fn a_setting_of_the_wrong_shape_given_to_no_role_names_the_setting_alone() {
    let mock = mock();
    let call = OneCall {
        reference: Some("mock/echo".into()),
        settings: settings(&[("temperature", serde_json::json!("hot"))]),
        ..OneCall::default()
    };
    let e = one_call(&mock, call, &MapEnv::default())
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "the settings given: `temperature` must be a number from 0 to 2, found a string"
    );
}
