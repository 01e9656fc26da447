//! `switchyard serve`: the gateway. With no config it serves the built-in backends; the
//! built-in `mock` backend is answered by a mock provider started in the same process
//! (unless its URL was changed), so a client or `curl` works with no key and no network.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use switchyard::env::ProcessEnv;
use switchyard::registry::Config;
use switchyard_gateway::{check_exposure, Gateway, GatewayConfig};

use crate::cli::ServeArgs;

/// Runs `serve` until SIGTERM, SIGHUP or ctrl-c, then drains calls in flight.
pub(super) fn run(run_config: Option<PathBuf>, args: &ServeArgs) -> Result<(), String> {
    // Kept to the end: dropping it flushes the log.
    let _log = super::serve_log::init();
    // Read before the runtime is built: `listen.lanes` decides its shape.
    let config = super::load(run_config.clone(), args.overrides.clone())?;
    let mut gateway_config = GatewayConfig::from_sections(&config.sections)
        .map_err(|e| super::problems("the gateway configuration", e))?;
    // Calls are served on the gateway's lanes (a thread per core, each a runtime of its
    // own); this runtime accepts connections, watches signals and closes the store. With
    // no lanes it serves the calls too, on a worker per core.
    let lanes = args
        .lanes
        .map(usize::from)
        .or(gateway_config.lanes)
        .unwrap_or_else(switchyard::internal::lanes::count);
    gateway_config.lanes = Some(lanes);
    let workers = if lanes == 0 {
        switchyard::internal::lanes::count()
    } else {
        1
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    runtime.block_on(serve(run_config, args, config, gateway_config))
}

async fn serve(
    run_config: Option<PathBuf>,
    args: &ServeArgs,
    mut config: Config,
    mut gateway_config: GatewayConfig,
) -> Result<(), String> {
    let mut overrides = args.overrides.clone();
    if let Some(n) = args.max_body_bytes {
        gateway_config.max_body_bytes = n;
    }
    // Kept to the end: dropping it sends the last spans (after the drain).
    let otel = super::otel::start(&config)?;
    let mut _mock = None;
    if !args.no_mock {
        if let Some((mock, point)) = super::builtin_mock::start(&config).await? {
            overrides.push(point);
            config = super::load(run_config, overrides)?;
            _mock = Some(mock);
        }
    }
    let addr: SocketAddr = match &args.listen {
        Some(text) => text.parse().map_err(|_| {
            format!("error: --listen `{text}` is not an address; write IP:PORT, e.g. 127.0.0.1:8080 or 0.0.0.0:8080")
        })?,
        None => gateway_config
            .listen
            .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080))),
    };
    // `--data-dir` wins over the config's `store:`; the store is opened (appending to the
    // calls already there) by the gateway.
    if let Some(dir) = args.data_dir.clone() {
        gateway_config.store = Some(dir);
    }
    if let Some(store) = &args.store {
        let mut pg = gateway_config.postgres.take().unwrap_or_default();
        pg.url = super::postgres::command_line_url(store)?;
        gateway_config.postgres = Some(pg);
    }
    let gateway =
        Gateway::new(&gateway_config, config.registry, Arc::new(ProcessEnv)).map_err(|errors| {
            format!(
                "error: the gateway cannot start; {} problem{}:\n  {}",
                errors.len(),
                if errors.len() == 1 { "" } else { "s" },
                errors.join("\n  ")
            )
        })?;
    check_exposure(addr, gateway.has_keys(), args.allow_public_without_keys)
        .map_err(|e| format!("error: {e}"))?;
    if let Some(warning) = gateway.connection_cap_warning() {
        let _ = writeln!(std::io::stderr(), "switchyard serve: {warning}");
    }
    let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
        format!("error: cannot listen on {addr}: {e}; pick another with --listen IP:PORT (port 0: any free one)")
    })?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("error: cannot read the bound address: {e}"))?;
    let recording = match gateway.store_dir() {
        Some(dir) => format!(
            "recording every call into {} (switchyard log stats {0})",
            dir.display()
        ),
        None => "not recording calls: pass --data-dir DIR (or `store:` in the config)".to_string(),
    };
    let recording = match gateway.postgres() {
        Some((url, replica)) => {
            format!("{recording}, shipped to the PostgreSQL store {url} as replica {replica} (switchyard log stats --store postgres)")
        }
        None => recording,
    };
    let recording = match &otel {
        Some(o) => format!(
            "{recording}\nexporting traces to {} over {} (metrics: switchyard_otel_spans_*)",
            o.url, o.protocol
        ),
        None => recording,
    };
    // Written, not `println!`ed: a reader that closed our standard output (a script that
    // read the first line) must not stop the gateway with a broken-pipe panic.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}\n{recording}",
        banner(bound, gateway.has_keys(), _mock.is_some())
    );
    let _ = out.flush();
    drop(out);
    let health = gateway.clone();
    gateway
        .serve(listener, shutdown_signal(gateway_config.drain_timeout))
        .await
        .map_err(|e| format!("error: the gateway stopped: {e}"))?;
    match health.store_health() {
        Some(h) if h.lost > 0 => Err(format!(
            "error: {} answered call{} could not be recorded in {}: {}",
            h.lost,
            if h.lost == 1 { "" } else { "s" },
            health
                .store_dir()
                .map_or_else(String::new, |d| d.display().to_string()),
            h.error.as_deref().unwrap_or("the store failed")
        )),
        _ => Ok(()),
    }
}

fn banner(addr: SocketAddr, keys: bool, mock: bool) -> String {
    let base = format!("http://{addr}");
    let mut out = format!(
        "switchyard serve listening on {base} (OpenAI base URL {base}/v1, Anthropic base URL {base}); \
         SIGTERM, SIGHUP or ctrl-c drains and stops it"
    );
    if !keys {
        out.push_str("; no client keys configured");
    }
    if mock {
        out.push_str(&format!(
            "\ntry: curl {base}/v1/chat/completions -H 'content-type: application/json' \
             -d '{{\"model\":\"mock/echo\",\"messages\":[{{\"role\":\"user\",\"content\":\"hello\"}}]}}'"
        ));
    }
    out
}

/// Resolves on SIGTERM, SIGHUP (the terminal `serve` ran in was closed) or ctrl-c: each
/// drains the same way.
async fn shutdown_signal(drain: std::time::Duration) {
    #[cfg(unix)]
    let why = {
        use tokio::signal::unix::{signal, Signal, SignalKind};
        async fn recv(signal: &mut Option<Signal>) {
            match signal {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hup = signal(SignalKind::hangup()).ok();
        tokio::select! {
            _ = recv(&mut term) => "SIGTERM",
            _ = recv(&mut hup) => "SIGHUP (its terminal closed?), handled as SIGTERM",
            _ = tokio::signal::ctrl_c() => "ctrl-c",
        }
    };
    #[cfg(not(unix))]
    let why = {
        let _ = tokio::signal::ctrl_c().await;
        "ctrl-c"
    };
    // Written, not `eprintln!`ed: after SIGHUP the terminal may be gone, and a failed
    // write must not panic in the middle of the drain.
    let _ = writeln!(
        std::io::stderr(),
        "switchyard serve: {why}: draining: no new connections; calls in flight may finish for up to {} s, then those still running are cancelled",
        drain.as_secs_f64()
    );
}
