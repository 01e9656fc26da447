//! What hyper 1.x's `http1::Builder::header_read_timeout` covers, measured over real
//! sockets. It is why the gateway's listener keeps its own header and idle deadlines
//! (src/deadlines.rs) and turns hyper's off:
//!
//! - its clock starts when hyper first tries to read a head: at the start of the
//!   connection (not at its first byte), and again as soon as a response has been written
//!   on a keep-alive connection, so it bounds the idle wait between requests plus the next
//!   head, with one figure — a 5 s head deadline would cut keep-alive connections idle
//!   for 5 s;
//! - bytes arriving do not restart it (a trickled head is cut on time);
//! - behind hyper-util's `auto::Builder` (HTTP/1.1 and h2c on one port, as the gateway
//!   serves), a connection that sends nothing is never cut: the builder first reads the
//!   bytes that tell HTTP/2's preface from HTTP/1, with no deadline, and hyper's clock only
//!   starts after that.
//!
//! If a hyper upgrade changes any of this, these tests say so.

use bytes::Bytes;
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TIMEOUT: Duration = Duration::from_millis(400);

async fn hello(
    _: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    Ok(hyper::Response::new(Full::new(Bytes::from_static(b"hi"))))
}

/// A server with hyper's header timeout: HTTP/1 only, or through the auto builder.
async fn server(auto: bool) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let io = TokioIo::new(tcp);
                if auto {
                    let mut b = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    b.http1()
                        .timer(TokioTimer::new())
                        .header_read_timeout(TIMEOUT);
                    let _ = b.serve_connection(io, service_fn(hello)).await;
                } else {
                    let _ = hyper::server::conn::http1::Builder::new()
                        .timer(TokioTimer::new())
                        .header_read_timeout(TIMEOUT)
                        .serve_connection(io, service_fn(hello))
                        .await;
                }
            });
        }
    });
    addr
}

/// Reads until the server closes (or `limit` passes); returns the bytes and when it closed.
async fn until_closed(s: &mut TcpStream, limit: Duration) -> (Vec<u8>, Option<Instant>) {
    let mut seen = Vec::new();
    let mut buf = [0u8; 1024];
    let end = Instant::now() + limit;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (seen, Some(Instant::now())),
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return (seen, None),
        }
    }
}

fn near(actual: Duration, expected: Duration) -> bool {
    actual + Duration::from_millis(50) >= expected
        && actual <= expected + Duration::from_millis(350)
}

#[tokio::test]
async fn the_clock_starts_with_the_connection_not_its_first_byte() {
    let addr = server(false).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let start = Instant::now();
    tokio::time::sleep(Duration::from_millis(250)).await;
    s.write_all(b"POST / HTTP/1.1\r\nhost: x\r\n")
        .await
        .unwrap();
    let (_, closed) = until_closed(&mut s, Duration::from_secs(3)).await;
    let after = closed
        .expect("hyper kept a stalled head open")
        .duration_since(start);
    assert!(near(after, TIMEOUT), "closed after {after:?}");
}

#[tokio::test]
async fn a_trickled_head_does_not_restart_it() {
    let addr = server(false).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let start = Instant::now();
    let head = b"GET / HTTP/1.1\r\nhost: x\r\nx-slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let mut closed_at = None;
    for byte in head.iter() {
        if s.write_all(&[*byte]).await.is_err() {
            closed_at = Some(Instant::now());
            break;
        }
        tokio::time::sleep(Duration::from_millis(40)).await;
        if start.elapsed() > Duration::from_secs(2) {
            break;
        }
    }
    let closed = match closed_at {
        Some(t) => t,
        None => until_closed(&mut s, Duration::from_secs(2))
            .await
            .1
            .expect("still open"),
    };
    assert!(closed.duration_since(start) < TIMEOUT + Duration::from_millis(400));
}

#[tokio::test]
async fn it_also_bounds_the_idle_wait_between_keep_alive_requests() {
    let addr = server(false).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 1024];
    let n = s.read(&mut buf).await.unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    let answered = Instant::now();
    let (_, closed) = until_closed(&mut s, Duration::from_secs(3)).await;
    let idle = closed
        .expect("an idle keep-alive connection stayed open")
        .duration_since(answered);
    assert!(near(idle, TIMEOUT), "closed after {idle:?} of idling");
}

#[tokio::test]
async fn behind_the_auto_builder_a_silent_connection_is_never_cut() {
    let addr = server(true).await;
    let mut s = TcpStream::connect(addr).await.unwrap();
    let (_, closed) = until_closed(&mut s, TIMEOUT * 4).await;
    assert!(
        closed.is_none(),
        "the auto builder now cuts a silent connection"
    );
    // Once the first bytes are there (HTTP/1), hyper's clock runs.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
    let (_, closed) = until_closed(&mut s, Duration::from_secs(3)).await;
    assert!(closed.is_some());
}
