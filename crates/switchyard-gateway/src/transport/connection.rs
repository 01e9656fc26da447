//! One accepted connection: HTTP/1.1 or h2c (prior knowledge) through hyper-util's auto
//! builder, every HTTP/1 head judged first ([`crate::transport::head_guard`]), every request counted
//! against the calls in flight ([`CallSlots`]), through the [`Guard`] and then the router,
//! and the connection's header and idle deadlines ([`crate::transport::deadlines`]) kept by its own
//! task, which also starts the graceful close when the gateway stops or the listener
//! takes this idle connection's place for a new one, and parks a kept-alive HTTP/1
//! connection idle for [`PARK_AFTER`]: hyper's connection dropped, the socket alone kept
//! until its next request, which a new hyper connection serves (`park.rs`; 20 KB of
//! memory per idle connection before, docs/performance.md).

use crate::errors::ApiError;
use crate::shared::Shared;
use crate::transport::call_slots::{CallSlot, CallSlots};
use crate::transport::deadlines::{Activity, Due, InFlight, Tracked, Watched};
use crate::transport::guard::{allow_origin, Guard, Verdict};
use crate::transport::head_guard::{judge_h2, HeadGuard, HeadLimits, Refusal};
use crate::transport::park;
use crate::transport::path_dialect::dialect_of;
use crate::transport::refusals::{self as refusals, Reason};
use crate::transport::tasks::TaskExecutor;
use crate::transport::trim::Trim;
use axum::http::{HeaderValue, Request, Response, StatusCode, Version};
use axum::response::IntoResponse;
use axum::routing::future::RouteFuture;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use std::convert::Infallible;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::{Duration, Instant};
use tokio::net::TcpStream;
use tokio::sync::watch;

/// What every connection of one listener shares.
pub(crate) struct Common {
    /// The routes.
    pub router: Router,
    /// What the handlers share (for the refusal counters).
    pub state: Arc<Shared>,
    /// Host, Origin, content type and CORS.
    pub guard: Guard,
    /// `listen.header_timeout_seconds`.
    pub header_timeout: Duration,
    /// `listen.idle_timeout_seconds`.
    pub idle_timeout: Duration,
    /// The connection cap, for the message of a connection refused at it.
    pub max_connections: usize,
    /// The calls in flight over every connection (`listen.max_calls_in_flight`).
    pub calls: Arc<CallSlots>,
    /// The bounds on a request head.
    pub head: HeadLimits,
    /// HTTP/1.1 and h2c, as `axum::serve` sets them up, hyper's own head timeout off.
    pub builder: auto::Builder<TaskExecutor>,
    /// The same, HTTP/1.1 only: for a parked connection's next request.
    pub resumed: auto::Builder<TaskExecutor>,
    /// Counts connections let go, for the memory given back after them.
    pub trim: Arc<Trim>,
}

/// What a connection is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Served.
    Serve,
    /// Over the connection cap: each request is answered 503, then the connection closes.
    Refuse,
}

/// How long a kept-alive HTTP/1 connection idles before it is parked: its hyper
/// connection (8–16 KiB of read buffer, 8 KiB of write buffer, its state) dropped and its
/// socket kept alone until its next request (`park.rs`). Calls back to back on a
/// connection never park it; a connection a client's pool keeps for later does.
const PARK_AFTER: Duration = Duration::from_secs(1);

/// hyper's connection, boxed: a parked connection's task keeps none of its room.
type Conn<'a> = Pin<Box<auto::Connection<'a, TokioIo<Watched>, Service, TaskExecutor>>>;

/// Serves `tcp` until it closes, misses a deadline, or the gateway stops (`stop`: finish
/// the request in flight, then close).
pub(crate) async fn serve(
    shared: Arc<Common>,
    tcp: TcpStream,
    activity: Arc<Activity>,
    mode: Mode,
    mut stop: watch::Receiver<bool>,
) {
    let header = shared.header_timeout;
    // A refused connection gets one request's worth of time, no keep-alive.
    let idle = match mode {
        Mode::Serve => shared.idle_timeout,
        Mode::Refuse => header,
    };
    let service = || Service {
        shared: shared.clone(),
        activity: activity.clone(),
        mode,
    };
    // The socket of the connection hyper serves, and the socket alone while parked: one
    // of the two at a time.
    let mut socket = park::socket_of(&tcp);
    let guard = HeadGuard::new(shared.head);
    let io = TokioIo::new(Watched::new(tcp, activity.clone(), guard));
    let mut conn: Option<Conn<'_>> = Some(Box::pin(shared.builder.serve_connection(io, service())));
    let mut parked: Option<TcpStream> = None;
    // Looked at within the park delay while hyper serves it, to park it once idle.
    let mut check = pin!(tokio::time::sleep(header.min(PARK_AFTER)));
    let mut stopping = false;
    loop {
        tokio::select! {
            biased;
            _ = served(&mut conn) => break,
            readable = next_request(&parked) => {
                let Some(tcp) = parked.take().filter(|_| readable) else { break };
                // Its next request: served by a new hyper connection, HTTP/1 only (a
                // parked connection is one).
                socket = park::socket_of(&tcp);
                let guard = HeadGuard::resumed(shared.head, activity.requests());
                let io = TokioIo::new(Watched::new(tcp, activity.clone(), guard));
                conn = Some(Box::pin(shared.resumed.serve_connection(io, service())));
            }
            _ = stop.wait_for(|s| *s), if !stopping => {
                stopping = true;
                match conn.as_mut() {
                    Some(conn) => conn.as_mut().graceful_shutdown(),
                    None => break,
                }
            }
            // Idle, and its place given to a new connection (counted by the listener):
            // closed now if still idle, else after the request that just began.
            _ = activity.evicted(), if !stopping => {
                stopping = true;
                match conn.as_mut() {
                    Some(conn) => conn.as_mut().graceful_shutdown(),
                    None => break,
                }
            }
            _ = check.as_mut() => {
                let now = Instant::now();
                let next = match activity.next_deadline(header, idle) {
                    Some((at, due)) if at <= now => {
                        // Dropping the connection closes the socket.
                        let reason = match due {
                            Due::Header => Some(Reason::HeaderTimeout),
                            Due::Idle => Some(Reason::IdleTimeout),
                            // Counted when its head was refused.
                            Due::Linger => None,
                        };
                        if let Some(reason) = reason {
                            shared.state.books.metrics.refusals().count(reason);
                        }
                        break;
                    }
                    Some((at, Due::Header | Due::Linger)) => at,
                    // A head may begin any moment: look again within a header deadline.
                    Some((at, Due::Idle)) => at.min(now + header),
                    // A request in flight may end any moment, starting the idle clock.
                    None => now + header,
                };
                let next = match &conn {
                    Some(hyper) if mode == Mode::Serve && !stopping => {
                        match activity.quiet_since() {
                            Some(since) if since + PARK_AFTER <= now => {
                                if let Ok(tcp) = park::take_back(hyper, socket) {
                                    conn = None;
                                    parked = Some(tcp);
                                    shared.trim.released();
                                }
                                next
                            }
                            // Once it idles, within the park delay or sooner.
                            Some(since) => next.min(since + PARK_AFTER),
                            None => next.min(now + PARK_AFTER),
                        }
                    }
                    _ => next,
                };
                check.as_mut().reset(next.into());
            }
        }
    }
    shared.trim.released();
}

/// Resolves when hyper's connection ends; never while there is none (parked).
async fn served(conn: &mut Option<Conn<'_>>) {
    match conn {
        Some(conn) => {
            let _ = conn.as_mut().await;
        }
        None => std::future::pending().await,
    }
}

/// Resolves when a parked connection's socket has something to read (its next request,
/// or its end): true, or false on an error; never while it is not parked.
async fn next_request(parked: &Option<TcpStream>) -> bool {
    match parked {
        Some(tcp) => tcp.readable().await.is_ok(),
        None => std::future::pending().await,
    }
}

/// The connection's hyper service: tracks each request, guards it, routes it.
struct Service {
    shared: Arc<Common>,
    activity: Arc<Activity>,
    mode: Mode,
}

impl hyper::service::Service<Request<Incoming>> for Service {
    type Response = Response<Tracked>;
    type Error = Infallible;
    type Future = Served;

    fn call(&self, request: Request<Incoming>) -> Served {
        let http1 = request.version() < Version::HTTP_2;
        let (in_flight, mut refused_head) = self.activity.request_started(!http1);
        if !http1 && refused_head.is_none() {
            refused_head = judge_h2(request.uri(), request.headers(), self.shared.head);
        }
        let in_flight = Some(in_flight);
        let refusals = self.shared.state.books.metrics.refusals();
        let mut slot = None;
        let (state, cors) = if let Some(refusal) = refused_head {
            // The stand-in of a head the head guard refused (whatever it says), or an
            // HTTP/2 head past the bounds: answered with the refusal.
            refusals.count(refusal.reason);
            (Step::Answered(Some(head_refused(refusal, http1))), None)
        } else if self.mode == Mode::Refuse {
            refusals.count(Reason::ConnectionCap);
            let refusal = at_the_cap(&request, self.shared.max_connections);
            (Step::Answered(Some(refusal)), None)
        } else if let Some(taken) = self.shared.calls.take() {
            slot = Some(taken);
            self.route(request, refusals)
        } else {
            refusals.count(Reason::CallsInFlight);
            let refusal = at_the_call_cap(&request, self.shared.calls.max());
            (Step::Answered(Some(refusal)), None)
        };
        Served {
            state,
            in_flight,
            slot,
            cors,
            http1,
        }
    }
}

impl Service {
    /// A request within the caps: through the guard, then the router.
    fn route(
        &self,
        request: Request<Incoming>,
        refusals: &crate::transport::refusals::Refusals,
    ) -> (Step, Option<HeaderValue>) {
        match self
            .shared
            .guard
            .check(request.method(), request.uri(), request.headers(), refusals)
        {
            Verdict::Answer(response) => (Step::Answered(Some(response)), None),
            Verdict::Pass { cors } => {
                let mut router = self.shared.router.clone();
                let routing = tower_service::Service::call(&mut router, request);
                (Step::Routing(routing), cors)
            }
        }
    }
}

/// The 503 a connection over the cap gets, in its path's dialect.
fn at_the_cap(request: &Request<Incoming>, cap: usize) -> axum::response::Response {
    let dialect = dialect_of(request.uri().path(), request.headers());
    let e: ApiError = refusals::error(
        dialect,
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the gateway is serving as many connections as it takes ({cap}, listen.max_connections); \
             try again in a moment, or keep a connection open and send requests on it"
        ),
    )
    .with_retry_after(Duration::from_secs(1));
    let mut r = e.into_response_for(dialect);
    r.headers_mut()
        .insert("connection", HeaderValue::from_static("close"));
    r
}

/// The 503 a request over the calls in flight gets, in its path's dialect.
fn at_the_call_cap(request: &Request<Incoming>, cap: usize) -> axum::response::Response {
    let dialect = dialect_of(request.uri().path(), request.headers());
    let e: ApiError = refusals::error(
        dialect,
        StatusCode::SERVICE_UNAVAILABLE,
        format!(
            "the gateway is serving as many calls as it takes at once ({cap}, listen.max_calls_in_flight); \
             try again in a moment"
        ),
    )
    .with_retry_after(Duration::from_secs(1));
    e.into_response_for(dialect)
}

/// The answer to a head the head guard refused, in its path's dialect; an HTTP/1
/// connection closes after it (what followed the head cannot be read as requests).
fn head_refused(refusal: Refusal, http1: bool) -> axum::response::Response {
    let e = refusals::error(refusal.dialect, refusal.status, refusal.message);
    let mut r = e.into_response_for(refusal.dialect);
    if http1 {
        r.headers_mut()
            .insert("connection", HeaderValue::from_static("close"));
    }
    r
}

/// A request's response on its way: answered by the listener, or from the router.
struct Served {
    state: Step,
    in_flight: Option<InFlight>,
    /// Its place among the calls in flight, given back with the response's body.
    slot: Option<CallSlot>,
    cors: Option<HeaderValue>,
    http1: bool,
}

enum Step {
    Answered(Option<axum::response::Response>),
    Routing(RouteFuture<Infallible>),
}

impl Future for Served {
    type Output = Result<Response<Tracked>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let mut response = match &mut this.state {
            Step::Answered(r) => r
                .take()
                .unwrap_or_else(|| StatusCode::INTERNAL_SERVER_ERROR.into_response()),
            Step::Routing(routing) => match ready!(Pin::new(routing).poll(cx)) {
                Ok(r) => r,
                Err(never) => match never {},
            },
        };
        // A 408 (the body deadline) closes the connection: the rest of the body may still
        // be on its way, and a client should not send another request behind it.
        if this.http1 && response.status() == StatusCode::REQUEST_TIMEOUT {
            response
                .headers_mut()
                .insert("connection", HeaderValue::from_static("close"));
        }
        if let Some(origin) = this.cors.take() {
            allow_origin(&mut response, origin);
        }
        let (in_flight, slot) = (this.in_flight.take(), this.slot.take());
        Poll::Ready(Ok(response.map(|body| Tracked::new(body, in_flight, slot))))
    }
}
