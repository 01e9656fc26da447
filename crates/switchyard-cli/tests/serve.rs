//! `switchyard serve` as a user runs it: the banner, a call through it (on any number of
//! lanes), a refusal to listen publicly without keys, and SIGTERM and SIGHUP draining a
//! stream in flight.

mod common;

use common::{mock, mock_override, run, switchyard};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Starts `serve` on a free port and returns the child and its address.
fn serve(home: &std::path::Path, extra: &[&str]) -> (Child, String) {
    let mut child = switchyard(home)
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = common::serving::address(&mut child);
    (child, addr)
}

/// One raw HTTP/1.1 request; returns the connection for reading the reply.
fn request(addr: &str, path: &str, body: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    s
}

/// A chat call to the built-in mock's `echo` through the gateway at `addr`: answered 200
/// with `text` echoed.
fn echo_through(addr: &str, text: &str) {
    let body =
        format!(r#"{{"model":"mock/echo","messages":[{{"role":"user","content":"{text}"}}]}}"#);
    let mut s = request(addr, "/v1/chat/completions", &body);
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{text}: {reply}");
    assert!(
        reply.contains(&format!("\"content\":\"{text}\"")),
        "{text}: {reply}"
    );
}

#[test]
fn serve_answers_with_the_built_in_mock_and_no_configuration() {
    let home = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (mut child, addr) = serve(home.path(), &[]);
    let startup = started.elapsed();
    echo_through(&addr, "hello");
    let _ = child.kill();
    let _ = child.wait();
    // Generous: the machine is shared; docs/performance.md has the measured figure.
    assert!(startup < Duration::from_secs(5), "{startup:?}");
}

/// How many of the process's threads are the gateway's lanes (named `switchyard-lane-N`).
#[cfg(target_os = "linux")]
fn lane_threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
        .filter(|name| name.starts_with("switchyard-lane"))
        .count()
}

#[test]
fn serve_answers_on_any_number_of_lanes_from_the_flag_or_the_config_and_refuses_too_many() {
    let home = tempfile::tempdir().unwrap();
    // 0: no lanes, the calls on the shared runtime; 1 and 3: that many lane threads.
    for lanes in ["0", "1", "3"] {
        let (mut child, addr) = serve(home.path(), &["--lanes", lanes]);
        for call in 0..4 {
            echo_through(&addr, &format!("lane {lanes}, call {call}"));
        }
        #[cfg(target_os = "linux")]
        assert_eq!(
            lane_threads(child.id()),
            lanes.parse::<usize>().unwrap(),
            "--lanes {lanes}"
        );
        let _ = child.kill();
        let _ = child.wait();
    }
    // The config's `listen.lanes`, and `--lanes` above it.
    let config = home.path().join("lanes.yaml");
    std::fs::write(&config, "listen: {lanes: 1}\n").unwrap();
    let config = config.to_str().unwrap();
    for (flags, expected) in [(&[][..], 1), (&["--lanes", "2"][..], 2)] {
        let (mut child, addr) = serve(home.path(), &[&["--config", config], flags].concat());
        echo_through(&addr, "configured lanes");
        #[cfg(target_os = "linux")]
        assert_eq!(lane_threads(child.id()), expected, "{flags:?}");
        let _ = child.kill();
        let _ = child.wait();
    }
    let r = run(switchyard(home.path()).args(["serve", "--lanes", "5000", "--no-mock"]));
    assert!(!r.ok);
    assert!(
        r.err.contains("invalid value '5000' for '--lanes <N>'") && r.err.contains("0..=1024"),
        "{}",
        r.err
    );
}

#[test]
fn serve_refuses_a_public_address_without_keys_unless_told() {
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(["serve", "--listen", "0.0.0.0:0", "--no-mock"]));
    assert!(!r.ok);
    assert!(
        r.err
            .contains("refusing to listen on 0.0.0.0:0 without client keys"),
        "{}",
        r.err
    );
    assert!(r.err.contains("--allow-public-without-keys"), "{}", r.err);

    let config = home.path().join("gw.yaml");
    std::fs::write(
        &config,
        "keys:\n  - {name: alice, key_env: NOT_SET_ANYWHERE}\nmodels:\n  claude-x: nobackend/m\n",
    )
    .unwrap();
    let r = run(switchyard(home.path()).args([
        "--config",
        config.to_str().unwrap(),
        "serve",
        "--no-mock",
    ]));
    assert!(!r.ok);
    assert!(
        r.err.contains("NOT_SET_ANYWHERE named by key_env is unset"),
        "{}",
        r.err
    );
    assert!(r.err.contains("models.claude-x"), "{}", r.err);
}

#[cfg(unix)]
#[test]
fn sigterm_drains_a_stream_in_flight_then_exits() {
    drains_a_stream_in_flight_then_exits_on("TERM");
}

/// SIGHUP (a closed terminal) used to kill `serve` on the spot; it drains as SIGTERM does.
#[cfg(unix)]
#[test]
fn sighup_drains_a_stream_in_flight_then_exits() {
    let stderr = drains_a_stream_in_flight_then_exits_on("HUP");
    assert!(
        stderr.contains("SIGHUP") && stderr.contains("handled as SIGTERM"),
        "{stderr}"
    );
}

/// Sends `signal` while a stream is in flight: the stream ends whole, `serve` exits 0 and
/// stops accepting. Returns what it wrote on stderr.
#[cfg(unix)]
fn drains_a_stream_in_flight_then_exits_on(signal: &str) -> String {
    let home = tempfile::tempdir().unwrap();
    let mock = mock();
    let (mut child, addr) = serve(home.path(), &["--no-mock", &mock_override(&mock)]);
    let body = r#"{"model":"mock/lorem-12+chunk-4+delay-40ms","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut s = request(&addr, "/v1/chat/completions", body);
    let mut first = [0u8; 64];
    let n = s.read(&mut first).unwrap();
    assert!(n > 0);
    let status = std::process::Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let mut rest = String::new();
    s.read_to_string(&mut rest).unwrap();
    assert!(rest.contains("data: [DONE]"), "the stream was cut: {rest}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "serve did not exit after SIG{signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    assert!(
        TcpStream::connect(&addr).is_err(),
        "still accepting after shutdown"
    );
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    stderr
}
