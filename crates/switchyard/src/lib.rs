//! Switchyard: name, reach, meter, record and replay every LLM a program calls.
//!
//! A model is named by a reference, `<backend>/<model id>`. The backend comes from the
//! layered registry (built-ins, your `backends.yaml`, the run config, overrides,
//! `<NAME>_BASE_URL`); the library speaks that backend's wire dialect and gives back one
//! canonical [`Reply`] whatever the provider.
//!
//! # A call
//!
//! ```no_run
//! # async fn demo() -> switchyard::Result<()> {
//! use switchyard::{Llm, Request};
//!
//! // `switchyard mock` serves the built-in `mock` backend on 127.0.0.1:4010.
//! let llm = Llm::from_reference("mock/echo")?;
//! let reply = llm
//!     .complete(Request::user("hello").with_system("be brief"))
//!     .await?;
//! println!("{}", reply.text());
//! let usage = reply.usage.unwrap_or_default();
//! println!("{} tokens in ({} cached), {} out", usage.input, usage.cached_input, usage.output);
//! # Ok(()) }
//! ```
//!
//! # A streamed call
//!
//! ```no_run
//! # async fn demo() -> switchyard::Result<()> {
//! use futures::StreamExt;
//! use switchyard::{Event, Llm, Request};
//!
//! let llm = Llm::from_reference("mock/think")?;
//! let mut stream = llm.stream(Request::user("why is the sky blue?")).await?;
//! while let Some(event) = stream.next().await {
//!     match event? {
//!         Event::TextDelta { text, .. } => print!("{text}"),
//!         Event::ThinkingDelta { text, .. } => eprint!("{text}"),
//!         _ => {}
//!     }
//! }
//! // The whole reply, assembled as it streamed, with every raw byte received.
//! let reply = stream.reply();
//! # let _ = reply;
//! # Ok(()) }
//! ```
//!
//! # A run with roles
//!
//! A run config names a model and settings per role; [`Run::open`] resolves and checks
//! them all at once (every problem listed, before anything is spent), and each role gets
//! its handle. See [`run`] and `docs/configuration.md`.
//!
//! ```no_run
//! # async fn demo() -> switchyard::Result<()> {
//! // run.yaml:
//! //   model: mock/echo                       # the default of roles that name none
//! //   llm:
//! //     planner: {model: mock/think, max_tokens: 2000, reasoning_effort: high}
//! //     reviewer: anthropic/sonnet
//! //     summarizer: {temperature: 0.2}
//! use switchyard::{Request, Run};
//!
//! let run = Run::builder("run.yaml")
//!     .overrides(["llm.reviewer.model=mock/echo"]) // as on the command line
//!     .open()?;
//! let plan = run.llm("planner")?.complete(Request::user("plan the work")).await?;
//! let review = run
//!     .llm("reviewer")?
//!     .complete(Request::user(format!("review: {}", plan.text())))
//!     .await?;
//! # let _ = review;
//! // A script without a config: the model named by SWITCHYARD_MODEL.
//! let llm = switchyard::llm(None)?;
//! # let _ = llm;
//! # Ok(()) }
//! ```
//!
//! # Routes
//!
//! A route (`routes:` in the registry's layers, see `docs/routing.md`) names several
//! references with a policy: fallback in order, weighted, or least busy, with cooldowns.
//! Its name is taken wherever a reference is — [`Llm::resolve`], a role's `model` — and
//! the handle tries the members in turn ([`router`]), recording one call with every
//! attempt on every member and the member that served ([`CallOutcome::member`]).
//!
//! # Errors
//!
//! Every failure is an [`Error`] whose [`Error::kind`] a program can match on: a quota
//! that is exhausted is [`Error::ProviderQuotaExhausted`], never a rate limit; a context
//! overflow carries its numbers; a provider error keeps its status, request id and body.
//! Rate limits are waited out (30 s, 60 s, 120 s) and malformed replies asked again (5 s,
//! 30 s) by the handle's [`RetryPolicy`]; [`Llm::complete_detailed`] gives every
//! [`Attempt`]. `docs/errors.md` has the table.

mod attempt;
pub mod backend;
pub mod bind;
pub mod budget;
pub mod cache;
mod config_error;
pub mod connect;
mod context_check;
pub mod embed;
pub mod env;
pub mod error;
// For the workspace's other crates only (the gateway, the command line, the console), not
// an interface for programs: left out of the API docs so nobody mistakes it for one.
#[doc(hidden)]
pub mod internal;
mod llm;
pub mod model_id;
mod policy;
pub mod record;
mod reference;
pub mod registry;
mod reply_check;
mod reply_stream;
pub mod retry;
pub mod router;
pub mod run;
mod seconds;
mod secrets;
mod sleep;
mod text;
pub mod trace;

pub use attempt::{Attempt, CallOutcome};
pub use backend::replay::{ReplayBackend, ReplayLog};
pub use backend::{Backend, Call};
pub use budget::{Budget, BudgetTracker};
pub use config_error::{ConfigError, ConfigErrors, ConfigProblem, Location};
pub use error::{Error, ErrorKind, ProviderDetails, ReplyBound, Result, TimeoutPhase};
pub use llm::Llm;
pub use policy::CallPolicy;
pub use record::{CallRecord, Recorder, RecorderOptions, RunInfo};
pub use reference::{Parsed, Reference, ReferenceError};
pub use registry::{Config, Layer, LoadOptions, Registry, Resolved};
pub use reply_check::check_reply;
pub use reply_stream::{Chunk, ReplyStream};
pub use retry::{retry_hint, RetryPolicy, RetryReason};
pub use run::{llm, Run};
pub use sleep::{RecordingSleeper, Sleeper, TokioSleeper};
pub use switchyard_wire as wire;
pub use switchyard_wire::{
    Dialect, Event, FinishReason, Message, Part, Reply, Request, Role, Usage,
};
pub use tokio_util::sync::CancellationToken;
