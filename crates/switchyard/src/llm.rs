//! The handle a program calls: one model on one backend.

use crate::backend::{Backend, Call};
use crate::budget::BudgetTracker;
use crate::error::{Error, Result};
use crate::record::{Observed, Recorder};
use crate::registry::Price;
use crate::reply_stream::ReplyStream;
use std::sync::Arc;
use switchyard_wire::{FinishReason, Part, Reply, Request};

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
#[derive(Clone)]
pub struct Llm {
    label: String,
    model: String,
    backend: Arc<dyn Backend>,
    role: Option<Arc<str>>,
    recorder: Option<Arc<Recorder>>,
    budget: Option<Arc<BudgetTracker>>,
    price: Option<Price>,
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("label", &self.label)
            .field("model", &self.model)
            .field("backend", &self.backend.name())
            .field("role", &self.role)
            .finish()
    }
}

impl Llm {
    /// A handle on `backend` for `model`; `label` names it in messages (usually the
    /// reference as written).
    pub fn new(
        label: impl Into<String>,
        backend: Arc<dyn Backend>,
        model: impl Into<String>,
    ) -> Self {
        Llm {
            label: label.into(),
            model: model.into(),
            backend,
            role: None,
            recorder: None,
            budget: None,
            price: None,
        }
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

    /// Sends a request and waits for the whole reply (recorded and counted against the
    /// budget when the handle has them).
    pub async fn complete(&self, request: Request) -> Result<Reply> {
        let call = Call {
            model: self.model.clone(),
            request,
        };
        let Some(observed) = Observed::begin(&self.observer(), &call, false)? else {
            let reply = self.backend.complete(&call).await?;
            check_reply(self.backend.name(), &reply)?;
            return Ok(reply);
        };
        let (result, body) = crate::backend::capturing_body(self.backend.complete(&call)).await;
        let result =
            result.and_then(|reply| check_reply(self.backend.name(), &reply).map(|_| reply));
        let outcome = match &result {
            Ok(r) => crate::record::Outcome::Reply(r),
            Err(e) => crate::record::Outcome::Failed(e, None),
        };
        observed.end(call, body, outcome, None).await;
        result
    }

    /// Sends a request and streams the reply (recorded when the stream ends).
    pub async fn stream(&self, request: Request) -> Result<ReplyStream> {
        let call = Call {
            model: self.model.clone(),
            request,
        };
        let Some(observed) = Observed::begin(&self.observer(), &call, true)? else {
            return self.backend.stream(&call).await;
        };
        let (result, body) = crate::backend::capturing_body(self.backend.stream(&call)).await;
        match result {
            Ok(stream) => Ok(stream.on_end(Box::new(move |reply, end, first_byte| {
                use crate::record::Outcome;
                use crate::reply_stream::StreamEnd;
                let outcome = match end {
                    StreamEnd::Done => Outcome::Reply(reply),
                    StreamEnd::Failed(e) => Outcome::Failed(e, Some(reply)),
                    StreamEnd::Dropped => Outcome::Dropped(reply),
                };
                observed.end(call, body, outcome, first_byte)
            }))),
            Err(e) => {
                observed
                    .end(call, body, crate::record::Outcome::Failed(&e, None), None)
                    .await;
                Err(e)
            }
        }
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

    /// A handle for a reference resolved against `registry`, reading keys from `env`.
    pub fn resolve(
        registry: &crate::registry::Registry,
        reference: &str,
        env: &dyn crate::env::EnvSource,
    ) -> Result<Llm> {
        let resolved = registry
            .require_reference(reference)
            .map_err(reference_error)?;
        let backend = registry
            .backend(&resolved.backend)
            .ok_or_else(|| Error::Config(format!("backend `{}` vanished", resolved.backend)))?;
        let callable = crate::connect::backend_for(backend, &resolved.model, env)?;
        let price = backend.price(&resolved.model).map(|p| p.value);
        Ok(Llm::new(reference, callable, resolved.model).with_price(price))
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

/// Recording, roles, budgets and replay: what a run adds to a handle.
impl Llm {
    /// The handle with a role: a name for the caller in records, budgets and replay.
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(Arc::from(role.into()));
        self
    }

    /// The handle's role, if it has one.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// The handle recording every call it makes into `recorder`'s run directory.
    pub fn with_recorder(mut self, recorder: Arc<Recorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// The handle counting its calls against `budget` (shared by the handles of a run).
    pub fn with_budget(mut self, budget: Arc<BudgetTracker>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The handle pricing its calls at `price` (`None`: unknown cost).
    pub fn with_price(mut self, price: Option<Price>) -> Self {
        self.price = price;
        self
    }

    /// The price its calls are costed at, when known.
    pub fn price(&self) -> Option<&Price> {
        self.price.as_ref()
    }

    /// A handle answering from a recorded run instead of a provider: the calls `role`
    /// made (`None`: the calls made without a role), matched by prompt, with the recorded
    /// run's reference, model and prices (from its `run.yaml`).
    ///
    /// ```no_run
    /// # async fn demo() -> switchyard::Result<()> {
    /// use switchyard::{Llm, Request};
    /// let planner = Llm::replaying("runs/monday".as_ref(), Some("planner"))?;
    /// let reply = planner.complete(Request::user("plan the week")).await?;
    /// # let _ = reply; Ok(()) }
    /// ```
    pub fn replaying(run_dir: &std::path::Path, role: Option<&str>) -> Result<Llm> {
        let log = crate::backend::replay::ReplayLog::open(run_dir)?;
        Llm::replaying_from(&log, role)
    }

    /// As [`Llm::replaying`], sharing one loaded log between the roles of a run.
    pub fn replaying_from(
        log: &Arc<crate::backend::replay::ReplayLog>,
        role: Option<&str>,
    ) -> Result<Llm> {
        let backend = crate::backend::replay::ReplayBackend::new(log.clone(), role)?;
        let recorded = log
            .role(role.unwrap_or(""))
            .cloned()
            .ok_or_else(|| Error::Config("the replayed role vanished".into()))?;
        let mut llm = Llm::new(
            recorded.reference,
            Arc::new(backend),
            recorded.model.clone(),
        )
        .with_price(log.price(&recorded.backend, &recorded.model));
        if let Some(r) = role {
            llm = llm.with_role(r);
        }
        Ok(llm)
    }

    fn observer(&self) -> crate::record::Handle<'_> {
        crate::record::Handle {
            role: self.role.as_deref(),
            label: &self.label,
            backend: &self.backend,
            recorder: self.recorder.as_ref(),
            budget: self.budget.as_ref(),
            price: self.price,
        }
    }
}
