//! The gateway's accept loop, in place of `axum::serve`: `TCP_NODELAY` on every socket, a
//! cap on connections, each connection served with its deadlines (`connection.rs`) on
//! the runtime that accepted it or on a lane of its own (`lanes.rs`, as `switchyard
//! serve` runs), and a graceful drain whose deadline aborts what is left and records it
//! as cancelled.
//!
//! At the cap (`listen.max_connections`) the connection idle the longest between requests
//! is closed and its place given to the new one (`open_connections.rs`). When none is
//! idle, a new connection is still accepted, so that its client learns why instead of
//! waiting in the kernel's queue: up to [`OVERFLOW`] such connections at once have their
//! request read (under the header deadline) and answered 503 with `retry-after: 1` in the
//! path's dialect, then closed; past that they are closed at once. Either way they are
//! counted (`reason="connection_cap"`).
//!
//! Calls are bounded apart from connections (`listen.max_calls_in_flight`, over every
//! connection and stream, `call_slots.rs`), and each h2c connection advertises
//! `listen.max_streams_per_connection` as its `SETTINGS_MAX_CONCURRENT_STREAMS`.

use crate::config::GatewayConfig;
use crate::shared::Shared;
use crate::transport::call_slots::CallSlots;
use crate::transport::connection::{self, Common, Mode};
use crate::transport::deadlines::Activity;
use crate::transport::guard::Guard;
use crate::transport::head_guard::HeadLimits;
use crate::transport::lanes::Lanes;
use crate::transport::open_connections::OpenConnections;
use crate::transport::open_files::ConnectionCap;
use crate::transport::refusals::Reason;
use crate::transport::tasks::{TaskExecutor, Tasks};
use crate::transport::trim::Trim;
use axum::Router;
use hyper_util::server::conn::auto;
use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

/// Connections over the cap that are answered 503 at once (more are closed unanswered).
const OVERFLOW: usize = 64;

/// How long to wait before accepting again after an error that is not one connection's
/// (the open-file limit reached, typically): long enough not to spin, short enough that
/// a freed descriptor is soon used.
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

/// The listener's settings, from `listen:`.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// `header_timeout_seconds`.
    pub header_timeout: Duration,
    /// `idle_timeout_seconds`.
    pub idle_timeout: Duration,
    /// `drain_timeout_seconds`.
    pub drain_timeout: Duration,
    /// `max_connections`, fitted to the open-file limit.
    pub cap: ConnectionCap,
    /// `max_calls_in_flight`, fitted to the open-file limit.
    pub max_calls: usize,
    /// `max_streams_per_connection`.
    pub max_streams: u32,
    /// `max_header_bytes`, `max_uri_bytes`, `max_headers`.
    pub head: HeadLimits,
    /// `allowed_hosts`.
    pub allowed_hosts: Vec<String>,
    /// `cors_origins`.
    pub cors_origins: Vec<String>,
    /// Lanes to serve connections on (`lanes.rs`); 0: on the runtime that serves.
    pub lanes: usize,
    /// Whether lanes are pinned to cores (`listen.pin_lanes`).
    pub pin_lanes: bool,
}

impl Options {
    /// The settings of `config`.
    pub(crate) fn from_config(config: &GatewayConfig) -> Options {
        let cap = ConnectionCap::for_process(config.max_connections);
        Options {
            header_timeout: config.header_timeout,
            idle_timeout: config.idle_timeout,
            drain_timeout: config.drain_timeout,
            max_calls: cap.fit(config.max_calls_in_flight),
            cap,
            max_streams: config.max_streams_per_connection,
            head: HeadLimits {
                max_header_bytes: config.max_header_bytes,
                max_uri_bytes: config.max_uri_bytes,
                max_headers: config.max_headers,
            },
            allowed_hosts: config.allowed_hosts.clone(),
            cors_origins: config.cors_origins.clone(),
            // A gateway inside a program serves on that program's runtime unless its
            // config asks for lanes; `switchyard serve` asks for one per core by default.
            lanes: config.lanes.unwrap_or(0),
            pin_lanes: config.pin_lanes,
        }
    }
}

/// Serves `router` on `listener` until `shutdown` resolves; then stops accepting, lets
/// the requests in flight finish for up to the drain timeout, and aborts the rest (their
/// calls recorded as `cancelled`). Returns once every connection's task is gone.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    state: Arc<Shared>,
    options: &Options,
    shutdown: impl Future<Output = ()>,
) -> io::Result<()> {
    let local = listener.local_addr()?;
    let keyless = state.keys.is_empty();
    let tasks = Tasks::new();
    let mut builder = auto::Builder::new(TaskExecutor(tasks.clone()));
    // The connection's task keeps the header deadline (see deadlines.rs for why not hyper).
    builder.http1().header_read_timeout(None);
    // hyper's own head bounds stay above the head guard's (head_guard.rs), which refuses
    // first and in the client's dialect: they are only a backstop.
    builder
        .http1()
        .max_buf_size(HYPER_MAX_BUF.max(options.head.max_header_bytes + BACKSTOP_MARGIN));
    if options.head.max_headers > crate::config::DEFAULT_MAX_HEADERS {
        builder.http1().max_headers(options.head.max_headers);
    }
    builder
        .http2()
        .max_concurrent_streams(options.max_streams)
        .max_header_list_size(
            u32::try_from(options.head.max_header_bytes + BACKSTOP_MARGIN).unwrap_or(u32::MAX),
        );
    let resumed = builder.clone().http1_only();
    let trim = Arc::<Trim>::default();
    let shared = Arc::new(Common {
        router,
        state: state.clone(),
        guard: Guard::new(
            keyless,
            keyless && !local.ip().is_loopback(),
            &options.allowed_hosts,
            &options.cors_origins,
        ),
        header_timeout: options.header_timeout,
        idle_timeout: options.idle_timeout,
        max_connections: options.cap.effective,
        calls: CallSlots::new(options.max_calls),
        head: options.head,
        builder,
        resumed,
        trim: trim.clone(),
    });
    let served = Arc::new(Semaphore::new(options.cap.effective));
    let open = Arc::new(OpenConnections::default());
    let overflow = Arc::new(Semaphore::new(OVERFLOW));
    let lanes = match options.lanes {
        0 => None,
        n => Some(Lanes::start(n, options.pin_lanes).map_err(|e| {
            io::Error::other(format!("cannot start the gateway's {n} lane threads: {e}"))
        })?),
    };
    let (stop, stopped) = watch::channel(false);
    tokio::spawn(trim.run(stopped.clone()));
    let mut shutdown = pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.as_mut() => break,
            accepted = listener.accept() => accepted,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) if concerns_one_connection(&e) => continue,
            Err(e) => {
                tracing::error!(
                    "the gateway cannot accept connections on {local}: {e}; trying again"
                );
                tokio::select! {
                    _ = shutdown.as_mut() => break,
                    _ = tokio::time::sleep(ACCEPT_PAUSE) => continue,
                }
            }
        };
        // Without it a reused connection stalls ~40 ms per small reply (Nagle + delayed ACK).
        let _ = tcp.set_nodelay(true);
        let activity = Activity::new();
        let place = served.clone().try_acquire_owned().ok().or_else(|| {
            let place = open.evict_idlest();
            if place.is_some() {
                state.books.metrics.refusals().count(Reason::IdleEvicted);
            }
            place
        });
        let (permit, mode) = match place {
            // Its place is held by its entry, from which the listener may take it back.
            Some(p) => (
                (Some(open.register(activity.clone(), p)), None),
                Mode::Serve,
            ),
            None => match overflow.clone().try_acquire_owned() {
                Ok(p) => ((None, Some(p)), Mode::Refuse),
                Err(_) => {
                    state.books.metrics.refusals().count(Reason::ConnectionCap);
                    continue;
                }
            },
        };
        let (shared, stopped) = (shared.clone(), stopped.clone());
        match &lanes {
            Some(lanes) => {
                // Registered again from the lane: a socket's readiness is reported to the
                // runtime it was registered with, which would otherwise wake the lane
                // for every request on it.
                let Ok(tcp) = tcp.into_std() else { continue };
                let (lane, place) = lanes.choose();
                tasks.spawn_on(lane, async move {
                    if let Ok(tcp) = TcpStream::from_std(tcp) {
                        connection::serve(shared, tcp, activity, mode, stopped).await;
                    }
                    drop((permit, place));
                });
            }
            None => tasks.spawn(async move {
                connection::serve(shared, tcp, activity, mode, stopped).await;
                drop(permit);
            }),
        }
    }
    // Stop accepting at once: new connections are refused by the kernel from here on.
    drop(listener);
    let _ = stop.send(true);
    if tokio::time::timeout(options.drain_timeout, tasks.all_done())
        .await
        .is_err()
    {
        tracing::warn!(
            "{} connection task(s) still busy after the drain timeout of {:?}; aborting them, their calls are recorded as cancelled",
            tasks.live(),
            options.drain_timeout
        );
        // Set before the abort, so every meter dropped by it reads it.
        state.books.drain_expired.store(true, Ordering::SeqCst);
        tasks.abort();
        tasks.all_done().await;
    }
    if let Some(lanes) = lanes {
        // Joins the lanes' threads, which may take a moment: off the runtime's threads.
        let _ = tokio::task::spawn_blocking(move || drop(lanes)).await;
    }
    Ok(())
}

/// hyper's default bound on a connection's read buffer, under which a head must fit.
const HYPER_MAX_BUF: usize = 8192 + 4096 * 100;

/// How far hyper's and h2's own head bounds are set above `listen.max_header_bytes`.
const BACKSTOP_MARGIN: usize = 16 * 1024;

/// An accept error about one connection (it went away before it was accepted), not the
/// listener.
fn concerns_one_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionRefused
            | io::ErrorKind::Interrupted
    )
}
