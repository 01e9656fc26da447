//! `switchyard ask --log/--replay` and `switchyard log stats|show|export`, run as the built
//! binary in a clean environment against the mock.

use std::path::Path;
use std::process::{Command, Output};

use switchyard_mock::{MockConfig, MockServer};

const FAKE_KEY: &str = "sk-test-cli-FAKEKEY-0123456789abcdef";

fn switchyard(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("MOCK_API_KEY", FAKE_KEY);
    c
}

fn run(c: &mut Command) -> (bool, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().expect("the binary runs");
    (
        status.success(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

#[test]
fn ask_records_then_log_reads_and_replay_answers_without_the_provider() {
    let mock =
        MockServer::start_in_thread("127.0.0.1:0".parse().unwrap(), MockConfig::default()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let run_dir = home.path().join("run");
    let base = format!("backends.mock.base_url={}", mock.base_url());
    let price = "backends.mock.prices.echo={input: 1, output: 2}";
    let dir = run_dir.to_str().unwrap();

    let (ok, out, err) = run(switchyard(home.path()).args([
        "ask",
        "mock/echo",
        "hello there",
        "--no-stream",
        "--log",
        dir,
        &base,
        price,
    ]));
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "hello there");
    // A second run into the same directory is refused, unless resumed.
    let (ok, _, err) = run(switchyard(home.path()).args([
        "ask",
        "mock/say:hi",
        "again",
        "--no-stream",
        "--log",
        dir,
        &base,
    ]));
    assert!(!ok);
    assert!(
        err.contains("already holds a run (1 recorded calls); pass --resume"),
        "{err}"
    );
    let (ok, out, err) = run(switchyard(home.path()).args([
        "ask",
        "mock/say:hi",
        "again",
        "--stream",
        "--log",
        dir,
        "--resume",
        &base,
    ]));
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "hi");

    // Stats: the unpriced model's cost is unknown, and the total is a lower bound.
    let (ok, out, err) = run(switchyard(home.path()).args(["log", "stats", dir]));
    assert!(ok, "{err}");
    assert!(out.contains("mock/echo"), "{out}");
    let say = out.lines().find(|l| l.starts_with("mock/say:hi")).unwrap();
    assert!(say.ends_with("unknown"), "{out}");
    assert!(out.contains("total: 2 calls, 0 errors"), "{out}");
    assert!(
        out.contains("cost ≥ $") && out.contains("a lower bound: 1 call had no price"),
        "{out}"
    );

    let (ok, out, err) = run(switchyard(home.path()).args(["log", "show", dir, "1"]));
    assert!(ok, "{err}");
    assert!(out.contains("reply      hello there"), "{out}");
    assert!(out.contains("[user] \"hello there\""), "{out}");
    assert!(out.contains("attempt    1 · waited 0 ms"), "{out}");
    // A provider's 200 is shown and recorded as such (before: "no status", and null).
    assert!(out.contains(" · HTTP 200"), "{out}");
    assert!(!out.contains("no status"), "{out}");
    let records = switchyard::record::read_records(&run_dir).unwrap();
    assert_eq!(records[0].attempts[0].status, Some(200));
    let (ok, raw, _) = run(switchyard(home.path()).args(["log", "show", dir, "2", "--raw"]));
    assert!(ok);
    assert!(
        raw.starts_with("data: {") && raw.contains("[DONE]"),
        "{raw}"
    );
    let (ok, out, err) = run(switchyard(home.path()).args(["log", "show", dir, "9"]));
    assert!(!ok && out.is_empty());
    assert!(err.contains("cannot read call 9"), "{err}");

    let (ok, csv, _) = run(switchyard(home.path()).args(["log", "export", dir, "--format", "csv"]));
    assert!(ok);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3);
    assert!(lines[0].starts_with("number,time,role,reference,backend,model"));
    assert!(lines[1].starts_with("1,") && lines[1].contains(",mock/echo,mock,echo,chat,0,ok,"));
    let (ok, jsonl, _) = run(switchyard(home.path()).args(["log", "export", dir]));
    assert!(ok);
    let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    assert_eq!(first["format"], 2);
    assert_eq!(first["body"]["messages"][0]["content"], "hello there");

    // No key anywhere in the run directory.
    for entry in walk(&run_dir) {
        let text = String::from_utf8_lossy(&std::fs::read(&entry).unwrap()).into_owned();
        assert!(!text.contains("FAKEKEY"), "key in {}", entry.display());
    }
    assert!(std::fs::read_to_string(run_dir.join("run.yaml"))
        .unwrap()
        .contains("api_key_env"));

    // Replay with the provider gone: the same answer, from the log.
    let before = mock.requests().len();
    let (ok, out, err) = run(switchyard(home.path()).args([
        "ask",
        "mock/echo",
        "hello there",
        "--no-stream",
        "--replay",
        dir,
    ]));
    assert!(ok, "{err}");
    assert_eq!(out.trim(), "hello there");
    assert_eq!(mock.requests().len(), before);
    let (ok, _, err) = run(switchyard(home.path()).args([
        "ask",
        "mock/echo",
        "hello world",
        "--no-stream",
        "--replay",
        dir,
    ]));
    assert!(!ok);
    assert!(
        err.contains("replay has no recorded reply for role `` and prompt"),
        "{err}"
    );
    assert!(
        err.contains("- [user] \"hello there\" / + [user] \"hello world\""),
        "{err}"
    );
}

#[test]
fn a_dollar_budget_refuses_an_unpriced_model_before_calling() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("run.yaml");
    std::fs::write(&config, "budget:\n  max_usd: 1\n").unwrap();
    let (ok, _, err) = run(switchyard(home.path()).args([
        "--config",
        config.to_str().unwrap(),
        "ask",
        "mock/echo",
        "hi",
        "backends.mock.base_url=http://127.0.0.1:9/v1",
    ]));
    assert!(!ok);
    assert!(
        // The message a run's role gets: `ask` is assembled as a run of one role.
        err.contains("dollar budget (budget.max_usd: 1) but the price of `mock/echo` is unknown")
            && err.contains("unknown_cost: allow"),
        "{err}"
    );
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

/// A gateway's records: `log show` names the client key and dialect; `log stats` puts a
/// call that never reached a backend (a refusal, as stores written before refusals were
/// traced hold them) under the model it asked for, not under `/`.
#[test]
fn log_reads_a_gateways_records_with_their_client_and_its_old_refusals() {
    let mock =
        MockServer::start_in_thread("127.0.0.1:0".parse().unwrap(), MockConfig::default()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let run_dir = home.path().join("gw");
    let dir = run_dir.to_str().unwrap();
    let base = format!("backends.mock.base_url={}", mock.base_url());
    let (ok, _, err) = run(switchyard(home.path()).args([
        "ask",
        "mock/echo",
        "hi",
        "--no-stream",
        "--log",
        dir,
        &base,
    ]));
    assert!(ok, "{err}");
    let segment = run_dir.join("llm_log/segment-000001.jsonl");
    let first: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&segment).unwrap().trim()).unwrap();
    let mut through_gateway = first.clone();
    through_gateway["number"] = 2.into();
    through_gateway["client_key"] = "alice".into();
    through_gateway["client_dialect"] = "messages".into();
    let mut refused = first.clone();
    refused["number"] = 3.into();
    refused["backend"] = "".into();
    refused["model"] = "".into();
    refused["reference"] = "mock/nope".into();
    refused["error"] = serde_json::json!({
        "kind": "gateway:NotFound", "message": "no such model", "provider": null, "fields": {}
    });
    let mut text = std::fs::read_to_string(&segment).unwrap();
    for r in [through_gateway, refused] {
        text.push_str(&format!("{r}\n"));
    }
    std::fs::write(&segment, text).unwrap();
    let (ok, out, err) = run(switchyard(home.path()).args(["log", "show", dir, "2"]));
    assert!(ok, "{err}");
    assert!(
        out.contains("client     key alice · dialect messages"),
        "{out}"
    );
    let (ok, out, err) = run(switchyard(home.path()).args(["log", "stats", dir]));
    assert!(ok, "{err}");
    assert!(out.contains("(refused) mock/nope"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("/ ")), "{out}");
}

/// A provider reporting `2^64 − 1` tokens (the mock's `usage-<N>`): the call is
/// answered and recorded with the count kept and flagged (`usage_suspect`), and `log
/// stats` over two such calls saturates its totals instead of wrapping them.
#[test]
fn absurd_usage_is_recorded_flagged_and_summed_saturated() {
    let mock =
        MockServer::start_in_thread("127.0.0.1:0".parse().unwrap(), MockConfig::default()).unwrap();
    let home = tempfile::tempdir().unwrap();
    let run_dir = home.path().join("run");
    let dir = run_dir.to_str().unwrap();
    let base = format!("backends.mock.base_url={}", mock.base_url());
    let (ok, _, err) = run(switchyard(home.path()).args([
        "ask",
        "mock/usage-18446744073709551615",
        "hi",
        "--no-stream",
        "--log",
        dir,
        &base,
    ]));
    assert!(ok, "{err}");
    let segment = run_dir.join("llm_log/segment-000001.jsonl");
    let first: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&segment).unwrap().trim()).unwrap();
    assert_eq!(first["usage"]["output"], u64::MAX);
    let note = first["usage_suspect"].as_str().unwrap_or_default();
    assert!(note.contains("past 4294967296"), "{first}");
    let mut second = first.clone();
    second["number"] = 2.into();
    let mut text = std::fs::read_to_string(&segment).unwrap();
    text.push_str(&format!("{second}\n"));
    std::fs::write(&segment, text).unwrap();
    let (ok, out, err) = run(switchyard(home.path()).args(["log", "stats", dir]));
    assert!(ok, "{err}");
    let max = u64::MAX.to_string();
    assert!(
        out.contains(&format!("2 calls, 0 errors, {max} tokens in"))
            && out.contains(&format!("{max} out")),
        "{out}"
    );
}
