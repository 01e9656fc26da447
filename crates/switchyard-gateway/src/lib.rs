//! `switchyard serve`: one HTTP endpoint that any OpenAI, Anthropic or Gemini client can
//! be pointed at. A request in the backend's own dialect is passed through with minimal
//! edits (the model id, `extra_body`, the backend's key); any other is translated through
//! the canonical types, streamed chunk by chunk. Every call is metered (`/metrics`, the
//! [`CallRecorder`] hook, and the store: a run directory of full call records when the
//! config names one), client keys, their rate limits and budgets are checked, bodies are
//! bounded, and a client that goes away cancels its upstream call.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use switchyard::env::ProcessEnv;
//! use switchyard::registry::Registry;
//! use switchyard_gateway::{start, Gateway, GatewayConfig};
//!
//! let gateway = Gateway::new(&GatewayConfig::default(), Registry::builtin()?, Arc::new(ProcessEnv))
//!     .map_err(|e| e.join("\n"))?;
//! let running = start(gateway, "127.0.0.1:0".parse()?).await?;
//! println!("OpenAI base URL: {}/v1", running.url());
//! running.shutdown().await?;
//! # Ok(()) }
//! ```

mod access_log;
mod budget_stop;
mod budgets;
pub mod cache;
mod call;
mod call_slots;
pub mod config;
mod connection;
mod console;
mod count_tokens;
mod deadlines;
mod embeddings;
pub mod envelope;
pub mod errors;
mod fallback;
mod guard;
mod head_guard;
mod host;
pub mod ids;
pub mod keys;
mod lanes;
pub mod limits;
mod listener;
mod listener_refusals;
mod meter;
pub mod metrics;
mod open_connections;
mod open_files;
mod otel;
mod passthrough;
mod path_dialect;
pub mod pg;
// Public for the fuzz targets in `fuzz/` only: not part of the crate's API.
#[doc(hidden)]
pub mod raw;
mod refusals;
mod request_body;
mod respond;
mod route_call;
mod routes;
mod server;
mod state;
mod store;
mod tasks;
mod translate;
mod upstream;

pub use config::{
    BudgetPeriod, GatewayConfig, KeySecret, KeySpec, StoreDurability, StoreOptions, MAX_LANES,
};
pub use metrics::{CallRecorder, CallSummary};
pub use routes::health::SERVICE;
pub use server::{check_exposure, probe, start, Gateway, RunningGateway};
pub use state::State;
pub use store::StoreHealth;
