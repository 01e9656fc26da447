//! A run config with `log:` and `budget:`: every role's calls are recorded under its role
//! name in the run directory, and the run's budget is shared by all its roles.

use std::path::Path;

use switchyard::env::MapEnv;
use switchyard::record::read_records;
use switchyard::run::Run;
use switchyard::{ErrorKind, Request};
use switchyard_mock::MockServer;

fn write_config(dir: &Path, body: &str) -> std::path::PathBuf {
    let path = dir.join("run.yaml");
    std::fs::write(&path, body).unwrap();
    path
}

fn open(path: &Path, overrides: &[&str], env: &MapEnv) -> switchyard::Result<Run> {
    Run::builder(path)
        .overrides(overrides.iter().copied())
        .env(env)
        .user_file(false)
        .open()
}

#[tokio::test]
async fn every_role_is_recorded_under_its_name_with_its_cost() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("runs/one");
    let config = write_config(
        tmp.path(),
        &format!(
            "model: mock/echo\nllm:\n  planner: mock/small\n  reviewer: {{model: mock/echo, max_tokens: 50}}\nlog: {}\n",
            log.display()
        ),
    );
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let run = open(&config, &[], &env).unwrap();
    assert!(run.recorder().is_some());
    run.llm("planner")
        .unwrap()
        .complete(Request::user("plan it"))
        .await
        .unwrap();
    run.llm("reviewer")
        .unwrap()
        .complete(Request::user("review it"))
        .await
        .unwrap();
    run.recorder().unwrap().close().unwrap();

    assert!(log.join("run.yaml").is_file(), "run.yaml written at start");
    let records = read_records(&log).unwrap();
    let mut roles: Vec<_> = records
        .iter()
        .map(|r| (r.role.clone().unwrap_or_default(), r.reference.clone()))
        .collect();
    roles.sort();
    assert_eq!(
        roles,
        [
            ("planner".to_string(), "mock/small".to_string()),
            ("reviewer".to_string(), "mock/echo".to_string())
        ]
    );
    // `mock-small` (alias `small`) is priced in the built-ins; `echo` is not.
    let planner = records
        .iter()
        .find(|r| r.role.as_deref() == Some("planner"))
        .unwrap();
    let reviewer = records
        .iter()
        .find(|r| r.role.as_deref() == Some("reviewer"))
        .unwrap();
    assert!(
        planner.cost_usd.is_some_and(|c| c > 0.0),
        "{:?}",
        planner.cost_usd
    );
    assert_eq!(
        reviewer.cost_usd, None,
        "an unpriced model's cost is unknown, not 0"
    );

    // A second open of the same directory is refused without resume, accepted with it.
    let again = open(&config, &[], &env).unwrap_err().to_string();
    assert!(again.contains("resume"), "{again}");
    let resumed = Run::builder(&config)
        .env(&env)
        .user_file(false)
        .resume(true)
        .open()
        .unwrap();
    resumed.recorder().unwrap().close().unwrap();
}

#[tokio::test]
async fn the_budget_is_shared_by_every_role() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(
        tmp.path(),
        "llm:\n  a: mock/echo\n  b: mock/echo\nbudget: {max_calls: 2}\n",
    );
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let run = open(&config, &[], &env).unwrap();
    let a = run.llm("a").unwrap();
    let b = run.llm("b").unwrap();
    a.complete(Request::user("one")).await.unwrap();
    b.complete(Request::user("two")).await.unwrap();
    let err = a.complete(Request::user("three")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BudgetExceeded, "{err}");
    assert!(err.to_string().contains("max_calls"), "{err}");
    assert_eq!(mock.requests().len(), 2, "the refused call was never sent");
}

/// A budget spans the run directory, not one process: a resumed run starts from what the
/// calls already recorded there spent, the calls of excluded roles left out.
#[tokio::test]
async fn a_resumed_run_starts_its_budget_from_what_its_directory_spent() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("run");
    let config = write_config(
        tmp.path(),
        &format!(
            "llm:\n  a: mock/echo\n  free: mock/echo\nbudget: {{max_calls: 2, exclude_roles: [free]}}\nlog: {}\n",
            log.display()
        ),
    );
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let first = open(&config, &[], &env).unwrap();
    first
        .llm("a")
        .unwrap()
        .complete(Request::user("one"))
        .await
        .unwrap();
    first
        .llm("free")
        .unwrap()
        .complete(Request::user("x"))
        .await
        .unwrap();
    first.recorder().unwrap().close().unwrap();
    drop(first);
    let resumed = Run::builder(&config)
        .env(&env)
        .user_file(false)
        .resume(true)
        .open()
        .unwrap();
    let a = resumed.llm("a").unwrap();
    a.complete(Request::user("two")).await.unwrap();
    let err = a.complete(Request::user("three")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BudgetExceeded, "{err}");
    assert!(err.to_string().contains("spent so far: 2 calls"), "{err}");
    resumed.recorder().unwrap().close().unwrap();
}

#[test]
fn a_dollar_budget_over_an_unpriced_role_is_refused_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let config = write_config(
        tmp.path(),
        "llm:\n  planner: mock/echo\nbudget: {max_usd: 5}\n",
    );
    let env = MapEnv::new([("MOCK_BASE_URL", "http://127.0.0.1:9/v1")]);
    let err = open(&config, &[], &env).unwrap_err().to_string();
    assert!(
        err.contains("planner") && err.contains("mock/echo"),
        "{err}"
    );
    assert!(err.contains("unknown_cost: allow"), "{err}");
}
