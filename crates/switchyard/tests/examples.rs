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

/// The recorded run `examples/replay.yaml` replays, from the repository's root.
const REPLAY_RUN: &str = "examples/runs/mock_campaign";

/// The prompts of that run, each role's in the order it made them.
const PLANNER_PROMPT: &str = "Plan a three-day trip to Rome.";
const REVIEWER_PROMPT: &str = "Review this plan: the Colosseum, the Vatican, then Trastevere.";

/// The example's `log:` made absolute: a replay log is relative to the working directory,
/// which is the repository's root for a user and this crate's folder for its tests.
fn replay_overrides() -> Vec<String> {
    let log = example("runs/mock_campaign/llm_log");
    let text = std::fs::read_to_string(example("replay.yaml")).unwrap();
    assert!(
        text.contains(&format!("log: {REPLAY_RUN}/llm_log")),
        "{text}"
    );
    ["planner", "reviewer"]
        .iter()
        .map(|role| format!("llm.{role}.log={}", log.display()))
        .collect()
}

/// Records the two calls of `examples/runs/mock_campaign` into `dir` through a run's
/// roles, as a program does, with `overrides` (the mock's address when it is not the
/// built-in one).
async fn record_mock_campaign(dir: &std::path::Path, mut overrides: Vec<String>) {
    let tmp = tempfile::tempdir().unwrap();
    let config = tmp.path().join("record.yaml");
    std::fs::write(
        &config,
        "llm:\n  \
         planner: {model: mock/mock-large+think, max_tokens: 500}\n  \
         reviewer: {model: mock/mock-small, dialect: messages, max_tokens: 300}\n",
    )
    .unwrap();
    // `log=` as an override: a `log:` in the file would be kept in run.yaml's settings.
    overrides.push(format!("log={}", dir.display()));
    let run = Run::builder(&config)
        .overrides(overrides)
        .env(&MapEnv::default())
        .user_file(false)
        .open()
        .unwrap();
    run.llm("planner")
        .unwrap()
        .complete(Request::user(PLANNER_PROMPT))
        .await
        .unwrap();
    run.llm("reviewer")
        .unwrap()
        .complete(Request::user(REVIEWER_PROMPT))
        .await
        .unwrap();
    run.recorder().unwrap().close().unwrap();
}

/// Records `examples/runs/mock_campaign` again, the run `examples/replay.yaml` replays:
/// `cargo test -p switchyard --test examples -- --ignored record_the_replay_example`.
/// The mock listens on the built-in backend's own address (127.0.0.1:4010), so the run's
/// `run.yaml` names no address or path of the machine that recorded it.
#[tokio::test]
#[ignore = "rewrites examples/runs/mock_campaign"]
async fn record_the_replay_example() {
    let mock = MockServer::start_on("127.0.0.1:4010".parse().unwrap())
        .await
        .expect("port 4010 is free (stop `switchyard mock` first)");
    let dir = example("runs/mock_campaign");
    let _ = std::fs::remove_dir_all(&dir);
    record_mock_campaign(&dir, Vec::new()).await;
    // Replay reads the records themselves without the index; the repository keeps text.
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("calls.sqlite")
        {
            std::fs::remove_file(path).unwrap();
        }
    }
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_run_records_each_role_in_its_dialect_and_replays_it() {
    // Recorded now, as the shipped run was: each record names the dialect of its call,
    // which is what the replay decodes the recorded bytes with.
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    record_mock_campaign(
        &dir,
        vec![format!("backends.mock.base_url={}", mock.base_url())],
    )
    .await;
    let log = std::fs::read_to_string(dir.join("llm_log/segment-000001.jsonl")).unwrap();
    let dialects: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["dialect"].clone())
        .collect();
    assert_eq!(dialects, ["chat", "messages"]);
    let overrides: Vec<String> = ["planner", "reviewer"]
        .iter()
        .map(|role| format!("llm.{role}.log={}", dir.join("llm_log").display()))
        .collect();
    let run = open("replay.yaml", &overrides, &MapEnv::default());
    let review = run
        .llm("reviewer")
        .unwrap()
        .complete(Request::user(REVIEWER_PROMPT))
        .await
        .unwrap();
    assert_eq!(review.text(), REVIEWER_PROMPT);
    assert_eq!(mock.requests().len(), 2, "the replay called no provider");
}

#[test]
fn replay_parses_and_names_its_replay_roles() {
    let report = Run::builder(example("replay.yaml"))
        .overrides(replay_overrides())
        .env(&MapEnv::default())
        .user_file(false)
        .check();
    assert!(report.ok, "{}", report.problems_text());
    for name in ["planner", "reviewer"] {
        let role = report.roles.iter().find(|r| r.role == name).unwrap();
        assert_eq!(role.form, RoleForm::Inline);
        assert_eq!(role.kind, Some(Kind::Replay));
        assert_eq!(
            role.backend.as_deref(),
            Some(format!("role:{name}").as_str())
        );
    }
}

#[tokio::test]
async fn replay_answers_from_the_shipped_run() {
    // The run shipped beside the example, recorded from the mock: no provider runs here.
    let run = open("replay.yaml", &replay_overrides(), &MapEnv::default());
    let plan = run
        .llm("planner")
        .unwrap()
        .complete(Request::user(PLANNER_PROMPT))
        .await
        .unwrap();
    assert_eq!(plan.text(), PLANNER_PROMPT, "the mock echoes");
    assert!(!plan.thinking().is_empty(), "mock-large+think thinks first");
    let review = run
        .llm("reviewer")
        .unwrap()
        .complete(Request::user(REVIEWER_PROMPT))
        .await
        .unwrap();
    assert_eq!(review.text(), REVIEWER_PROMPT);
    // Recorded in the messages dialect, decoded again as such.
    assert!(
        String::from_utf8_lossy(&review.raw).contains("\"type\":\"message\""),
        "{}",
        String::from_utf8_lossy(&review.raw)
    );
    // Its files are text a reader can trust: no key, no path of the recording machine.
    for file in ["run.yaml", "llm_log/segment-000001.jsonl"] {
        let text = std::fs::read_to_string(example("runs/mock_campaign").join(file)).unwrap();
        assert!(text.len() < 8_000, "{file} is {} bytes", text.len());
        let root = std::fs::canonicalize(example("..")).unwrap();
        for path in [root, std::env::temp_dir()] {
            let path = path.display().to_string();
            assert!(!text.contains(&path), "{file} holds the path {path}");
        }
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
    let shipped = format!("{REPLAY_RUN}/llm_log");
    assert!(text.contains(&shipped));
    let log = recorded.join("llm_log");
    let config_path = tmp.path().join("replay.yaml");
    std::fs::write(&config_path, text.replace(&shipped, log.to_str().unwrap())).unwrap();
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
