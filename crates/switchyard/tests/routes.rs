//! Routes against the mock, its fault models as members: fallback on each listed kind,
//! whole and streamed, before and after the first output; what is recorded; cooldowns
//! honouring `Retry-After`; weighted picks end to end; the registry's refusals.

mod common;

use futures::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use switchyard::env::MapEnv;
use switchyard::record::{read_records, RecorderOptions};
use switchyard::registry::{Config, LoadOptions, Registry};
use switchyard::router::{ManualClock, Router};
use switchyard::{
    CallPolicy, ErrorKind, Event, Llm, Recorder, RecordingSleeper, Request, RetryPolicy, RunInfo,
};
use switchyard_mock::MockServer;

/// Three backends copied from the mock (`a`, `b`, `c`; `b` speaks Messages only) and one
/// nobody listens on (`down`), plus `overrides`.
fn load(mock: &MockServer, overrides: &[&str]) -> Result<Registry, String> {
    let env = MapEnv::default();
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![
        format!("backends.mock.base_url={}", mock.base_url()),
        "backends.a.from=mock".into(),
        "backends.b.from=mock".into(),
        "backends.b.apis=[messages]".into(),
        "backends.c.from=mock".into(),
        "backends.down.from=mock".into(),
        "backends.down.base_url=http://127.0.0.1:1/v1".into(),
    ];
    opts.overrides
        .extend(overrides.iter().map(|o| o.to_string()));
    Config::load(&opts)
        .map(|c| c.registry)
        .map_err(|e| e.to_string())
}

fn registry(mock: &MockServer, overrides: &[&str]) -> Registry {
    load(mock, overrides).unwrap_or_else(|e| panic!("the test registry does not load: {e}"))
}

/// A handle on `route`, waiting through a recording sleeper, with short timeouts.
fn routed(registry: &Registry, route: &str) -> (Llm, RecordingSleeper) {
    let policy = CallPolicy {
        first_byte_timeout: Some(Duration::from_millis(300)),
        idle_timeout: Some(Duration::from_millis(300)),
        ..CallPolicy::default()
    };
    let llm = Llm::resolve_with(registry, route, &MapEnv::default(), policy)
        .unwrap_or_else(|e| panic!("{route}: {e}"));
    let sleeper = RecordingSleeper::new();
    (llm.with_sleeper(Arc::new(sleeper.clone())), sleeper)
}

/// The first member's model for each kind a route falls back on by default, and the
/// member's own retries it goes through first.
const KINDS: &[(&str, &str, ErrorKind)] = &[
    ("quota", "a/quota", ErrorKind::ProviderQuotaExhausted),
    ("rate_limited", "a/fault-429", ErrorKind::RateLimited),
    ("overloaded", "a/fault-503", ErrorKind::Overloaded),
    ("server_error", "a/fault-500", ErrorKind::Provider),
    ("transport", "down/echo", ErrorKind::Transport),
    // Slow to its first byte: `hang` streams its first event, after which a stream is
    // never re-sent (see the cut test).
    ("timeout", "a/slow-first-byte-5s", ErrorKind::Timeout),
];

#[tokio::test]
async fn each_listed_kind_falls_back_to_the_next_member_whole_and_streamed() {
    let mock = MockServer::start().await;
    for (kind, first, error_kind) in KINDS {
        for stream in [false, true] {
            let r = registry(
                &mock,
                &[
                    &format!("routes.r.try=[{first}, c/echo]"),
                    &format!("routes.r.on=[{kind}]"),
                ],
            );
            let (llm, _) = routed(&r, "r");
            let prompt = format!("{kind} {stream}");
            let (text, outcome_attempts, member) = if stream {
                let outcome = llm.stream_detailed(Request::user(prompt.clone())).await;
                let s = outcome
                    .result
                    .unwrap_or_else(|e| panic!("{kind} streamed: {e}"));
                let reply = s
                    .into_reply()
                    .await
                    .unwrap_or_else(|e| panic!("{kind}: {e}"));
                (reply.text(), outcome.attempts, outcome.member)
            } else {
                let outcome = llm.complete_detailed(Request::user(prompt.clone())).await;
                let reply = outcome.result.unwrap_or_else(|e| panic!("{kind}: {e}"));
                (reply.text(), outcome.attempts, outcome.member)
            };
            assert_eq!(text, prompt, "{kind} stream={stream}");
            assert_eq!(member.as_deref(), Some("c/echo"), "{kind}");
            let last = outcome_attempts.last().expect("attempts");
            assert_eq!(last.reference.as_deref(), Some("c/echo"));
            assert!(last.succeeded());
            let failed: Vec<_> = outcome_attempts
                .iter()
                .filter(|a| a.reference.as_deref() == Some(*first))
                .collect();
            assert!(!failed.is_empty(), "{kind}: no attempt on {first}");
            assert!(
                failed.iter().all(|a| a.error_kind == Some(*error_kind)),
                "{kind}: {failed:?}"
            );
            // Numbered across members, in order.
            let numbers: Vec<u32> = outcome_attempts.iter().map(|a| a.number).collect();
            assert_eq!(
                numbers,
                (1..=outcome_attempts.len() as u32).collect::<Vec<_>>()
            );
        }
    }
}

#[tokio::test]
async fn a_kind_not_listed_does_not_fall_back() {
    let mock = MockServer::start().await;
    let r = registry(
        &mock,
        &["routes.r.try=[a/fault-503, c/echo]", "routes.r.on=[quota]"],
    );
    let (llm, _) = routed(&r, "r");
    let outcome = llm.complete_detailed(Request::user("hi")).await;
    assert_eq!(
        outcome.result.expect_err("503").kind(),
        ErrorKind::Overloaded
    );
    assert!(outcome
        .attempts
        .iter()
        .all(|a| a.reference.as_deref() == Some("a/fault-503")));
    // A bad request is never a reason to ask another provider.
    let r = registry(&mock, &["routes.r.try=[a/fault-400, c/echo]"]);
    let (llm, _) = routed(&r, "r");
    let e = llm.complete(Request::user("hi")).await.expect_err("400");
    assert_eq!(e.kind(), ErrorKind::BadRequest);
}

#[tokio::test]
async fn each_members_own_retries_run_first_unless_retry_each_is_false() {
    let mock = MockServer::start().await;
    let r = registry(&mock, &["routes.r.try=[a/fault-429, c/echo]"]);
    let (llm, sleeper) = routed(&r, "r");
    let outcome = llm.complete_detailed(Request::user("retries")).await;
    assert!(outcome.result.is_ok());
    // The default schedule: three waits on the rate-limited member, then the next.
    assert_eq!(outcome.attempts.len(), 5);
    assert_eq!(sleeper.waits().len(), 3);
    let r = registry(
        &mock,
        &[
            "routes.r.try=[a/fault-429, c/echo]",
            "routes.r.retry_each=false",
        ],
    );
    let (llm, sleeper) = routed(&r, "r");
    let outcome = llm.complete_detailed(Request::user("at once")).await;
    assert!(outcome.result.is_ok());
    assert_eq!(outcome.attempts.len(), 2);
    assert!(sleeper.waits().is_empty());
}

#[tokio::test]
async fn a_stream_broken_after_its_first_output_is_an_error_recorded_as_cut() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    // An error event, a cut before the end marker, a reset connection, silence past the
    // idle timeout: each after output reached the caller.
    for fault in ["error-mid-stream", "cut-stream", "cut-stream-reset", "hang"] {
        let r = registry(
            &mock,
            &[&format!("routes.r.try=[a/lorem-40+{fault}, c/echo]")],
        );
        let (llm, _) = routed(&r, "r");
        let llm = llm.with_recorder(recorder.clone());
        let mut s = llm
            .stream(Request::user(fault))
            .await
            .unwrap_or_else(|e| panic!("{fault}: the stream began on the first member: {e}"));
        let mut text = String::new();
        let mut error = None;
        while let Some(item) = s.next().await {
            match item {
                Ok(Event::TextDelta { text: t, .. }) => text.push_str(&t),
                Ok(_) => {}
                Err(e) => error = Some(e),
            }
        }
        assert!(!text.is_empty(), "{fault}: output came before the break");
        assert!(
            error.is_some(),
            "{fault}: a broken stream must end with an error"
        );
    }
    recorder.close().unwrap();
    let records = read_records(dir.path()).unwrap();
    assert_eq!(records.len(), 4);
    for rec in &records {
        assert!(rec.cut, "{rec:?}");
        assert!(rec.error.is_some());
        assert_eq!(rec.route.as_deref(), Some("r"));
        assert!(
            rec.reference.starts_with("a/lorem-40+"),
            "{}",
            rec.reference
        );
        assert!(rec
            .attempts
            .iter()
            .all(|a| a.reference.as_deref() == Some(rec.reference.as_str())));
    }
    // No call went to the second member.
    assert!(mock
        .requests()
        .iter()
        .all(|r| !r.body_text().contains("\"echo\"")));
}

#[tokio::test]
async fn the_record_says_which_member_served_every_attempt_and_its_price() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let r = registry(
        &mock,
        &["routes.r.try=[a/mock-small+fault-503, b/mock-large]"],
    );
    let (llm, _) = routed(&r, "r");
    let llm = llm.with_recorder(recorder.clone());
    let outcome = llm.complete_detailed(Request::user("which one")).await;
    let reply = outcome.result.expect("the second member answers");
    assert_eq!(outcome.member.as_deref(), Some("b/mock-large"));
    assert_eq!(reply.model.as_deref(), Some("mock-large"));
    recorder.close().unwrap();
    let records = read_records(dir.path()).unwrap();
    let rec = &records[0];
    assert_eq!(rec.route.as_deref(), Some("r"));
    assert_eq!(rec.reference, "b/mock-large");
    assert_eq!(rec.backend, "b");
    assert_eq!(rec.model, "mock-large");
    assert_eq!(rec.dialect, Some(switchyard::Dialect::Messages));
    let refs: Vec<&str> = rec
        .attempts
        .iter()
        .filter_map(|a| a.reference.as_deref())
        .collect();
    assert_eq!(refs, ["a/mock-small+fault-503", "b/mock-large"]);
    assert_eq!(rec.attempts[0].status, Some(503));
    assert_eq!(rec.attempts[0].error_kind.as_deref(), Some("Overloaded"));
    let usage = rec.usage.expect("usage");
    let large = (usage.input as f64 * 3.0 + usage.output as f64 * 15.0) / 1e6;
    let cost = rec.cost_usd.expect("priced");
    assert!((cost - large).abs() < 1e-12, "{cost} vs {large}");
}

#[tokio::test]
async fn a_member_that_failed_cools_down_for_its_retry_after() {
    let mock = MockServer::start().await;
    let r = registry(&mock, &["routes.r.try=[a/fault-503-retry-7, c/echo]"]);
    let route = r.route("r").cloned().unwrap();
    let clock = ManualClock::new();
    let router = Arc::new(Router::with_clock(route.clone(), Arc::new(clock.clone())));
    let members = route
        .members
        .iter()
        .map(|m| Llm::resolve(&r, &m.reference, &MapEnv::default()).unwrap())
        .collect();
    let sleeper = RecordingSleeper::new();
    let llm = Llm::routed(router.clone(), members)
        .unwrap()
        .with_retry(RetryPolicy::never())
        .with_sleeper(Arc::new(sleeper.clone()));
    llm.complete(Request::user("one")).await.unwrap();
    assert_eq!(router.cooling(0), Some(Duration::from_secs(7)));
    let before = mock.requests().len();
    llm.complete(Request::user("two")).await.unwrap();
    // The cooling member was skipped: one request, to `c`.
    assert_eq!(mock.requests().len(), before + 1);
    clock.advance(Duration::from_secs(7));
    let outcome = llm.complete_detailed(Request::user("three")).await;
    assert_eq!(
        outcome.attempts[0].reference.as_deref(),
        Some("a/fault-503-retry-7")
    );
    assert!(sleeper.waits().is_empty());
}

#[tokio::test]
async fn all_members_cooling_waits_the_shortest_or_fails_naming_each() {
    let mock = MockServer::start().await;
    let r = registry(
        &mock,
        &[
            "routes.r.try=[a/fault-503-retry-4, c/fault-503-retry-2-then-ok]",
            "routes.r.max_wait=3",
        ],
    );
    let (llm, sleeper) = routed(&r, "r");
    let llm = llm.with_retry(RetryPolicy::never());
    let e = llm
        .complete(Request::user("first"))
        .await
        .expect_err("both 503");
    assert_eq!(e.kind(), ErrorKind::Overloaded);
    // Both cool now (4 s and 2 s): the call waits 2 s for `c`, which answers.
    let outcome = llm.complete_detailed(Request::user("first")).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result.err());
    // On the system clock: the wait is what is left of the 2 s.
    let waits = sleeper.waits();
    assert_eq!(waits.len(), 1);
    assert!(waits[0] <= Duration::from_secs(2) && waits[0] > Duration::from_millis(1500));
    assert_eq!(outcome.attempts[0].wait_before, waits[0]);
    assert_eq!(
        outcome.member.as_deref(),
        Some("c/fault-503-retry-2-then-ok")
    );

    let r = registry(
        &mock,
        &["routes.r.try=[a/fault-503-retry-60, c/fault-503-retry-90]"],
    );
    let (llm, _) = routed(&r, "r");
    let llm = llm.with_retry(RetryPolicy::never());
    let _ = llm.complete(Request::user("x")).await;
    let e = llm
        .complete(Request::user("x"))
        .await
        .expect_err("all cooling");
    let text = e.to_string();
    assert!(
        text.contains("every member of route `r` is cooling down"),
        "{text}"
    );
    assert!(text.contains("a/fault-503-retry-60 cooling for"), "{text}");
    assert!(text.contains("c/fault-503-retry-90 cooling for"), "{text}");
}

#[tokio::test]
async fn a_request_too_large_for_a_members_window_skips_it() {
    let mock = MockServer::start().await;
    let r = registry(
        &mock,
        &[
            "backends.a.context_window=10",
            "routes.r.try=[a/echo, c/echo]",
        ],
    );
    let (llm, _) = routed(&r, "r");
    let long = "word ".repeat(200);
    let outcome = llm.complete_detailed(Request::user(long)).await;
    assert!(outcome.result.is_ok());
    assert_eq!(outcome.member.as_deref(), Some("c/echo"));
    assert_eq!(
        outcome.attempts[0].error_kind,
        Some(ErrorKind::ContextLengthExceeded)
    );
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn weighted_members_share_calls_by_weight_end_to_end() {
    let mock = MockServer::start().await;
    let r = registry(
        &mock,
        &["routes.w={pick: weighted, members: [{model: a/echo, weight: 3}, {model: c/echo, weight: 1}]}"],
    );
    let (llm, _) = routed(&r, "w");
    let mut by = std::collections::BTreeMap::<String, usize>::new();
    for i in 0..200 {
        let outcome = llm.complete_detailed(Request::user(format!("{i}"))).await;
        assert!(outcome.result.is_ok());
        *by.entry(outcome.member.unwrap()).or_default() += 1;
    }
    assert_eq!(by.get("a/echo"), Some(&150));
    assert_eq!(by.get("c/echo"), Some(&50));
}

#[tokio::test]
async fn routes_are_refused_with_what_is_wrong_and_what_is_accepted() {
    let mock = MockServer::start().await;
    let e = load(
        &mock,
        &["routes.r.try=[a/echo]", "routes.r.on=[quota, overlaoded]"],
    )
    .unwrap_err();
    assert!(e.contains("unknown failure kind `overlaoded`"), "{e}");
    assert!(e.contains("did you mean `overloaded`"), "{e}");
    assert!(
        e.contains("accepted: quota, rate_limited, overloaded"),
        "{e}"
    );
    let e = load(&mock, &["routes.r.try=[opnai/gpt-5.4]"]).unwrap_err();
    assert!(e.contains("no backend is called `opnai`"), "{e}");
    assert!(e.contains("did you mean `openai`"), "{e}");
    let e = load(&mock, &["routes.openai.try=[a/echo]"]).unwrap_err();
    assert!(
        e.contains("route `openai` has the name of a backend"),
        "{e}"
    );
    let e = load(&mock, &["routes.r.pick=random", "routes.r.try=[a/echo]"]).unwrap_err();
    assert!(e.contains("accepted: order, weighted, least_busy"), "{e}");
    let e = load(&mock, &["routes.r.members=[{model: a/echo, weight: 0}]"]).unwrap_err();
    assert!(e.contains("a whole number from 1 to 1000000"), "{e}");
    let e = load(&mock, &["routes.r.tyr=[a/echo]"]).unwrap_err();
    assert!(
        e.contains("unknown route field `tyr` (did you mean `try`?)"),
        "{e}"
    );
}

#[test]
fn routes_in_a_run_config_are_located_by_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.yaml");
    std::fs::write(
        &path,
        "model: mock/echo\nroutes:\n  smart:\n    try: [mock/echo, nobody/x]\n    on: [quota, sometimes]\n",
    )
    .unwrap();
    let env = MapEnv::default();
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.run_config = Some(path.clone());
    let e = Config::load(&opts).unwrap_err().to_string();
    let shown = path.display().to_string();
    assert!(
        e.contains(&format!("{shown}:5:5: unknown failure kind `sometimes`")),
        "{e}"
    );
    assert!(
        e.contains(&format!("{shown}:4:5: member `nobody/x` of route `smart`")),
        "{e}"
    );
}

#[tokio::test]
async fn a_role_naming_a_route_is_checked_per_member_and_calls_through_it() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.yaml");
    std::fs::write(
        &path,
        format!(
            "backends:\n  mock: {{base_url: {}}}\n  a: {{from: mock}}\n  b: {{from: mock, apis: [messages]}}\n\
             routes:\n  smart: {{try: [a/fault-503, b/echo]}}\n\
             llm:\n  planner: {{model: smart, max_tokens: 50}}\n  coder: {{model: smart, dialect: chat}}\n",
            mock.base_url()
        ),
    )
    .unwrap();
    let env = MapEnv::default();
    let report = switchyard::Run::builder(&path)
        .env(&env)
        .user_file(false)
        .check();
    let planner = report.roles.iter().find(|r| r.role == "planner").unwrap();
    assert!(planner.ok);
    assert_eq!(planner.route.as_deref(), Some("smart"));
    let members: Vec<_> = planner
        .members
        .iter()
        .map(|m| m.reference.clone().unwrap())
        .collect();
    assert_eq!(members, ["a/fault-503", "b/echo"]);
    assert_eq!(
        planner.members[1].dialect,
        Some(switchyard::Dialect::Messages)
    );
    // A role that must speak chat cannot use a member that serves only Messages.
    let coder = report.roles.iter().find(|r| r.role == "coder").unwrap();
    assert!(!coder.ok);
    let text = report.problems_text();
    assert!(
        text.contains("backend `b` does not serve the `chat` dialect"),
        "{text}"
    );

    std::fs::write(
        &path,
        std::fs::read_to_string(&path)
            .unwrap()
            .replace("  coder: {model: smart, dialect: chat}\n", ""),
    )
    .unwrap();
    let run = switchyard::Run::builder(&path)
        .env(&env)
        .user_file(false)
        .open()
        .unwrap();
    let planner = run.llm("planner").unwrap();
    let outcome = planner.complete_detailed(Request::user("plan")).await;
    assert_eq!(outcome.result.unwrap().text(), "plan");
    assert_eq!(outcome.member.as_deref(), Some("b/echo"));
    // The role's settings reached the member that served.
    let last = mock.requests().pop().unwrap();
    assert_eq!(last.json.unwrap()["max_tokens"], 50);
}

#[test]
fn binding_a_cli_to_a_route_goes_through_the_gateway() {
    use switchyard::bind::{bind_through_gateway, needs_gateway, Agent, EnvValue};
    let env = MapEnv::default();
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![
        "backends.a.from=openai".into(),
        "routes.smart.try=[anthropic/claude-sonnet-4-5, a/gpt-5.4]".into(),
        "routes.local.try=[claude-code/sonnet]".into(),
    ];
    let registry = Config::load(&opts).unwrap().registry;
    assert!(needs_gateway(Agent::Claude, &registry, "smart").unwrap());
    let b = bind_through_gateway(
        Agent::Claude,
        &registry,
        "smart",
        &[],
        "http://127.0.0.1:8080",
    )
    .unwrap();
    assert_eq!(
        b.var("ANTHROPIC_MODEL"),
        Some(&EnvValue::Text("smart".into()))
    );
    assert_eq!(
        b.var("ANTHROPIC_BASE_URL"),
        Some(&EnvValue::Text("http://127.0.0.1:8080".into()))
    );
    assert!(
        b.unset.contains(&"ANTHROPIC_API_KEY".to_string()),
        "{:?}",
        b.unset
    );
    assert!(
        b.unset.contains(&"OPENAI_API_KEY".to_string()),
        "{:?}",
        b.unset
    );
    let e = needs_gateway(Agent::Codex, &registry, "local")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("route `local`: member `claude-code/sonnet`"),
        "{e}"
    );
    assert!(switchyard::bind::bind(Agent::Claude, &registry, "smart", &[], &env).is_err());
}

#[tokio::test]
async fn embeddings_fall_back_through_a_route_recorded_at_the_serving_members_price() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let r = registry(
        &mock,
        &[
            "routes.e.try=[a/fault-503, c/emb]",
            "backends.c.prices.emb={input: 2, output: 0}",
        ],
    );
    let (llm, _) = routed(&r, "e");
    let llm = llm.with_recorder(recorder.clone());
    let request = switchyard::wire::embed::EmbedRequest::texts(["a cat", "a dog"]);
    let outcome = llm.embed_detailed(request.clone()).await;
    let out = outcome.result.expect("the second member embeds");
    assert_eq!(outcome.member.as_deref(), Some("c/emb"));
    assert_eq!(
        out.vectors[0],
        switchyard_mock::embeddings::vector(
            "a cat",
            switchyard_mock::embeddings::DEFAULT_DIMENSIONS
        )
    );
    recorder.close().unwrap();
    let records = read_records(dir.path()).unwrap();
    let rec = &records[0];
    assert_eq!(rec.route.as_deref(), Some("e"));
    assert_eq!(rec.reference, "c/emb");
    assert_eq!(rec.embedding.as_ref().map(|e| &e.request), Some(&request));
    let refs: Vec<&str> = rec
        .attempts
        .iter()
        .filter_map(|a| a.reference.as_deref())
        .collect();
    assert_eq!(refs, ["a/fault-503", "c/emb"]);
    assert_eq!(rec.attempts[0].status, Some(503));
    let input = rec.usage.expect("usage").input as f64;
    assert_eq!(rec.cost_usd, Some(input * 2.0 / 1e6));
}
