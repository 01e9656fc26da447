//! A run whose roles include a Claude Code backend (a stand-in `claude` printing Claude
//! Code's output) recorded, then replayed by pointing every role at the recorded log: the
//! same replies, events and records, and the program never run again; a replay of the
//! replay reads them alike.

#![cfg(unix)]

#[path = "common/executable.rs"]
mod executable;
use executable::write_executable;
use futures::StreamExt;
use std::path::{Path, PathBuf};

use switchyard::env::MapEnv;
use switchyard::record::{read_records, CallRecord};
use switchyard::run::Run;
use switchyard::{Event, Reply, Request};
use switchyard_mock::MockServer;

/// Claude Code's `--output-format json` result.
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":2843,"num_turns":1,"result":"Paris is the capital of France.","stop_reason":"end_turn","session_id":"4b1f6a8e","total_cost_usd":0.0421,"usage":{"input_tokens":9,"cache_creation_input_tokens":5120,"cache_read_input_tokens":14000,"output_tokens":11},"modelUsage":{"claude-opus-4-5":{"inputTokens":9,"outputTokens":11}}}"#;

/// The same answer as `--output-format stream-json --include-partial-messages` lines.
fn stream_lines() -> String {
    let delta = |text: &str| {
        format!(
            "{{\"type\":\"stream_event\",\"event\":{{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}},\"session_id\":\"4b1f6a8e\"}}\n"
        )
    };
    [
        "{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"4b1f6a8e\"}\n".to_string(),
        delta("Paris is "),
        delta("the capital of France."),
        format!("{RESULT}\n"),
    ]
    .concat()
}

/// `<dir>/claude`: appends a line to `<dir>/runs` each time it runs, then prints the
/// stream-json lines when asked for them, else the result.
fn stand_in(dir: &Path) -> PathBuf {
    std::fs::write(dir.join("result.json"), RESULT).unwrap();
    std::fs::write(dir.join("stream.jsonl"), stream_lines()).unwrap();
    let program = dir.join("claude");
    let d = dir.display();
    write_executable(
        &program,
        &format!(
            "#!/bin/sh\n\
             echo run >> '{d}/runs'\n\
             cat > /dev/null\n\
             case \" $* \" in\n\
               *' stream-json '*) cat '{d}/stream.jsonl' ;;\n\
               *) cat '{d}/result.json' ;;\n\
             esac\n"
        ),
    );
    program
}

fn runs(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("runs"))
        .unwrap_or_default()
        .lines()
        .count()
}

const ROLES: [&str; 4] = ["planner", "proposer", "reviewer", "distiller"];

/// Each role's settings, as the recorded run and its replays give them (a replay takes
/// every setting, so the replayed requests are the recorded ones).
fn settings(role: &str) -> &'static str {
    match role {
        "planner" => "max_tokens: 500",
        "reviewer" => "effort: low",
        _ => "temperature: 0.5",
    }
}

fn open(dir: &Path, name: &str, llm: &str, log: &Path, env: &MapEnv) -> Run {
    let path = dir.join(name);
    std::fs::write(&path, format!("log: {}\n{llm}", log.display())).unwrap();
    Run::builder(&path)
        .env(env)
        .user_file(false)
        .open()
        .unwrap()
}

/// A run config's `llm:` pointing every role at the call log of `recorded`.
fn replaying(recorded: &Path, models: &[(&str, &str)]) -> String {
    let mut llm = String::from("llm:\n");
    for (role, model) in models {
        llm.push_str(&format!(
            "  {role}: {{backend: replay, log: {}/llm_log, model: {model}, {}}}\n",
            recorded.display(),
            settings(role)
        ));
    }
    llm
}

/// Every role called twice, whole and streamed: (role, whole reply, streamed reply and the
/// events it streamed).
async fn calls(run: &Run) -> Vec<(String, Reply, Reply, Vec<Event>)> {
    let mut out = Vec::new();
    for role in ROLES {
        let llm = run.llm(role).unwrap();
        let whole = llm
            .complete(Request::user(format!("{role}: step 1")).with_system("be brief"))
            .await
            .unwrap();
        let mut stream = llm
            .stream(Request::user(format!("{role}: step 2")))
            .await
            .unwrap();
        let mut events = Vec::new();
        while let Some(event) = stream.next().await {
            events.push(event.unwrap());
        }
        out.push((role.to_string(), whole, stream.reply(), events));
    }
    out
}

fn comparable(records: &[CallRecord]) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .map(|r| serde_json::to_string(&r.without_timings()).unwrap())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn a_run_with_a_claude_code_role_replays_byte_for_byte() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let claude = stand_in(tmp.path());
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let recorded = tmp.path().join("recorded");
    let models = [
        ("planner", "mock/think"),
        ("proposer", "mock/echo"),
        ("reviewer", "claude-code/opus"),
        ("distiller", "mock/echo"),
    ];
    let mut llm = format!(
        "backends:\n  claude-code: {{command: [{}]}}\nllm:\n",
        claude.display()
    );
    for (role, model) in models {
        let dialect = if role == "distiller" {
            ", dialect: gemini"
        } else {
            ""
        };
        llm.push_str(&format!(
            "  {role}: {{model: {model}, {}{dialect}}}\n",
            settings(role)
        ));
    }
    let run = open(tmp.path(), "campaign.yaml", &llm, &recorded, &env);
    let first = calls(&run).await;
    run.recorder().unwrap().close().unwrap();
    assert_eq!(runs(tmp.path()), 2, "the reviewer ran Claude Code twice");
    let sent = mock.requests().len();

    // What the Claude Code role gave, whole and streamed.
    let (_, whole, streamed, events) = first.iter().find(|c| c.0 == "reviewer").unwrap();
    assert_eq!(whole.text(), "Paris is the capital of France.");
    assert_eq!(whole.raw, RESULT.as_bytes());
    assert_eq!(streamed.text(), whole.text());
    assert_eq!(streamed.usage, whole.usage);
    assert_eq!(streamed.raw, stream_lines().as_bytes());
    let deltas = events
        .iter()
        .filter(|e| matches!(e, Event::TextDelta { .. }))
        .count();
    assert_eq!(deltas, 2);
    let original = read_records(&recorded).unwrap();
    assert_eq!(original.len(), 8);
    let reviewer: Vec<&CallRecord> = original
        .iter()
        .filter(|r| r.role_name() == "reviewer")
        .collect();
    assert!(reviewer
        .iter()
        .all(|r| r.backend == "claude-code" && r.dialect.is_none()));
    assert!(reviewer.iter().all(|r| r.provider_cost_usd == Some(0.0421)));

    // Every role pointed at the recorded log: the same replies, events and records,
    // neither the provider nor the program called.
    let replayed = tmp.path().join("replayed");
    let replay_models: Vec<(&str, &str)> = models
        .iter()
        .map(|(role, m)| (*role, m.split_once('/').unwrap().1))
        .collect();
    let run = open(
        tmp.path(),
        "replay.yaml",
        &replaying(&recorded, &replay_models),
        &replayed,
        &env,
    );
    let again = calls(&run).await;
    run.recorder().unwrap().close().unwrap();
    assert_eq!(runs(tmp.path()), 2, "replay ran the program");
    assert_eq!(mock.requests().len(), sent, "replay called the provider");
    for ((role, whole, streamed, events), (_, whole2, streamed2, events2)) in
        first.iter().zip(&again)
    {
        assert_eq!(whole2, whole, "{role}, whole");
        assert_eq!(whole2.raw, whole.raw, "{role}, whole");
        assert_eq!(streamed2, streamed, "{role}, streamed");
        assert_eq!(streamed2.raw, streamed.raw, "{role}, streamed");
        assert_eq!(events2, events, "{role}, events");
    }
    let second = read_records(&replayed).unwrap();
    assert_eq!(comparable(&second), comparable(&original));

    // The replay of the replay: its run.yaml describes the recorded backends too, so the
    // Claude Code calls still read as Claude Code's.
    let third_dir = tmp.path().join("replayed-again");
    let run = open(
        tmp.path(),
        "replay2.yaml",
        &replaying(&replayed, &replay_models),
        &third_dir,
        &env,
    );
    let third = calls(&run).await;
    run.recorder().unwrap().close().unwrap();
    assert_eq!(runs(tmp.path()), 2);
    for ((role, whole, streamed, _), (_, whole3, streamed3, _)) in first.iter().zip(&third) {
        assert_eq!((whole3, streamed3), (whole, streamed), "{role}");
    }
    assert_eq!(
        comparable(&read_records(&third_dir).unwrap()),
        comparable(&original)
    );
}

#[tokio::test]
async fn a_record_without_a_dialect_or_a_described_backend_says_why_it_cannot_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let claude = stand_in(tmp.path());
    let env = MapEnv::default();
    // Recorded by a bare recorder, whose run.yaml describes no backend.
    let mut opts = switchyard::LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![format!("backends.claude-code.command={}", claude.display())];
    let config = switchyard::Config::load(&opts).unwrap();
    let recorder = switchyard::Recorder::create(
        &tmp.path().join("bare"),
        &switchyard::RunInfo::new(),
        switchyard::RecorderOptions::default(),
    )
    .unwrap();
    let llm = switchyard::Llm::resolve(&config.registry, "claude-code/opus", &env)
        .unwrap()
        .with_recorder(recorder.clone());
    llm.complete(Request::user("capital?")).await.unwrap();
    recorder.close().unwrap();

    let replay = switchyard::Llm::replaying(&tmp.path().join("bare"), None).unwrap();
    let e = replay
        .complete(Request::user("capital?"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), switchyard::ErrorKind::Unsupported);
    let text = e.to_string();
    assert!(text.contains("names no dialect"), "{text}");
    assert!(
        text.contains("backend `claude-code` is not described in"),
        "{text}"
    );
    assert!(text.contains("run.yaml"), "{text}");
}
