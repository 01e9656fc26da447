//! `switchyard mock`: started as the built binary, called, then stopped.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// A running `switchyard mock`, killed when dropped.
struct Running {
    child: Child,
    line: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `switchyard mock <args>` and waits for the line it prints at start.
fn start(home: &std::path::Path, args: &[&str]) -> Running {
    let mut child = switchyard(home)
        .arg("mock")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    // Generous: the binary may be slow to start on a loaded machine; it returns at once
    // when the line comes.
    let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
    let mut running = Running { child, line };
    if running.line.is_empty() {
        let _ = running.child.kill();
        let mut err = String::new();
        if let Some(mut e) = running.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        panic!("`switchyard mock` printed no line; stderr: {err}");
    }
    running
}

/// The origin printed in the start line (`http://127.0.0.1:PORT`).
fn origin(line: &str) -> String {
    let at = line.find("http://").expect("an URL in the start line");
    line[at..]
        .split(|c: char| c.is_whitespace() || c == ')' || c == ';')
        .next()
        .unwrap()
        .to_string()
}

/// A bare HTTP/1.1 GET, to see the server without any Switchyard code in between.
fn get(origin: &str, path: &str) -> String {
    let host = origin.trim_start_matches("http://");
    let mut tcp = std::net::TcpStream::connect(host).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        tcp,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    tcp.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn port_zero_prints_the_real_port_and_answers() {
    let home = tempfile::tempdir().unwrap();
    let mock = start(home.path(), &["--port", "0"]);
    let origin = origin(&mock.line);
    let port: u16 = origin.rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(port, 0, "{}", mock.line);
    assert!(origin.starts_with("http://127.0.0.1:"), "{}", mock.line);
    // The line says how to call it.
    let how = format!("MOCK_BASE_URL={origin}/v1 switchyard ask mock/echo \"hello\"");
    assert!(mock.line.contains(&how), "{}", mock.line);

    let models = get(&origin, "/v1/models");
    assert!(models.starts_with("HTTP/1.1 200"), "{models}");
    assert!(models.contains("\"echo\""), "{models}");

    // What the line suggests works.
    let r = run(switchyard(home.path())
        .args(["ask", "mock/echo", "hello"])
        .env("MOCK_BASE_URL", format!("{origin}/v1")));
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "hello\n");
}

#[test]
fn scenarios_from_a_file_are_served() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("mock.yaml");
    std::fs::write(
        &file,
        "scenarios:\n  greeter:\n    steps:\n      - text: \"Bonjour from the file\"\n",
    )
    .unwrap();
    let mock = start(
        home.path(),
        &["--port", "0", "--scenarios", file.to_str().unwrap()],
    );
    let origin = origin(&mock.line);
    let r = run(switchyard(home.path())
        .args(["ask", "mock/greeter", "hi"])
        .arg(format!("backends.mock.base_url={origin}/v1")));
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "Bonjour from the file\n");
}

#[test]
fn a_bad_scenario_file_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("bad.yaml");
    std::fs::write(&file, "scenarios:\n  greeter:\n    stepz: []\n").unwrap();
    let r = run(switchyard(home.path())
        .args(["mock", "--port", "0", "--scenarios"])
        .arg(&file));
    assert!(!r.ok);
    assert!(r.err.starts_with("error: "), "{}", r.err);
    assert!(r.err.contains("bad.yaml"), "{}", r.err);
    assert!(r.err.contains("stepz"), "{}", r.err);

    let missing = home.path().join("missing.yaml");
    let r = run(switchyard(home.path())
        .args(["mock", "--scenarios"])
        .arg(&missing));
    assert!(!r.ok);
    assert!(r.err.contains("missing.yaml"), "{}", r.err);
}

#[test]
fn a_busy_port_is_a_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(["mock", "--port", &port]));
    assert!(!r.ok);
    assert!(r.err.contains(&format!("127.0.0.1:{port}")), "{}", r.err);
    assert!(r.err.contains("--port"), "{}", r.err);
}

/// The status line of a raw HTTP/1.1 POST (std only: no async runtime in these tests).
fn post_status(origin: &str, path: &str, body: &str) -> String {
    let addr = origin.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).expect("the mock listens");
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.lines().next().unwrap_or_default().to_string()
}

#[test]
fn lenient_accepts_a_history_the_rules_refuse() {
    // A tool message answering no call: refused by default, accepted with --lenient.
    let orphan = r#"{"model":"echo","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"nowhere","content":"x"}]}"#;
    let home = tempfile::tempdir().unwrap();
    let strict = start(home.path(), &["--port", "0"]);
    let status = post_status(&origin(&strict.line), "/v1/chat/completions", orphan);
    assert!(status.contains(" 400 "), "{status}");
    let lenient = start(home.path(), &["--port", "0", "--lenient"]);
    let status = post_status(&origin(&lenient.line), "/v1/chat/completions", orphan);
    assert!(status.contains(" 200 "), "{status}");
}
