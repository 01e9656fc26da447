//! Handles on the mock provider, one per dialect, with a sleeper that records waits.

#![allow(dead_code)]

use std::sync::Arc;
use switchyard::backend::http::Timeouts;
use switchyard::env::MapEnv;
use switchyard::registry::{LoadOptions, Registry};
use switchyard::{connect, Dialect, Llm, RecordingSleeper, RetryPolicy};
use switchyard_mock::MockServer;

/// A handle on the mock's `model` in `dialect`, its waits recorded by the returned
/// sleeper, with the default retry policy and the given timeouts.
pub fn handle(
    mock: &MockServer,
    dialect: Dialect,
    model: &str,
    timeouts: Timeouts,
) -> (Llm, RecordingSleeper) {
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let mut options = LoadOptions::new(&env);
    options.user_file = false;
    let registry = Registry::load(&options).expect("the built-in registry loads");
    let backend = registry
        .backend("mock")
        .expect("the mock backend is built in");
    let http = connect::http_backend_with(backend, model, Some(dialect), &env, timeouts)
        .expect("the mock backend connects");
    let sleeper = RecordingSleeper::new();
    let llm = Llm::new(format!("mock/{model}"), Arc::new(http), model)
        .with_retry(RetryPolicy::default())
        .with_sleeper(Arc::new(sleeper.clone()));
    (llm, sleeper)
}

/// The default timeouts of a connected backend.
pub fn default_timeouts() -> Timeouts {
    connect::DEFAULT_TIMEOUTS
}

/// Every dialect the mock speaks.
pub const DIALECTS: [Dialect; 4] = [
    Dialect::Chat,
    Dialect::Responses,
    Dialect::Messages,
    Dialect::Gemini,
];
