//! A store no request can brick, and no damaged line can keep closed, as an operator
//! sees it with the built binary: bodies nested as deep as the gateway accepts, on every
//! dialect's endpoint, survive `kill -9` and a restart, and every `log` command and the
//! console read their records; a data directory whose log holds lines that do not read
//! (cut short, not UTF-8, nested too deep, of the wrong types, garbage) opens, the lines
//! set aside, counted in `/healthz` and `/metrics`, named in warnings and listed in
//! `quarantine/set-aside.jsonl`, and everything else served.

mod common;

use common::serving::{exchange, serve, stop};
use common::{run, switchyard};
use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::Child;

/// The gateway's limit on a body's depth (`listen.max_json_depth`, its default and most).
const LIMIT: usize = 127;

/// A call on `dialect`'s endpoint whose body nests `depth` levels (a value of its own at
/// the top level, nested to reach that depth).
fn deep_call(dialect: &str, depth: usize) -> (String, String) {
    let value = format!("{}7{}", "[".repeat(depth - 1), "]".repeat(depth - 1));
    match dialect {
        "chat" => (
            "/v1/chat/completions".into(),
            format!(
                r#"{{"model":"mock/echo","messages":[{{"role":"user","content":"d{depth}"}}],"metadata":{value}}}"#
            ),
        ),
        "responses" => (
            "/v1/responses".into(),
            format!(r#"{{"model":"mock/echo","input":"d{depth}","metadata":{value}}}"#),
        ),
        "messages" => (
            "/v1/messages".into(),
            format!(
                r#"{{"model":"mock/echo","max_tokens":5,"messages":[{{"role":"user","content":"d{depth}"}}],"metadata":{value}}}"#
            ),
        ),
        _ => (
            "/v1beta/models/mock/echo:generateContent".into(),
            format!(
                r#"{{"contents":[{{"role":"user","parts":[{{"text":"d{depth}"}}]}}],"labels":{value}}}"#
            ),
        ),
    }
}

/// `serve` recording into `data` with each reply's last byte after its record
/// (`durability: answered`: a `kill -9` loses no answered call).
fn serve_store(home: &Path, data: &Path) -> (Child, String) {
    let config = home.join("gw.yaml");
    std::fs::write(&config, "store: {durability: answered}\n").unwrap();
    serve(
        home,
        &[],
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--data-dir".as_ref(),
            data.as_os_str(),
        ],
    )
}

fn kill_9(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

fn health(addr: &str) -> Value {
    let (s, body) = exchange(addr, "GET", "/healthz", "");
    assert_eq!(s, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

fn log(home: &Path, args: &[&str]) -> common::Run {
    run(switchyard(home).arg("log").args(args))
}

/// `log stats --json`'s call count, `log show N` of each call in `numbers`, and `log
/// export`'s lines; gives `log stats`'s stderr.
fn every_log_command_reads(home: &Path, data: &str, numbers: &[u64]) -> String {
    let stats = log(home, &["stats", data, "--json"]);
    assert!(stats.ok, "log stats: {}", stats.err);
    let v: Value = serde_json::from_str(&stats.out).unwrap();
    assert_eq!(
        v["total"]["calls"].as_u64(),
        Some(numbers.len() as u64),
        "{v}"
    );
    for n in numbers {
        let show = log(home, &["show", data, &n.to_string()]);
        assert!(show.ok, "log show {n}: {}", show.err);
        assert!(show.out.contains("echo"), "log show {n}: {}", show.out);
    }
    let export = log(home, &["export", data]);
    assert!(export.ok, "log export: {}", export.err);
    assert_eq!(export.out.lines().count(), numbers.len(), "{}", export.err);
    stats.err
}

#[test]
fn the_deepest_bodies_on_every_endpoint_survive_kill_9_and_every_reader_reads_them() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("gw");
    let (child, addr) = serve_store(home.path(), &data);
    let mut calls = 0u64;
    for dialect in ["chat", "responses", "messages", "gemini"] {
        // The depths the issue found bricking the store, up to the limit; one past it.
        for depth in [LIMIT - 2, LIMIT - 1, LIMIT, LIMIT + 1] {
            let (path, body) = deep_call(dialect, depth);
            let (s, reply) = exchange(&addr, "POST", &path, &body);
            if depth <= LIMIT {
                assert_eq!(s, 200, "{dialect} at depth {depth}: {reply}");
                calls += 1;
            } else {
                assert_eq!(s, 400, "{dialect} at depth {depth}: {reply}");
                assert!(reply.contains("listen.max_json_depth"), "{reply}");
            }
        }
    }
    kill_9(child);
    let data_arg = data.to_str().unwrap();
    let numbers: Vec<u64> = (1..=calls).collect();
    let stats_err = every_log_command_reads(home.path(), data_arg, &numbers);
    assert!(!stats_err.contains("set aside"), "{stats_err}");

    // The gateway opens its store again, answers, and its console reads every call.
    let (child, addr) = serve_store(home.path(), &data);
    let h = health(&addr);
    assert_eq!(h["store"]["quarantined_records"], 0, "{h}");
    let (path, body) = deep_call("chat", LIMIT);
    assert_eq!(exchange(&addr, "POST", &path, &body).0, 200);
    // The console lists calls from the index, which its thread fills within 100 ms.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let (s, page) = exchange(&addr, "GET", "/console/api/calls?limit=100", "");
        assert_eq!(s, 200, "{page}");
        let v: Value = serde_json::from_str(&page).unwrap();
        if v["total"] == calls + 1 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{page}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for n in 1..=calls + 1 {
        let (s, call) = exchange(&addr, "GET", &format!("/console/api/calls/{n}"), "");
        assert_eq!(s, 200, "call {n}: {call}");
    }
    let (code, err) = stop(child);
    assert_eq!(code, Some(0), "{err}");
    every_log_command_reads(home.path(), data_arg, &(1..=calls + 1).collect::<Vec<_>>());
}

#[test]
fn a_store_with_lines_that_do_not_read_opens_serves_the_rest_and_counts_them() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join("gw");
    let (child, addr) = serve_store(home.path(), &data);
    for i in 0..3 {
        let (path, body) = deep_call("chat", 3 + i);
        assert_eq!(exchange(&addr, "POST", &path, &body).0, 200);
    }
    kill_9(child);

    // The damage a crash, a disk or a hand can leave after the last record.
    let segment = data.join("llm_log").join("segment-000001.jsonl");
    let good = std::fs::read(&segment).unwrap();
    let first = &good[..good.iter().position(|&b| b == b'\n').unwrap()];
    let numbered = |n: u64| {
        String::from_utf8_lossy(first)
            .replacen("\"number\":1,", &format!("\"number\":{n},"), 1)
            .into_bytes()
    };
    let cut = numbered(4)[..first.len() / 2].to_vec();
    let mut not_utf8 = numbered(5);
    let at = not_utf8.windows(5).position(|w| w == b"echo\"").unwrap();
    not_utf8[at] = 0xff;
    let deep = format!(
        "{{\"format\":2,\"number\":6,\"x\":{}7{}}}",
        "[".repeat(300),
        "]".repeat(300)
    )
    .into_bytes();
    let wrong = br#"{"format":2,"number":7,"role":5,"reference":[],"stream":"yes"}"#.to_vec();
    let garbage = b"\x00 not a record".to_vec();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&segment)
        .unwrap();
    for line in [&cut, &not_utf8, &deep, &wrong, &garbage] {
        f.write_all(line).unwrap();
        f.write_all(b"\n").unwrap();
    }
    drop(f);

    // It opens, counts them, and answers; a new call takes the next number.
    let (child, addr) = serve_store(home.path(), &data);
    let h = health(&addr);
    assert_eq!(h["status"], "ok", "{h}");
    assert_eq!(h["store"]["quarantined_records"], 5, "{h}");
    let (_, metrics) = exchange(&addr, "GET", "/metrics", "");
    assert!(
        metrics.contains("switchyard_gateway_store_quarantined_records 5"),
        "{metrics}"
    );
    let (path, body) = deep_call("messages", LIMIT);
    assert_eq!(exchange(&addr, "POST", &path, &body).0, 200);
    let (s, summary) = exchange(&addr, "GET", "/console/api/summary", "");
    assert_eq!(s, 200, "{summary}");
    let (s, call) = exchange(&addr, "GET", "/console/api/calls/8", "");
    assert_eq!(s, 200, "{call}");
    let (code, err) = stop(child);
    assert_eq!(code, Some(0), "{err}");
    // Each named in a warning: where it lies and why.
    for why in [
        "call 4): not a call record of format 2: EOF while parsing",
        "call 5): not a call record of format 2: invalid unicode",
        "call 6): not a call record of format 2: nests arrays and objects more than 160 levels deep",
        "call 7): not a call record of format 2: invalid type",
        "(14 bytes): a line that is not a call record (no number)",
    ] {
        assert!(
            err.lines()
                .any(|l| l.contains("WARN") && l.contains("segment-000001.jsonl at offset") && l.contains(why)),
            "no warning with {why}: {err}"
        );
    }
    assert!(
        err.contains("5 lines of the call log") && err.contains("set-aside.jsonl"),
        "{err}"
    );
    let list = std::fs::read_to_string(data.join("quarantine").join("set-aside.jsonl")).unwrap();
    assert_eq!(list.lines().count(), 5, "{list}");
    let listed: Vec<Value> = list
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed[0]["number"], 4);
    assert_eq!(
        listed[1]["line"]["encoding"], "base64",
        "not UTF-8: kept as base64"
    );

    // Every log command reads the rest, and says what it set aside.
    let data_arg = data.to_str().unwrap();
    let stats_err = every_log_command_reads(home.path(), data_arg, &[1, 2, 3, 8]);
    assert!(
        stats_err.contains("5 lines of")
            && stats_err.contains("set aside as unreadable, 4 calls read"),
        "{stats_err}"
    );
    let show = log(home.path(), &["show", data_arg, "6"]);
    assert!(!show.ok);
    assert!(
        show.err.contains("more than 160 levels deep"),
        "{}",
        show.err
    );

    // Opened again: the same five, not listed twice.
    let (child, addr) = serve_store(home.path(), &data);
    assert_eq!(health(&addr)["store"]["quarantined_records"], 5);
    stop(child);
    let list = std::fs::read_to_string(data.join("quarantine").join("set-aside.jsonl")).unwrap();
    assert_eq!(list.lines().count(), 5);
}
