//! `switchyard log view` as a user runs it: over a run directory recorded by `ask --log`,
//! the URL printed and the console answering on it (loopback Hosts only); `--open`
//! without a browser to start says so and serves anyway; a directory without a calls
//! index and a missing source refused.

mod common;

use common::{mock, mock_override, run, switchyard};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Stdio;

fn get(addr: &str, host: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nhost: {host}\r\nconnection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
    (
        status,
        reply
            .split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default(),
    )
}

#[test]
fn log_view_serves_a_run_directory_on_loopback_and_prints_its_url() {
    let home = tempfile::tempdir().unwrap();
    let mock = mock();
    let dir = home.path().join("run");
    for (i, prompt) in ["hello", "again"].iter().enumerate() {
        let mut c = switchyard(home.path());
        c.args([
            "ask",
            "mock/echo",
            prompt,
            "--no-stream",
            "--log",
            dir.to_str().unwrap(),
        ]);
        if i > 0 {
            c.arg("--resume");
        }
        let r = run(c.arg(mock_override(&mock)));
        assert!(r.ok, "{}", r.err);
    }
    // `--open` with no xdg-open on PATH: said, not fatal.
    let mut child = switchyard(home.path())
        .env("PATH", home.path())
        .args(["log", "view", dir.to_str().unwrap(), "--open"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(
        line.starts_with("switchyard log view: http://127.0.0.1:"),
        "{line}"
    );
    let url = line.split_whitespace().nth(3).unwrap();
    assert!(url.ends_with("/console"), "{line}");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/console")
        .to_string();
    let (s, body) = get(&addr, &addr, "/console/api/summary");
    assert_eq!(s, 200, "{body}");
    assert!(body.contains("\"calls\":2"), "{body}");
    let (s, page) = get(&addr, &addr, "/console");
    assert_eq!(s, 200);
    assert!(page.contains("<title>Switchyard console</title>"));
    let (s, _) = get(&addr, "attacker.example", "/console/api/summary");
    assert_eq!(s, 403);
    let _ = child.kill();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let _ = child.wait();
    assert!(
        err.contains("could not start") && err.contains("open"),
        "{err}"
    );
}

#[test]
fn log_view_refuses_what_it_cannot_read() {
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path()).args(["log", "view", home.path().to_str().unwrap()]));
    assert!(!r.ok);
    assert!(
        r.err.contains("has no calls index (calls.sqlite)"),
        "{}",
        r.err
    );
    let r = run(switchyard(home.path()).args(["log", "view"]));
    assert!(!r.ok);
    assert!(r.err.contains("give a run directory"), "{}", r.err);
}
