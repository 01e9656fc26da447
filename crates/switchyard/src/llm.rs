//! The handle a program calls: one model on one backend, with its call policy (retries,
//! timeouts, the context check) and a cancellation token.

use crate::attempt::CallOutcome;
use crate::backend::{Backend, Call};
use crate::error::{Error, Result};
use crate::policy::CallPolicy;
use crate::reply_stream::ReplyStream;
use crate::retry::{RetryLoop, RetryPolicy};
use crate::sleep::{Sleeper, TokioSleeper};
use std::sync::Arc;
use std::time::Instant;
use switchyard_wire::{FinishReason, Part, Reply, Request};
use tokio_util::sync::CancellationToken;

/// A model to call: a backend and the model id on it.
///
/// ```no_run
/// # async fn demo() -> switchyard::Result<()> {
/// use switchyard::{Llm, Request};
/// let llm = Llm::from_reference("mock/echo")?;
/// let reply = llm.complete(Request::user("hello")).await?;
/// println!("{} ({} tokens out)", reply.text(), reply.usage.unwrap_or_default().output);
/// # Ok(()) }
/// ```
///
/// Each call goes through the retry loop of the handle's [`CallPolicy`] (rate limits
/// waited out, malformed replies asked again) and, when the backend declares a context
/// window, the context check before sending. Clones share the backend, the sleeper and
/// the cancellation token.
#[derive(Clone)]
pub struct Llm {
    label: String,
    model: String,
    backend: Arc<dyn Backend>,
    policy: Arc<CallPolicy>,
    context_window: Option<u64>,
    sleeper: Arc<dyn Sleeper>,
    cancel: CancellationToken,
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("label", &self.label)
            .field("model", &self.model)
            .field("backend", &self.backend.name())
            .field("policy", &self.policy)
            .field("context_window", &self.context_window)
            .finish()
    }
}

impl Llm {
    /// A handle on `backend` for `model` with the default policy; `label` names it in
    /// messages (usually the reference as written).
    pub fn new(
        label: impl Into<String>,
        backend: Arc<dyn Backend>,
        model: impl Into<String>,
    ) -> Self {
        Llm {
            label: label.into(),
            model: model.into(),
            backend,
            policy: Arc::new(CallPolicy::default()),
            context_window: None,
            sleeper: Arc::new(TokioSleeper),
            cancel: CancellationToken::new(),
        }
    }

    /// The same handle with another call policy. Its timeouts apply to backends made
    /// from it ([`Llm::resolve_with`]); an existing backend keeps its own.
    pub fn with_policy(mut self, policy: CallPolicy) -> Self {
        self.policy = Arc::new(policy);
        self
    }

    /// The same handle with another retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        Arc::make_mut(&mut self.policy).retry = retry;
        self
    }

    /// The same handle checking requests against a context window of `tokens` (the
    /// registry's `context_window`), or not at all with `None`.
    pub fn with_context_window(mut self, tokens: Option<u64>) -> Self {
        self.context_window = tokens;
        self
    }

    /// The same handle waiting through `sleeper` between attempts (tests pass a
    /// [`crate::RecordingSleeper`] so that no wait is real).
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// The same handle cancelled by `token` (share one token across the handles of a
    /// run to stop them all).
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = token;
        self
    }

    /// The token that cancels this handle's calls: `cancel()` ends a wait between
    /// attempts, or an attempt in flight, with [`Error::Cancelled`]. A cancelled token
    /// stays cancelled; give the handle a new one to call again.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancel
    }

    /// The call policy.
    pub fn policy(&self) -> &CallPolicy {
        &self.policy
    }

    /// The context window requests are checked against, if any.
    pub fn context_window(&self) -> Option<u64> {
        self.context_window
    }

    /// The reference or label the handle was made from.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The model id on the backend.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Sends a request and waits for the whole reply, retrying as the policy says.
    pub async fn complete(&self, request: Request) -> Result<Reply> {
        self.complete_detailed(request).await.result
    }

    /// Sends a request and streams the reply. Failures before the first output are
    /// retried as the policy says; once output began a failure is never re-sent: the
    /// stream ends with the error and [`ReplyStream::reply`] keeps what came.
    pub async fn stream(&self, request: Request) -> Result<ReplyStream> {
        self.stream_detailed(request).await.result
    }

    /// [`Llm::complete`], with every attempt it took (for the call log).
    pub async fn complete_detailed(&self, request: Request) -> CallOutcome<Reply> {
        let call = match self.prepare(request) {
            Ok(call) => call,
            Err(e) => return not_sent(e),
        };
        let name = self.backend.name();
        self.retry_loop()
            .run(|| async {
                let result = match self.backend.complete(&call).await {
                    Ok(reply) => check_reply(name, &reply).map(|()| reply),
                    Err(e) => Err(e),
                };
                (result, None)
            })
            .await
    }

    /// [`Llm::stream`], with every attempt it took. The last attempt's `duration` runs
    /// to the stream's first output; how the stream ends is the stream's to tell.
    pub async fn stream_detailed(&self, request: Request) -> CallOutcome<ReplyStream> {
        let call = match self.prepare(request) {
            Ok(call) => call,
            Err(e) => return not_sent(e),
        };
        let name = self.backend.name();
        self.retry_loop()
            .run(|| async {
                let sent = Instant::now();
                let mut stream = match self.backend.stream(&call).await {
                    Ok(stream) => stream.check_at_end(name),
                    Err(e) => return (Err(e), None),
                };
                match stream.start().await {
                    Ok(()) => (Ok(stream), Some(sent.elapsed())),
                    Err(e) => (Err(e), None),
                }
            })
            .await
    }

    /// The call, after the context check.
    fn prepare(&self, request: Request) -> Result<Call> {
        if let (true, Some(window)) = (self.policy.context_check, self.context_window) {
            crate::context_check::check(&self.label, &request, window)?;
        }
        Ok(Call {
            model: self.model.clone(),
            request,
        })
    }

    fn retry_loop(&self) -> RetryLoop<'_> {
        RetryLoop {
            backend: self.backend.name(),
            policy: &self.policy.retry,
            sleeper: self.sleeper.as_ref(),
            cancel: &self.cancel,
        }
    }
}

fn not_sent<T>(error: Error) -> CallOutcome<T> {
    CallOutcome {
        result: Err(error),
        attempts: Vec::new(),
    }
}

/// A success that is not a reply: no text and no tool calls (unless the output limit cut
/// it short while thinking), or no token usage.
pub fn check_reply(backend: &str, reply: &Reply) -> Result<()> {
    let has_answer = reply.content.iter().any(|p| match p {
        Part::Text { text, .. } => !text.is_empty(),
        Part::ToolCall(_) => true,
        _ => false,
    });
    let reason = if !has_answer && reply.finish != FinishReason::Length {
        "the reply has neither text nor tool calls"
    } else if reply.usage.is_none() {
        "the reply has no token usage"
    } else {
        return Ok(());
    };
    Err(Error::ProviderReplyMalformed {
        backend: backend.to_string(),
        reason: reason.to_string(),
        attempts: 1,
        body: reply.raw.clone(),
    })
}

impl Llm {
    /// A handle for a reference such as `mock/echo` or `openai/gpt-5.4`, resolved against
    /// the built-in backends, the user's file and the environment.
    pub fn from_reference(reference: &str) -> Result<Llm> {
        let env = crate::env::ProcessEnv;
        let registry = crate::registry::Registry::load(&crate::registry::LoadOptions::new(&env))
            .map_err(|e| Error::Config(e.to_string()))?;
        Llm::resolve(&registry, reference, &env)
    }

    /// A handle for a reference resolved against `registry`, reading keys from `env`,
    /// with the default call policy.
    pub fn resolve(
        registry: &crate::registry::Registry,
        reference: &str,
        env: &dyn crate::env::EnvSource,
    ) -> Result<Llm> {
        Llm::resolve_with(registry, reference, env, CallPolicy::default())
    }

    /// A handle for a reference with `policy` (retries, timeouts, the context check);
    /// the context window is the backend's `context_window`.
    pub fn resolve_with(
        registry: &crate::registry::Registry,
        reference: &str,
        env: &dyn crate::env::EnvSource,
        policy: CallPolicy,
    ) -> Result<Llm> {
        let resolved = registry
            .require_reference(reference)
            .map_err(reference_error)?;
        let backend = registry
            .backend(&resolved.backend)
            .ok_or_else(|| Error::Config(format!("backend `{}` vanished", resolved.backend)))?;
        let callable =
            crate::connect::backend_with(backend, &resolved.model, env, policy.timeouts())?;
        Ok(Llm::new(reference, callable, resolved.model)
            .with_context_window(backend.context_window.as_ref().map(|w| w.value))
            .with_policy(policy))
    }
}

fn reference_error(e: crate::reference::ReferenceError) -> Error {
    match e {
        crate::reference::ReferenceError::UnknownBackend {
            name,
            known,
            nearest,
            ..
        } => Error::UnknownBackend {
            name,
            known,
            nearest,
        },
        crate::reference::ReferenceError::EmptyModel { text, .. } => Error::NotAReference { text },
    }
}
