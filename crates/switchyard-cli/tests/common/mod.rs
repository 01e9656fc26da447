//! Running the built binary in a clean environment, and a mock provider beside it.

#![allow(dead_code)]

pub(crate) mod doors;
pub(crate) mod serving;

use std::path::Path;
use std::process::{Command, Output};

use switchyard_mock::{MockConfig, MockServer};

/// The binary with an empty environment except PATH, HOME and XDG_CONFIG_HOME in `home`,
/// so the developer's real keys and backends file never matter.
pub(crate) fn switchyard(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_switchyard"));
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join("config"));
    c
}

/// What a finished run printed.
pub(crate) struct Run {
    pub ok: bool,
    pub code: Option<i32>,
    pub out: String,
    pub err: String,
}

/// Runs `c` to its end.
pub(crate) fn run(c: &mut Command) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = c.output().expect("the binary runs");
    Run {
        ok: status.success(),
        code: status.code(),
        out: String::from_utf8_lossy(&stdout).into_owned(),
        err: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// A mock provider on its own thread (the binary runs while the test blocks).
pub(crate) fn mock() -> MockServer {
    MockServer::start_in_thread(([127, 0, 0, 1], 0).into(), MockConfig::default())
        .expect("a loopback port for the mock")
}

/// The override pointing the `mock` backend at `mock`.
pub(crate) fn mock_override(mock: &MockServer) -> String {
    format!("backends.mock.base_url={}", mock.base_url())
}
pub(crate) mod stand_in;
