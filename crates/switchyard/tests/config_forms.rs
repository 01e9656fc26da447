//! The configuration forms other programs write, read as Switchyard's own: a backends file
//! written as a bare mapping of backends, a whole backend as one command-line override
//! (`backends.<name>={…}`), a role's older `{base_url, model, api_key_env}` endpoint; and
//! what a backend's entry decides on the wire (the chat output limit's field, `extra_body`
//! per dialect, Vertex's default location). Calls go to the mock on 127.0.0.1.

mod common;

use common::*;
use serde_json::json;
use switchyard::env::MapEnv;
use switchyard::registry::{Config, Layer, LoadOptions, MaxTokensField};
use switchyard::run::{RoleForm, Run};
use switchyard::{Dialect, Llm, Request};
use switchyard_mock::MockServer;

/// Loads the built-ins, the user's file at `user` (if given) and `overrides`.
fn load(user: Option<&std::path::Path>, overrides: &[String], env: &[(&str, String)]) -> Config {
    try_load(user, overrides, env).unwrap_or_else(|e| panic!("the config does not load: {e}"))
}

fn try_load(
    user: Option<&std::path::Path>,
    overrides: &[String],
    env: &[(&str, String)],
) -> Result<Config, String> {
    let mut vars: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    if let Some(u) = user {
        vars.push(("SWITCHYARD_BACKENDS".into(), u.display().to_string()));
    }
    let env = MapEnv::new(vars);
    let mut opts = LoadOptions::new(&env);
    opts.user_file = user.is_some();
    opts.overrides = overrides.to_vec();
    Config::load(&opts).map_err(|e| e.to_string())
}

async fn ask(config: &Config, reference: &str) -> String {
    let env = MapEnv::default();
    Llm::resolve(&config.registry, reference, &env)
        .unwrap_or_else(|e| panic!("{reference}: {e}"))
        .complete(Request::user("hi").with_max_tokens(9))
        .await
        .unwrap_or_else(|e| panic!("{reference}: {e}"))
        .text()
}

#[tokio::test]
async fn a_users_backends_file_may_be_a_bare_mapping_of_backends() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("backends.yaml");
    std::fs::write(
        &file,
        format!(
            "# the form some programs write: backends at the top\n\
             my-llm:\n  base_url: {}\n  apis: [chat]\n  key_required: false\n",
            mock.base_url()
        ),
    )
    .unwrap();
    let config = load(Some(&file), &[], &[]);
    let b = config
        .registry
        .backend("my-llm")
        .expect("the bare entry is a backend");
    assert_eq!(
        b.base_url.as_ref().unwrap().layer,
        Layer::UserFile(file.clone())
    );
    assert!(
        config.registry.backend("openai").is_some(),
        "the built-ins stay"
    );
    assert_eq!(ask(&config, "my-llm/echo").await, "hi");
    assert_eq!(mock.requests()[0].path, "/v1/chat/completions");

    // Both forms in one file: refused, at the key, naming both ways to write it.
    std::fs::write(
        &file,
        "backends:\n  a: {base_url: http://127.0.0.1:9/v1}\nmy-llm:\n  base_url: http://127.0.0.1:9/v1\n",
    )
    .unwrap();
    let e = try_load(Some(&file), &[], &[]).unwrap_err();
    assert!(e.contains("backends.yaml:3:1"), "{e}");
    assert!(e.contains("unknown top-level key `my-llm`"), "{e}");
    assert!(e.contains("move `my-llm` under `backends:`"), "{e}");
    // A bare entry that is not a backend's fields.
    std::fs::write(&file, "my-llm: 5\n").unwrap();
    let e = try_load(Some(&file), &[], &[]).unwrap_err();
    assert!(
        e.contains("`my-llm` must be a mapping of backend fields"),
        "{e}"
    );
    // A bare entry's fields are checked as any backend's, placed in the file.
    std::fs::write(
        &file,
        "my-llm:\n  base_url: http://127.0.0.1:9/v1\n  apiz: [chat]\n",
    )
    .unwrap();
    let e = try_load(Some(&file), &[], &[]).unwrap_err();
    assert!(e.contains("backends.yaml:3:3"), "{e}");
    assert!(
        e.contains("unknown backend field `apiz` (did you mean `apis`?)"),
        "{e}"
    );
}

#[tokio::test]
async fn a_whole_backend_is_one_override() {
    let mock = MockServer::start().await;
    // YAML's inline mapping and JSON alike.
    for text in [
        format!(
            "backends.local={{base_url: {}, apis: [chat], key_required: false}}",
            mock.base_url()
        ),
        format!(
            r#"backends.local={{"base_url": "{}", "apis": ["chat"], "key_required": false}}"#,
            mock.base_url()
        ),
    ] {
        let config = load(None, std::slice::from_ref(&text), &[]);
        let b = config.registry.backend("local").expect(&text);
        assert_eq!(b.base_url.as_ref().unwrap().layer, Layer::Override);
        assert_eq!(ask(&config, "local/echo").await, "hi", "{text}");
    }
    assert_eq!(mock.requests().len(), 2);

    // Over a built-in, field by field: what it does not set stays.
    let config = load(
        None,
        &["backends.openai={base_url: http://127.0.0.1:9/v1}".into()],
        &[],
    );
    let openai = config.registry.backend("openai").unwrap();
    assert_eq!(
        openai.base_url.as_ref().unwrap().value,
        "http://127.0.0.1:9/v1"
    );
    assert_eq!(openai.base_url.as_ref().unwrap().layer, Layer::Override);
    assert!(
        openai.price("gpt-5").is_some(),
        "the built-in's prices stay"
    );

    // What is not a whole backend, said with both accepted forms.
    let e = try_load(None, &["backends.local=5".into()], &[]).unwrap_err();
    assert!(e.contains("`backends.local=` takes a whole backend"), "{e}");
    assert!(e.contains("backends.local.<field>=<value>"), "{e}");
    let e = try_load(None, &["backends.local={apiz: [chat]}".into()], &[]).unwrap_err();
    assert!(e.contains("unknown backend field `apiz`"), "{e}");
}

#[tokio::test]
async fn a_roles_older_endpoint_mapping_is_an_inline_endpoint() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.yaml");
    std::fs::write(
        &path,
        format!(
            "llm:\n  planner: {{base_url: {}, model: echo, api_key_env: OLD_FORM_KEY, max_tokens: 50}}\n",
            mock.base_url()
        ),
    )
    .unwrap();
    let env = MapEnv::new([("OLD_FORM_KEY", "old-form-test-key")]);
    let run = Run::builder(&path)
        .env(&env)
        .user_file(false)
        .open()
        .unwrap_or_else(|e| panic!("{e}"));
    let role = run.role("planner").unwrap();
    assert_eq!(role.form, RoleForm::Inline);
    assert_eq!(role.reference, "role:planner/echo");
    run.llm("planner")
        .unwrap()
        .complete(Request::user("hi"))
        .await
        .unwrap();
    let sent = &mock.requests()[0];
    assert_eq!(sent.path, "/v1/chat/completions");
    assert_eq!(
        sent.header("authorization"),
        Some("Bearer old-form-test-key")
    );
    let body = sent.json.clone().unwrap();
    assert_eq!(body["model"], "echo");
    // An OpenAI-compatible server's output limit is `max_tokens`.
    assert_eq!(body["max_tokens"], 50, "{body}");
    assert!(body.get("max_completion_tokens").is_none(), "{body}");

    // `base_url` without `model` over a role naming a reference: which backend it would
    // change is not said, so it stays refused, with the way to say it.
    std::fs::write(&path, "llm:\n  planner: {model: mock/echo}\n").unwrap();
    let e = match Run::builder(&path)
        .overrides(["llm.planner.base_url=http://127.0.0.1:9/v1"])
        .env(&env)
        .user_file(false)
        .open()
    {
        Ok(_) => panic!("a stray base_url was accepted"),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains("`base_url` belongs to an inline endpoint"),
        "{e}"
    );
}

#[tokio::test]
async fn a_chat_limit_is_max_tokens_unless_the_backend_declares_otherwise() {
    let mock = MockServer::start().await;
    // A backend of the user's own: the field every OpenAI-compatible server knows.
    let own = format!(
        "backends.own={{base_url: {}, apis: [chat], key_required: false}}",
        mock.base_url()
    );
    // OpenAI's own API (and what copies it) declares the field its reasoning models need.
    let openai = format!("backends.openai.base_url={}", mock.base_url());
    let copy = format!(
        "backends.copy={{from: openai, base_url: {}, key_required: false}}",
        mock.base_url()
    );
    let env = [("OPENAI_API_KEY", "sk-test-openai-0123456789".to_string())];
    let config = load(None, &[own, openai, copy], &env);
    let field = |name: &str| {
        config
            .registry
            .backend(name)
            .unwrap()
            .max_tokens_field
            .value
    };
    assert_eq!(field("own"), MaxTokensField::MaxTokens);
    assert_eq!(field("openai"), MaxTokensField::MaxCompletionTokens);
    assert_eq!(field("copy"), MaxTokensField::MaxCompletionTokens);
    assert_eq!(field("deepseek"), MaxTokensField::MaxTokens);
    let menv = MapEnv::new(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    for (reference, field, other) in [
        ("own/echo", "max_tokens", "max_completion_tokens"),
        ("openai/echo", "max_completion_tokens", "max_tokens"),
        ("copy/echo", "max_completion_tokens", "max_tokens"),
    ] {
        Llm::resolve(&config.registry, reference, &menv)
            .unwrap()
            .complete(Request::user("hi").with_max_tokens(9))
            .await
            .unwrap();
        let body = last(&mock).json.unwrap();
        assert_eq!(body[field], 9, "{reference}: {body}");
        assert!(body.get(other).is_none(), "{reference}: {body}");
    }
}

#[tokio::test]
async fn extra_body_goes_to_the_dialect_it_is_written_for() {
    let mock = MockServer::start().await;
    let env = MapEnv::default();
    // A chat server's own field (vLLM's), on a backend that also serves Responses.
    let registry = registry(
        &mock,
        &["backends.mock.extra_body.chat_template_kwargs={enable_thinking: false}"],
        &env,
    );
    llm_with(&registry, Dialect::Chat, "echo", &env)
        .complete(Request::user("hi"))
        .await
        .unwrap();
    let chat = last(&mock).json.unwrap();
    assert_eq!(
        chat["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );
    for d in [Dialect::Responses, Dialect::Messages, Dialect::Gemini] {
        llm_with(&registry, d, "echo", &env)
            .complete(Request::user("hi"))
            .await
            .unwrap();
        let body = last(&mock).json.unwrap();
        assert!(body.get("chat_template_kwargs").is_none(), "{d}: {body}");
    }

    // A role calling another dialect sends its own extra_body, not the backend's.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.yaml");
    std::fs::write(
        &path,
        "llm:\n  r: {model: mock/echo, dialect: responses, extra_body: {service_tier: flex}}\n  c: {model: mock/echo, extra_body: {seed: 7}}\n",
    )
    .unwrap();
    let overrides = [
        format!("backends.mock.base_url={}", mock.base_url()),
        "backends.mock.extra_body.chat_template_kwargs={enable_thinking: false}".to_string(),
    ];
    let run = Run::builder(&path)
        .overrides(overrides.iter().map(String::as_str))
        .env(&env)
        .user_file(false)
        .open()
        .unwrap();
    run.llm("r")
        .unwrap()
        .complete(Request::user("hi"))
        .await
        .unwrap();
    let sent = last(&mock);
    assert_eq!(sent.path, "/v1/responses");
    let body = sent.json.unwrap();
    assert_eq!(body["service_tier"], "flex", "{body}");
    assert!(body.get("chat_template_kwargs").is_none(), "{body}");
    run.llm("c")
        .unwrap()
        .complete(Request::user("hi"))
        .await
        .unwrap();
    let body = last(&mock).json.unwrap();
    assert_eq!(body["seed"], 7, "{body}");
    assert_eq!(
        body["chat_template_kwargs"],
        json!({"enable_thinking": false})
    );
}

#[test]
fn vertex_defaults_its_location_to_global_as_google_genai_does() {
    let registry = switchyard::Registry::builtin().unwrap();
    let vertex = registry.backend("vertex").unwrap();
    let project = MapEnv::new([("GOOGLE_CLOUD_PROJECT", "test-proj")]);
    let url = vertex
        .endpoint(Dialect::Gemini, "gemini-2.5-flash", false, &project)
        .unwrap();
    assert_eq!(
        url.as_str(),
        "https://aiplatform.googleapis.com/v1/projects/test-proj/locations/global/publishers/google/models/gemini-2.5-flash:generateContent"
    );
    let chat = vertex
        .endpoint(Dialect::Chat, "google/gemini-2.5-flash", false, &project)
        .unwrap();
    assert_eq!(
        chat.as_str(),
        "https://aiplatform.googleapis.com/v1beta1/projects/test-proj/locations/global/endpoints/openapi/chat/completions"
    );
    // A location set is used.
    let regional = MapEnv::new([
        ("GOOGLE_CLOUD_PROJECT", "test-proj"),
        ("GOOGLE_CLOUD_LOCATION", "europe-west4"),
    ]);
    assert_eq!(
        vertex
            .endpoint(Dialect::Gemini, "gemini-2.5-flash", false, &regional)
            .unwrap()
            .as_str(),
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/test-proj/locations/europe-west4/publishers/google/models/gemini-2.5-flash:generateContent"
    );
    // The project has no default: its absence is named.
    let e = vertex
        .endpoint(
            Dialect::Gemini,
            "gemini-2.5-flash",
            false,
            &MapEnv::default(),
        )
        .unwrap_err();
    assert!(e.to_string().contains("GOOGLE_CLOUD_PROJECT"), "{e}");
}
