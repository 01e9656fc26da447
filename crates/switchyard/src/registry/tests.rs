//! Unit tests of the registry rules: references, fields, layers, provenance, validation.

use std::io::Write;
use std::path::PathBuf;

use super::*;
use crate::env::MapEnv;
use crate::reference::{Parsed, ReferenceError};

struct Setup {
    _dir: tempfile::TempDir,
    user: PathBuf,
    run: PathBuf,
}

fn setup(user: Option<&str>, run: Option<&str>) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let user_path = dir.path().join("backends.yaml");
    let run_path = dir.path().join("run.yaml");
    if let Some(u) = user {
        std::fs::File::create(&user_path)
            .unwrap()
            .write_all(u.as_bytes())
            .unwrap();
    }
    if let Some(r) = run {
        std::fs::write(&run_path, r).unwrap();
    }
    Setup {
        _dir: dir,
        user: user_path,
        run: run_path,
    }
}

/// Loads with an optional user file, run config, overrides and extra env.
fn load(
    user: Option<&str>,
    run: Option<&str>,
    overrides: &[&str],
    env: &[(&str, &str)],
) -> (Result<Config, crate::ConfigErrors>, Setup) {
    let s = setup(user, run);
    let mut vars: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    vars.push(("SWITCHYARD_BACKENDS".into(), s.user.display().to_string()));
    let env = MapEnv::new(vars);
    let mut opts = LoadOptions::new(&env);
    if run.is_some() {
        opts.run_config = Some(s.run.clone());
    }
    opts.overrides = overrides.iter().map(|o| o.to_string()).collect();
    (Config::load(&opts), s)
}

fn ok(
    user: Option<&str>,
    run: Option<&str>,
    overrides: &[&str],
    env: &[(&str, &str)],
) -> (Registry, Setup) {
    let (r, s) = load(user, run, overrides, env);
    match r {
        Ok(c) => (c.registry, s),
        Err(e) => panic!("load failed:\n{e}"),
    }
}

fn err(user: Option<&str>, run: Option<&str>, overrides: &[&str], env: &[(&str, &str)]) -> String {
    let (r, _s) = load(user, run, overrides, env);
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn builtins_load_cleanly_with_every_required_backend() {
    let r = Registry::builtin().unwrap_or_else(|e| panic!("{e}"));
    for name in [
        "openai",
        "anthropic",
        "deepseek",
        "fireworks",
        "gemini",
        "vertex",
        "openrouter",
        "opencode",
        "antigravity",
        "groq",
        "mistral",
        "together",
        "xai",
        "vllm",
        "sglang",
        "ollama",
        "llamacpp",
        "claude-code",
        "codex",
        "mock",
    ] {
        assert!(r.backend(name).is_some(), "{name} missing");
    }
    assert_eq!(r.prices_date(), Some("2026-11-29"));
    assert!(BUILTINS_YAML.contains("# prices taken 2026-11-29"));
    let b = r.backend("openai").unwrap();
    assert_eq!(b.base_url.as_ref().unwrap().layer, Layer::Builtin);
    assert_eq!(b.kind.layer, Layer::Default);
}

#[test]
fn builtin_details() {
    let r = Registry::builtin().unwrap();
    let env = MapEnv::default();
    let ant = r.backend("anthropic").unwrap();
    assert_eq!(ant.auth.value, Auth::XApiKey);
    assert_eq!(ant.api_key_env.value, "ANTHROPIC_API_KEY");
    assert_eq!(
        ant.endpoint(Dialect::Messages, "claude-sonnet-4-5", false, &env)
            .unwrap()
            .as_str(),
        "https://api.anthropic.com/v1/messages"
    );
    let ds = r.backend("deepseek").unwrap();
    assert_eq!(
        ds.endpoint_template(Dialect::Messages, "deepseek-chat", false)
            .unwrap(),
        "https://api.deepseek.com/anthropic/v1/messages"
    );
    assert_eq!(
        ds.endpoint_template(Dialect::Chat, "deepseek-chat", false)
            .unwrap(),
        "https://api.deepseek.com/chat/completions"
    );
    let fw = r.backend("fireworks").unwrap();
    assert_eq!(fw.developer_role.value, DeveloperRole::System);
    assert_eq!(
        fw.endpoint_template(Dialect::Messages, "m", false).unwrap(),
        "https://api.fireworks.ai/inference/v1/messages"
    );
    let g = r.backend("gemini").unwrap();
    assert_eq!(
        g.endpoint_template(Dialect::Gemini, "gemini-2.5-pro", false)
            .unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent"
    );
    assert_eq!(
        g.endpoint_template(Dialect::Gemini, "gemini-2.5-pro", true).unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        g.endpoint_template(Dialect::Chat, "gemini-2.5-pro", false)
            .unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"
    );
    assert_eq!(g.auth_for(Dialect::Gemini), Auth::XGoogApiKey);
    assert_eq!(g.auth_for(Dialect::Chat), Auth::Bearer);
    assert!(g.endpoint_template(Dialect::Messages, "x", false).is_err());

    let v = r.backend("vertex").unwrap();
    assert_eq!(v.key_status(&env), KeyStatus::NotNeeded);
    let e = v
        .endpoint(Dialect::Gemini, "gemini-2.5-pro", false, &env)
        .unwrap_err();
    assert!(matches!(e, EndpointError::UnsetVariable { .. }), "{e}");
    let genv = MapEnv::new([
        ("GOOGLE_CLOUD_PROJECT", "p1"),
        ("GOOGLE_CLOUD_LOCATION", "us-east5"),
    ]);
    assert_eq!(
        v.endpoint(Dialect::Gemini, "gemini-2.5-pro", false, &genv).unwrap().as_str(),
        "https://us-east5-aiplatform.googleapis.com/v1/projects/p1/locations/us-east5/publishers/google/models/gemini-2.5-pro:generateContent"
    );
    let global = MapEnv::new([
        ("GOOGLE_CLOUD_PROJECT", "p1"),
        ("GOOGLE_CLOUD_LOCATION", "global"),
    ]);
    assert_eq!(
        v.endpoint(Dialect::Gemini, "gemini-3-pro", true, &global).unwrap().as_str(),
        "https://aiplatform.googleapis.com/v1/projects/p1/locations/global/publishers/google/models/gemini-3-pro:streamGenerateContent?alt=sse"
    );
    let ag = r.backend("antigravity").unwrap();
    assert_eq!(ag.api_key_env.value, "ANTIGRAVITY_API_KEY");
    assert_eq!(
        ag.base_url.as_ref().unwrap().value,
        "http://127.0.0.1:8045/v1"
    );
    let cc = r.backend("claude-code").unwrap();
    assert_eq!(cc.kind.value, Kind::ClaudeCode);
    assert_eq!(cc.key_status(&env), KeyStatus::NotNeeded);
    assert!(matches!(
        cc.endpoint_template(Dialect::Chat, "x", false),
        Err(EndpointError::NotHttp { .. })
    ));
    assert_eq!(r.backend("codex").unwrap().kind.value, Kind::Codex);
    let mock = r.backend("mock").unwrap();
    assert_eq!(mock.apis.value.len(), 4);
    assert_eq!(mock.price("small").unwrap().value.input, 1.0);
    assert_eq!(mock.price("mock-free").unwrap().value.output, 0.0);
    assert!(mock.price("unpriced-model").is_none());
}

#[test]
fn key_status_and_lookup() {
    let r = Registry::builtin().unwrap();
    let openai = r.backend("openai").unwrap();
    let unset = MapEnv::default();
    let set = MapEnv::new([("OPENAI_API_KEY", "k"), ("VLLM_API_KEY", "v")]);
    assert_eq!(openai.key_status(&unset), KeyStatus::Unset);
    assert_eq!(openai.key_status(&set), KeyStatus::Set);
    assert_eq!(openai.api_key(&set).unwrap().as_deref(), Some("k"));
    let e = openai.api_key(&unset).unwrap_err().to_string();
    assert!(e.contains("OPENAI_API_KEY"), "{e}");
    let vllm = r.backend("vllm").unwrap();
    assert_eq!(vllm.key_status(&unset), KeyStatus::NotNeeded);
    assert_eq!(vllm.api_key(&unset).unwrap(), None);
    assert_eq!(vllm.api_key(&set).unwrap().as_deref(), Some("v"));
}

#[test]
fn references_keep_slashes_and_expand_aliases() {
    let (r, _s) = ok(
        Some("backends:\n  vllm:\n    models:\n      qwen: Qwen/Qwen3-30B-A3B-Instruct-2507-FP8\n"),
        None,
        &[],
        &[],
    );
    let Parsed::Reference(f) = r
        .parse_reference("fireworks/accounts/fireworks/models/glm-5p3-flash")
        .unwrap()
    else {
        panic!()
    };
    assert_eq!(f.backend, "fireworks");
    assert_eq!(f.model, "accounts/fireworks/models/glm-5p3-flash");
    let v = r
        .require_reference("vllm/Qwen/Qwen3-30B-A3B-Instruct-2507-FP8")
        .unwrap();
    assert_eq!(
        (v.backend.as_str(), v.model.as_str()),
        ("vllm", "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8")
    );
    let a = r.require_reference("vllm/qwen").unwrap();
    assert_eq!(a.model, "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8");
    assert_eq!(a.requested_model, "qwen");
}

#[test]
fn not_a_reference_is_its_own_result() {
    let r = Registry::builtin().unwrap();
    assert_eq!(
        r.parse_reference("gpt-5.4").unwrap(),
        Parsed::NotAReference("gpt-5.4".into())
    );
    assert_eq!(
        r.parse_reference("meta-llama/Llama-3").unwrap(),
        Parsed::NotAReference("meta-llama/Llama-3".into())
    );
    // A provider id starting with a backend's name is read as a reference to it.
    let Parsed::Reference(x) = r.parse_reference("openai/gpt-oss-120b").unwrap() else {
        panic!()
    };
    assert_eq!(
        (x.backend.as_str(), x.model.as_str()),
        ("openai", "gpt-oss-120b")
    );
    assert!(matches!(
        r.parse_reference("openai/"),
        Err(ReferenceError::EmptyModel { .. })
    ));
}

#[test]
fn a_reference_whose_model_id_is_no_model_is_refused_after_aliases() {
    let r = Registry::builtin().unwrap();
    for text in [
        "mock/mock-small+x/../mock-large",
        "mock/../../v1/fine_tuning/jobs#",
        "mock/a#b",
        "mock/a?b",
        "mock/a%2Fb",
        "mock/a\\b",
        "mock/a\u{1b}[31m",
        "mock//a",
    ] {
        let e = r.parse_reference(text).unwrap_err();
        assert!(
            matches!(&e, ReferenceError::BadModelId { backend, .. } if backend == "mock"),
            "{text}: {e}"
        );
        assert!(
            e.to_string().contains("a model id is 1 to 512 bytes"),
            "{e}"
        );
    }
    // The alias is expanded first: the id checked is the id that would be sent.
    let e = r.require_reference("mock/small+x/../y").unwrap_err();
    assert!(
        e.to_string()
            .contains("`mock-small+x/../y` has a `..` segment"),
        "{e}"
    );
    // A text naming no backend is not read as an id at all.
    assert_eq!(
        r.parse_reference("a/../b").unwrap(),
        Parsed::NotAReference("a/../b".into())
    );
}

#[test]
fn a_gemini_or_vertex_url_holds_the_model_id_as_one_segment() {
    let r = Registry::builtin().unwrap();
    let g = r.backend("gemini").unwrap();
    assert_eq!(
        g.endpoint_template(Dialect::Gemini, "tunedModels/my-model", false)
            .unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/models/tunedModels%2Fmy-model:generateContent"
    );
    let v = r.backend("vertex").unwrap();
    let env = MapEnv::new([
        ("GOOGLE_CLOUD_PROJECT", "p1"),
        ("GOOGLE_CLOUD_LOCATION", "us-east5"),
    ]);
    let url = v
        .endpoint(Dialect::Gemini, "claude@2025 x/y", true, &env)
        .unwrap();
    assert_eq!(
        url.path(),
        "/v1/projects/p1/locations/us-east5/publishers/google/models/claude%402025%20x%2Fy:streamGenerateContent"
    );
    // A `{VARIABLE}` in an id is data, not a placeholder of the URL template.
    assert!(v
        .endpoint(Dialect::Gemini, "{GOOGLE_CLOUD_PROJECT}", false, &env)
        .unwrap()
        .path()
        .ends_with("/models/%7BGOOGLE_CLOUD_PROJECT%7D:generateContent"));
    let e = g
        .endpoint(Dialect::Gemini, "a/../b", false, &env)
        .unwrap_err();
    assert!(matches!(e, EndpointError::BadModelId { .. }), "{e}");
    assert!(g.embed_url_template("x/../y").is_err());
}

#[test]
fn unknown_backend_names_known_ones_and_nearest() {
    let r = Registry::builtin().unwrap();
    let e = r.require_reference("opnai/gpt-5").unwrap_err();
    let ReferenceError::UnknownBackend { nearest, known, .. } = &e else {
        panic!()
    };
    assert_eq!(nearest.as_deref(), Some("openai"));
    assert!(known.iter().any(|k| k == "fireworks"));
    let msg = e.to_string();
    assert!(
        msg.contains("did you mean `openai`") && msg.contains("known backends:"),
        "{msg}"
    );
}

#[test]
fn every_field_is_read() {
    let user = r#"
backends:
  box:
    kind: http
    base_url: http://box:9000/v1/
    api_key_env: BOX_TOKEN_VAR
    key_required: false
    apis: [chat, responses, messages, gemini]
    messages_url: http://box:9000/anthropic
    gemini_url: http://box:9000/gemini
    auth: x-goog-api-key
    prices:
      m1: {input: 1.5, cached_input: 0.1, cache_write: 2, output: 3}
      free: {input: 0, output: 0}
    extra_body: {reasoning_effort: high, top_k: 5}
    context_window: 65536
    developer_role: system
    max_tokens_field: max_tokens
    models: {fast: m1}
  child:
    from: box
"#;
    let (r, _s) = ok(Some(user), None, &[], &[]);
    let b = r.backend("box").unwrap();
    assert_eq!(b.kind.value, Kind::Http);
    assert_eq!(b.base_url.as_ref().unwrap().value, "http://box:9000/v1");
    assert_eq!(b.api_key_env.value, "BOX_TOKEN_VAR");
    assert!(!b.key_required.value);
    assert_eq!(
        b.apis.value,
        vec![
            Dialect::Chat,
            Dialect::Responses,
            Dialect::Messages,
            Dialect::Gemini
        ]
    );
    assert_eq!(
        b.endpoint_template(Dialect::Messages, "m", false).unwrap(),
        "http://box:9000/anthropic/v1/messages"
    );
    assert_eq!(
        b.endpoint_template(Dialect::Gemini, "m", false).unwrap(),
        "http://box:9000/gemini/models/m:generateContent"
    );
    assert_eq!(
        b.endpoint_template(Dialect::Responses, "m", false).unwrap(),
        "http://box:9000/v1/responses"
    );
    assert_eq!(b.auth.value, Auth::XGoogApiKey);
    let p = b.price("fast").unwrap().value;
    assert_eq!(
        (p.input, p.cached_input, p.cache_write, p.output),
        (1.5, Some(0.1), Some(2.0), 3.0)
    );
    assert_eq!(b.price("free").unwrap().value.input, 0.0);
    assert_eq!(
        b.extra_body["reasoning_effort"].value,
        serde_json::json!("high")
    );
    assert_eq!(b.extra_body["top_k"].value, serde_json::json!(5));
    assert_eq!(b.context_window.as_ref().unwrap().value, 65536);
    assert_eq!(b.developer_role.value, DeveloperRole::System);
    assert_eq!(b.max_tokens_field.value, MaxTokensField::MaxTokens);
    assert_eq!(b.models["fast"].value, "m1");
    let c = r.backend("child").unwrap();
    assert_eq!(c.from.as_ref().unwrap().value, "box");
    assert_eq!(c.api_key_env.value, "BOX_TOKEN_VAR");
}

#[test]
fn defaults_for_a_new_backend() {
    let (r, _s) = ok(
        Some("backends:\n  my-box:\n    base_url: http://h/v1\n"),
        None,
        &[],
        &[],
    );
    let b = r.backend("my-box").unwrap();
    assert_eq!(b.api_key_env.value, "MY_BOX_API_KEY");
    assert_eq!(b.api_key_env.layer, Layer::Default);
    assert_eq!(b.apis.value, vec![Dialect::Chat]);
    assert_eq!(b.auth.value, Auth::Bearer);
    assert!(b.key_required.value);
    assert_eq!(b.developer_role.value, DeveloperRole::Keep);
    // What every OpenAI-compatible server knows; OpenAI's own backend declares the other.
    assert_eq!(b.max_tokens_field.value, MaxTokensField::MaxTokens);
    assert!(b.context_window.is_none());
}

#[test]
fn layers_override_field_by_field_with_provenance() {
    let user =
        "backends:\n  vllm:\n    apis: [chat]\n    context_window: 1000\n    models: {a: A}\n";
    let run = "backends:\n  vllm:\n    context_window: 2000\n    models: {b: B}\nmodel: vllm/a\nllm: {planner: {model: x}}\n";
    let (r, s) = load(
        Some(user),
        Some(run),
        &[
            "backends.vllm.context_window=3000",
            "backends.vllm.models.c=C/D.1",
            "model=vllm/b",
        ],
        &[("VLLM_BASE_URL", "http://gpu-box:8000/v1")],
    );
    let c = r.unwrap_or_else(|e| panic!("{e}"));
    let b = c.registry.backend("vllm").unwrap();
    assert_eq!(b.kind.layer, Layer::Default);
    assert_eq!(b.key_required.layer, Layer::Builtin);
    assert_eq!(b.apis.value, vec![Dialect::Chat]);
    assert_eq!(b.apis.layer, Layer::UserFile(s.user.clone()));
    assert_eq!(b.context_window.as_ref().unwrap().value, 3000);
    assert_eq!(b.context_window.as_ref().unwrap().layer, Layer::Override);
    assert_eq!(b.models["a"].layer, Layer::UserFile(s.user.clone()));
    assert_eq!(b.models["b"].layer, Layer::RunConfig(s.run.clone()));
    assert_eq!(b.models["c"].value, "C/D.1");
    assert_eq!(b.models["c"].layer, Layer::Override);
    let base = b.base_url.as_ref().unwrap();
    assert_eq!(base.value, "http://gpu-box:8000/v1");
    assert_eq!(base.layer, Layer::Env("VLLM_BASE_URL".into()));
    assert_eq!(base.layer.to_string(), "env VLLM_BASE_URL");
    assert_eq!(
        Layer::UserFile(s.user.clone()).to_string(),
        format!("user file {}", s.user.display())
    );
    assert_eq!(
        Layer::RunConfig(s.run.clone()).to_string(),
        format!("run config {}", s.run.display())
    );
    assert_eq!(b.layers.len(), 5);
    // Other sections and overrides are kept for later.
    assert_eq!(c.sections["model"], serde_json::json!("vllm/a"));
    assert!(c.sections.contains_key("llm"));
    assert_eq!(c.overrides.len(), 1);
    assert_eq!(c.overrides[0].path, ["model"]);
}

#[test]
fn env_base_url_sits_below_overrides_and_is_validated() {
    let (r, _s) = ok(
        None,
        None,
        &["backends.vllm.base_url=http://cli:1/v1"],
        &[("VLLM_BASE_URL", "http://gpu-box:8000/v1")],
    );
    assert_eq!(
        r.backend("vllm").unwrap().base_url.as_ref().unwrap().value,
        "http://cli:1/v1"
    );
    // Names with `-` use `_`.
    let (r, _s) = ok(
        Some("backends:\n  my-box:\n    base_url: http://a/v1\n"),
        None,
        &[],
        &[("MY_BOX_BASE_URL", "http://b/v1")],
    );
    assert_eq!(
        r.backend("my-box")
            .unwrap()
            .base_url
            .as_ref()
            .unwrap()
            .value,
        "http://b/v1"
    );
    let e = err(None, None, &[], &[("VLLM_BASE_URL", "gpu-box:8000")]);
    assert!(e.contains("VLLM_BASE_URL") && e.contains("valid"), "{e}");
}

#[test]
fn moving_base_url_drops_lower_messages_url() {
    let (r, _s) = ok(None, None, &[], &[("DEEPSEEK_BASE_URL", "http://proxy/v1")]);
    let d = r.backend("deepseek").unwrap();
    assert!(d.messages_url.is_none());
    assert_eq!(
        d.endpoint_template(Dialect::Messages, "m", false).unwrap(),
        "http://proxy/v1/messages"
    );
}

#[test]
fn from_copies_keep_key_variable_and_drop_messages_url_when_moved() {
    let user = r#"
backends:
  ds-proxy:
    from: deepseek
    base_url: http://proxy.local/v1
  ds-same:
    from: deepseek
  ds-own-key:
    from: deepseek
    api_key_env: OTHER_KEY
  fw2:
    from: fireworks
    base_url: http://fw2/v1
    messages_url: http://fw2/anthropic
"#;
    let (r, _s) = ok(Some(user), None, &[], &[]);
    let p = r.backend("ds-proxy").unwrap();
    assert_eq!(p.api_key_env.value, "DEEPSEEK_API_KEY");
    assert!(p.messages_url.is_none());
    assert_eq!(
        p.endpoint_template(Dialect::Messages, "m", false).unwrap(),
        "http://proxy.local/v1/messages"
    );
    assert_eq!(p.prices["deepseek-chat"].value.input, 0.28);
    let same = r.backend("ds-same").unwrap();
    assert_eq!(
        same.messages_url.as_ref().unwrap().value,
        "https://api.deepseek.com/anthropic"
    );
    assert_eq!(same.api_key_env.value, "DEEPSEEK_API_KEY");
    assert_eq!(
        r.backend("ds-own-key").unwrap().api_key_env.value,
        "OTHER_KEY"
    );
    assert_eq!(
        r.backend("fw2")
            .unwrap()
            .messages_url
            .as_ref()
            .unwrap()
            .value,
        "http://fw2/anthropic"
    );
    assert_eq!(
        r.backend("fw2").unwrap().developer_role.value,
        DeveloperRole::System
    );
}

#[test]
fn from_cycle_and_unknown_from() {
    let e = err(
        Some("backends:\n  a:\n    from: b\n  b:\n    from: a\n"),
        None,
        &[],
        &[],
    );
    assert!(e.contains("cycle") && e.contains("a -> b -> a"), "{e}");
    let e = err(Some("backends:\n  a:\n    from: opnai\n"), None, &[], &[]);
    assert!(
        e.contains("no backend `opnai`") && e.contains("did you mean `openai`"),
        "{e}"
    );
    assert!(e.contains(":3:5:"), "{e}");
}

#[test]
fn unknown_field_lists_accepted_and_nearest_with_position() {
    let e = err(
        Some("backends:\n  vllm:\n    base_ur: http://x/v1\n"),
        None,
        &[],
        &[],
    );
    assert!(
        e.contains("backends.yaml:3:5: unknown backend field `base_ur`"),
        "{e}"
    );
    assert!(e.contains("did you mean `base_url`"), "{e}");
    assert!(e.contains("accepted: kind, base_url, api_key_env"), "{e}");
    let e = err(None, Some("backend:\n  x: 1\n"), &[], &[]);
    assert!(
        e.contains("run.yaml:1:1: unknown top-level key `backend`")
            && e.contains("did you mean `backends`"),
        "{e}"
    );
    let e = err(
        Some("backends:\n  mock:\n    prices: {m: {input: 1, outptu: 2}}\n"),
        None,
        &[],
        &[],
    );
    assert!(
        e.contains("unknown price field `outptu`")
            && e.contains("did you mean `output`")
            && e.contains(":3:28:"),
        "{e}"
    );
}

#[test]
fn all_problems_of_a_layer_are_reported() {
    let e = err(
        Some("backends:\n  vllm:\n    apis: [chat, grpc]\n    auth: basic\n    kind: lambda\n    context_window: -5\n    max_tokens_field: max_output\n"),
        None,
        &[],
        &[],
    );
    assert!(
        e.contains("unknown dialect `grpc`")
            && e.contains("accepted: chat, responses, messages, gemini"),
        "{e}"
    );
    assert!(
        e.contains("unknown max_tokens_field `max_output`")
            && e.contains("accepted: max_completion_tokens, max_tokens"),
        "{e}"
    );
    assert!(
        e.contains("unknown auth `basic`")
            && e.contains("bearer, x-api-key, x-goog-api-key, google-adc, none"),
        "{e}"
    );
    assert!(
        e.contains("unknown kind `lambda`") && e.contains("http, claude-code, codex, replay"),
        "{e}"
    );
    assert!(
        e.contains(":6:5: `context_window` must not be negative"),
        "{e}"
    );
    assert_eq!(e.lines().count(), 5, "{e}");
}

#[test]
fn keys_are_refused_by_field_name_and_by_value_without_printing_them() {
    let secret = "sk-proj-abcdefghijklmnop1234567890";
    for (text, field) in [
        (
            format!("backends:\n  openai:\n    api_key: {secret}\n"),
            "api_key",
        ),
        (
            "backends:\n  openai:\n    token: abc\n".to_string(),
            "token",
        ),
        (
            "backends:\n  openai:\n    secret: abc\n".to_string(),
            "secret",
        ),
    ] {
        let e = err(Some(&text), None, &[], &[]);
        assert!(
            e.contains(&format!(":3:5: `{field}` would put a key")),
            "{e}"
        );
        assert!(
            e.contains("api_key_env") && e.contains("environment"),
            "{e}"
        );
        assert!(!e.contains(secret), "{e}");
    }
    let e = err(
        Some(&format!(
            "backends:\n  openai:\n    api_key_env: {secret}\n"
        )),
        None,
        &[],
        &[],
    );
    assert!(
        e.contains(":3:5: the value of `backends.openai.api_key_env` looks like an API key"),
        "{e}"
    );
    assert!(!e.contains(secret), "{e}");
    let e = err(Some("backends:\n  openai:\n    extra_body: {auth: AIzaSyA1234567890abcdefghijklmnopqrstu}\n"), None, &[], &[]);
    assert!(
        e.contains("looks like an API key") && !e.contains("AIzaSy"),
        "{e}"
    );
    // In a run config's other sections too, and in overrides.
    let e = err(
        None,
        Some(&format!("keys:\n  openai: {secret}\n")),
        &[],
        &[],
    );
    assert!(
        e.contains("run.yaml:2:3:") && e.contains("looks like an API key"),
        "{e}"
    );
    let e = err(
        None,
        None,
        &[&format!("backends.openai.api_key={secret}")],
        &[],
    );
    assert!(e.contains("would put a key") && !e.contains(secret), "{e}");
    let e = err(None, None, &[&format!("keys.openai={secret}")], &[]);
    assert!(
        e.contains("looks like an API key") && !e.contains(secret),
        "{e}"
    );
}

#[test]
fn bad_urls_and_negative_prices_have_positions() {
    let e = err(
        Some("backends:\n  vllm:\n    base_url: not a url\n"),
        None,
        &[],
        &[],
    );
    assert!(
        e.contains(":3:5: `base_url` is not a valid http(s) URL"),
        "{e}"
    );
    let e = err(
        Some("backends:\n  vllm:\n    messages_url: ftp://x\n"),
        None,
        &[],
        &[],
    );
    assert!(e.contains("scheme `ftp`"), "{e}");
    let e = err(
        Some("backends:\n  vllm:\n    prices:\n      m:\n        input: -1\n        output: 2\n"),
        None,
        &[],
        &[],
    );
    assert!(
        e.contains(":5:9: `prices.m.input` must not be negative"),
        "{e}"
    );
    let e = err(Some("backends:\n  x:\n    apis: [chat]\n"), None, &[], &[]);
    assert!(e.contains("no `base_url`"), "{e}");
    let e = err(Some("backends:\n  vllm: [1\n"), None, &[], &[]);
    assert!(
        e.contains("invalid YAML") && e.contains("backends.yaml:"),
        "{e}"
    );
}

#[test]
fn overrides_parse_yaml_values() {
    let (r, _s) = ok(
        None,
        None,
        &[
            "backends.vllm.apis=[chat]",
            "backends.x.prices={m: {input: 1, output: 2}}",
            "backends.x.base_url=http://x:1/v1",
            "backends.openai.prices.gpt-5.4={input: 2, output: 8}",
            "backends.vllm.key_required=true",
        ],
        &[],
    );
    assert_eq!(r.backend("vllm").unwrap().apis.value, vec![Dialect::Chat]);
    assert!(r.backend("vllm").unwrap().key_required.value);
    assert_eq!(r.backend("x").unwrap().prices["m"].value.output, 2.0);
    assert_eq!(
        r.backend("openai").unwrap().prices["gpt-5.4"].value.input,
        2.0
    );
    let e = err(None, None, &["backends.vllm.apis=[chat, grpc]"], &[]);
    assert!(
        e.contains("override `backends.vllm.apis=[chat, grpc]`")
            && e.contains("unknown dialect `grpc`"),
        "{e}"
    );
    let e = err(None, None, &["budgte.max=1"], &[]);
    assert!(e.contains("not a section"), "{e}");
}

#[test]
fn missing_user_file_is_fine_and_path_rules() {
    let (r, _s) = ok(None, None, &[], &[]);
    assert!(r.backend("openai").is_some());
    let env = MapEnv::new([("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]);
    assert_eq!(
        user_file_path(&env),
        Some(PathBuf::from("/x/switchyard/backends.yaml"))
    );
    let env = MapEnv::new([("HOME", "/h")]);
    assert_eq!(
        user_file_path(&env),
        Some(PathBuf::from("/h/.config/switchyard/backends.yaml"))
    );
    let env = MapEnv::new([("SWITCHYARD_BACKENDS", "/f.yaml"), ("HOME", "/h")]);
    assert_eq!(user_file_path(&env), Some(PathBuf::from("/f.yaml")));
}

#[test]
fn the_mocks_priced_models_keep_their_price_with_options() {
    let r = Registry::builtin().unwrap();
    let mock = r.backend("mock").unwrap();
    let large = mock.price("mock-large").unwrap().value;
    assert_eq!(mock.price("mock-large+cache").map(|p| p.value), Some(large));
    assert_eq!(mock.price("large+cache+slow").map(|p| p.value), Some(large));
    assert_eq!(mock.expand_alias("large+cache"), "mock-large+cache");
    assert_eq!(
        mock.price("echo+cache"),
        None,
        "an unpriced model stays unpriced"
    );
    // Other backends have no options: a `+` is part of the model id.
    let openai = r.backend("openai").unwrap();
    assert_eq!(openai.price("gpt-5+x"), None);
    let reference = r.require_reference("mock/large+cache").unwrap();
    assert_eq!(reference.model, "mock-large+cache");
}

#[test]
fn a_run_config_given_as_text_loads_as_the_same_file_does() {
    let text = "backends:\n  vllm: {base_url: \"http://gpu:8000/v1\"}\nmodel: vllm/q\n";
    let (from_file, s) = load(None, Some(text), &[], &[]);
    let from_file = from_file.unwrap();
    let env = MapEnv::default();
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    let from_text = Config::load_run_config_text(&opts, &s.run, text).unwrap();
    assert_eq!(from_text.run_config.as_deref(), Some(s.run.as_path()));
    assert_eq!(from_text.sections, from_file.sections);
    assert_eq!(
        from_text.registry.backend("vllm"),
        from_file.registry.backend("vllm")
    );
    // Errors name the path given, as they name a file's.
    let errors = Config::load_run_config_text(&opts, &s.run, "nope: 1\n").unwrap_err();
    assert!(errors.to_string().contains(&s.run.display().to_string()));
}
