//! Starting and stopping the mock: `MockServer` for tests and programs, `serve` for the
//! command line.

use crate::recorder::RecordedRequest;
use crate::routes;
use crate::scenario::MockConfig;
use crate::state::Shared;
use axum::serve::ListenerExt;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// A running mock provider. Stops when dropped.
///
/// ```no_run
/// # async fn demo() {
/// let mock = switchyard_mock::MockServer::start().await;
/// let url = format!("{}/chat/completions", mock.base_url());
/// // … POST {"model":"echo","messages":[…]} to `url` …
/// assert!(mock.requests().len() <= 1);
/// # }
/// ```
#[derive(Debug)]
pub struct MockServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
    /// The thread running the server, for [`MockServer::start_in_thread`].
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockServer {
    /// Starts on `127.0.0.1:<free port>` with no scenarios.
    ///
    /// # Panics
    /// When no loopback port can be bound (a broken test machine); use
    /// [`MockServer::start_on`] to handle that as an error.
    pub async fn start() -> MockServer {
        Self::start_with(MockConfig::default()).await
    }

    /// Starts on `127.0.0.1:<free port>` with `config`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start_with(config: MockConfig) -> MockServer {
        match Self::start_on_with(SocketAddr::from(([127, 0, 0, 1], 0)), config).await {
            Ok(server) => server,
            Err(e) => panic!("switchyard-mock cannot bind a loopback port: {e}"),
        }
    }

    /// Starts on `addr` with no scenarios.
    pub async fn start_on(addr: SocketAddr) -> io::Result<MockServer> {
        Self::start_on_with(addr, MockConfig::default()).await
    }

    /// Starts on `addr` with `config`.
    pub async fn start_on_with(addr: SocketAddr, config: MockConfig) -> io::Result<MockServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared::new(config, stopped.clone()));
        tokio::spawn(run(listener, shared.clone(), stopped));
        Ok(MockServer {
            addr,
            shared,
            stop,
            thread: None,
        })
    }

    /// Starts on `addr` in a thread of its own with its own runtime: for synchronous
    /// tests, or async tests that block (running a subprocess against the mock on a
    /// current-thread runtime would otherwise starve it). Dropping the server stops the
    /// thread and waits for it.
    pub fn start_in_thread(addr: SocketAddr, config: MockConfig) -> io::Result<MockServer> {
        let std_listener = std::net::TcpListener::bind(addr)?;
        std_listener.set_nonblocking(true)?;
        let addr = std_listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let (stop, stopped) = watch::channel(false);
        let shared = Arc::new(Shared::new(config, stopped.clone()));
        let listener = {
            let _guard = runtime.enter();
            TcpListener::from_std(std_listener)?
        };
        let server_state = shared.clone();
        let thread = std::thread::Builder::new()
            .name("switchyard-mock".into())
            .spawn(move || runtime.block_on(run(listener, server_state, stopped)))?;
        Ok(MockServer {
            addr,
            shared,
            stop,
            thread: Some(thread),
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The origin, e.g. `http://127.0.0.1:41234` (Anthropic and Gemini base URLs).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The origin plus `/v1` (OpenAI-style base URLs).
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url())
    }

    /// The requests received so far, in arrival order: the latest
    /// [`MockConfig::keep_requests`] of them (1,000 unless configured).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.recorder.all()
    }

    /// How many requests were received so far, including those no longer kept.
    pub fn received(&self) -> u64 {
        self.shared.recorder.received()
    }

    /// Forgets recorded requests and resets every attempt counter (`-then-ok` faults and
    /// scenario steps start over).
    pub fn clear(&self) {
        self.shared.recorder.clear();
        self.shared.reset_counters();
    }

    /// Stops the server: no new connections; hanging replies end.
    pub fn shutdown(&self) {
        let _ = self.stop.send(true);
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        self.shutdown();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn run(listener: TcpListener, shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    // TCP_NODELAY: without it a reused connection stalls ~40 ms per request.
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let app = routes::router(shared);
    let _ = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        })
        .await;
}

/// Runs the mock on `addr` until ctrl-c (for `switchyard mock`). Prints nothing; to
/// learn a port chosen by the system, use [`MockServer::start_on_with`] instead and wait
/// for ctrl-c yourself.
pub async fn serve(addr: SocketAddr, config: MockConfig) -> io::Result<()> {
    let server = MockServer::start_on_with(addr, config).await?;
    tokio::signal::ctrl_c().await?;
    server.shutdown();
    Ok(())
}
