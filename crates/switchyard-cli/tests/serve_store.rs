//! `switchyard serve`'s log and store as an operator sees them: one access line per call
//! on stderr (and `RUST_LOG` obeyed), and a store on a full disk reported — in `/healthz`,
//! in `/metrics`, in the log, and by a non-zero exit — instead of records lost in silence.

mod common;

use common::serving::{address, chat, exchange, serve, stop};
use common::switchyard;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn serve_writes_an_access_line_per_call_and_obeys_rust_log() {
    let home = tempfile::tempdir().unwrap();
    let (child, addr) = serve(home.path(), &[], &[]);
    let (s, _) = exchange(&addr, "POST", "/v1/chat/completions", &chat("hello"));
    assert_eq!(s, 200);
    let (s, _) = exchange(
        &addr,
        "POST",
        "/v1/chat/completions",
        r#"{"model":"nobody/x","messages":[]}"#,
    );
    assert_eq!(s, 404);
    let (code, err) = stop(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("switchyard::access") && err.contains("200 chat→chat mock/echo"),
        "no access line: {err}"
    );
    assert!(err.contains("404 chat→- nobody/x"), "{err}");
    assert!(err.contains("in=") && err.contains("out="), "{err}");

    // RUST_LOG=warn leaves the access log out.
    let (child, addr) = serve(home.path(), &[("RUST_LOG", "warn")], &[]);
    let (s, _) = exchange(&addr, "POST", "/v1/chat/completions", &chat("quiet"));
    assert_eq!(s, 200);
    let (code, err) = stop(child);
    assert_eq!(code, Some(0));
    assert!(!err.contains("switchyard::access"), "{err}");
}

/// A real full disk: `serve` runs in a mount namespace of its own over a 256 KiB tmpfs
/// (`unshare`, which needs no privilege). It answers the calls (the clients are not made
/// to pay for the disk), and says that their records are lost: `/healthz` answers 503
/// `failing`, `/metrics` counts the lost records, the log names the error, and the exit
/// status is not 0.
#[cfg(target_os = "linux")]
#[test]
fn a_store_on_a_full_disk_is_reported_everywhere_and_serve_exits_non_zero() {
    let home = tempfile::tempdir().unwrap();
    let disk = tempfile::tempdir().unwrap();
    let cmd = switchyard(home.path());
    let program = cmd.get_program().to_owned();
    let envs: Vec<_> = cmd
        .get_envs()
        .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
        .collect();
    let mut child = Command::new("unshare")
        .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
        .arg(r#"mount -t tmpfs -o size=256k tmpfs "$1" && exec "$2" serve --listen 127.0.0.1:0 --data-dir "$1/gw""#)
        .arg("sh")
        .arg(disk.path())
        .arg(&program)
        .env_clear()
        .envs(envs)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare (util-linux) runs serve over a small tmpfs");
    let addr = address(&mut child);
    let big = "x".repeat(16 * 1024);
    // The disk fills after a few records, but how the writer batches them is its own
    // business: a failed batch of several records can be followed by a single one that
    // still fits (the store is then `degraded`, not `failing`). So after the first two
    // dozen calls, one more goes at a time until the store, with nothing pending, fails.
    let mut calls = 0;
    let health = loop {
        let round = if calls == 0 { 24 } else { 1 };
        for _ in 0..round {
            let (s, body) = exchange(
                &addr,
                "POST",
                "/v1/chat/completions",
                &chat(&format!("{calls} {big}")),
            );
            assert_eq!(s, 200, "{body}");
            calls += 1;
        }
        let (s, v) = settled_health(&addr);
        if s == 503 {
            break (s, v);
        }
        assert!(calls < 100, "the store never reported failing: {v}");
    };
    let (status, v) = health;
    assert_eq!(status, 503, "{v}");
    assert_eq!(v["status"], "failing", "{v}");
    let error = v["store"]["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("No space left on device"), "{v}");
    let (_, metrics) = exchange(&addr, "GET", "/metrics", "");
    let lost: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("switchyard_gateway_store_lost_records_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(lost > 0, "{metrics}");
    assert!(
        metrics.contains("switchyard_gateway_store_failing 1"),
        "{metrics}"
    );
    let (code, err) = stop(child);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("could not be recorded in") && err.contains("No space left on device"),
        "{err}"
    );
    assert!(err.contains("ERROR"), "the log shows the failure: {err}");
    // Not one line per lost call: a full disk would flood the log.
    let errors = err.lines().filter(|l| l.contains("ERROR")).count() as u64;
    assert!(
        errors < lost.min(5),
        "{errors} error lines for {lost} lost: {err}"
    );
}

/// `/healthz` once nothing is pending (a backlog of zero: no write under way that could
/// still change what it says); gives the status and the body.
fn settled_health(addr: &str) -> (u16, serde_json::Value) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (s, body) = exchange(addr, "GET", "/healthz", "");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        if v["store"]["backlog"] == 0 {
            return (s, v);
        }
        assert!(Instant::now() < deadline, "the backlog never emptied: {v}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The config's `timeouts:` reach every path: a whole call passed through, one
/// translated, and a stream that falls silent, each cut within its timeout.
#[test]
fn the_configs_timeouts_cut_a_hanging_upstream_on_every_path() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("gw.yaml");
    std::fs::write(
        &config,
        "timeouts: {first_byte_timeout_seconds: 0.3, idle_timeout_seconds: 0.3}\n\
         backends: {upm: {from: mock, apis: [messages]}}\n",
    )
    .unwrap();
    let (child, addr) = serve(home.path(), &[], &["--config".as_ref(), config.as_os_str()]);
    for (model, stream) in [
        ("mock/hang", false),
        ("upm/hang", false),
        ("mock/hang", true),
        ("upm/hang", true),
    ] {
        let body = serde_json::json!({
            "model": model, "stream": stream,
            "messages": [{"role": "user", "content": "wait"}]
        })
        .to_string();
        let started = Instant::now();
        let (status, reply) = exchange(&addr, "POST", "/v1/chat/completions", &body);
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "{model} (stream {stream}): {took:?}"
        );
        if stream {
            assert_eq!(status, 200, "{reply}");
            assert!(reply.contains("\"code\":\"timeout\""), "{model}: {reply}");
            assert!(!reply.contains("data: [DONE]"), "{model}: {reply}");
        } else {
            assert_eq!(status, 504, "{model}: {reply}");
            assert!(
                reply.contains("waiting for the first byte"),
                "{model}: {reply}"
            );
        }
    }
    let (code, err) = stop(child);
    assert_eq!(code, Some(0), "{err}");
}
