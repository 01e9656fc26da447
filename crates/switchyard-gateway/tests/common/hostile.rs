//! A hostile upstream on 127.0.0.1:0: answers every request, in the dialect its path
//! names, with more bytes than any bound allows — an endless whole body (with or without
//! a `Content-Length` announcing 1 GiB), an endless stream of valid text events, one
//! endless SSE line, an endless error body. The bytes are one chunk sent again and again
//! (never allocated whole); the server counts what it sent and notes when the client
//! closed the connection (its body stream is dropped).

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::response::Response;
use axum::Router;
use bytes::Bytes;
use futures::StreamExt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use switchyard_wire::{codec, Dialect, Event, ServerContext};

/// What the upstream sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hostile {
    /// A 200 JSON body that never ends (no `Content-Length`).
    EndlessBody,
    /// A 200 JSON body announcing 1 GiB in its `Content-Length`.
    AnnouncedBody,
    /// The dialect's stream opening, then text events forever.
    EndlessStream,
    /// The dialect's stream opening, then one `data:` line that never ends.
    EndlessLine,
    /// A 500 whose JSON body never ends.
    EndlessError,
}

/// The chunk repeated (64 KiB).
const CHUNK: usize = 64 << 10;

/// A running hostile upstream.
#[derive(Clone)]
pub(crate) struct HostileServer {
    /// `http://127.0.0.1:PORT`.
    pub origin: String,
    /// Bytes of bodies sent so far.
    pub sent: Arc<AtomicU64>,
    /// Bodies whose stream was dropped (the client closed, or the server gave up).
    pub closed: Arc<AtomicUsize>,
    /// Requests answered.
    pub requests: Arc<AtomicUsize>,
}

/// Drops with the body stream: counts a closed connection.
struct Closing(Arc<AtomicUsize>);

impl Drop for Closing {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

impl HostileServer {
    /// Starts a server sending `how`.
    pub(crate) async fn start(how: Hostile) -> HostileServer {
        let server = HostileServer {
            origin: String::new(),
            sent: Arc::default(),
            closed: Arc::default(),
            requests: Arc::default(),
        };
        let shared = server.clone();
        let app = Router::new().fallback(move |request: Request<Body>| {
            let server = shared.clone();
            async move { server.answer(how, request).await }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        HostileServer {
            origin: format!("http://{addr}"),
            ..server
        }
    }

    async fn answer(&self, how: Hostile, request: Request<Body>) -> Response {
        self.requests.fetch_add(1, Ordering::SeqCst);
        let path = request.uri().path().to_string();
        let dialect = dialect_of(&path);
        let (status, content_type, opening, chunk, announced) = match how {
            Hostile::EndlessBody | Hostile::AnnouncedBody => (
                StatusCode::OK,
                "application/json",
                Bytes::from_static(b"{\"id\":\"x\",\"padding\":\""),
                Bytes::from(vec![b'a'; CHUNK]),
                (how == Hostile::AnnouncedBody).then_some(1u64 << 30),
            ),
            Hostile::EndlessError => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "application/json",
                Bytes::from_static(b"{\"error\":{\"message\":\""),
                Bytes::from(vec![b'e'; CHUNK]),
                None,
            ),
            Hostile::EndlessStream => {
                let (opening, event) = stream_parts(dialect);
                let chunk = event.repeat(CHUNK / event.len() + 1);
                (
                    StatusCode::OK,
                    "text/event-stream",
                    opening,
                    Bytes::from(chunk),
                    None,
                )
            }
            Hostile::EndlessLine => {
                let (mut opening, _) = stream_parts(dialect);
                let mut with_line = opening.to_vec();
                with_line.extend_from_slice(b"data: {\"padding\":\"");
                opening = Bytes::from(with_line);
                (
                    StatusCode::OK,
                    "text/event-stream",
                    opening,
                    Bytes::from(vec![b'a'; CHUNK]),
                    None,
                )
            }
        };
        let sent = self.sent.clone();
        let closing = Closing(self.closed.clone());
        let body = futures::stream::once(async move { opening })
            .chain(futures::stream::repeat(chunk))
            .map(move |bytes| {
                // Held by the stream: dropped when hyper drops the body.
                let _ = &closing;
                sent.fetch_add(bytes.len() as u64, Ordering::SeqCst);
                Ok::<Bytes, std::convert::Infallible>(bytes)
            });
        let mut response = Response::builder()
            .status(status)
            .header(header::CONTENT_TYPE, content_type);
        if let Some(n) = announced {
            response = response.header(header::CONTENT_LENGTH, n);
        }
        response.body(Body::from_stream(body)).unwrap()
    }

    /// Waits (at most 5 s) until `n` bodies were dropped; gives how many were.
    pub(crate) async fn closed_at_least(&self, n: usize) -> usize {
        let start = std::time::Instant::now();
        while self.closed.load(Ordering::SeqCst) < n && start.elapsed().as_secs() < 5 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        self.closed.load(Ordering::SeqCst)
    }
}

/// The dialect an upstream path is in.
pub(crate) fn dialect_of(path: &str) -> Dialect {
    if path.ends_with("/chat/completions") {
        Dialect::Chat
    } else if path.ends_with("/responses") {
        Dialect::Responses
    } else if path.ends_with("/messages") {
        Dialect::Messages
    } else {
        Dialect::Gemini
    }
}

/// A dialect's stream opening (its start and a first text event) and one more text event
/// to send again and again, written by the dialect's own stream encoder.
fn stream_parts(dialect: Dialect) -> (Bytes, Vec<u8>) {
    let context = ServerContext {
        created: 1,
        fallback_id: "hostile".into(),
    };
    let mut encoder = codec(dialect).stream_encoder(&context);
    let mut opening = Vec::new();
    for event in [
        Event::Start {
            id: Some("hostile-1".into()),
            model: Some("m".into()),
        },
        Event::TextDelta {
            part: 0,
            text: "hello ".into(),
        },
    ] {
        encoder.event(&event, &mut opening);
    }
    let mut event = Vec::new();
    encoder.event(
        &Event::TextDelta {
            part: 0,
            text: "more text ".repeat(20),
        },
        &mut event,
    );
    assert!(
        !event.is_empty(),
        "{dialect}: the text event encodes to nothing"
    );
    (Bytes::from(opening), event)
}

/// The process's resident set now and at its peak (`VmRSS`, `VmHWM`), in bytes.
pub(crate) fn rss() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Resets the peak (`VmHWM`) to the resident set now, where the kernel allows it.
pub(crate) fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
