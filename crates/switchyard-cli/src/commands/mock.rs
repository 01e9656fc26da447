//! `switchyard mock`: the fake provider on a local port until ctrl-c.

use std::net::{Ipv4Addr, SocketAddr};

use switchyard_mock::{MockConfig, MockServer};

use crate::cli::MockArgs;

/// The port the built-in `mock` backend's base URL names.
const DEFAULT_PORT: u16 = 4010;

/// Runs `mock`.
pub(super) fn run(args: &MockArgs) -> Result<(), String> {
    let config = match &args.scenarios {
        Some(path) => {
            MockConfig::from_file(path).map_err(|e| format!("error: scenario file {e}"))?
        }
        None => MockConfig::default(),
    };
    // Nothing in this process reads the requests back: keep none, so a mock left running
    // for days stays the size it started.
    let config = MockConfig {
        keep_requests: 0,
        enforce_history: config.enforce_history && !args.lenient,
        ..config
    };
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        // Not `switchyard_mock::serve`: with `--port 0` the port is only known once bound,
        // and it is the one thing the user needs to be told.
        let server = MockServer::start_on_with(addr, config).await.map_err(|e| {
            format!(
                "error: the mock cannot listen on {addr}: {e}; pick another port with \
                     --port N (0 for any free one)"
            )
        })?;
        println!("{}", banner(server.addr()));
        tokio::signal::ctrl_c()
            .await
            .map_err(|e| format!("error: cannot wait for ctrl-c: {e}"))?;
        server.shutdown();
        Ok(())
    })
}

/// The one line printed at start: where the mock listens and how to call it.
fn banner(addr: SocketAddr) -> String {
    let base = format!("http://{addr}");
    let call = if addr.port() == DEFAULT_PORT {
        "switchyard ask mock/echo \"hello\"".to_string()
    } else {
        format!("MOCK_BASE_URL={base}/v1 switchyard ask mock/echo \"hello\"")
    };
    format!(
        "switchyard mock listening on {base} (OpenAI base URL {base}/v1); ctrl-c stops it; \
         try: {call}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_banner_says_how_to_reach_a_port_other_than_the_default() {
        let default = banner(SocketAddr::from((Ipv4Addr::LOCALHOST, DEFAULT_PORT)));
        assert!(default.contains("http://127.0.0.1:4010"), "{default}");
        assert!(
            default.ends_with("try: switchyard ask mock/echo \"hello\""),
            "{default}"
        );
        let other = banner(SocketAddr::from((Ipv4Addr::LOCALHOST, 5123)));
        assert!(
            other.contains("MOCK_BASE_URL=http://127.0.0.1:5123/v1 switchyard ask"),
            "{other}"
        );
    }
}
