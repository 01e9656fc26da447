//! One connection's clock, for its header and idle deadlines.
//!
//! hyper's own `header_read_timeout` cannot be used for them: its clock starts whenever
//! hyper begins to wait for a head, which on a keep-alive connection is the moment the
//! previous response was written, so it bounds idle time and the next head with one
//! figure; and behind the HTTP/1-or-h2 sniffing of hyper-util's auto builder a connection
//! that sends nothing never reaches it (`tests/hyper_header_timeout.rs` shows both). So
//! the connection's socket and its service report what happens, and the connection's
//! task judges:
//!
//! - **header deadline**: a fresh connection must deliver its first request head within
//!   it, counted from the accept (a connection that sends nothing included); on a
//!   keep-alive HTTP/1 connection the next head must arrive within it from its first byte.
//! - **idle deadline**: a connection with no request in flight may wait that long after
//!   its last response for the next request's first byte (HTTP/2: for its next request).
//! - while a request is in flight neither runs: the body has its own deadline
//!   (`request_body.rs`) and a reply may stream for as long as the model writes.

use crate::transport::head_guard::{HeadGuard, ReadTo, Refusal};
use bytes::Bytes;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::Notify;

/// No head under way.
const NONE: u64 = u64::MAX;

/// What a connection has been doing, shared by its socket, its requests and its task
/// (HTTP/2 requests run on tasks of their own, hence atomics).
pub(crate) struct Activity {
    accepted: Instant,
    in_flight: AtomicU32,
    served: AtomicBool,
    multiplexed: AtomicBool,
    /// When the last request in flight ended (nanoseconds since `accepted`).
    last_done: AtomicU64,
    /// When the first byte after the last request's end arrived (`NONE`: none yet).
    head_started: AtomicU64,
    /// Requests started so far.
    requests: AtomicU64,
    /// A head the [`HeadGuard`] refused, and which request hyper will answer in its place.
    refusal: Mutex<Option<(u64, Refusal)>>,
    /// When a head was refused (`NONE`: never); the connection then lingers at most a
    /// header deadline, for the client to read the refusal, and closes.
    refused_at: AtomicU64,
    /// Set when the listener takes this idle connection's place for a new one.
    evicted: Notify,
    /// The socket has nothing for hyper, which waits for the next head with none of it
    /// read: hyper's connection may be dropped and the socket parked (`connection.rs`).
    awaiting_head: AtomicBool,
    /// The last write to the socket did not go through: hyper may still hold part of a
    /// response, and its connection must not be dropped.
    write_blocked: AtomicBool,
}

/// Which deadline is next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Due {
    /// The request head is late.
    Header,
    /// The connection has idled too long.
    Idle,
    /// A refused head's connection has lingered long enough.
    Linger,
}

impl Activity {
    /// A connection accepted now.
    pub(crate) fn new() -> Arc<Activity> {
        Arc::new(Activity {
            accepted: Instant::now(),
            in_flight: AtomicU32::new(0),
            served: AtomicBool::new(false),
            multiplexed: AtomicBool::new(false),
            last_done: AtomicU64::new(0),
            head_started: AtomicU64::new(NONE),
            requests: AtomicU64::new(0),
            refusal: Mutex::new(None),
            refused_at: AtomicU64::new(NONE),
            evicted: Notify::new(),
            awaiting_head: AtomicBool::new(false),
            write_blocked: AtomicBool::new(false),
        })
    }

    fn now(&self) -> u64 {
        self.accepted.elapsed().as_nanos() as u64
    }

    fn at(&self, nanos: u64) -> Instant {
        self.accepted + Duration::from_nanos(nanos)
    }

    /// Bytes arrived on the socket: between requests, the next head has begun.
    #[inline]
    fn bytes_read(&self) {
        if self.in_flight.load(Ordering::Relaxed) == 0
            && self.head_started.load(Ordering::Relaxed) == NONE
        {
            self.head_started.store(self.now(), Ordering::Relaxed);
        }
        self.awaiting_head.store(false, Ordering::Relaxed);
    }

    /// A request's head was read (the service was called); the returned guard ends it
    /// when dropped, with the response's body (or the request's future, if it never
    /// answered).
    /// Also returns the refusal this request stands in for, when it is the stand-in of a
    /// head the [`HeadGuard`] refused.
    pub(crate) fn request_started(self: &Arc<Self>, http2: bool) -> (InFlight, Option<Refusal>) {
        let index = self.requests.fetch_add(1, Ordering::Relaxed);
        let refusal = if self.refused_at.load(Ordering::Acquire) == NONE {
            None
        } else {
            let mut held = self.refusal.lock().unwrap_or_else(|p| p.into_inner());
            match held.take() {
                Some((at, r)) if at == index => Some(r),
                other => {
                    *held = other;
                    None
                }
            }
        };
        (self.started(http2), refusal)
    }

    fn started(self: &Arc<Self>, http2: bool) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::AcqRel);
        self.served.store(true, Ordering::Relaxed);
        self.head_started.store(NONE, Ordering::Relaxed);
        if http2 {
            self.multiplexed.store(true, Ordering::Relaxed);
        }
        InFlight(self.clone())
    }

    /// The head hyper will read as request number `index` was refused: that request is
    /// answered with `refusal`.
    pub(crate) fn refuse(&self, index: u64, refusal: Refusal) {
        *self.refusal.lock().unwrap_or_else(|p| p.into_inner()) = Some((index, refusal));
        self.refused_at.store(self.now(), Ordering::Release);
    }

    #[cfg(test)]
    pub(crate) fn refusal_for_test(&self) -> Option<(u64, Refusal)> {
        self.refusal.lock().unwrap().clone()
    }

    /// Since when the connection has been idle between requests (no request in flight,
    /// none begun), if it is: a connection the listener may close for a new one.
    pub(crate) fn idle_since(&self) -> Option<Instant> {
        let idle = self.in_flight.load(Ordering::Acquire) == 0
            && self.served.load(Ordering::Relaxed)
            && self.refused_at.load(Ordering::Relaxed) == NONE
            && (self.multiplexed.load(Ordering::Relaxed)
                || self.head_started.load(Ordering::Relaxed) == NONE);
        idle.then(|| self.at(self.last_done.load(Ordering::Relaxed)))
    }

    /// Requests started so far (heads given to hyper, the stand-in of a refused one
    /// included).
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Since when an HTTP/1 connection has been idle with nothing of it held by hyper or
    /// the head guard (no response part unwritten, no byte of a next head read), if it
    /// has: its hyper connection may be dropped and its socket kept alone.
    pub(crate) fn quiet_since(&self) -> Option<Instant> {
        if self.multiplexed.load(Ordering::Relaxed)
            || !self.awaiting_head.load(Ordering::Relaxed)
            || self.write_blocked.load(Ordering::Relaxed)
        {
            return None;
        }
        self.idle_since()
    }

    /// Asks the connection's task to close it (it was idle, and its place is taken).
    pub(crate) fn evict(&self) {
        self.evicted.notify_one();
    }

    /// Resolves once the connection is asked to close for a new one.
    pub(crate) async fn evicted(&self) {
        self.evicted.notified().await
    }

    /// The next deadline and which one it is; `None` while a request is in flight.
    pub(crate) fn next_deadline(&self, header: Duration, idle: Duration) -> Option<(Instant, Due)> {
        if self.in_flight.load(Ordering::Acquire) > 0 {
            return None;
        }
        let refused = self.refused_at.load(Ordering::Acquire);
        if refused != NONE {
            // From the refusal's answer (or the last answer pipelined before it).
            let answered = refused.max(self.last_done.load(Ordering::Relaxed));
            return Some((self.at(answered) + header, Due::Linger));
        }
        if !self.served.load(Ordering::Relaxed) {
            return Some((self.accepted + header, Due::Header));
        }
        let head = self.head_started.load(Ordering::Relaxed);
        // HTTP/2 sends frames between requests (pings, settings): only idling counts there.
        if head != NONE && !self.multiplexed.load(Ordering::Relaxed) {
            return Some((self.at(head) + header, Due::Header));
        }
        Some((
            self.at(self.last_done.load(Ordering::Relaxed)) + idle,
            Due::Idle,
        ))
    }
}

/// A request in flight on a connection; dropping it ends the request.
pub(crate) struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        let a = &self.0;
        if a.in_flight.fetch_sub(1, Ordering::AcqRel) == 1 {
            a.last_done.store(a.now(), Ordering::Relaxed);
        }
    }
}

/// The accepted socket, reporting reads to the connection's [`Activity`], and giving
/// hyper each HTTP/1 head only once the [`HeadGuard`] judged it.
pub(crate) struct Watched {
    tcp: TcpStream,
    activity: Arc<Activity>,
    guard: HeadGuard,
    /// The write side was shut (a refused connection lingering).
    shut: bool,
}

/// How much the guard reads from the socket at once, into a buffer left uninitialised
/// (`ReadBuf::uninit`): zeroing 8 KiB on every read cost ~34,000 instructions a call.
const GUARD_READ: usize = 8 * 1024;

impl Watched {
    /// Watches `tcp` for `activity`, its heads judged by `guard`.
    pub(crate) fn new(tcp: TcpStream, activity: Arc<Activity>, guard: HeadGuard) -> Watched {
        Watched {
            tcp,
            activity,
            guard,
            shut: false,
        }
    }

    /// Reads and drops what the client sends, until it closes (`Ready`) or has nothing
    /// more for now (`Pending`).
    fn poll_discard(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let mut sink = [MaybeUninit::<u8>::uninit(); GUARD_READ];
        loop {
            let mut buf = ReadBuf::uninit(&mut sink);
            ready!(Pin::new(&mut self.tcp).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        loop {
            let ready = this.guard.ready();
            if !ready.is_empty() {
                let n = ready.len().min(buf.remaining());
                buf.put_slice(&ready[..n]);
                this.guard.gave(n);
                return Poll::Ready(Ok(()));
            }
            match this.guard.next_read() {
                Some(ReadTo::Hyper(max)) => {
                    let before = buf.filled().len();
                    let polled = if max < buf.remaining() {
                        // A body's last bytes, read apart so that none of the next head
                        // (the guard's) is read with them.
                        let mut chunk = [MaybeUninit::<u8>::uninit(); GUARD_READ];
                        let mut part = ReadBuf::uninit(&mut chunk[..max.min(GUARD_READ)]);
                        let polled = Pin::new(&mut this.tcp).poll_read(cx, &mut part);
                        buf.put_slice(part.filled());
                        polled
                    } else {
                        Pin::new(&mut this.tcp).poll_read(cx, buf)
                    };
                    let n = buf.filled().len() - before;
                    if n > 0 {
                        this.activity.bytes_read();
                        this.guard.passed(n);
                    }
                    return polled;
                }
                Some(ReadTo::Guard) => {
                    let mut chunk = [MaybeUninit::<u8>::uninit(); GUARD_READ];
                    let mut read = ReadBuf::uninit(&mut chunk);
                    if Pin::new(&mut this.tcp)
                        .poll_read(cx, &mut read)?
                        .is_pending()
                    {
                        if this.guard.awaits_head() {
                            this.activity.awaiting_head.store(true, Ordering::Relaxed);
                        }
                        return Poll::Pending;
                    }
                    if read.filled().is_empty() {
                        // The client closed: hyper sees the end (a head cut short is its
                        // to drop, unanswered).
                        return Poll::Ready(Ok(()));
                    }
                    this.activity.bytes_read();
                    this.guard.read(read.filled(), &this.activity);
                }
                None => {
                    // Refused: nothing more for hyper, whose stand-in request closes the
                    // connection once answered.
                    ready!(this.poll_discard(cx))?;
                    return Poll::Pending;
                }
            }
        }
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.tcp).poll_write(cx, data);
        self.activity
            .write_blocked
            .store(written.is_pending(), Ordering::Relaxed);
        written
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let written = Pin::new(&mut self.tcp).poll_write_vectored(cx, bufs);
        self.activity
            .write_blocked
            .store(written.is_pending(), Ordering::Relaxed);
        written
    }

    fn is_write_vectored(&self) -> bool {
        self.tcp.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if !self.shut {
            ready!(Pin::new(&mut self.tcp).poll_shutdown(cx))?;
            self.shut = true;
        }
        if self.guard.refused() {
            // Closing with the client's bytes unread would send a reset, which can destroy
            // the refusal before the client reads it: wait for its end instead (at most
            // the linger deadline, kept by the connection's task).
            ready!(self.poll_discard(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

/// A response body that keeps its request in flight until it is dropped (after its last
/// byte, or when the client leaves).
pub(crate) struct Tracked {
    body: axum::body::Body,
    _in_flight: Option<InFlight>,
    _slot: Option<crate::transport::call_slots::CallSlot>,
}

impl Tracked {
    /// `body`, ending `in_flight` and giving `slot` back when dropped.
    pub(crate) fn new(
        body: axum::body::Body,
        in_flight: Option<InFlight>,
        slot: Option<crate::transport::call_slots::CallSlot>,
    ) -> Tracked {
        Tracked {
            body,
            _in_flight: in_flight,
            _slot: slot,
        }
    }
}

impl http_body::Body for Tracked {
    type Data = Bytes;
    type Error = axum::Error;

    #[inline]
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    #[inline]
    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    #[inline]
    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: Duration = Duration::from_secs(5);
    const I: Duration = Duration::from_secs(60);

    #[test]
    fn a_fresh_connection_owes_its_head_from_the_accept() {
        let a = Activity::new();
        let (at, due) = a.next_deadline(H, I).unwrap();
        assert_eq!((at, due), (a.accepted + H, Due::Header));
        // Its first bytes do not move the deadline.
        a.bytes_read();
        assert_eq!(
            a.next_deadline(H, I).unwrap(),
            (a.accepted + H, Due::Header)
        );
    }

    #[test]
    fn between_requests_the_idle_clock_runs_until_the_next_head_begins() {
        let a = Activity::new();
        let (request, _) = a.request_started(false);
        assert_eq!(a.next_deadline(H, I), None);
        a.bytes_read(); // the body: not a head
        drop(request);
        let (idle_until, due) = a.next_deadline(H, I).unwrap();
        assert_eq!(due, Due::Idle);
        assert!(idle_until >= a.accepted + I);
        a.bytes_read();
        let (head_until, due) = a.next_deadline(H, I).unwrap();
        assert_eq!(due, Due::Header);
        assert!(head_until < idle_until);
    }

    #[test]
    fn http2_connections_only_idle_between_requests() {
        let a = Activity::new();
        let ((one, _), (two, _)) = (a.request_started(true), a.request_started(true));
        drop(one);
        assert_eq!(a.next_deadline(H, I), None, "a stream is still open");
        drop(two);
        a.bytes_read(); // a ping
        assert_eq!(a.next_deadline(H, I).unwrap().1, Due::Idle);
    }

    #[test]
    fn only_a_connection_between_requests_is_idle_for_eviction() {
        let a = Activity::new();
        assert_eq!(
            a.idle_since(),
            None,
            "a fresh connection owes its first head"
        );
        let (request, _) = a.request_started(false);
        assert_eq!(a.idle_since(), None, "a request is in flight");
        drop(request);
        let since = a.idle_since().expect("between requests");
        assert!(since >= a.accepted);
        a.bytes_read();
        assert_eq!(a.idle_since(), None, "its next head has begun");
    }

    #[test]
    fn a_refused_head_lingers_a_header_deadline_after_its_answer_then_closes() {
        let a = Activity::new();
        let (earlier, _) = a.request_started(false);
        a.refuse(
            1,
            Refusal {
                status: axum::http::StatusCode::BAD_REQUEST,
                reason: crate::transport::refusals::Reason::MalformedHead,
                message: "bad".into(),
                dialect: switchyard::Dialect::Chat,
            },
        );
        assert_eq!(
            a.next_deadline(H, I),
            None,
            "the request before it still answers"
        );
        drop(earlier);
        let (stand_in, refusal) = a.request_started(false);
        assert_eq!(refusal.map(|r| r.message), Some("bad".to_string()));
        drop(stand_in);
        let (at, due) = a.next_deadline(H, I).unwrap();
        assert_eq!(due, Due::Linger);
        assert!(at <= Instant::now() + H);
        assert_eq!(
            a.idle_since(),
            None,
            "a refused connection is not kept for reuse"
        );
    }
}
