//! Recording and replay against the mock provider: a concurrent run of several roles with
//! faults is recorded, replayed without calling anyone, and the two logs match.

use futures::StreamExt;
use std::path::Path;
use std::sync::Arc;
use switchyard::env::MapEnv;
use switchyard::record::{self, read_records, CallRecord, RecorderOptions};
use switchyard::registry::{Config, LoadOptions};
use switchyard::{Budget, BudgetTracker, Dialect, ErrorKind, Llm, Recorder, Request, RunInfo};
use switchyard_mock::MockServer;

const FAKE_KEY: &str = "sk-test-recording-FAKEKEY-0123456789abcdef";

fn config(mock: &MockServer, env: &MapEnv) -> Config {
    let mut opts = LoadOptions::new(env);
    opts.user_file = false;
    opts.overrides = vec![
        format!("backends.mock.base_url={}", mock.base_url()),
        "backends.mock.prices.echo={input: 1, output: 2}".to_string(),
        "backends.mock.prices.think={input: 3, cached_input: 0.3, output: 15}".to_string(),
        // A user who put a secret in extra_body: it is sent, never recorded.
        format!("backends.mock.extra_body.api_token={FAKE_KEY}"),
    ];
    Config::load(&opts).expect("config loads")
}

fn env() -> MapEnv {
    MapEnv::new([("MOCK_API_KEY", FAKE_KEY)])
}

/// A handle on the mock for `model`, speaking `dialect`, priced from the registry.
fn llm(config: &Config, env: &MapEnv, model: &str, dialect: Dialect) -> Llm {
    let backend = config.registry.backend("mock").expect("mock backend");
    let http = switchyard::connect::http_backend(backend, model, Some(dialect), env)
        .expect("http backend");
    // Retries wait through a sleeper that does not sleep: the test takes no real waits.
    Llm::new(format!("mock/{model}"), Arc::new(http), model)
        .with_price(backend.price(model).map(|p| p.value))
        .with_sleeper(Arc::new(switchyard::RecordingSleeper::new()))
}

/// The roles of the test run: (role, model, dialect, streamed).
const ROLES: &[(&str, &str, Dialect, bool)] = &[
    ("planner", "echo", Dialect::Chat, false),
    ("thinker", "think", Dialect::Messages, true),
    ("searcher", "tools", Dialect::Gemini, false),
    ("writer", "echo+cache", Dialect::Responses, true),
    ("flaky", "fault-500", Dialect::Chat, false),
    ("breaker", "error-mid-stream", Dialect::Messages, true),
    ("resetter", "cut-stream-reset", Dialect::Chat, true),
    ("empty", "no-usage", Dialect::Gemini, false),
];

fn run_info(config: &Config) -> RunInfo {
    ROLES
        .iter()
        .fold(RunInfo::new(), |info, (role, model, _, _)| {
            info.role(
                role,
                &format!("mock/{model}"),
                "mock",
                model,
                &config.registry,
            )
        })
}

/// Every role makes `per_role` calls, all at once; returns (role, ok) per call.
async fn make_calls(handles: &[(Llm, bool)], per_role: usize) -> Vec<(String, bool)> {
    let mut calls = Vec::new();
    for (llm, stream) in handles {
        for i in 0..per_role {
            let llm = llm.clone();
            let stream = *stream;
            // Two calls of each role share a prompt: replay must answer them in order.
            let prompt = format!("question {} for {}", i / 2, llm.role().unwrap_or(""));
            calls.push(async move {
                let request = Request::user(prompt).with_system("be brief");
                let result = if stream {
                    match llm.stream(request).await {
                        Ok(s) => s.into_reply().await,
                        Err(e) => Err(e),
                    }
                } else {
                    llm.complete(request).await
                };
                (llm.role().unwrap_or("").to_string(), result.is_ok())
            });
        }
    }
    futures::future::join_all(calls).await
}

fn comparable(records: &[CallRecord]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(&r.without_timings()).unwrap())
        .collect();
    v.sort();
    v
}

/// Equal lists, or a message showing where the first difference is.
fn assert_same_records(a: &[String], b: &[String]) {
    assert_eq!(a.len(), b.len(), "record counts differ");
    for (x, y) in a.iter().zip(b) {
        if x != y {
            let at = x.bytes().zip(y.bytes()).take_while(|(p, q)| p == q).count();
            let from = at.saturating_sub(200);
            panic!(
                "records differ at byte {at}:\n  original: …{}\n  replayed: …{}",
                &x[from..(at + 200).min(x.len())],
                &y[from..(at + 200).min(y.len())]
            );
        }
    }
}

fn assert_no_key_in(dir: &Path) {
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains(FAKE_KEY) && !text.contains("FAKEKEY"),
            "the key is written in {}",
            entry.display()
        );
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_concurrent_run_with_faults_is_recorded_and_replayed_byte_for_byte() {
    let mock = MockServer::start().await;
    let env = env();
    let config = config(&mock, &env);
    let tmp = tempfile::tempdir().unwrap();
    let original = tmp.path().join("original");
    let replayed = tmp.path().join("replayed");

    // The original run.
    let recorder =
        Recorder::create(&original, &run_info(&config), RecorderOptions::default()).unwrap();
    let handles: Vec<(Llm, bool)> = ROLES
        .iter()
        .map(|(role, model, dialect, stream)| {
            (
                llm(&config, &env, model, *dialect)
                    .with_role(*role)
                    .with_recorder(recorder.clone()),
                *stream,
            )
        })
        .collect();
    let per_role = 6;
    let outcomes = make_calls(&handles, per_role).await;
    drop(handles);
    recorder.close().unwrap();
    let sent = mock.requests().len();
    // The key reached the server, and is nowhere in the run directory.
    assert!(mock
        .requests()
        .iter()
        .all(|r| r.headers.iter().any(|(_, v)| v.contains(FAKE_KEY))));
    assert_no_key_in(&original);

    let first = read_records(&original).unwrap();
    assert_eq!(first.len(), ROLES.len() * per_role);
    // Every request the server saw is an attempt of some record.
    let attempts: usize = first.iter().map(|r| r.attempts.len()).sum();
    assert_eq!(attempts, sent);
    assert!(attempts > first.len(), "some faults were retried");
    let numbers: Vec<u64> = first.iter().map(|r| r.number).collect();
    assert_eq!(numbers, (1..=first.len() as u64).collect::<Vec<_>>());
    let failed = outcomes.iter().filter(|(_, ok)| !ok).count();
    assert_eq!(first.iter().filter(|r| r.failed()).count(), failed);
    assert!(
        failed >= 4 * per_role,
        "every faulty role failed: {outcomes:?}"
    );
    // What a record holds, on one of each kind.
    let planner = first.iter().find(|r| r.role_name() == "planner").unwrap();
    assert_eq!(planner.backend, "mock");
    assert_eq!(planner.dialect, Some(Dialect::Chat));
    let body = record::body_json(planner).unwrap();
    assert_eq!(body["model"], "echo");
    assert_eq!(body["api_token"], "<redacted>");
    assert_eq!(body["messages"][0]["content"], "be brief");
    let usage = planner.usage.unwrap();
    let expected = (usage.input as f64 * 1.0 + usage.output as f64 * 2.0) / 1e6;
    assert!((planner.cost_usd.unwrap() - expected).abs() < 1e-15);
    assert!(planner.usage_reported.as_ref().unwrap()["prompt_tokens"].is_u64());
    let raw = planner.raw_bytes().unwrap();
    assert!(raw.starts_with(b"{"), "the raw body: {raw:?}");
    let thinker = first.iter().find(|r| r.role_name() == "thinker").unwrap();
    assert!(thinker
        .raw_bytes()
        .unwrap()
        .starts_with(b"event: message_start"));
    assert!(thinker.timings.first_byte_ms.is_some());
    let searcher = first.iter().find(|r| r.role_name() == "searcher").unwrap();
    assert_eq!(
        searcher.cost_usd, None,
        "tools has no price: unknown, not 0"
    );
    assert!(
        searcher.usage.unwrap().input > 0,
        "its tokens are still counted"
    );
    let flaky = first.iter().find(|r| r.role_name() == "flaky").unwrap();
    let error = flaky.error.as_ref().unwrap();
    assert_eq!(error.provider.as_ref().unwrap().status, 500);
    assert_eq!(flaky.attempts[0].status, Some(500));
    let breaker = first.iter().find(|r| r.role_name() == "breaker").unwrap();
    assert!(breaker.error.is_some() && breaker.reply.is_some());
    assert_eq!(
        first
            .iter()
            .find(|r| r.role_name() == "empty")
            .unwrap()
            .error
            .as_ref()
            .unwrap()
            .kind,
        "ProviderReplyMalformed"
    );

    // The calls index answers "what did each role cost?".
    let db = rusqlite::Connection::open(original.join(record::INDEX_FILE)).unwrap();
    let (rows, errors): (i64, i64) = db
        .query_row(
            "SELECT COUNT(*), SUM(status = 'error') FROM llm_calls",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(rows as usize, first.len());
    assert_eq!(errors as usize, failed);
    let planner_cost: f64 = db
        .query_row(
            "SELECT SUM(cost_usd) FROM llm_calls WHERE role = 'planner'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let expected: f64 = first
        .iter()
        .filter(|r| r.role_name() == "planner")
        .filter_map(|r| r.cost_usd)
        .sum();
    assert!((planner_cost - expected).abs() < 1e-12);
    let unknown: Option<f64> = db
        .query_row(
            "SELECT cost_usd FROM llm_calls WHERE role = 'searcher' LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(unknown, None);
    drop(db);

    // The replay: no provider is called, and the log is the same but for timings.
    let log = switchyard::ReplayLog::open(&original).unwrap();
    let recorder = Recorder::create(
        &replayed,
        &RunInfo::new().replay_of(&original),
        RecorderOptions::default(),
    )
    .unwrap();
    let handles: Vec<(Llm, bool)> = ROLES
        .iter()
        .map(|(role, _, _, stream)| {
            (
                Llm::replaying_from(&log, Some(role))
                    .unwrap()
                    .with_recorder(recorder.clone()),
                *stream,
            )
        })
        .collect();
    // A replay never waits: its handles have the real sleeper, and no call is retried.
    let started = std::time::Instant::now();
    let again = make_calls(&handles, per_role).await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "the replay waited"
    );
    drop(handles);
    recorder.close().unwrap();
    assert_eq!(mock.requests().len(), sent, "replay called the provider");
    let mut a = outcomes.clone();
    let mut b = again.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    let second = read_records(&replayed).unwrap();
    assert_same_records(&comparable(&first), &comparable(&second));
}

#[tokio::test]
async fn a_changed_prompt_fails_with_the_role_digest_and_nearest_prompt() {
    let mock = MockServer::start().await;
    let env = env();
    let config = config(&mock, &env);
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let planner = llm(&config, &env, "echo", Dialect::Chat)
        .with_role("planner")
        .with_recorder(recorder.clone());
    for city in ["Paris", "Madrid", "Rome"] {
        planner
            .complete(Request::user(format!("plan a trip to {city} in May")))
            .await
            .unwrap();
    }
    recorder.close().unwrap();

    let replay = Llm::replaying(tmp.path(), Some("planner")).unwrap();
    let reply = replay
        .complete(Request::user("plan a trip to Madrid in May"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "plan a trip to Madrid in May");
    // The same prompt again: its one recorded reply was used.
    let e = replay
        .complete(Request::user("plan a trip to Madrid in May"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ReplayExhausted);
    assert!(
        e.to_string()
            .contains("all 1 recorded replies to it were already given"),
        "{e}"
    );
    // A changed prompt: the message names the role, the digest and the nearest prompt.
    let changed = Request::user("plan a trip to Rome in June");
    let digest = record::prompt_digest(&changed);
    let e = replay.complete(changed).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ReplayExhausted);
    assert_eq!(
        e.to_string(),
        format!("replay has no recorded reply for role `planner` and prompt {digest}; nearest recorded prompt of that role: call 3: line 1: - [user] \"plan a trip to Rome in May\" / + [user] \"plan a trip to Rome in June\"")
    );
    let e = Llm::replaying(tmp.path(), Some("coder")).unwrap_err();
    assert!(
        e.to_string()
            .contains("no calls of role `coder`; its roles: planner"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_budget_stops_concurrent_calls_at_its_limit() {
    let mock = MockServer::start().await;
    let env = env();
    let config = config(&mock, &env);
    let budget = Arc::new(BudgetTracker::new(Budget {
        max_calls: Some(10),
        exclude_roles: ["judge".to_string()].into(),
        ..Budget::default()
    }));
    let worker = llm(&config, &env, "echo", Dialect::Chat)
        .with_role("worker")
        .with_budget(budget.clone());
    let judge = llm(&config, &env, "echo", Dialect::Chat)
        .with_role("judge")
        .with_budget(budget.clone());
    let results = futures::future::join_all((0..25).map(|i| {
        let worker = worker.clone();
        async move { worker.complete(Request::user(format!("q{i}"))).await }
    }))
    .await;
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 10);
    let refused = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert_eq!(refused.kind(), ErrorKind::BudgetExceeded);
    assert!(
        refused
            .to_string()
            .starts_with("budget exceeded: max_calls is 10 calls, and spent so far: 10 calls"),
        "{refused}"
    );
    assert_eq!(mock.requests().len(), 10, "refused calls were not sent");
    judge.complete(Request::user("excluded")).await.unwrap();

    // Dollars: the settled spend stops the next call; tokens are counted.
    let budget = Arc::new(BudgetTracker::new(Budget {
        max_usd: Some(0.000_05),
        ..Budget::default()
    }));
    let priced = llm(&config, &env, "echo", Dialect::Chat).with_budget(budget.clone());
    let mut made = 0;
    let e = loop {
        match priced.complete(Request::user("x".repeat(200))).await {
            Ok(_) => made += 1,
            Err(e) => break e,
        }
        assert!(made < 100);
    };
    assert_eq!(e.kind(), ErrorKind::BudgetExceeded);
    assert!(e.to_string().contains("max_usd is $0.00005"), "{e}");
    assert!(budget.spend().usd >= 0.000_05);
    assert!(budget.spend().tokens > 0);
}

#[tokio::test]
async fn a_directory_holding_a_run_is_refused_unless_resumed() {
    let mock = MockServer::start().await;
    let env = env();
    let config = config(&mock, &env);
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let echo = llm(&config, &env, "echo", Dialect::Chat).with_recorder(recorder.clone());
    echo.complete(Request::user("one")).await.unwrap();
    recorder.close().unwrap();
    let e = Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("already holds a run (1 recorded calls); pass --resume"),
        "{e}"
    );
    let recorder = Recorder::create(
        tmp.path(),
        &RunInfo::new(),
        RecorderOptions {
            resume: true,
            ..RecorderOptions::default()
        },
    )
    .unwrap();
    let echo = echo.with_recorder(recorder.clone());
    let mut s = echo.stream(Request::user("two")).await.unwrap();
    while let Some(e) = s.next().await {
        e.unwrap();
    }
    drop(s);
    recorder.close().unwrap();
    let records = read_records(tmp.path()).unwrap();
    assert_eq!(records.iter().map(|r| r.number).collect::<Vec<_>>(), [1, 2]);
    assert!(records[1].stream);
    assert!(tmp.path().join(record::RUN_FILE).exists());
}

#[tokio::test]
async fn a_registry_replay_backend_answers_each_handle_for_its_role() {
    let mock = MockServer::start().await;
    let env = env();
    let config = config(&mock, &env);
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let echo = llm(&config, &env, "echo", Dialect::Chat);
    let planner = echo
        .clone()
        .with_role("planner")
        .with_recorder(recorder.clone());
    let judge = echo.with_role("judge").with_recorder(recorder.clone());
    let plan = planner
        .complete(Request::user("same prompt"))
        .await
        .unwrap();
    let verdict = judge.complete(Request::user("same prompt")).await.unwrap();
    recorder.close().unwrap();
    let sent = mock.requests().len();

    // `kind: replay, log: <run_dir>/llm_log` in the registry, one backend for both roles.
    let log = tmp.path().join(record::LOG_DIR);
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![
        "backends.old.kind=replay".to_string(),
        format!("backends.old.log={}", log.display()),
    ];
    let registry = Config::load(&opts).unwrap().registry;
    assert_eq!(
        registry
            .backend("old")
            .unwrap()
            .log
            .as_ref()
            .map(|l| l.value.clone()),
        Some(log.display().to_string())
    );
    let replayed = Llm::resolve(&registry, "old/echo", &env).unwrap();
    // The same prompt, answered for the judge from the judge's record and for the
    // planner from the planner's, whatever the order.
    let again_verdict = replayed
        .clone()
        .with_role("judge")
        .complete(Request::user("same prompt"))
        .await
        .unwrap();
    let again_plan = replayed
        .clone()
        .with_role("planner")
        .complete(Request::user("same prompt"))
        .await
        .unwrap();
    assert_eq!(again_verdict.raw, verdict.raw);
    assert_eq!(again_plan.raw, plan.raw);
    let e = replayed
        .with_role("planner")
        .complete(Request::user("same prompt"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ReplayExhausted);
    assert!(e.to_string().contains("`planner`"), "{e}");
    assert_eq!(mock.requests().len(), sent, "a replay called the provider");

    // `log` belongs to replay backends only.
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![format!("backends.mock.log={}", log.display())];
    let e = Config::load(&opts).unwrap_err().to_string();
    assert!(e.contains("log") && e.contains("replay"), "{e}");
    // And a replay backend without it says what it needs when called.
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec!["backends.old.kind=replay".to_string()];
    let registry = Config::load(&opts).unwrap().registry;
    let e = Llm::resolve(&registry, "old/echo", &env)
        .unwrap_err()
        .to_string();
    assert!(e.contains("needs `log`"), "{e}");
}

#[tokio::test]
async fn records_submitted_together_are_numbered_in_order_written_and_indexed() {
    let mock = MockServer::start().await;
    let env = env();
    let config = config(&mock, &env);
    let tmp = tempfile::tempdir().unwrap();
    let options = RecorderOptions {
        courtesy: switchyard::internal::background::Courtesy::on(),
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(tmp.path(), &RunInfo::new(), options).unwrap();
    let echo = llm(&config, &env, "echo", Dialect::Chat).with_recorder(recorder.clone());
    echo.complete(Request::user("one")).await.unwrap();
    let first = read_records(tmp.path()).unwrap().remove(0);

    // Two batches handed over back to back, as the gateway's store hands them.
    let batch = |from: usize, to: usize| -> Vec<CallRecord> {
        (from..to)
            .map(|i| {
                let mut r = first.clone();
                r.reference = format!("mock/echo-{i}");
                r
            })
            .collect()
    };
    let a = recorder.submit_many(batch(0, 300));
    let b = recorder.submit_many(batch(300, 500));
    assert_eq!(a.await, Some(301));
    assert_eq!(b.await, Some(501));
    recorder.close().unwrap();

    let records = read_records(tmp.path()).unwrap();
    assert_eq!(
        records.iter().map(|r| r.number).collect::<Vec<_>>(),
        (1..=501).collect::<Vec<u64>>()
    );
    for (i, r) in records[1..].iter().enumerate() {
        assert_eq!(r.reference, format!("mock/echo-{i}"));
        assert_eq!(r.prompt_digest, first.prompt_digest);
    }
    let db = rusqlite::Connection::open(tmp.path().join(record::INDEX_FILE)).unwrap();
    let (rows, last): (i64, String) = db
        .query_row(
            "SELECT COUNT(*), MAX(reference) FROM llm_calls WHERE number > 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(rows, 500);
    assert_eq!(last, "mock/echo-99"); // text order: the largest of the names
    assert_eq!(
        switchyard::record::read_record(tmp.path(), 501)
            .unwrap()
            .reference,
        "mock/echo-499"
    );
}
