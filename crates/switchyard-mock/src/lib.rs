//! A fake LLM provider speaking every Switchyard dialect — OpenAI chat completions and
//! Responses, Anthropic Messages, Google Gemini — scriptable by model name or scenario
//! file, with injected faults shaped like the real providers' errors. See `docs/mock.md`.
//!
//! ```no_run
//! # async fn demo() {
//! use switchyard_mock::MockServer;
//!
//! let mock = MockServer::start().await; // 127.0.0.1:<free port>
//! // Point a client at mock.base_url() (OpenAI style) or mock.url() (Anthropic, Gemini)
//! // and name a behaviour as the model: "echo", "tools", "think+cache",
//! // "fault-429-retry-1-then-ok", "cut-stream"…
//! for request in mock.requests() {
//!     println!("{} {} {:?}", request.method, request.path, request.header("authorization"));
//! }
//! # }
//! ```
//!
//! Replies are canonical [`switchyard_wire::Reply`] values encoded by the dialect's own
//! codec, so the mock speaks exactly what the codecs speak; error bodies are literal
//! JSON in each provider's shape ([`faults`]). Like the providers, the mock refuses
//! histories they refuse (forged or tampered signatures, which it issues verifiably
//! ([`signing`]), tool results without their calls, a thinking turn without its thinking,
//! an unsigned Gemini 3 call) with their 400 bodies, unless the model name says
//! `lenient` or [`MockConfig::enforce_history`] is false. Like the providers, it keeps
//! state between calls: stored Responses responses (`previous_response_id`,
//! `item_reference`, `GET`/`DELETE /v1/responses/{id}`) and Anthropic message threads,
//! per server and bounded by [`MockConfig::keep_state`].

pub mod agent;
pub mod answer;
pub mod behaviour;
mod body;
mod call;
pub mod cli_agent;
pub mod embeddings;
pub mod faults;
pub mod recorder;
mod routes;
mod rules;
pub mod scenario;
mod server;
pub mod signing;
mod state;
mod stateful;

pub use behaviour::{parse as parse_model, Behaviour, Fault, FaultSpec, GrammarError, RetryAfter};
pub use recorder::RecordedRequest;
pub use routes::BUILT_IN_MODELS;
pub use scenario::{MockConfig, Per, Scenario, ScenarioError, ScriptedCall, ScriptedReply, Step};
pub use server::{serve, MockServer};
pub use stateful::DEFAULT_KEEP_STATE;
