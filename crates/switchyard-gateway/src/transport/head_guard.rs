//! The HTTP/1 request heads of a connection, judged before hyper reads them.
//!
//! hyper refuses a head it cannot take (431 too large, 414 target too long, 400 for a
//! malformed one) by writing a response of its own, with an empty body, which no client
//! can tell apart from a broken gateway. So every head is read here first, held until it
//! is whole, and judged against the gateway's own bounds (`listen.max_header_bytes`,
//! `max_uri_bytes`, `max_headers`, set below hyper's) and the rules hyper applies; a head
//! that passes is given to hyper unchanged. One that fails is never given: hyper gets a
//! stand-in head instead, which the connection's service answers with the refusal in the
//! path's dialect ([`Refusal`], held by the connection's [`Activity`]) and
//! `connection: close`, so hyper orders it after any response still being written.
//!
//! To find the next head the guard follows each body's `content-length`. It stops judging
//! (and hyper's own bounds apply, as before) on a connection that turns out to be HTTP/2,
//! after a chunked body (whose framing it does not follow), and after an upgrade.
//!
//! HTTP/2 heads arrive decoded: [`judge_h2`] holds them to the same bounds (h2's own
//! header-list bound, set above them, resets the stream without a body).

use crate::transport::deadlines::Activity;
use crate::transport::path_dialect::dialect_of;
use crate::transport::refusals::Reason;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use memchr::memmem;
use std::sync::LazyLock;
use switchyard::Dialect;

/// hyper's HTTP/2 connection preface (RFC 9113 §3.4), which the auto builder sniffs.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The head hyper is given in place of a refused one: answered by the connection's
/// service from the [`Refusal`] it stands for, whatever it says.
const STAND_IN: &[u8] = b"GET / HTTP/1.1\r\nhost: refused.invalid\r\nconnection: close\r\n\r\n";

/// The buffers' capacity kept between heads: one large head does not keep its memory for
/// the connection's life.
const KEPT_CAPACITY: usize = 16 * 1024;

/// How much of a refused head's target is read to tell its dialect.
const TARGET_FOR_DIALECT: usize = 512;

/// The bounds on one request head (`listen.max_header_bytes`, `max_uri_bytes`,
/// `max_headers`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeadLimits {
    /// Bytes of the whole head, request line and headers.
    pub max_header_bytes: usize,
    /// Bytes of the request target.
    pub max_uri_bytes: usize,
    /// Header fields.
    pub max_headers: usize,
}

/// A head the guard refused: what the client is answered.
#[derive(Debug, Clone)]
pub(crate) struct Refusal {
    /// 431, 414 or 400.
    pub status: StatusCode,
    /// The counter it goes to.
    pub reason: Reason,
    /// What was wrong, and the setting that bounds it.
    pub message: String,
    /// The dialect its path belongs to.
    pub dialect: Dialect,
}

/// Where the connection's byte stream is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before anything: HTTP/1 or the HTTP/2 preface.
    Start,
    /// A head is due (or under way, in `held`).
    Head,
    /// This many bytes of a body are still to come.
    Body(u64),
    /// Not judged any more: bytes go straight to hyper.
    Off,
    /// A head was refused: what the client sends from here on is read and dropped.
    Refused,
}

/// What one connection's heads have been through.
pub(crate) struct HeadGuard {
    limits: HeadLimits,
    phase: Phase,
    /// The head being read, not yet given to hyper.
    held: Vec<u8>,
    /// How far `held` was searched for the head's end.
    searched: usize,
    /// Bytes judged and due to hyper, from `given` on.
    ready: Vec<u8>,
    given: usize,
    /// Heads given to hyper so far (the stand-in included).
    heads: u64,
}

/// What a head held so far turned out to be.
enum Judged {
    /// Not whole yet, and within the bounds so far.
    Partial,
    /// Whole and sound: `len` bytes, followed by `next`.
    Sound { len: usize, next: Phase },
    /// Refused.
    Bad(Refusal),
}

impl HeadGuard {
    /// A guard for a connection just accepted.
    pub(crate) fn new(limits: HeadLimits) -> HeadGuard {
        HeadGuard {
            limits,
            phase: Phase::Start,
            held: Vec::new(),
            searched: 0,
            ready: Vec::new(),
            given: 0,
            heads: 0,
        }
    }

    /// The guard of a kept-alive HTTP/1 connection whose hyper connection was dropped
    /// while it idled (`connection.rs`), `heads` heads given to hyper before.
    pub(crate) fn resumed(limits: HeadLimits, heads: u64) -> HeadGuard {
        HeadGuard {
            phase: Phase::Head,
            heads,
            ..HeadGuard::new(limits)
        }
    }

    /// True while the next head is due and none of it was read: nothing is held.
    pub(crate) fn awaits_head(&self) -> bool {
        self.phase == Phase::Head && self.held.is_empty() && self.given == self.ready.len()
    }

    /// Bytes to read before giving more to hyper: `Some(n)` caps a read given straight to
    /// hyper (a body), `None` means the read is the guard's (a head is due).
    pub(crate) fn next_read(&self) -> Option<ReadTo> {
        match self.phase {
            Phase::Start | Phase::Head => Some(ReadTo::Guard),
            Phase::Body(left) => Some(ReadTo::Hyper(usize::try_from(left).unwrap_or(usize::MAX))),
            Phase::Off => Some(ReadTo::Hyper(usize::MAX)),
            Phase::Refused => None,
        }
    }

    /// True once a head was refused.
    pub(crate) fn refused(&self) -> bool {
        self.phase == Phase::Refused
    }

    /// Bytes judged and not yet given to hyper.
    pub(crate) fn ready(&self) -> &[u8] {
        &self.ready[self.given..]
    }

    /// `n` of the ready bytes were given to hyper.
    pub(crate) fn gave(&mut self, n: usize) {
        self.given += n;
        if self.given == self.ready.len() {
            self.ready.clear();
            self.given = 0;
            if self.ready.capacity() > KEPT_CAPACITY {
                self.ready = Vec::new();
            }
        }
    }

    /// `n` bytes of a body went straight to hyper.
    pub(crate) fn passed(&mut self, n: usize) {
        if let Phase::Body(left) = self.phase {
            let left = left.saturating_sub(n as u64);
            self.phase = if left == 0 {
                Phase::Head
            } else {
                Phase::Body(left)
            };
        }
    }

    /// Bytes the guard read (a head due): judged, and what may go to hyper made ready.
    pub(crate) fn read(&mut self, bytes: &[u8], activity: &Activity) {
        self.held.extend_from_slice(bytes);
        loop {
            match self.phase {
                Phase::Start => {
                    let n = self.held.len().min(H2_PREFACE.len());
                    if self.held[..n] != H2_PREFACE[..n] {
                        self.phase = Phase::Head;
                    } else if n == H2_PREFACE.len() {
                        self.phase = Phase::Off;
                    } else {
                        return;
                    }
                }
                Phase::Off => {
                    self.ready.append(&mut self.held);
                    return;
                }
                Phase::Body(left) => {
                    let n = self
                        .held
                        .len()
                        .min(usize::try_from(left).unwrap_or(usize::MAX));
                    self.ready.extend(self.held.drain(..n));
                    self.passed(n);
                    if self.held.is_empty() {
                        return;
                    }
                }
                Phase::Refused => {
                    self.held.clear();
                    return;
                }
                Phase::Head => {
                    if self.held.is_empty() {
                        return;
                    }
                    match self.judge() {
                        Judged::Partial => return,
                        Judged::Sound { len, next } => {
                            self.ready.extend(self.held.drain(..len));
                            if self.held.is_empty() && self.held.capacity() > KEPT_CAPACITY {
                                self.held = Vec::new();
                            }
                            self.searched = 0;
                            self.heads += 1;
                            self.phase = next;
                        }
                        Judged::Bad(refusal) => {
                            // hyper answers the stand-in as request number `heads` on this
                            // connection; the service answers that one with the refusal.
                            activity.refuse(self.heads, refusal);
                            self.ready.extend_from_slice(STAND_IN);
                            self.heads += 1;
                            self.held = Vec::new();
                            self.phase = Phase::Refused;
                            return;
                        }
                    }
                }
            }
        }
    }

    /// Judges the head in `held`.
    fn judge(&mut self) -> Judged {
        let limits = self.limits;
        let bytes = &self.held;
        // hyper skips blank lines before a request line, as RFC 9112 §2.2 allows.
        let start = bytes
            .iter()
            .position(|b| *b != b'\r' && *b != b'\n')
            .unwrap_or(bytes.len());
        let target = target_of(&bytes[start..]);
        if target.len() > limits.max_uri_bytes {
            return Judged::Bad(too_long_target(target, limits));
        }
        let from = self.searched.saturating_sub(2).max(start);
        // The searchers built once: `memmem::find` builds one on every call.
        static CRLF_END: LazyLock<memmem::Finder<'static>> =
            LazyLock::new(|| memmem::Finder::new(b"\n\r\n"));
        static LF_END: LazyLock<memmem::Finder<'static>> =
            LazyLock::new(|| memmem::Finder::new(b"\n\n"));
        let ends = CRLF_END.find(&bytes[from..]).is_some() || LF_END.find(&bytes[from..]).is_some();
        self.searched = bytes.len();
        if !ends {
            if bytes.len() > limits.max_header_bytes {
                return Judged::Bad(too_large(target, limits));
            }
            return Judged::Partial;
        }
        let mut fixed = [httparse::EMPTY_HEADER; crate::config::DEFAULT_MAX_HEADERS];
        let mut grown;
        let headers: &mut [httparse::Header<'_>] = if limits.max_headers <= fixed.len() {
            &mut fixed[..limits.max_headers]
        } else {
            grown = vec![httparse::EMPTY_HEADER; limits.max_headers];
            &mut grown
        };
        let mut request = httparse::Request::new(headers);
        let len = match request.parse(bytes) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Judged::Partial,
            Err(httparse::Error::TooManyHeaders) => {
                return Judged::Bad(refusal(
                    StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                    Reason::HeadTooLarge,
                    format!(
                        "the request has more than {} header fields (listen.max_headers); send fewer, or raise the bound",
                        limits.max_headers
                    ),
                    target,
                ))
            }
            Err(e) => return Judged::Bad(malformed(&e.to_string(), target)),
        };
        if len > limits.max_header_bytes {
            return Judged::Bad(too_large(target, limits));
        }
        let method = request.method.unwrap_or_default();
        let path = request.path.unwrap_or_default();
        if Method::from_bytes(method.as_bytes()).is_err() {
            return Judged::Bad(malformed("invalid method", target));
        }
        if Uri::try_from(path).is_err() {
            return Judged::Bad(malformed(
                "the request target is not a valid URI (RFC 3986)",
                target,
            ));
        }
        let http10 = request.version == Some(0);
        let mut length: Option<u64> = None;
        let mut chunked = None;
        let mut upgrade = method == "CONNECT";
        for h in request.headers.iter() {
            if h.name.eq_ignore_ascii_case("content-length") {
                match (digits(h.value), length) {
                    (Some(n), None) => length = Some(n),
                    (Some(n), Some(m)) if n == m => {}
                    _ => {
                        return Judged::Bad(malformed(
                            "its content-length is not a number, or differs from another one",
                            target,
                        ))
                    }
                }
            } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
                if http10 {
                    return Judged::Bad(malformed(
                        "transfer-encoding in an HTTP/1.0 request",
                        target,
                    ));
                }
                let last = h.value.rsplit(|b| *b == b',').next().unwrap_or_default();
                chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            } else if h.name.eq_ignore_ascii_case("upgrade") {
                upgrade = true;
            }
        }
        let next = match (chunked, length) {
            (Some(false), _) => {
                return Judged::Bad(malformed(
                    "its transfer-encoding does not end in chunked",
                    target,
                ))
            }
            // hyper follows a chunked body, and an upgraded connection is no longer HTTP/1.
            (Some(true), _) => Phase::Off,
            _ if upgrade => Phase::Off,
            (None, Some(n)) if n > 0 => Phase::Body(n),
            (None, _) => Phase::Head,
        };
        Judged::Sound { len, next }
    }
}

/// The same bounds on a decoded HTTP/2 head: its target, its header fields, and its size
/// as RFC 9113 §6.5.2 counts it (each field's name and value plus 32).
pub(crate) fn judge_h2(uri: &Uri, headers: &HeaderMap, limits: HeadLimits) -> Option<Refusal> {
    let target = uri
        .path_and_query()
        .map_or(uri.path(), |p| p.as_str())
        .as_bytes();
    if target.len() > limits.max_uri_bytes {
        return Some(too_long_target(target, limits));
    }
    if headers.len() > limits.max_headers {
        return Some(refusal(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Reason::HeadTooLarge,
            format!(
                "the request has more than {} header fields (listen.max_headers); send fewer, or raise the bound",
                limits.max_headers
            ),
            target,
        ));
    }
    let size: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 32)
        .sum::<usize>()
        + target.len();
    (size > limits.max_header_bytes).then(|| too_large(target, limits))
}

/// Where a read goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadTo {
    /// Straight to hyper, at most this many bytes.
    Hyper(usize),
    /// To the guard, to judge.
    Guard,
}

/// The request target of a head's (possibly partial) request line.
fn target_of(line: &[u8]) -> &[u8] {
    let Some(space) = memchr::memchr(b' ', line) else {
        return &[];
    };
    let rest = &line[space + 1..];
    let end = rest
        .iter()
        .position(|b| matches!(b, b' ' | b'\r' | b'\n'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// `content-length`'s value: digits only (no sign, no spaces), as hyper reads it.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(value).ok()?.parse().ok()
}

fn refusal(status: StatusCode, reason: Reason, message: String, target: &[u8]) -> Refusal {
    let path = &target[..target.len().min(TARGET_FOR_DIALECT)];
    let path = String::from_utf8_lossy(path);
    let path = path.split('?').next().unwrap_or_default();
    Refusal {
        status,
        reason,
        message,
        dialect: dialect_of(path, &HeaderMap::new()),
    }
}

fn too_long_target(target: &[u8], limits: HeadLimits) -> Refusal {
    refusal(
        StatusCode::URI_TOO_LONG,
        Reason::UriTooLong,
        format!(
            "the request target (path and query) is longer than {} bytes (listen.max_uri_bytes); send long data in the body",
            limits.max_uri_bytes
        ),
        target,
    )
}

fn too_large(target: &[u8], limits: HeadLimits) -> Refusal {
    refusal(
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        Reason::HeadTooLarge,
        format!(
            "the request head (request line and headers) is longer than {} bytes (listen.max_header_bytes); send smaller headers, or raise the bound",
            limits.max_header_bytes
        ),
        target,
    )
}

fn malformed(what: &str, target: &[u8]) -> Refusal {
    refusal(
        StatusCode::BAD_REQUEST,
        Reason::MalformedHead,
        format!(
            "the request head is malformed: {what}; the gateway takes HTTP/1.1 (RFC 9112) and h2c"
        ),
        target,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: HeadLimits = HeadLimits {
        max_header_bytes: 1024,
        max_uri_bytes: 64,
        max_headers: 8,
    };

    /// Feeds `chunks` and returns what hyper was given and the refusal, if any.
    fn feed(chunks: &[&[u8]]) -> (Vec<u8>, Option<(u64, Refusal)>) {
        let activity = Activity::new();
        let mut g = HeadGuard::new(LIMITS);
        let mut given = Vec::new();
        for chunk in chunks {
            match g.next_read() {
                Some(ReadTo::Guard) => g.read(chunk, &activity),
                Some(ReadTo::Hyper(n)) => {
                    assert!(chunk.len() <= n, "a read past the body");
                    given.extend_from_slice(chunk);
                    g.passed(chunk.len());
                }
                None => {}
            }
            let ready = g.ready().to_vec();
            g.gave(ready.len());
            given.extend(ready);
        }
        (given, activity.refusal_for_test())
    }

    #[test]
    fn sound_heads_and_bodies_pass_unchanged_however_they_are_cut() {
        let stream: &[u8] = b"\r\nPOST /v1/messages HTTP/1.1\r\ncontent-length: 5\r\n\r\nhello\
GET /healthz HTTP/1.1\r\nhost: x\r\n\r\nPOST /v1/chat/completions HTTP/1.1\r\ncontent-length: 2\r\n\r\n{}";
        for cut in 1..stream.len() {
            // One byte at a time up to `cut`, then the rest at once (bodies limited to
            // what is left of them, as the connection reads them).
            let mut at = 0;
            let activity = Activity::new();
            let mut g = HeadGuard::new(LIMITS);
            let mut given = Vec::new();
            while at < stream.len() {
                let want = if at < cut { 1 } else { stream.len() - at };
                let n = match g.next_read().unwrap() {
                    ReadTo::Guard => {
                        g.read(&stream[at..at + want], &activity);
                        want
                    }
                    ReadTo::Hyper(max) => {
                        let n = want.min(max);
                        given.extend_from_slice(&stream[at..at + n]);
                        g.passed(n);
                        n
                    }
                };
                at += n;
                let ready = g.ready().to_vec();
                g.gave(ready.len());
                given.extend(ready);
            }
            assert_eq!(given, stream, "cut at {cut}");
            assert!(activity.refusal_for_test().is_none());
        }
    }

    #[test]
    fn an_http2_preface_turns_the_guard_off() {
        let (given, refused) = feed(&[&H2_PREFACE[..10], &H2_PREFACE[10..], b"\0\0\0\x04\0"]);
        assert_eq!(given, [H2_PREFACE, b"\0\0\0\x04\0"].concat());
        assert!(refused.is_none());
    }

    #[test]
    fn each_bound_and_malformation_is_refused_in_the_paths_dialect() {
        let long_target = format!("GET /v1/messages?q={} HTTP/1.1\r\n", "a".repeat(100));
        let (given, r) = feed(&[long_target.as_bytes()]);
        let (at, r) = r.unwrap();
        assert_eq!(
            (at, r.status, r.dialect),
            (0, StatusCode::URI_TOO_LONG, Dialect::Messages)
        );
        assert_eq!(given, STAND_IN, "nothing of the refused head reaches hyper");

        let big = format!(
            "POST /v1beta/models/m:generateContent HTTP/1.1\r\nx: {}\r\n",
            "b".repeat(2000)
        );
        let (_, r) = feed(&[b"GET / HTTP/1.1\r\n\r\n", big.as_bytes()]);
        let (at, r) = r.unwrap();
        assert_eq!(
            (at, r.status, r.dialect),
            (
                1,
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                Dialect::Gemini
            )
        );
        assert!(
            r.message.contains("listen.max_header_bytes"),
            "{}",
            r.message
        );

        let many: String = (0..9).map(|i| format!("h{i}: v\r\n")).collect();
        let (_, r) = feed(&[format!("GET /v1/responses HTTP/1.1\r\n{many}\r\n").as_bytes()]);
        let (_, r) = r.unwrap();
        assert_eq!(
            (r.status, r.dialect),
            (
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                Dialect::Responses
            )
        );
        assert!(
            r.message.contains("more than 8 header fields"),
            "{}",
            r.message
        );

        for bad in [
            &b"GET /v1/chat/completions HTTP/1.1\r\nbad header\r\n\r\n"[..],
            b"GET /v1/chat/completions HTTP/9.9\r\n\r\n",
            b"G(T /v1/chat/completions HTTP/1.1\r\n\r\n",
            b"GET /v1/chat/\x7fcompletions HTTP/1.1\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: -1\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.1\r\ntransfer-encoding: gzip\r\n\r\n",
            b"POST /v1/chat/completions HTTP/1.0\r\ntransfer-encoding: chunked\r\n\r\n",
        ] {
            let (_, r) = feed(&[bad]);
            let (_, r) = r.unwrap_or_else(|| panic!("{}", String::from_utf8_lossy(bad)));
            assert_eq!(
                (r.status, r.dialect),
                (StatusCode::BAD_REQUEST, Dialect::Chat)
            );
            assert!(
                r.message.starts_with("the request head is malformed"),
                "{}",
                r.message
            );
        }
    }

    #[test]
    fn a_chunked_body_or_an_upgrade_hands_the_connection_to_hyper() {
        let huge = format!("GET /{} HTTP/1.1\r\n\r\n", "x".repeat(100));
        for first in [
            &b"POST /v1/chat/completions HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n",
        ] {
            let (given, r) = feed(&[first, huge.as_bytes()]);
            assert!(r.is_none());
            assert_eq!(given, [first, huge.as_bytes()].concat());
        }
    }
}
