//! The built-in `mock` backend answered in this process, so that a gateway `serve` or
//! `bind` starts works with no key and no network: when the `mock` backend still points
//! where the built-ins say, a mock provider is started on a free loopback port and the
//! backend is pointed at it with an override.

use switchyard::registry::{Config, Layer};
use switchyard_mock::{MockConfig, MockServer};

/// True when the `mock` backend still points where the built-ins say (nobody set
/// `MOCK_BASE_URL`, a file or an override).
pub(super) fn is_builtin(config: &Config) -> bool {
    config
        .registry
        .backend("mock")
        .and_then(|b| b.base_url.as_ref())
        .is_some_and(|u| u.layer == Layer::Builtin)
}

/// Starts the mock when `config`'s `mock` backend is the built-in one; gives it (keep it
/// alive as long as it must answer) and the override that points the backend at it.
pub(super) async fn start(config: &Config) -> Result<Option<(MockServer, String)>, String> {
    if !is_builtin(config) {
        return Ok(None);
    }
    // Nothing reads the requests back: keep none, so a long `serve` stays bounded.
    let quiet = MockConfig {
        keep_requests: 0,
        ..MockConfig::default()
    };
    let mock = MockServer::start_on_with(([127, 0, 0, 1], 0).into(), quiet)
        .await
        .map_err(|e| format!("error: cannot start the built-in mock provider: {e}"))?;
    let point = format!("backends.mock.base_url={}", mock.base_url());
    Ok(Some((mock, point)))
}
