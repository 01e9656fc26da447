//! Every run config in `examples/` loads and passes its check; the mock one answers.

use std::path::PathBuf;

use switchyard::env::MapEnv;
use switchyard::registry::Kind;
use switchyard::run::{ModelSource, RoleForm, Run};
use switchyard::{Dialect, Request};
use switchyard_mock::MockServer;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples")
        .join(name)
}

fn open(name: &str, overrides: &[String], env: &MapEnv) -> Run {
    match Run::builder(example(name))
        .overrides(overrides.iter().cloned())
        .env(env)
        .user_file(false)
        .open_checked()
    {
        Ok(run) => run,
        Err(report) => panic!("{name}: {}", report.problems_text()),
    }
}

#[test]
fn hosted_checks_with_every_key_set() {
    let env = MapEnv::new([
        ("DEEPSEEK_API_KEY", "test-deepseek"),
        ("ANTHROPIC_API_KEY", "test-anthropic"),
        ("OPENAI_API_KEY", "test-openai"),
    ]);
    let run = open("hosted.yaml", &[], &env);
    assert_eq!(
        run.role_names(),
        [
            "critic",
            "distiller",
            "planner",
            "proposer",
            "reviewer",
            "summarizer"
        ]
    );
    let role = |n: &str| run.role(n).unwrap();
    assert_eq!(role("planner").settings.max_tokens, Some(32000));
    assert_eq!(role("proposer").model, "claude-sonnet-4-5");
    assert_eq!(role("reviewer").dialect, Some(Dialect::Messages));
    assert_eq!(role("critic").dialect, Some(Dialect::Responses));
    assert_eq!(role("distiller").form, RoleForm::Inline);
    assert_eq!(role("summarizer").model_from, ModelSource::TopLevel);
    assert!(run
        .report()
        .roles
        .iter()
        .all(|r| r.price_known == Some(true)));

    // Without keys, the check names each missing variable.
    let report = Run::builder(example("hosted.yaml"))
        .env(&MapEnv::default())
        .user_file(false)
        .check();
    assert!(!report.ok);
    for var in ["DEEPSEEK_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"] {
        assert!(
            report.problems.iter().any(|p| p.message.contains(var)),
            "{var}"
        );
    }
}

#[test]
fn local_needs_no_key() {
    let run = open("local.yaml", &[], &MapEnv::default());
    let role = |n: &str| run.role(n).unwrap();
    assert_eq!(
        role("planner").model,
        "Qwen/Qwen3-30B-A3B-Instruct-2507-FP8"
    );
    assert_eq!(role("proposer").dialect, Some(Dialect::Messages));
    assert_eq!(role("reviewer").backend.name, "sglang");
    assert_eq!(role("summarizer").backend.name, "ollama");
    assert_eq!(
        role("scorer").backend.base_url.as_ref().unwrap().value,
        "http://127.0.0.1:8081/v1"
    );
    assert_eq!(role("helper").model_from, ModelSource::TopLevel);
    assert!(run.report().roles.iter().all(|r| r.served == Some(true)));
}

#[tokio::test]
async fn mock_answers_every_role_in_its_dialect() {
    let mock = MockServer::start().await;
    let run = open(
        "mock.yaml",
        &[format!("backends.mock.base_url={}", mock.base_url())],
        &MapEnv::default(),
    );
    for role in run.role_names() {
        let reply = run
            .llm(role)
            .unwrap()
            .complete(Request::user("ping"))
            .await
            .unwrap_or_else(|e| panic!("{role}: {e}"));
        assert!(!reply.text().is_empty(), "{role}");
    }
    let paths: Vec<String> = mock.requests().iter().map(|r| r.path.clone()).collect();
    assert!(paths.contains(&"/v1/messages".to_string()), "{paths:?}");
    assert!(paths.contains(&"/v1/responses".to_string()), "{paths:?}");
    assert!(
        paths.iter().any(|p| p.contains(":generateContent")),
        "{paths:?}"
    );
}

#[test]
fn replay_parses_and_names_its_replay_roles() {
    let report = Run::builder(example("replay.yaml"))
        .env(&MapEnv::default())
        .user_file(false)
        .check();
    for name in ["planner", "reviewer"] {
        let role = report.roles.iter().find(|r| r.role == name).unwrap();
        assert_eq!(role.form, RoleForm::Inline);
        assert_eq!(role.kind, Some(Kind::Replay));
        assert_eq!(
            role.backend.as_deref(),
            Some(format!("role:{name}").as_str())
        );
    }
    // The config itself is sound: the only problem possible is that the example's log
    // (`runs/my_campaign/llm_log`) was not recorded here.
    for p in &report.problems {
        assert!(
            p.message.contains("replay") || p.message.contains("llm_log"),
            "{p}"
        );
    }
}

#[tokio::test]
async fn replay_answers_from_a_recorded_run_without_calling_a_provider() {
    // Record a tiny run against the mock: a planner and a reviewer.
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let recorded = tmp.path().join("my_campaign");
    let env = MapEnv::default();
    let mut opts = switchyard::registry::LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![format!("backends.mock.base_url={}", mock.base_url())];
    let config = switchyard::registry::Config::load(&opts).unwrap();
    let recorder = switchyard::Recorder::create(
        &recorded,
        &switchyard::RunInfo::new(),
        switchyard::RecorderOptions::default(),
    )
    .unwrap();
    let mock_llm = switchyard::Llm::resolve(&config.registry, "mock/echo", &env).unwrap();
    let planner = mock_llm
        .clone()
        .with_role("planner")
        .with_recorder(recorder.clone());
    let reviewer = mock_llm
        .with_role("reviewer")
        .with_recorder(recorder.clone());
    let plan = planner
        .complete(Request::user("plan a trip to Rome"))
        .await
        .unwrap();
    let review = reviewer
        .complete(Request::user("review: the plan"))
        .await
        .unwrap();
    recorder.close().unwrap();
    let sent = mock.requests().len();
    assert_eq!(sent, 2);

    // The example, its log pointed at that run.
    let text = std::fs::read_to_string(example("replay.yaml")).unwrap();
    assert!(text.contains("runs/my_campaign/llm_log"));
    let log = recorded.join("llm_log");
    let config_path = tmp.path().join("replay.yaml");
    std::fs::write(
        &config_path,
        text.replace("runs/my_campaign/llm_log", log.to_str().unwrap()),
    )
    .unwrap();
    let run = match Run::builder(&config_path)
        .env(&env)
        .user_file(false)
        .open_checked()
    {
        Ok(run) => run,
        Err(report) => panic!("replay.yaml: {}", report.problems_text()),
    };
    let replayed_plan = run
        .llm("planner")
        .unwrap()
        .complete(Request::user("plan a trip to Rome"))
        .await
        .unwrap();
    let replayed_review = run
        .llm("reviewer")
        .unwrap()
        .complete(Request::user("review: the plan"))
        .await
        .unwrap();
    assert_eq!(replayed_plan.text(), plan.text());
    assert_eq!(replayed_plan.raw, plan.raw);
    assert_eq!(replayed_review.text(), review.text());
    // Each role answers from its own recorded calls: the reviewer has none for the
    // planner's prompt (already used up or not), and no provider was called.
    let miss = run
        .llm("reviewer")
        .unwrap()
        .complete(Request::user("plan a trip to Rome"))
        .await
        .unwrap_err();
    assert_eq!(
        miss.kind(),
        switchyard::ErrorKind::ReplayExhausted,
        "{miss}"
    );
    assert!(miss.to_string().contains("`reviewer`"), "{miss}");
    assert_eq!(mock.requests().len(), sent);
}
