//! Replay is byte for byte for any run: a generated run (any mix of roles, models,
//! dialects, streamed or not, errors included, one role calling several models through
//! several dialects) is recorded against the mock, replayed, and the replay replayed; the
//! three logs hold the same records but for timings.

use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;
use switchyard::env::MapEnv;
use switchyard::record::{read_records, CallRecord, RecorderOptions};
use switchyard::registry::{Config, LoadOptions};
use switchyard::{Dialect, Llm, Recorder, Request, RunInfo};
use switchyard_mock::MockServer;

const ROLES: &[&str] = &["", "planner", "coder"];
/// Priced and unpriced models, whole replies, thinking, tools, and faults retried, not
/// retried and breaking a stream.
const MODELS: &[&str] = &[
    "echo",
    "mock-small",
    "think+tools",
    "mock-large+cache",
    "fault-500",
    "fault-400",
    "no-usage",
    "error-mid-stream",
];
const DIALECTS: &[Dialect] = &[
    Dialect::Chat,
    Dialect::Responses,
    Dialect::Messages,
    Dialect::Gemini,
];

#[derive(Debug, Clone)]
struct CallSpec {
    role: &'static str,
    model: &'static str,
    dialect: Dialect,
    stream: bool,
    /// Calls sharing a prompt must be answered in the order they were made.
    prompt: u8,
}

fn call_spec() -> impl Strategy<Value = CallSpec> {
    (
        0..ROLES.len(),
        0..MODELS.len(),
        0..DIALECTS.len(),
        any::<bool>(),
        0u8..3,
    )
        .prop_map(|(r, m, d, stream, prompt)| CallSpec {
            role: ROLES[r],
            model: MODELS[m],
            dialect: DIALECTS[d],
            stream,
            prompt,
        })
}

fn config(mock: &MockServer) -> Config {
    let env = MapEnv::new::<&str, &str>([]);
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![format!("backends.mock.base_url={}", mock.base_url())];
    Config::load(&opts).expect("config loads")
}

/// A handle on the mock as a run's role would have it, waiting through a sleeper that
/// does not sleep.
fn live(config: &Config, spec: &CallSpec) -> Llm {
    let backend = config.registry.backend("mock").expect("mock backend");
    let env = MapEnv::new::<&str, &str>([]);
    let http = switchyard::connect::http_backend(backend, spec.model, Some(spec.dialect), &env)
        .expect("http backend");
    let llm = Llm::new(format!("mock/{}", spec.model), Arc::new(http), spec.model)
        .with_price(backend.price(spec.model).map(|p| p.value))
        .with_sleeper(Arc::new(switchyard::RecordingSleeper::new()));
    with_role(llm, spec.role)
}

fn with_role(llm: Llm, role: &str) -> Llm {
    if role.is_empty() {
        llm
    } else {
        llm.with_role(role)
    }
}

async fn call(llm: &Llm, spec: &CallSpec) {
    let request = Request::user(format!("prompt {}", spec.prompt));
    // Failures are part of the run: they are recorded and replayed like replies.
    let _ = if spec.stream {
        match llm.stream(request).await {
            Ok(s) => s.into_reply().await,
            Err(e) => Err(e),
        }
    } else {
        llm.complete(request).await
    };
}

/// Replays the run in `from` into `into`, making the calls of `specs` in order through
/// one replaying handle per role.
async fn replay(from: &Path, into: &Path, specs: &[CallSpec]) {
    let log = switchyard::ReplayLog::open(from).expect("the run opens for replay");
    let recorder = Recorder::create(
        into,
        &RunInfo::new().replay_of(from),
        RecorderOptions::default(),
    )
    .unwrap();
    for spec in specs {
        let role = (!spec.role.is_empty()).then_some(spec.role);
        let llm = Llm::replaying_from(&log, role)
            .expect("every role of the run replays")
            .with_recorder(recorder.clone());
        call(&llm, spec).await;
    }
    recorder.close().unwrap();
}

fn comparable(records: &[CallRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| serde_json::to_string(&r.without_timings()).unwrap())
        .collect()
}

fn run_case(specs: Vec<CallSpec>) -> Result<(), TestCaseError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mock = MockServer::start().await;
        let config = config(&mock);
        let tmp = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            tmp.path().join("a"),
            tmp.path().join("b"),
            tmp.path().join("c"),
        );
        let info = specs.iter().fold(RunInfo::new(), |info, s| {
            info.role(
                s.role,
                &format!("mock/{}", s.model),
                "mock",
                s.model,
                &config.registry,
            )
        });
        let recorder = Recorder::create(&a, &info, RecorderOptions::default()).unwrap();
        for spec in &specs {
            call(&live(&config, spec).with_recorder(recorder.clone()), spec).await;
        }
        recorder.close().unwrap();
        let sent = mock.received();
        replay(&a, &b, &specs).await;
        replay(&b, &c, &specs).await;
        prop_assert_eq!(mock.received(), sent, "a replay called the provider");
        let original = comparable(&read_records(&a).unwrap());
        prop_assert_eq!(original.len(), specs.len());
        prop_assert_eq!(
            &original,
            &comparable(&read_records(&b).unwrap()),
            "replay of the run"
        );
        prop_assert_eq!(
            &original,
            &comparable(&read_records(&c).unwrap()),
            "replay of the replay"
        );
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn any_run_replays_byte_for_byte_and_so_does_its_replay(
        specs in proptest::collection::vec(call_spec(), 1..7)
    ) {
        run_case(specs)?;
    }
}

/// The case the issue reproduced: one (empty) role calling a model through Messages and
/// then another through chat; the replayed records kept the first call's reference and
/// dialect, and replaying the replay failed to decode.
#[test]
fn one_role_calling_two_models_through_two_dialects_replays() {
    let specs = vec![
        CallSpec {
            role: "",
            model: "think+tools",
            dialect: Dialect::Messages,
            stream: false,
            prompt: 0,
        },
        CallSpec {
            role: "",
            model: "mock-small",
            dialect: Dialect::Chat,
            stream: false,
            prompt: 1,
        },
    ];
    run_case(specs).unwrap();
}
