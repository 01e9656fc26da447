//! `switchyard serve` as a child process: started on a free port, spoken to over plain
//! HTTP/1.1, stopped with SIGTERM.

use super::switchyard;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Reads the address from `serve`'s banner.
pub(crate) fn address(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    line.split("http://")
        .nth(1)
        .and_then(|s| s.split([' ', '/']).next())
        .unwrap_or_else(|| panic!("no address in the banner: {line}"))
        .to_string()
}

/// One HTTP/1.1 exchange; gives the status and the body.
pub(crate) fn exchange(addr: &str, method: &str, path: &str, body: &str) -> (u16, String) {
    exchange_with(addr, method, path, &[], body)
}

/// [`exchange`] with extra request headers (`("authorization", "Bearer …")`).
pub(crate) fn exchange_with(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let extra: String = headers
        .iter()
        .map(|(name, value)| format!("{name}: {value}\r\n"))
        .collect();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\n{extra}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = reply.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// `serve` on a free port with `args`, and its address.
pub(crate) fn serve(
    home: &std::path::Path,
    env: &[(&str, &str)],
    args: &[&std::ffi::OsStr],
) -> (Child, String) {
    let mut child = switchyard(home)
        .envs(env.iter().copied())
        .args(["serve", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = address(&mut child);
    (child, addr)
}

pub(crate) fn chat(text: &str) -> String {
    serde_json::json!({"model": "mock/echo", "messages": [{"role": "user", "content": text}]})
        .to_string()
}

/// Stops `child` with SIGTERM and gives its exit code and stderr.
pub(crate) fn stop(mut child: Child) -> (Option<i32>, String) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "serve did not stop");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}
