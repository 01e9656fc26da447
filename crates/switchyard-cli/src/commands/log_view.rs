//! `switchyard log view DIR|--store postgres`: the web console over a run directory, a
//! gateway's data directory or the PostgreSQL store replicas share, served on 127.0.0.1
//! until ctrl-c (loopback `Host`s and origins only).

use super::log_source::{self, Source};
use crate::cli::LogViewArgs;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use switchyard_console::{CallSource, SqliteSource};

/// Runs `log view`.
pub(super) fn run(args: &LogViewArgs) -> Result<(), String> {
    let place = log_source::source(args.source.run_dir.as_ref(), args.source.store.as_deref())?;
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let source: Arc<dyn CallSource> = match place {
            Source::Dir(dir) => {
                Arc::new(SqliteSource::open(&dir).map_err(|e| format!("error: {e}"))?)
            }
            Source::Postgres(url) => super::postgres::console(&url).await?,
        };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            format!("error: cannot listen on {addr}: {e}; pick another port with --port N (0 for any free one)")
        })?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("error: cannot read the address listened on: {e}"))?;
        let url = format!("http://{local}/console");
        println!(
            "switchyard log view: {url} ({}); ctrl-c stops it",
            source.describe()
        );
        if args.open {
            open_browser(&url);
        }
        // Ctrl-C or SIGTERM: a graceful stop, so a temporary index is removed.
        let stop = async {
            #[cfg(unix)]
            {
                use tokio::signal::unix::{signal, SignalKind};
                match signal(SignalKind::terminate()) {
                    Ok(mut term) => {
                        tokio::select! {
                            _ = tokio::signal::ctrl_c() => {}
                            _ = term.recv() => {}
                        }
                    }
                    Err(_) => {
                        let _ = tokio::signal::ctrl_c().await;
                    }
                }
            }
            #[cfg(not(unix))]
            let _ = tokio::signal::ctrl_c().await;
        };
        switchyard_console::serve_alone(listener, source, stop)
            .await
            .map_err(|e| format!("error: the console stopped: {e}"))
    })
}

/// Starts the desktop's browser on `url`; says so on stderr when there is none (the URL
/// is printed anyway).
fn open_browser(url: &str) {
    let program = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(program)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        // Reaped on a thread of its own, so no zombie stays behind while the console runs.
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(e) => {
            eprintln!("could not start {program} to open the browser ({e}); open {url} yourself")
        }
    }
}
