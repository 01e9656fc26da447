//! The CLI agents as backends, against stand-in `claude` and `codex` scripts that print
//! output of the real shapes and record how they were run.

#![cfg(unix)]

#[path = "common/executable.rs"]
mod executable;
use executable::write_executable;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use switchyard::backend::cli::{ClaudeCodeBackend, CliConfig};
use switchyard::env::MapEnv;
use switchyard::registry::{Config, LoadOptions};
use switchyard::{Backend, Call, Error, ErrorKind, Llm, Request};

/// A stand-in executable: records argv (one per line, `<empty>` for an empty argument),
/// environment, working directory, its listing and standard input under `rec/`, then
/// prints `output` and exits with `code`.
struct StandIn {
    dir: tempfile::TempDir,
}

impl StandIn {
    fn new(name: &str, output: &str, code: i32) -> StandIn {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("rec");
        std::fs::create_dir(&rec).unwrap();
        std::fs::write(dir.path().join("output"), output).unwrap();
        let script = format!(
            "#!/bin/sh\n\
             rec='{rec}'\n\
             for a in \"$@\"; do if [ -z \"$a\" ]; then echo '<empty>'; else printf '%s\\n' \"$a\"; fi; done > \"$rec/argv\"\n\
             env > \"$rec/env\"\n\
             pwd -P > \"$rec/cwd\"\n\
             ls -A > \"$rec/ls\"\n\
             cat > \"$rec/stdin\"\n\
             cat '{out}'\n\
             echo 'stand-in stderr line' >&2\n\
             exit {code}\n",
            rec = rec.display(),
            out = dir.path().join("output").display(),
        );
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let path = bin.join(name);
        write_executable(&path, &script);
        StandIn { dir }
    }

    fn program(&self, name: &str) -> PathBuf {
        self.dir.path().join("bin").join(name)
    }

    fn bin_dir(&self) -> PathBuf {
        self.dir.path().join("bin")
    }

    fn rec(&self, what: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("rec").join(what)).unwrap_or_default()
    }

    fn argv(&self) -> Vec<String> {
        self.rec("argv").lines().map(str::to_string).collect()
    }
}

fn llm(reference: &str, overrides: &[String], env: &MapEnv) -> switchyard::Result<Llm> {
    let mut opts = LoadOptions::new(env);
    opts.user_file = false;
    opts.overrides = overrides.to_vec();
    let config = Config::load(&opts).map_err(|e| Error::Config(e.to_string()))?;
    // Retries keep their schedule (a malformed reply is asked again) but the waits are
    // recorded, not slept: a test never waits the real 5 s and 30 s.
    Ok(Llm::resolve(&config.registry, reference, env)?
        .with_sleeper(std::sync::Arc::new(switchyard::RecordingSleeper::new())))
}

fn with_command(backend: &str, s: &StandIn, name: &str) -> Vec<String> {
    vec![format!(
        "backends.{backend}.command={}",
        s.program(name).display()
    )]
}

const CLAUDE_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,"api_error_status":null,"duration_ms":2843,"duration_api_ms":2611,"num_turns":1,"result":"Paris is the capital of France.","stop_reason":"end_turn","session_id":"4b1f6a8e-5d2c-4c1e-9a0b-3f2e1d0c9b8a","total_cost_usd":0.0421,"usage":{"input_tokens":9,"cache_creation_input_tokens":5120,"cache_read_input_tokens":14000,"output_tokens":11,"server_tool_use":{"web_search_requests":0},"service_tier":"standard"},"modelUsage":{"claude-opus-4-5":{"inputTokens":9,"outputTokens":11,"cacheReadInputTokens":14000,"cacheCreationInputTokens":5120,"costUSD":0.0421}},"permission_denials":[],"terminal_reason":"completed","uuid":"d3c1"}"#;

fn claude_result(subtype: &str, status: Option<u16>, result: &str) -> String {
    serde_json::json!({
        "type": "result", "subtype": subtype, "is_error": true,
        "api_error_status": status, "duration_ms": 100, "num_turns": 1,
        "result": result, "session_id": "s-1", "total_cost_usd": 0,
        "usage": {"input_tokens": 0, "output_tokens": 0}
    })
    .to_string()
}

#[tokio::test]
async fn claude_code_runs_isolated_with_the_prompt_on_stdin() {
    let s = StandIn::new("claude", CLAUDE_OK, 0);
    let env = MapEnv::default();
    let llm = llm(
        "claude-code/claude-opus-4-5",
        &with_command("claude-code", &s, "claude"),
        &env,
    )
    .unwrap();
    let reply = llm
        .complete(
            Request::user("What is the capital of France?").with_system("Answer in one sentence."),
        )
        .await
        .unwrap();
    assert_eq!(reply.text(), "Paris is the capital of France.");
    let usage = reply.usage.unwrap();
    assert_eq!(
        (
            usage.input,
            usage.cached_input,
            usage.cache_write,
            usage.output
        ),
        (19129, 14000, 5120, 11)
    );
    assert_eq!(
        reply.id.as_deref(),
        Some("4b1f6a8e-5d2c-4c1e-9a0b-3f2e1d0c9b8a")
    );
    // The provider-reported cost stays in the raw output for the recorder.
    assert_eq!(
        switchyard::backend::cli::claude_code::reported_cost(&reply.raw),
        Some(0.0421)
    );

    let argv = s.argv();
    let pair = |flag: &str, value: &str| argv.windows(2).any(|w| w[0] == flag && w[1] == value);
    assert!(argv.contains(&"-p".to_string()), "{argv:?}");
    assert!(pair("--output-format", "json"), "{argv:?}");
    assert!(pair("--model", "claude-opus-4-5"), "{argv:?}");
    assert!(pair("--tools", "<empty>"), "{argv:?}");
    assert!(argv.contains(&"--strict-mcp-config".to_string()));
    assert!(pair("--mcp-config", r#"{"mcpServers":{}}"#), "{argv:?}");
    assert!(pair("--setting-sources", "<empty>"), "{argv:?}");
    assert!(argv.contains(&"--disable-slash-commands".to_string()));
    assert!(argv.contains(&"--no-session-persistence".to_string()));
    assert!(
        pair("--system-prompt", "Answer in one sentence."),
        "{argv:?}"
    );
    // The prompt came on standard input, not in the arguments.
    assert_eq!(s.rec("stdin"), "What is the capital of France?");
    assert!(!argv.iter().any(|a| a.contains("capital")));
    // A fresh empty directory, not ours, deleted afterwards.
    let cwd = s.rec("cwd").trim().to_string();
    assert_eq!(s.rec("ls"), "", "the working directory was not empty");
    let here = std::env::current_dir().unwrap().canonicalize().unwrap();
    assert_ne!(Path::new(&cwd), here);
    assert!(!Path::new(&cwd).exists(), "{cwd} was not removed");
    assert!(s
        .rec("env")
        .lines()
        .any(|l| l == "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"));
}

#[tokio::test]
async fn claude_code_failures_are_typed() {
    let cases: Vec<(String, i32, ErrorKind, &str)> = vec![
        (
            claude_result(
                "success",
                Some(429),
                r#"API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"},"request_id":"req_011"}"#,
            ),
            1,
            ErrorKind::RateLimited,
            "per-minute rate limit",
        ),
        (
            claude_result(
                "success",
                Some(529),
                r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            ),
            1,
            ErrorKind::Overloaded,
            "Overloaded",
        ),
        (
            claude_result(
                "success",
                Some(400),
                r#"API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 219898 tokens > 200000 maximum"}}"#,
            ),
            1,
            ErrorKind::ContextLengthExceeded,
            "prompt 219898 tokens",
        ),
        (
            claude_result("success", Some(400), "Prompt is too long"),
            1,
            ErrorKind::ContextLengthExceeded,
            "Prompt is too long",
        ),
        (
            serde_json::json!({"type":"result","subtype":"error_max_turns","is_error":true,
                "api_error_status":null,"num_turns":2,"session_id":"s","total_cost_usd":0.01,
                "usage":{"input_tokens":1,"output_tokens":1}})
            .to_string(),
            1,
            ErrorKind::Provider,
            "turn limit",
        ),
        (
            "<html><body>502 Bad Gateway</body></html>".to_string(),
            0,
            ErrorKind::ProviderReplyMalformed,
            "502 Bad Gateway",
        ),
        (
            r#"{"type":"assistant","message":{}}"#.to_string(),
            0,
            ErrorKind::ProviderReplyMalformed,
            "not Claude Code's JSON result",
        ),
        (String::new(), 3, ErrorKind::Provider, "exit status 3"),
    ];
    for (output, code, kind, text) in cases {
        let s = StandIn::new("claude", &output, code);
        let llm = llm(
            "claude-code/claude-sonnet-4-5",
            &with_command("claude-code", &s, "claude"),
            &MapEnv::default(),
        )
        .unwrap();
        let e = llm.complete(Request::user("hi")).await.unwrap_err();
        assert_eq!(e.kind(), kind, "{output}: {e}");
        assert!(e.to_string().contains(text), "{output}: {e}");
        if code == 3 {
            assert!(e.to_string().contains("stand-in stderr line"), "{e}");
        }
    }
}

#[tokio::test]
async fn a_missing_executable_says_what_was_looked_for() {
    // By `command`.
    let e = llm(
        "claude-code/claude-opus-4-5",
        &["backends.claude-code.command=/nonexistent/bin/claude".to_string()],
        &MapEnv::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config);
    let msg = e.to_string();
    assert!(msg.contains("/nonexistent/bin/claude"), "{msg}");
    assert!(msg.contains("backends.claude-code.command="), "{msg}");
    // On PATH.
    let empty = tempfile::tempdir().unwrap();
    let env = MapEnv::new([("PATH", empty.path().display().to_string())]);
    let msg = llm("codex/gpt-5", &[], &env).unwrap_err().to_string();
    assert!(msg.contains("`codex` was not found on PATH"), "{msg}");
    assert!(msg.contains("command"), "{msg}");
    // Found on PATH without `command`.
    let s = StandIn::new("claude", CLAUDE_OK, 0);
    let env = MapEnv::new([("PATH", format!("{}:/usr/bin:/bin", s.bin_dir().display()))]);
    let reply = llm("claude-code/claude-opus-4-5", &[], &env)
        .unwrap()
        .complete(Request::user("hi"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Paris is the capital of France.");
}

#[test]
fn command_is_refused_on_an_http_backend_and_must_be_a_program() {
    let env = MapEnv::default();
    let load = |o: &str| {
        let mut opts = LoadOptions::new(&env);
        opts.user_file = false;
        opts.overrides = vec![o.to_string()];
        Config::load(&opts).map(|_| ()).unwrap_err().to_string()
    };
    let e = load("backends.openai.command=claude");
    assert!(
        e.contains("`command`, which only kinds claude-code and codex use"),
        "{e}"
    );
    let e = load("backends.codex.command=[]");
    assert!(e.contains("`command` must be a program"), "{e}");
    let e = load("backends.codex.command=5");
    assert!(e.contains("`command` must be a program"), "{e}");
}

const CODEX_OK: &str = r#"{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"**Recalling the capital**"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Paris."}}
{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}
"#;

#[tokio::test]
async fn codex_runs_isolated_with_its_own_empty_home() {
    let s = StandIn::new("codex", CODEX_OK, 0);
    let llm = llm(
        "codex/gpt-5",
        &with_command("codex", &s, "codex"),
        &MapEnv::default(),
    )
    .unwrap();
    let reply = llm
        .complete(Request::user("Capital of France?").with_system("Be terse."))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Paris.");
    assert_eq!(reply.thinking(), "**Recalling the capital**");
    let u = reply.usage.unwrap();
    assert_eq!((u.input, u.cached_input, u.output), (24763, 24448, 122));

    let argv = s.argv();
    let pair = |flag: &str, value: &str| argv.windows(2).any(|w| w[0] == flag && w[1] == value);
    assert_eq!(argv.first().map(String::as_str), Some("exec"), "{argv:?}");
    assert!(argv.contains(&"--json".to_string()));
    assert!(argv.contains(&"--skip-git-repo-check".to_string()));
    assert!(pair("--sandbox", "read-only"), "{argv:?}");
    assert!(pair("-m", "gpt-5"), "{argv:?}");
    assert!(pair("-c", "mcp_servers={}"), "{argv:?}");
    assert_eq!(argv.last().map(String::as_str), Some("-"));
    assert_eq!(
        s.rec("stdin"),
        "# Instructions\n\nBe terse.\n\n# Task\n\nCapital of France?"
    );
    let cwd = s.rec("cwd").trim().to_string();
    assert_eq!(s.rec("ls"), "");
    let home = s
        .rec("env")
        .lines()
        .find_map(|l| l.strip_prefix("CODEX_HOME=").map(str::to_string))
        .expect("CODEX_HOME set");
    assert_ne!(home, cwd);
    assert!(!Path::new(&cwd).exists() && !Path::new(&home).exists());
}

#[tokio::test]
async fn codex_failures_are_typed() {
    let head = "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.started\"}\n";
    let cases: Vec<(String, i32, ErrorKind, &str)> = vec![
        (
            format!("{head}{{\"type\":\"turn.failed\",\"error\":{{\"message\":\"exceeded retry limit, last status: 429 Too Many Requests\"}}}}\n"),
            1,
            ErrorKind::RateLimited,
            "429",
        ),
        (
            format!("{head}{{\"type\":\"error\",\"message\":\"unexpected status 401 Unauthorized: Missing bearer authentication in header\"}}\n"),
            1,
            ErrorKind::Auth,
            "Missing bearer",
        ),
        (
            "Error: unknown flag --json\n".to_string(),
            2,
            ErrorKind::Provider,
            "exit status 2",
        ),
        (
            "Reading prompt from stdin...\n".to_string(),
            0,
            ErrorKind::ProviderReplyMalformed,
            "Reading prompt from stdin",
        ),
        (String::new(), 1, ErrorKind::Provider, "stand-in stderr line"),
    ];
    for (output, code, kind, text) in cases {
        let s = StandIn::new("codex", &output, code);
        let llm = llm(
            "codex/gpt-5",
            &with_command("codex", &s, "codex"),
            &MapEnv::default(),
        )
        .unwrap();
        let e = llm.complete(Request::user("hi")).await.unwrap_err();
        assert_eq!(e.kind(), kind, "{output}: {e}");
        assert!(e.to_string().contains(text), "{output}: {e}");
    }
}

#[tokio::test]
async fn a_run_past_its_timeout_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let program = dir.path().join("claude");
    let pid_file = dir.path().join("pid");
    write_executable(
        &program,
        &format!(
            "#!/bin/sh\necho $$ > '{}'\nexec sleep 3\n",
            pid_file.display()
        ),
    );
    let backend = ClaudeCodeBackend::new(CliConfig {
        name: "claude-code".into(),
        program,
        leading_args: Vec::new(),
        timeout: Some(Duration::from_millis(200)),
        env: Vec::new(),
    });
    let started = Instant::now();
    let e = backend
        .complete(&Call::new("m", Request::user("hi")))
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    match e {
        Error::Timeout { after, .. } => assert_eq!(after, Duration::from_millis(200)),
        other => panic!("{other}"),
    }
    assert_killed(&pid_file).await;
}

/// The process whose pid `pid_file` holds was killed, not left running: gone, or a zombie
/// waiting to be reaped (the kill is sent at once, its effect looked for up to a second).
async fn assert_killed(pid_file: &Path) {
    let pid = std::fs::read_to_string(pid_file).unwrap();
    let stat = format!("/proc/{}/stat", pid.trim());
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let state = std::fs::read_to_string(&stat).ok();
        let dead = state
            .as_deref()
            .and_then(|s| s.rsplit(") ").next())
            .is_none_or(|rest| rest.starts_with('Z'));
        if dead {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "pid {pid} still running: {state:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_recorded_claude_code_call_keeps_its_reported_cost_beside_ours() {
    let s = StandIn::new("claude", CLAUDE_OK, 0);
    let env = MapEnv::default();
    let mut overrides = with_command("claude-code", &s, "claude");
    overrides.push("backends.claude-code.prices.claude-opus-4-5={input: 5, output: 25}".into());
    let registry_llm = llm("claude-code/claude-opus-4-5", &overrides, &env).unwrap();
    let run = tempfile::tempdir().unwrap();
    let recorder = switchyard::Recorder::create(
        run.path(),
        &switchyard::RunInfo::new(),
        switchyard::RecorderOptions::default(),
    )
    .unwrap();
    let recording = registry_llm.with_recorder(recorder.clone());
    recording.complete(Request::user("capital?")).await.unwrap();
    recorder.close().unwrap();

    let records = switchyard::record::read_records(run.path()).unwrap();
    assert_eq!(records.len(), 1);
    let r = &records[0];
    // The provider's own figure is kept as reported…
    assert_eq!(r.provider_cost_usd, Some(0.0421));
    // …and the cost used is ours, from the backend's price: 19,129 input tokens (14,000
    // read from cache and 5,120 written to it, both at the input price with no price of
    // their own) at $5/M and 11 output tokens at $25/M.
    let ours = (19_129.0 * 5.0 + 11.0 * 25.0) / 1e6;
    let cost = r.cost_usd.unwrap();
    assert!((cost - ours).abs() < 1e-9, "{cost} != {ours}");
    let db = rusqlite::Connection::open(run.path().join(switchyard::record::INDEX_FILE)).unwrap();
    let (indexed, reported): (f64, f64) = db
        .query_row(
            "SELECT cost_usd, provider_cost_usd FROM llm_calls WHERE number = 1",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert!((indexed - ours).abs() < 1e-9);
    assert_eq!(reported, 0.0421);
}

#[tokio::test]
async fn an_unpriced_claude_code_call_costs_what_it_reported_in_the_record_and_the_handle() {
    // One pricing rule: Python's `reply.cost_usd` said 0.0421 (the provider's own figure)
    // where the record and `log stats` said unknown.
    let s = StandIn::new("claude", CLAUDE_OK, 0);
    let env = MapEnv::default();
    let overrides = with_command("claude-code", &s, "claude");
    let unpriced = llm("claude-code/claude-opus-4-5", &overrides, &env).unwrap();
    assert!(unpriced.price().is_none());
    let run = tempfile::tempdir().unwrap();
    let recorder = switchyard::Recorder::create(
        run.path(),
        &switchyard::RunInfo::new(),
        switchyard::RecorderOptions::default(),
    )
    .unwrap();
    let recording = unpriced.with_recorder(recorder.clone());
    let reply = recording.complete(Request::user("capital?")).await.unwrap();
    recorder.close().unwrap();
    assert_eq!(recording.cost(&reply), Some(0.0421));
    let records = switchyard::record::read_records(run.path()).unwrap();
    assert_eq!(records[0].cost_usd, Some(0.0421));
    assert_eq!(records[0].provider_cost_usd, Some(0.0421));
}

/// One answer as `claude -p --output-format stream-json --verbose --include-partial-messages`
/// prints it, in two halves: up to the first text delta, and the rest (its result line
/// carrying the same usage and cost as `CLAUDE_OK`).
fn claude_stream_halves() -> (String, String) {
    let session = r#""session_id":"4b1f6a8e-5d2c-4c1e-9a0b-3f2e1d0c9b8a""#;
    let line = |event: &str| format!("{{\"type\":\"stream_event\",\"event\":{event},{session}}}\n");
    let first = [
        format!("{{\"type\":\"system\",\"subtype\":\"init\",{session},\"model\":\"claude-opus-4-5\",\"tools\":[]}}\n"),
        line(r#"{"type":"message_start","message":{"id":"msg_01","usage":{"input_tokens":9,"output_tokens":1}}}"#),
        line(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
        line(r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris is "}}"#),
    ]
    .concat();
    let rest = [
        line(r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the capital of France."}}"#),
        format!("{{\"type\":\"assistant\",\"message\":{{\"content\":[{{\"type\":\"text\",\"text\":\"Paris is the capital of France.\"}}]}},{session}}}\n"),
        line(r#"{"type":"content_block_stop","index":0}"#),
        line(r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":11}}"#),
        line(r#"{"type":"message_stop"}"#),
        format!("{CLAUDE_OK}\n"),
    ]
    .concat();
    (first, rest)
}

/// A stand-in `claude` printing `first`, then waiting until a line is written to the FIFO
/// `gate`, then printing `rest`: what reaches the caller before the gate opens was
/// streamed while the program still ran.
fn gated_claude(dir: &Path, first: &str, rest: &str) -> (PathBuf, PathBuf) {
    let gate = dir.join("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .unwrap();
    assert!(made.success());
    std::fs::write(dir.join("first"), first).unwrap();
    std::fs::write(dir.join("rest"), rest).unwrap();
    let program = dir.join("claude");
    let d = dir.display();
    write_executable(&program, &format!(
            "#!/bin/sh\n\
             echo $$ > '{d}/pid'\n\
             for a in \"$@\"; do if [ -z \"$a\" ]; then echo '<empty>'; else printf '%s\\n' \"$a\"; fi; done > '{d}/argv'\n\
             cat > '{d}/stdin'\n\
             cat '{d}/first'\n\
             read go < '{d}/gate'\n\
             cat '{d}/rest'\n"
        ));
    (program, gate)
}

#[tokio::test]
async fn claude_code_streams_its_text_as_it_is_written() {
    use futures::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let (first, rest) = claude_stream_halves();
    let (program, gate) = gated_claude(dir.path(), &first, &rest);
    let llm = llm(
        "claude-code/claude-opus-4-5",
        &[format!(
            "backends.claude-code.command={}",
            program.display()
        )],
        &MapEnv::default(),
    )
    .unwrap();
    let mut stream = llm
        .stream(Request::user("What is the capital of France?").with_system("Be brief."))
        .await
        .unwrap();
    // The first delta arrives while the program waits at its gate.
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        let text = matches!(event, switchyard::Event::TextDelta { .. });
        events.push(event);
        if text {
            break;
        }
    }
    assert_eq!(stream.reply().text(), "Paris is ");
    assert!(!stream.is_finished());
    tokio::task::spawn_blocking(move || std::fs::write(gate, "go\n"))
        .await
        .unwrap()
        .unwrap();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    let reply = stream.reply();
    assert_eq!(reply.text(), "Paris is the capital of France.");
    let deltas: Vec<&switchyard::Event> = events
        .iter()
        .filter(|e| matches!(e, switchyard::Event::TextDelta { .. }))
        .collect();
    assert_eq!(deltas.len(), 2, "{events:?}");
    // The result line's usage, id and finish: the reply `complete` gives for this run.
    let u = reply.usage.unwrap();
    assert_eq!(
        (u.input, u.cached_input, u.cache_write, u.output),
        (19129, 14000, 5120, 11)
    );
    assert_eq!(
        reply.id.as_deref(),
        Some("4b1f6a8e-5d2c-4c1e-9a0b-3f2e1d0c9b8a")
    );
    assert_eq!(reply.finish, switchyard::FinishReason::Stop);
    // Every byte as printed; Claude Code's cost read back from them.
    assert_eq!(reply.raw, format!("{first}{rest}").as_bytes());
    assert_eq!(
        switchyard::backend::cli::claude_code::reported_cost(&reply.raw),
        Some(0.0421)
    );
    let argv: Vec<String> = std::fs::read_to_string(dir.path().join("argv"))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let pair = |flag: &str, value: &str| argv.windows(2).any(|w| w[0] == flag && w[1] == value);
    assert!(pair("--output-format", "stream-json"), "{argv:?}");
    assert!(argv.contains(&"--verbose".to_string()), "{argv:?}");
    assert!(argv.contains(&"--include-partial-messages".to_string()));
    assert!(pair("--tools", "<empty>") && pair("--system-prompt", "Be brief."));
    assert_eq!(
        std::fs::read_to_string(dir.path().join("stdin")).unwrap(),
        "What is the capital of France?"
    );
}

#[tokio::test]
async fn a_claude_code_stream_that_fails_is_typed() {
    use futures::StreamExt;
    // Refused before any text: the call itself fails, typed.
    let login = claude_result("success", None, "Invalid API key · Please run /login");
    let s = StandIn::new("claude", &format!("{login}\n"), 1);
    let handle = llm(
        "claude-code/claude-opus-4-5",
        &with_command("claude-code", &s, "claude"),
        &MapEnv::default(),
    )
    .unwrap();
    let e = handle.stream(Request::user("hi")).await.err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");

    // Failing after text: the stream ends with the error, the text kept.
    let (first, _) = claude_stream_halves();
    let overloaded = claude_result(
        "success",
        Some(529),
        r#"API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
    );
    let s = StandIn::new("claude", &format!("{first}{overloaded}\n"), 1);
    let handle = llm(
        "claude-code/claude-opus-4-5",
        &with_command("claude-code", &s, "claude"),
        &MapEnv::default(),
    )
    .unwrap();
    let mut stream = handle.stream(Request::user("hi")).await.unwrap();
    let mut last = None;
    while let Some(event) = stream.next().await {
        last = Some(event);
    }
    let e = last.unwrap().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Overloaded, "{e}");
    assert_eq!(stream.reply().text(), "Paris is ");

    // Output that is not stream-json, and a program that exits without a result line.
    let s = StandIn::new("claude", "<html>502 Bad Gateway</html>", 0);
    let handle = llm(
        "claude-code/claude-opus-4-5",
        &with_command("claude-code", &s, "claude"),
        &MapEnv::default(),
    )
    .unwrap();
    let e = handle.stream(Request::user("hi")).await.err().unwrap();
    assert_eq!(e.kind(), ErrorKind::ProviderReplyMalformed, "{e}");
    assert!(e.to_string().contains("502 Bad Gateway"), "{e}");
    let s = StandIn::new("claude", "", 3);
    let handle = llm(
        "claude-code/claude-opus-4-5",
        &with_command("claude-code", &s, "claude"),
        &MapEnv::default(),
    )
    .unwrap();
    let e = handle.stream(Request::user("hi")).await.err().unwrap();
    assert_eq!(e.kind(), ErrorKind::Provider, "{e}");
    assert!(e.to_string().contains("stand-in stderr line"), "{e}");
}

#[tokio::test]
async fn a_stream_past_its_timeout_ends_typed_and_the_program_is_killed() {
    use futures::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let (first, rest) = claude_stream_halves();
    // The gate is never opened: the program waits until it is killed.
    let (program, _gate) = gated_claude(dir.path(), &first, &rest);
    let backend = ClaudeCodeBackend::new(CliConfig {
        name: "claude-code".into(),
        program,
        leading_args: Vec::new(),
        timeout: Some(Duration::from_millis(150)),
        env: Vec::new(),
    });
    let mut stream = backend
        .stream(&Call::new("m", Request::user("hi")))
        .await
        .unwrap();
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    match last.unwrap() {
        Err(Error::Timeout { after, .. }) => assert_eq!(after, Duration::from_millis(150)),
        other => panic!("{other:?}"),
    }
    assert_eq!(stream.reply().text(), "Paris is ");
    assert_killed(&dir.path().join("pid")).await;
}

#[tokio::test]
async fn an_env_files_variables_reach_the_agent() {
    use switchyard::env::file::{EnvFile, LayeredEnv};
    let claude = StandIn::new("claude", CLAUDE_OK, 0);
    let codex = StandIn::new("codex", CODEX_OK, 0);
    // As `--env-file` gives them: never in the process environment the child inherits.
    let file = EnvFile::parse(
        "ANTHROPIC_API_KEY=env-file-anthropic-value\nOPENAI_API_KEY=env-file-openai-value\n\
         CLAUDECODE=1\nCODEX_HOME=/nonexistent/codex-home\n",
        ".env.switchyard",
    )
    .unwrap();
    let env = LayeredEnv::new(&file, MapEnv::default());
    for (reference, backend, stand_in, name, var) in [
        (
            "claude-code/claude-opus-4-5",
            "claude-code",
            &claude,
            "claude",
            "ANTHROPIC_API_KEY=env-file-anthropic-value",
        ),
        (
            "codex/gpt-5",
            "codex",
            &codex,
            "codex",
            "OPENAI_API_KEY=env-file-openai-value",
        ),
    ] {
        let mut opts = LoadOptions::new(&env);
        opts.user_file = false;
        opts.overrides = with_command(backend, stand_in, name);
        let config = Config::load(&opts).unwrap();
        Llm::resolve(&config.registry, reference, &env)
            .unwrap()
            .complete(Request::user("hi"))
            .await
            .unwrap_or_else(|e| panic!("{reference}: {e}"));
        let child = stand_in.rec("env");
        assert!(child.lines().any(|l| l == var), "{reference}: {child}");
    }
    // What a run sets or removes itself still wins: a nested-session marker is removed,
    // Codex's home is the run's own empty one.
    assert!(!claude
        .rec("env")
        .lines()
        .any(|l| l.starts_with("CLAUDECODE=")));
    let home = codex
        .rec("env")
        .lines()
        .find_map(|l| l.strip_prefix("CODEX_HOME=").map(str::to_string))
        .unwrap();
    assert_ne!(home, "/nonexistent/codex-home");
}

#[tokio::test]
async fn the_fix_a_missing_cli_suggests_for_a_role_is_accepted() {
    let s = StandIn::new("claude", CLAUDE_OK, 0);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("run.yaml");
    std::fs::write(
        &config,
        "llm:\n  reviewer: {backend: claude_code, model: claude-opus-4-5}\n",
    )
    .unwrap();
    // A PATH without `claude` (the stand-in script itself needs the system's tools).
    let empty = tempfile::tempdir().unwrap();
    let env = MapEnv::new([("PATH", format!("{}:/usr/bin:/bin", empty.path().display()))]);
    let open = |overrides: &[String]| {
        switchyard::run::Run::builder(&config)
            .overrides(overrides.iter().map(String::as_str))
            .env(&env)
            .user_file(false)
            .open()
            .and_then(|run| run.llm("reviewer"))
    };
    let e = match open(&[]) {
        Ok(_) => panic!("claude is not on PATH"),
        Err(e) => e.to_string(),
    };
    assert!(e.contains("`claude` was not found on PATH"), "{e}");
    // The suggestion, applied as written with the stand-in's path.
    let suggested = e
        .split('`')
        .find(|w| w.starts_with("llm.reviewer.command="))
        .unwrap_or_else(|| panic!("no override suggested: {e}"));
    let fix = suggested.replace(
        "/path/to/claude",
        &s.program("claude").display().to_string(),
    );
    let reply = open(&[fix])
        .unwrap_or_else(|e| panic!("the suggested fix was refused: {e}"))
        .complete(Request::user("hi"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "Paris is the capital of France.");
    // The form the message gives for the run config is accepted too.
    std::fs::write(
        &config,
        format!(
            "llm:\n  reviewer: {{backend: claude_code, model: claude-opus-4-5, command: {}}}\n",
            s.program("claude").display()
        ),
    )
    .unwrap();
    assert!(
        e.contains("`llm: {reviewer: {command: /path/to/claude}}`"),
        "{e}"
    );
    open(&[]).unwrap();
    // The registry's spelling of that backend says where its fields are set.
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec!["backends.role:reviewer.command=/bin/claude".into()];
    let e = Config::load(&opts).unwrap_err().to_string();
    assert!(e.contains("write `llm.reviewer.<key>=<value>`"), "{e}");
}
