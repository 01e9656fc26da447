//! Run configs and roles: the three forms, settings, model precedence, refusals, a custom
//! backend for one role, and the check report. Calls go to the mock on 127.0.0.1.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use switchyard::backend::{Backend, Call};
use switchyard::env::MapEnv;
use switchyard::run::{ModelSource, RoleForm, Run};
use switchyard::{Reply, Request};
use switchyard_mock::MockServer;

struct Dir {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

fn config(yaml: &str) -> Dir {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("run.yaml");
    std::fs::write(&path, yaml).unwrap();
    Dir { _tmp: tmp, path }
}

fn open(dir: &Dir, overrides: &[&str], env: &MapEnv) -> switchyard::Result<Run> {
    Run::builder(&dir.path)
        .overrides(overrides.iter().copied())
        .env(env)
        .user_file(false)
        .open()
}

fn err(r: switchyard::Result<Run>) -> String {
    match r {
        Ok(_) => panic!("expected the run to be refused"),
        Err(e) => e.to_string(),
    }
}

#[tokio::test]
async fn three_forms_of_a_role_reach_the_mock_with_their_settings() {
    let mock = MockServer::start().await;
    let dir = config(&format!(
        "\
llm:
  plain: mock/echo
  mapped: {{model: mock/echo, max_tokens: 123, temperature: 0.25, extra_body: {{seed: 7}}}}
  inline: {{backend: anthropic, model: echo, base_url: {url}, api_key_env: INLINE_KEY,
           thinking_budget: 2048, max_tokens: 4096}}
",
        url = mock.url()
    ));
    let env = MapEnv::new([
        ("MOCK_BASE_URL", mock.base_url()),
        ("INLINE_KEY", "inline-test-key".to_string()),
    ]);
    let run = open(&dir, &[], &env).unwrap();
    assert_eq!(run.role_names(), ["inline", "mapped", "plain"]);
    assert_eq!(run.role("plain").unwrap().form, RoleForm::Reference);
    assert_eq!(run.role("mapped").unwrap().form, RoleForm::Mapping);
    let inline = run.role("inline").unwrap();
    assert_eq!(inline.form, RoleForm::Inline);
    assert_eq!(inline.backend.name, "role:inline");
    assert_eq!(inline.reference, "role:inline/echo");

    for role in ["plain", "mapped", "inline"] {
        let reply = run
            .llm(role)
            .unwrap()
            .complete(Request::user("hello"))
            .await
            .unwrap();
        assert_eq!(reply.text(), "hello", "{role}");
    }
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let plain = requests[0].json.clone().unwrap();
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert!(plain.get("max_completion_tokens").is_none(), "{plain}");
    let mapped = requests[1].json.clone().unwrap();
    assert_eq!(mapped["max_completion_tokens"], 123);
    assert_eq!(mapped["temperature"], 0.25);
    assert_eq!(mapped["seed"], 7);
    // The inline endpoint speaks Messages, with its key in x-api-key.
    assert_eq!(requests[2].path, "/v1/messages");
    assert_eq!(requests[2].header("x-api-key"), Some("inline-test-key"));
    let inline = requests[2].json.clone().unwrap();
    assert_eq!(inline["max_tokens"], 4096);
    assert_eq!(inline["thinking"]["budget_tokens"], 2048);
}

#[tokio::test]
async fn a_request_value_wins_over_the_role_setting() {
    let mock = MockServer::start().await;
    let dir = config("llm:\n  planner: {model: mock/echo, max_tokens: 100}\n");
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let run = open(&dir, &[], &env).unwrap();
    run.llm("planner")
        .unwrap()
        .complete(Request::user("x").with_max_tokens(5))
        .await
        .unwrap();
    assert_eq!(
        mock.requests()[0].json.as_ref().unwrap()["max_completion_tokens"],
        5
    );
}

fn model_of(run: &Run, role: &str) -> (String, ModelSource) {
    let r = run.role(role).unwrap();
    (r.reference.clone(), r.model_from)
}

const PRECEDENCE: &str = "\
model: mock/top
llm:
  own: mock/own
  none: {max_tokens: 10}
";

#[test]
fn the_top_level_model_is_the_last_default() {
    let dir = config(PRECEDENCE);
    let run = open(&dir, &[], &MapEnv::default()).unwrap();
    assert_eq!(
        model_of(&run, "none"),
        ("mock/top".into(), ModelSource::TopLevel)
    );
    assert_eq!(
        model_of(&run, "own"),
        ("mock/own".into(), ModelSource::RoleEntry)
    );
}

#[test]
fn switchyard_model_beats_the_top_level_model_but_not_a_role_entry() {
    let dir = config(PRECEDENCE);
    let env = MapEnv::new([("SWITCHYARD_MODEL", "mock/env")]);
    let run = open(&dir, &[], &env).unwrap();
    assert_eq!(
        model_of(&run, "none"),
        ("mock/env".into(), ModelSource::EnvVar)
    );
    assert_eq!(
        model_of(&run, "own"),
        ("mock/own".into(), ModelSource::RoleEntry)
    );
}

#[test]
fn a_model_override_moves_only_the_roles_without_a_model() {
    let dir = config(PRECEDENCE);
    let env = MapEnv::new([("SWITCHYARD_MODEL", "mock/env")]);
    let run = open(&dir, &["model=mock/cli"], &env).unwrap();
    assert_eq!(
        model_of(&run, "none"),
        ("mock/cli".into(), ModelSource::ModelOverride)
    );
    assert_eq!(
        model_of(&run, "own"),
        ("mock/own".into(), ModelSource::RoleEntry)
    );
}

#[test]
fn a_role_override_beats_everything() {
    let dir = config(PRECEDENCE);
    let env = MapEnv::new([("SWITCHYARD_MODEL", "mock/env")]);
    let run = open(
        &dir,
        &[
            "model=mock/cli",
            "llm.own.model=mock/o2",
            "llm.none.model=mock/n2",
        ],
        &env,
    )
    .unwrap();
    assert_eq!(
        model_of(&run, "own"),
        ("mock/o2".into(), ModelSource::RoleOverride)
    );
    assert_eq!(
        model_of(&run, "none"),
        ("mock/n2".into(), ModelSource::RoleOverride)
    );
    // The override kept the role's own settings.
    assert_eq!(run.role("none").unwrap().settings.max_tokens, Some(10));
    // In code, the same thing.
    let run = Run::builder(&dir.path)
        .env(&env)
        .user_file(false)
        .model_for_role("own", "mock/code")
        .open()
        .unwrap();
    assert_eq!(
        model_of(&run, "own"),
        ("mock/code".into(), ModelSource::RoleOverride)
    );
}

#[test]
fn no_model_anywhere_is_an_error_that_says_so() {
    let dir = config("llm:\n  planner: {max_tokens: 10}\n");
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(e.contains("role `planner` has no model"), "{e}");
    assert!(e.contains("SWITCHYARD_MODEL"), "{e}");
    assert!(e.contains("run.yaml:2:3"), "{e}");
}

#[test]
fn a_typo_of_a_setting_that_looks_like_a_key_name_is_said_as_a_typo() {
    // `max_token` ends in `token`, a key's name; one edit from `max_tokens`, it is a typo.
    let dir = config("llm:\n  planner: {model: mock/echo, max_token: 7}\n");
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(e.contains("did you mean `max_tokens`"), "{e}");
    assert!(!e.contains("would put a key"), "{e}");
    // A key's own name is still refused as a key.
    let dir = config("llm:\n  planner: {model: mock/echo, access_token: abc}\n");
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(e.contains("`access_token` would put a key"), "{e}");
}

#[test]
fn a_setting_the_backend_does_not_take_is_refused_with_the_list() {
    let dir =
        config("llm:\n  planner:\n    model: anthropic/opus\n    max_completion_tokens: 100\n");
    let env = MapEnv::new([("ANTHROPIC_API_KEY", "x")]);
    let e = err(open(&dir, &[], &env));
    assert!(e.contains("run.yaml:4:5"), "{e}");
    assert!(
        e.contains(
            "role `planner`: backend `anthropic` (kind http, dialect messages) does not take \
             `max_completion_tokens` (did you mean `max_tokens`?); it takes: max_tokens, temperature, \
             top_p, stop, reasoning_effort, thinking_budget, extra_body, timeout_seconds, \
             connect_timeout_seconds, first_byte_timeout_seconds, idle_timeout_seconds, retry, \
             context_check"
        ),
        "{e}"
    );
    // A CLI agent takes only its own.
    let dir = config("llm:\n  reviewer: {model: claude-code/opus, temperature: 0.2}\n");
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(
        e.contains("backend `claude-code` (kind claude-code) does not take `temperature`; it takes: effort, timeout_seconds, retry, context_check"),
        "{e}"
    );
}

#[test]
fn bad_setting_values_and_unknown_keys_are_refused_with_what_is_accepted() {
    let dir = config(
        "llm:\n  a: {model: mock/echo, temperature: 5}\n  b: {model: mock/echo, reasoning_efort: high}\n  c: {model: mock/echo, reasoning_effort: hgh}\n",
    );
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(
        e.contains(
            "run.yaml:2:25: `llm.a.temperature` must be a number from 0 to 2, found a number"
        ),
        "{e}"
    );
    assert!(
        e.contains("run.yaml:3:25: unknown role key `reasoning_efort` (did you mean `reasoning_effort`?); accepted: model, price, dialect, context_window, max_tokens"),
        "{e}"
    );
    assert!(
        e.contains(
            "`llm.c.reasoning_effort` must be one of none, minimal, low, medium, high, xhigh, max"
        ),
        "{e}"
    );
    assert!(e.contains("3 problems"), "{e}");
}

#[test]
fn a_key_written_in_a_role_is_refused_and_never_shown() {
    let key = "sk-proj-abcdefghijklmnopqrstuvwx";
    let dir = config(&format!(
        "llm:\n  a: {{backend: openai_compatible, model: m, base_url: http://x/v1, api_key: {key}}}\n"
    ));
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(!e.contains(key), "{e}");
    assert!(
        e.contains("run.yaml:2:68: `api_key` would put a key in a configuration file"),
        "{e}"
    );
    let dir = config(&format!(
        "llm:\n  b: {{model: mock/echo, extra_body: {{auth: {key}}}}}\n"
    ));
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(!e.contains(key), "{e}");
    assert!(
        e.contains("run.yaml:2:38: the value of `llm.b.extra_body.auth` looks like an API key"),
        "{e}"
    );
    let e = err(open(
        &config("llm:\n  b: mock/echo\n"),
        &[&format!("llm.b.extra_body.auth={key}")],
        &MapEnv::default(),
    ));
    assert!(!e.contains(key), "{e}");
    assert!(e.contains("looks like an API key"), "{e}");
}

#[test]
fn inline_endpoints_are_validated_like_registry_backends() {
    let dir = config(
        "llm:\n  a: {backend: openai_compat, model: m}\n  b: {backend: openai_compatible, model: m, base_url: 'ftp://x'}\n  c: {backend: openai_compatible, model: m}\n  d: {backend: anthropic}\n  e: {model: mock/echo, base_url: http://x/v1}\n",
    );
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(
        e.contains("unknown inline endpoint kind `openai_compat` in `llm.a.backend` (did you mean `openai_compatible`?); accepted: openai_compatible, openai_responses, anthropic, gemini, claude_code, codex, replay"),
        "{e}"
    );
    assert!(e.contains("run.yaml:3:"), "{e}");
    assert!(e.contains("`base_url` is not a valid http(s) URL"), "{e}");
    assert!(
        e.contains("role `c`: an `openai_compatible` endpoint needs `base_url`"),
        "{e}"
    );
    assert!(
        e.contains("role `d`: an inline endpoint needs `model`"),
        "{e}"
    );
    // The older endpoint form with a model naming a backend: two readings, none guessed.
    assert!(
        e.contains("role `e`: `base_url` with `model: mock/echo`, which names backend `mock`, says two places to call"),
        "{e}"
    );
    assert!(e.contains("add `backend: openai_compatible`"), "{e}");
}

#[test]
fn an_inline_endpoint_without_base_url_starts_from_its_kinds_builtin() {
    let dir = config("llm:\n  a: {backend: anthropic, model: claude-opus-4-5, max_tokens: 100}\n  r: {backend: openai_responses, model: gpt-5}\n");
    let env = MapEnv::new([("ANTHROPIC_API_KEY", "k1"), ("OPENAI_API_KEY", "k2")]);
    let run = open(&dir, &[], &env).unwrap();
    let a = run.role("a").unwrap();
    assert_eq!(
        a.backend.base_url.as_ref().unwrap().value,
        "https://api.anthropic.com/v1"
    );
    assert_eq!(a.backend.api_key_env.value, "ANTHROPIC_API_KEY");
    assert!(a.backend.price("claude-opus-4-5").is_some());
    let r = run.role("r").unwrap();
    assert_eq!(r.dialect, Some(switchyard::Dialect::Responses));
    assert_eq!(r.backend.api_key_env.value, "OPENAI_API_KEY");
}

#[test]
fn an_unknown_role_lists_the_roles() {
    let dir = config("llm:\n  planner: mock/echo\n  reviewer: mock/echo\n");
    let run = open(&dir, &[], &MapEnv::default()).unwrap();
    let e = run.llm("planer").unwrap_err().to_string();
    assert!(
        e.contains("no role `planer` (did you mean `planner`?); roles: planner, reviewer"),
        "{e}"
    );
    let e = err(open(&dir, &["llm.plannr.max_tokens=3"], &MapEnv::default()));
    assert!(e.contains("override `llm.plannr.max_tokens=3`: role `plannr`: the config has no such role (did you mean `planner`?)"), "{e}");
}

/// A backend of the test's own: records the model of each call.
struct Recording {
    models: Mutex<Vec<(String, Option<u64>)>>,
}

#[async_trait]
impl Backend for Recording {
    fn name(&self) -> &str {
        "recording"
    }

    async fn complete(&self, call: &Call) -> switchyard::Result<Reply> {
        self.models
            .lock()
            .unwrap()
            .push((call.model.clone(), call.request.max_tokens));
        Ok(Reply {
            content: vec![switchyard::Part::text("from the custom backend")],
            usage: Some(switchyard::Usage::default()),
            ..Reply::default()
        })
    }
}

#[tokio::test]
async fn a_custom_backend_replaces_the_configured_one_for_its_role_only() {
    let mock = MockServer::start().await;
    // The reviewer's backend needs a key nobody set: with a custom backend it is not needed.
    let dir =
        config("llm:\n  planner: mock/echo\n  reviewer: {model: anthropic/opus, max_tokens: 77}\n");
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let custom = Arc::new(Recording {
        models: Mutex::new(Vec::new()),
    });
    let run = Run::builder(&dir.path)
        .env(&env)
        .user_file(false)
        .backend_for_role("reviewer", custom.clone())
        .open()
        .unwrap();
    let reply = run
        .llm("reviewer")
        .unwrap()
        .complete(Request::user("review"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "from the custom backend");
    // The model id came from the config (the alias expanded), the settings still applied.
    assert_eq!(
        *custom.models.lock().unwrap(),
        [("claude-opus-4-5".to_string(), Some(77))]
    );
    run.llm("planner")
        .unwrap()
        .complete(Request::user("plan"))
        .await
        .unwrap();
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(custom.models.lock().unwrap().len(), 1);
    assert!(run
        .report()
        .roles
        .iter()
        .any(|r| r.role == "reviewer" && r.custom_backend));

    let e = Run::builder(&dir.path)
        .env(&env)
        .user_file(false)
        .backend_for_role("reviwer", custom)
        .open()
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("config has no such role (did you mean `reviewer`?)"),
        "{e}"
    );
}

#[test]
fn check_reports_every_role_and_every_problem_at_once() {
    let dir = config(
        "\
budget: {max_usd: 20}
llm:
  ok: {model: mock/mock-small}
  unpriced: mock/echo
  nokey: openai/gpt-5
  wrongdialect: {model: anthropic/opus, dialect: chat}
  typo: openia/gpt-5
",
    );
    let report = Run::builder(&dir.path)
        .env(&MapEnv::default())
        .user_file(false)
        .check();
    assert!(!report.ok);
    let role = |n: &str| report.roles.iter().find(|r| r.role == n).unwrap();
    assert!(role("ok").ok);
    assert_eq!(role("ok").price_known, Some(true));
    assert_eq!(role("ok").context_window, Some(32768));
    assert_eq!(
        role("nokey").key_variable.as_deref(),
        Some("OPENAI_API_KEY")
    );
    assert_eq!(role("wrongdialect").served, Some(false));
    assert!(!role("typo").ok);
    let text = report.problems_text();
    assert!(text.contains("5 problems"), "{text}");
    assert!(text.contains("role `unpriced`: the run has a dollar budget (budget.max_usd: 20) but the price of `mock/echo` is unknown"), "{text}");
    assert!(text.contains("run.yaml:5:3: role `nokey`: backend `openai` needs a key: set the environment variable OPENAI_API_KEY"), "{text}");
    assert!(text.contains("role `wrongdialect`: backend `anthropic` does not serve the `chat` dialect (it serves: messages)"), "{text}");
    assert!(text.contains("run.yaml:7:3: role `typo`: `openia/gpt-5` is not a model reference: no backend is called `openia` (did you mean `openai`?)"), "{text}");
    assert!(text.contains("role `typo`"), "{text}");

    // `unknown_cost: allow` lets the unpriced model run under a dollar budget.
    let report = Run::builder(&dir.path)
        .overrides(["unknown_cost=allow"])
        .env(&MapEnv::default())
        .user_file(false)
        .check();
    assert!(!report
        .problems
        .iter()
        .any(|p| p.message.contains("dollar budget")));
}

#[test]
fn llm_none_builds_a_handle_from_switchyard_model() {
    let env = MapEnv::new([("SWITCHYARD_MODEL", "mock/echo")]);
    let llm = switchyard::run::llm_with(None, &env).unwrap();
    assert_eq!(llm.label(), "mock/echo");
    assert_eq!(llm.model(), "echo");
    let llm = switchyard::run::llm_with(Some("mock/think"), &env).unwrap();
    assert_eq!(llm.model(), "think");
    let e = switchyard::run::llm_with(None, &MapEnv::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("set the environment variable SWITCHYARD_MODEL"),
        "{e}"
    );
}

#[test]
fn the_runs_retry_and_timeouts_reach_each_handle_with_the_roles_own_over_them() {
    use std::time::Duration;
    let dir = config(
        "\
retry: {rate_limited: [1, 2], malformed: [3]}
timeouts: {timeout_seconds: 600, idle_timeout_seconds: 30}
llm:
  planner: {model: mock/mock-small, timeout_seconds: 900, retry: {malformed: []}, context_check: false}
  reviewer: mock/echo
",
    );
    let run = open(&dir, &[], &MapEnv::default()).unwrap();
    let planner = run.llm("planner").unwrap();
    let p = planner.policy();
    assert_eq!(p.total_timeout, Some(Duration::from_secs(900)));
    assert_eq!(p.idle_timeout, Some(Duration::from_secs(30)));
    assert_eq!(
        p.retry.rate_limited,
        [Duration::from_secs(1), Duration::from_secs(2)]
    );
    assert!(p.retry.malformed.is_empty());
    assert!(!p.context_check);
    assert_eq!(planner.context_window(), Some(32768));
    let reviewer = run.llm("reviewer").unwrap();
    let r = reviewer.policy();
    assert_eq!(r.total_timeout, Some(Duration::from_secs(600)));
    assert_eq!(r.retry.malformed, [Duration::from_secs(3)]);
    assert!(r.context_check);
    // An override reaches it too.
    let run = open(
        &dir,
        &["llm.reviewer.timeout_seconds=2m"],
        &MapEnv::default(),
    )
    .unwrap();
    assert_eq!(
        run.llm("reviewer").unwrap().policy().total_timeout,
        Some(Duration::from_secs(120))
    );
}

#[test]
fn a_bad_policy_is_refused_where_it_is_written() {
    let dir =
        config("retry: {rate_limitd: [1]}\nllm:\n  a: {model: mock/echo, timeout_seconds: soon}\n");
    let e = err(open(&dir, &[], &MapEnv::default()));
    assert!(
        e.contains("run.yaml:1:1: `retry` must be a call policy"),
        "{e}"
    );
    assert!(e.contains("rate_limitd"), "{e}");
    assert!(
        e.contains("run.yaml:3:25: role `a`: `timeout_seconds`: `soon` is not a wait; write a number of seconds"),
        "{e}"
    );
}
