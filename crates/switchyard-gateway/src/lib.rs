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

mod account;
mod call;
pub mod config;
mod conversations;
mod endpoints;
pub mod errors;
mod meter;
// Public for the fuzz targets in `fuzz/` only: not part of the crate's API.
#[doc(hidden)]
pub mod raw;
mod server;
mod shared;
mod store;
mod transport;

pub use account::{keys, limits};
pub use call::translate::{envelope, ids};
pub use config::{
    BudgetPeriod, GatewayConfig, KeySecret, KeySpec, StoreDurability, StoreOptions, MAX_LANES,
};
pub use endpoints::health::SERVICE;
pub use meter::metrics::{self, CallRecorder, CallSummary};
pub use server::{check_exposure, probe, start, Gateway, RunningGateway};
pub use store::{cache, pg, StoreHealth};
pub use transport::trim::set_allocator_give_back;
