//! Idle kept-alive connections: a connection idle past the park delay has its hyper
//! connection dropped and only its socket kept (`transport/park.rs`), and serves its next
//! requests as before; 2,000 of them cost at most 8 KB of resident memory each; once
//! they close, the memory they held is given back (`transport/trim.rs`).
//!
//! The memory test is alone in its test binary: the resident memory it reads is the whole
//! process's. Its sockets are blocking std ones, which cost the process a descriptor and
//! no memory, so what grows is the gateway's.

mod common;

use common::Harness;
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use switchyard::env::MapEnv;
use switchyard_gateway::GatewayConfig;

/// Past the park delay (1 s) and the connection's next look at its clock (at most 1 s
/// after a request ends), with room for a busy machine.
const PARKED: Duration = Duration::from_millis(3_000);

/// For the memory read with every connection parked: also past the trim that follows
/// (at most a second after them, `transport/trim.rs`).
const PARKED_AND_TRIMMED: Duration = Duration::from_millis(5_000);

const CHAT: &str = r#"{"model":"mock/echo","messages":[{"role":"user","content":"hello there, how are you today?"}]}"#;

fn chat_request() -> Vec<u8> {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{CHAT}",
        CHAT.len()
    )
    .into_bytes()
}

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n";

/// Reads one response of known length from a kept-alive connection, past `seen` (bytes
/// already read), and returns it with what was read beyond it.
fn one_response(s: &mut std::net::TcpStream, mut seen: Vec<u8>) -> (String, Vec<u8>) {
    let mut buf = [0u8; 4096];
    loop {
        if let Some(whole) = common::raw_http::whole_response_len(&seen) {
            let rest = seen.split_off(whole);
            return (String::from_utf8_lossy(&seen).into_owned(), rest);
        }
        let n = s.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "closed before a whole response: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
}

/// The process's resident memory, in bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap();
    kib * 1024
}

/// The open-file limit raised as far as the hard one allows; the soft limit after.
fn raise_open_files() -> u64 {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the struct given, nothing else.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
    }
    limit.rlim_cur
}

fn connect(url: &str) -> std::net::TcpStream {
    let s = std::net::TcpStream::connect(url.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_parked_while_idle_serves_its_next_requests() {
    let h = Harness::start_with(
        GatewayConfig {
            lanes: Some(2),
            ..GatewayConfig::default()
        },
        MapEnv::default(),
    )
    .await;
    let url = h.url.clone();
    tokio::task::spawn_blocking(move || {
        let mut s = connect(&url);
        s.write_all(&chat_request()).unwrap();
        let (reply, rest) = one_response(&mut s, Vec::new());
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(rest.is_empty());
        // Parked; then two requests in one write.
        std::thread::sleep(PARKED);
        s.write_all(&[chat_request(), HEALTHZ.to_vec()].concat())
            .unwrap();
        let (reply, rest) = one_response(&mut s, Vec::new());
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(reply.contains("hello there"), "{reply}");
        let (reply, rest) = one_response(&mut s, rest);
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        assert!(rest.is_empty());
        // Parked again; the next head arrives in two parts, the second after a pause.
        std::thread::sleep(PARKED);
        let request = chat_request();
        s.write_all(&request[..20]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        s.write_all(&request[20..]).unwrap();
        let (reply, _) = one_response(&mut s, Vec::new());
        assert!(reply.contains("hello there"), "{reply}");
    })
    .await
    .unwrap();
    assert_eq!(h.mock.requests().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_cost_at_most_8_kb_each_and_their_memory_is_given_back() {
    let limit = raise_open_files();
    // Each connection is a descriptor on both ends, in this one process.
    let n: usize = 2_000.min((limit.saturating_sub(256) / 3) as usize);
    if n < 500 {
        let why = format!("an open-file limit of {limit} holds too few connections to measure");
        // Under CI the bound must be measured: a machine that cannot is a failure.
        assert!(std::env::var_os("CI").is_none(), "{why}");
        eprintln!("skipped: {why}");
        return;
    }
    let h = Harness::start_with(
        GatewayConfig {
            lanes: Some(2),
            max_connections: n + 100,
            idle_timeout: Duration::from_secs(600),
            ..GatewayConfig::default()
        },
        MapEnv::default(),
    )
    .await;
    let url = h.url.clone();
    let (idle, held, after, back_in) = tokio::task::spawn_blocking(move || {
        // A few calls first, on connections then closed: what the first calls allocate
        // once is in the idle figure, not the connections'.
        for _ in 0..4 {
            let mut s = connect(&url);
            for _ in 0..50 {
                s.write_all(&chat_request()).unwrap();
                one_response(&mut s, Vec::new());
                s.write_all(HEALTHZ).unwrap();
                one_response(&mut s, Vec::new());
            }
        }
        std::thread::sleep(PARKED);
        let idle = rss();
        let mut open = Vec::with_capacity(n);
        for _ in 0..n {
            let mut s = connect(&url);
            // Not a model call: the mock keeps every request it is sent, which would
            // count here as the connections' memory.
            s.write_all(HEALTHZ).unwrap();
            let (reply, _) = one_response(&mut s, Vec::new());
            assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
            open.push(s);
        }
        std::thread::sleep(PARKED_AND_TRIMMED);
        let held = rss();
        drop(open);
        let closed = Instant::now();
        let mut after = rss();
        while closed.elapsed() < Duration::from_secs(10) && after > idle + idle / 10 {
            std::thread::sleep(Duration::from_millis(250));
            after = rss();
        }
        (idle, held, after, closed.elapsed())
    })
    .await
    .unwrap();
    let each = held.saturating_sub(idle) / n as u64;
    println!(
        "{n} idle connections: {} -> {} KB resident, {each} bytes each; closed: {} KB after {back_in:?}",
        idle / 1024,
        held / 1024,
        after / 1024
    );
    assert!(each <= 8 * 1024, "{each} bytes per idle connection");
    assert!(
        after <= idle + idle / 10,
        "{} KB resident 10 s after the connections closed, {} KB before them",
        after / 1024,
        idle / 1024
    );
    assert_eq!(h.mock.requests().len(), 200);
}
