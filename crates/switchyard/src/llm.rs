//! The handle a program calls: one model on one backend, with its call policy (retries,
//! timeouts, the context check) and a cancellation token.

mod cached;

use crate::attempt::CallOutcome;
use crate::backend::{Backend, Call};
use crate::budget::BudgetTracker;
use crate::error::{Error, Result};
use crate::policy::CallPolicy;
use crate::record::{Observed, Outcome, Recorder};
use crate::registry::Price;
use crate::reply_stream::ReplyStream;
use crate::retry::{RetryLoop, RetryPolicy};
use crate::sleep::{Sleeper, TokioSleeper};
use std::sync::Arc;
use std::time::Instant;
use switchyard_wire::{Reply, Request};
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
    role: Option<Arc<str>>,
    recorder: Option<Arc<Recorder>>,
    budget: Option<Arc<BudgetTracker>>,
    price: Option<Price>,
    embedder: Option<Arc<dyn crate::embed::Embedder>>,
    /// Set on a handle made from a route: its calls go through the members instead of
    /// `backend` (which is then the first member's, for its name).
    routed: Option<Arc<crate::router::Routed>>,
    /// The run's response cache, when its config has one.
    cache: Option<Arc<crate::cache::Cache>>,
    /// Whether calls are traced when the export is on (`trace`).
    traced: bool,
    /// A role's settings, laid on each request (where it sets none of its own) before
    /// anything else sees it: the cache's key and rules, the record's request and
    /// parameters, the budget's reservation read the request the provider is sent.
    settings: Option<Arc<crate::run::Settings>>,
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("label", &self.label)
            .field("model", &self.model)
            .field("backend", &self.backend.name())
            .field("policy", &self.policy)
            .field("context_window", &self.context_window)
            .field("role", &self.role)
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
            role: None,
            recorder: None,
            budget: None,
            price: None,
            embedder: None,
            routed: None,
            cache: None,
            traced: true,
            settings: None,
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
        if let Some(routed) = &mut self.routed {
            let retry_each = routed.router.route().retry_each;
            for m in &mut Arc::make_mut(routed).members {
                if retry_each {
                    *m = m.clone().with_retry(retry.clone());
                }
            }
        }
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
        if let Some(routed) = &mut self.routed {
            for m in &mut Arc::make_mut(routed).members {
                *m = m.clone().with_sleeper(sleeper.clone());
            }
        }
        self.sleeper = sleeper;
        self
    }

    /// The same handle cancelled by `token` (share one token across the handles of a
    /// run to stop them all).
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        if let Some(routed) = &mut self.routed {
            for m in &mut Arc::make_mut(routed).members {
                *m = m.clone().with_cancellation(token.clone());
            }
        }
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

    /// [`Llm::complete`], with every attempt it took (for the call log). A handle with
    /// a budget checks it first; a handle with a recorder records the call before
    /// returning.
    pub async fn complete_detailed(&self, request: Request) -> CallOutcome<Reply> {
        let request = self.with_settings_applied(request);
        let entered = match self.cache_lookup(&request, false) {
            Some(crate::cache::Lookup::Hit(hit)) => {
                return self.cached_complete(request, hit).await
            }
            Some(crate::cache::Lookup::Miss(key)) => key,
            None => None,
        };
        if let Some(routed) = &self.routed {
            // Boxed: a route's call holds its members' calls, and the plain path's future
            // stays as small as it was.
            return Box::pin(routed.complete(self, request, entered)).await;
        }
        self.own_complete(request, entered).await
    }

    /// A call on the handle's own backend (a route's member calls this).
    pub(crate) async fn plain_complete(&self, request: Request) -> CallOutcome<Reply> {
        self.own_complete(request, None).await
    }

    /// A call on the handle's own backend, entered in the cache under `cache_key`.
    async fn own_complete(
        &self,
        request: Request,
        cache_key: Option<String>,
    ) -> CallOutcome<Reply> {
        let (observed, call) = match self.before_sending(request, false, cache_key).await {
            Ok(ready) => ready,
            Err(e) => return not_sent(e),
        };
        let name = self.backend.name();
        let usage_required = self.backend.reports_usage();
        let retry = self.retry_loop();
        let run = retry.run(|| async {
            let result = match self.backend.complete(&call).await {
                Ok(reply) => {
                    crate::reply_check::check(name, &reply, usage_required).map(|()| reply)
                }
                Err(e) => Err(e),
            };
            (result, None)
        });
        let mut outcome = run.await;
        let mut sent = call.notes.take();
        outcome.sent_body = sent.body.clone();
        let Some(observed) = observed else {
            return outcome;
        };
        if let (Some(recorded), Err(_)) = (sent.replayed_error.take(), &outcome.result) {
            outcome.result = Err(recorded);
        }
        let seen = match &outcome.result {
            Ok(r) => Outcome::Reply(r),
            Err(e) => Outcome::Failed(e, None),
        };
        observed
            .end(call, Some(sent), seen, None, &outcome.attempts)
            .await;
        outcome
    }

    /// [`Llm::stream`], with every attempt it took. The last attempt's `duration` runs
    /// to the stream's first output; how the stream ends is the stream's to tell (a
    /// recording handle records the call when the stream ends).
    pub async fn stream_detailed(&self, request: Request) -> CallOutcome<ReplyStream> {
        let request = self.with_settings_applied(request);
        let entered = match self.cache_lookup(&request, true) {
            Some(crate::cache::Lookup::Hit(hit)) => return self.cached_stream(request, hit),
            Some(crate::cache::Lookup::Miss(key)) => key,
            None => None,
        };
        if let Some(routed) = &self.routed {
            return Box::pin(routed.stream(self, request, entered)).await;
        }
        self.own_stream(request, entered).await
    }

    /// A streamed call on the handle's own backend (a route's member calls this).
    pub(crate) async fn plain_stream(&self, request: Request) -> CallOutcome<ReplyStream> {
        self.own_stream(request, None).await
    }

    /// A streamed call on the handle's own backend, entered in the cache under
    /// `cache_key`.
    async fn own_stream(
        &self,
        request: Request,
        cache_key: Option<String>,
    ) -> CallOutcome<ReplyStream> {
        let (observed, call) = match self.before_sending(request, true, cache_key).await {
            Ok(ready) => ready,
            Err(e) => return not_sent(e),
        };
        let name = self.backend.name();
        let retry = self.retry_loop();
        let run = retry.run(|| async {
            let sent = Instant::now();
            let mut stream = match self.backend.stream(&call).await {
                Ok(stream) => stream.check_at_end(name, self.backend.reports_usage()),
                Err(e) => return (Err(e), None),
            };
            match stream.start().await {
                Ok(()) => (Ok(stream), Some(sent.elapsed())),
                Err(e) => (Err(e), None),
            }
        });
        let mut outcome = run.await;
        let mut sent = call.notes.take();
        outcome.sent_body = sent.body.clone();
        let Some(observed) = observed else {
            return outcome;
        };
        let CallOutcome {
            mut result,
            attempts,
            sent_body,
            ..
        } = outcome;
        if let (Some(recorded), Err(_)) = (sent.replayed_error.take(), &result) {
            result = Err(recorded);
        }
        let result = match result {
            Ok(stream) => {
                let recorded = attempts.clone();
                // Under a run budget, the stream's running cost is held and checked.
                let stream = match observed.stream_guard(&call.request) {
                    Some(guard) => stream.guarded(guard),
                    None => stream,
                };
                Ok(stream.on_end(Box::new(move |reply, end, first_byte| {
                    let seen = Outcome::of_stream(reply, end);
                    observed.end(call, Some(sent), seen, first_byte, &recorded)
                })))
            }
            Err(e) => {
                observed
                    .end(call, Some(sent), Outcome::Failed(&e, None), None, &attempts)
                    .await;
                Err(e)
            }
        };
        CallOutcome {
            result,
            attempts,
            sent_body,
            member: None,
        }
    }

    /// Runs `attempt` as the handle runs its own backend calls: under its retry policy
    /// (the waits per reason, a provider's `Retry-After` honoured up to
    /// `max_wait_seconds`), its sleeper and its cancellation token, giving every attempt.
    /// For a caller that makes the attempts itself — the gateway's pass-through sends a
    /// client's bytes as they came — and must retry exactly as a call through the handle
    /// would. No budget, context check or recording is applied: those stay the caller's.
    pub async fn retrying<T, F, Fut>(&self, mut attempt: F) -> CallOutcome<T>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T>>,
    {
        let retry = self.retry_loop();
        retry
            .run(|| {
                let attempt = attempt();
                async move { (attempt.await, None) }
            })
            .await
    }

    /// The context check, when the policy asks for it and the window is known.
    /// What every call does before it is sent: the budget's reservation (with the call's
    /// observer, when the handle records or has a budget), then the context check. A
    /// refusal by the check is recorded before it is returned.
    async fn before_sending(
        &self,
        request: Request,
        stream: bool,
        cache_key: Option<String>,
    ) -> Result<(Option<Observed>, Call)> {
        let mut observed = Observed::begin(&self.observer(), &self.model, stream)?;
        if let Some(o) = &mut observed {
            o.enter_cache(cache_key);
        }
        let call = Call::new(self.model.clone(), request).with_role(self.role.clone());
        if let Err(e) = self.check_context(&call.request) {
            if let Some(o) = observed {
                o.end(call, None, Outcome::Failed(&e, None), None, &[])
                    .await;
            }
            return Err(e);
        }
        Ok((observed, call))
    }

    pub(crate) fn check_context(&self, request: &Request) -> Result<()> {
        if let (true, Some(window)) = (self.policy.context_check, self.context_window) {
            crate::context_check::check(&self.label, request, window)?;
        }
        Ok(())
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
        sent_body: None,
        member: None,
    }
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
        if let Some(route) = registry.route(reference) {
            let members = route
                .members
                .iter()
                .map(|m| Llm::resolve_with(registry, &m.reference, env, policy.clone()))
                .collect::<Result<Vec<_>>>()?;
            let router = Arc::new(crate::router::Router::new(route.clone()));
            return Llm::routed(router, members).map(|l| l.with_policy(policy));
        }
        let resolved = registry.require_reference(reference)?;
        let backend = registry
            .backend(&resolved.backend)
            .ok_or_else(|| Error::Config(format!("backend `{}` vanished", resolved.backend)))?;
        let callable =
            crate::embed::callable_for(backend, &resolved.model, env, policy.timeouts())?;
        let price = backend.price(&resolved.model).map(|p| p.value);
        let embedder =
            crate::embed::embedder_for(backend, &resolved.model, env, policy.timeouts())?;
        let llm = Llm::new(reference, callable, resolved.model)
            .with_context_window(backend.context_window.as_ref().map(|w| w.value))
            .with_policy(policy)
            .with_price(price);
        Ok(match embedder {
            Some(e) => llm.with_embedder(e),
            None => llm,
        })
    }
}

/// Routes: one handle over several members.
impl Llm {
    /// A handle calling the members of `router`'s route, `members[i]` the handle of its
    /// i-th member (each with its own backend, retries, context window and price). The
    /// route's handle records each call once, with every attempt on every member and the
    /// member that served; give the recorder and budget to it, not to the members.
    ///
    /// Clones share the router (its cooldowns and calls in flight): make one handle per
    /// route and clone it, rather than resolving the route again.
    pub fn routed(router: Arc<crate::router::Router>, members: Vec<Llm>) -> Result<Llm> {
        let route = router.route();
        if members.is_empty() || members.len() != route.members.len() {
            return Err(Error::Config(format!(
                "route `{}` has {} members but {} handles were given",
                route.name,
                route.members.len(),
                members.len()
            )));
        }
        let members: Vec<Llm> = members
            .into_iter()
            // The route's handle traces the call, with every member's attempts.
            .map(|m| m.without_trace())
            .map(|m| match route.retry_each {
                true => m,
                // Straight to the next member at the first listed failure.
                false => m.with_retry(RetryPolicy::never()),
            })
            .collect();
        let first = members[0].backend.clone();
        let mut llm = Llm::new(route.name.clone(), first, route.name.clone());
        llm.routed = Some(Arc::new(crate::router::Routed { router, members }));
        Ok(llm)
    }

    /// The route's router, for a handle made from a route.
    pub fn router(&self) -> Option<&Arc<crate::router::Router>> {
        self.routed.as_ref().map(|r| &r.router)
    }

    /// The members' handles, for a handle made from a route (empty otherwise).
    pub fn members(&self) -> &[Llm] {
        self.routed.as_ref().map_or(&[], |r| r.members.as_slice())
    }
}

/// Recording, roles, budgets and replay: what a run adds to a handle.
impl Llm {
    /// The handle with a role: a name for the caller in records, budgets and replay.
    pub fn with_role(mut self, role: impl Into<String>) -> Self {
        self.role = Some(Arc::from(role.into()));
        self
    }

    /// The handle with no role (a call made by no role).
    pub(crate) fn without_role(mut self) -> Self {
        self.role = None;
        self
    }

    /// The handle's role, if it has one.
    pub fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// The handle laying `settings` (a role's) on each request that does not set them
    /// itself, before its cache, budget and recorder see it: a record shows the request
    /// sent, and a role's `temperature` is a temperature the cache's rules see.
    pub fn with_settings(mut self, settings: crate::run::Settings) -> Self {
        self.settings = (settings != crate::run::Settings::default()).then(|| Arc::new(settings));
        self
    }

    fn with_settings_applied(&self, mut request: Request) -> Request {
        if let Some(settings) = &self.settings {
            settings.apply(&mut request);
        }
        request
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

    /// What `reply` cost, by the one rule the record, the budget and every door use: the
    /// price when the model has one, else the cost the provider reported itself (Claude
    /// Code's `total_cost_usd`), else unknown.
    pub fn cost(&self, reply: &crate::Reply) -> Option<f64> {
        self.cost_of(reply.usage.as_ref(), &reply.raw)
    }

    /// [`Llm::cost`] of a call known by its usage and the provider's raw reply (the
    /// gateway's record, which holds no [`Reply`]).
    pub fn cost_of(&self, usage: Option<&switchyard_wire::Usage>, raw: &[u8]) -> Option<f64> {
        crate::internal::cost::priced_or_reported(
            self.price(),
            usage,
            self.backend().reported_cost(raw),
        )
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
        // A second view of the same log (its queues are the log's) answers embeddings.
        let embedder = crate::backend::replay::ReplayBackend::new(log.clone(), role)?;
        let recorded = log
            .answering_role(role.unwrap_or(""))
            .and_then(|r| log.role(r))
            .cloned()
            .ok_or_else(|| Error::Config("the replayed role vanished".into()))?;
        // One replayed call is one recorded call, its retries included: it is never
        // retried again, and so never waits.
        let mut llm = Llm::new(
            recorded.reference,
            Arc::new(backend),
            recorded.model.clone(),
        )
        .with_price(log.price(&recorded.backend, &recorded.model))
        .with_retry(RetryPolicy::never())
        .with_embedder(Arc::new(embedder));
        if let Some(r) = role {
            llm = llm.with_role(r);
        }
        Ok(llm)
    }

    /// How the handle waits (between attempts, and for a route's cooldowns).
    pub(crate) fn sleeper(&self) -> &dyn Sleeper {
        self.sleeper.as_ref()
    }

    pub(crate) fn observer(&self) -> crate::record::Handle<'_> {
        crate::record::Handle {
            role: self.role.as_deref(),
            label: &self.label,
            backend: &self.backend,
            recorder: self.recorder.as_ref(),
            budget: self.budget.as_ref(),
            price: self.price,
            traced: self.traced,
        }
    }

    /// The same handle with its calls left out of the traces (`switchyard::trace`):
    /// for a caller that traces the calls itself, as the gateway does with what it
    /// knows of the client (a route's members are left out for the route's handle).
    pub fn without_trace(mut self) -> Self {
        self.traced = false;
        self
    }
}

/// Embeddings: one request, one record, under the same budget, retries and recorder as
/// the handle's other calls (see `embed.rs`).
impl Llm {
    /// The same handle answering [`Llm::embed`] with `embedder`.
    pub fn with_embedder(mut self, embedder: Arc<dyn crate::embed::Embedder>) -> Self {
        self.embedder = Some(embedder);
        self
    }

    /// The embedder, when the backend serves embeddings.
    pub fn embedder(&self) -> Option<&Arc<dyn crate::embed::Embedder>> {
        self.embedder.as_ref()
    }

    /// Embeds the request's inputs: one vector per input, in their order, with the input
    /// tokens the provider reported. The backend must list `embeddings` in its `apis`.
    ///
    /// ```no_run
    /// # async fn demo() -> switchyard::Result<()> {
    /// use switchyard::{wire::embed::EmbedRequest, Llm};
    /// let llm = Llm::from_reference("openai/text-embedding-3-small")?;
    /// let out = llm.embed(EmbedRequest::texts(["a cat", "a dog"])).await?;
    /// assert_eq!(out.vectors.len(), 2);
    /// # Ok(()) }
    /// ```
    pub async fn embed(
        &self,
        request: switchyard_wire::embed::EmbedRequest,
    ) -> Result<switchyard_wire::embed::Embeddings> {
        self.embed_detailed(request).await.result
    }

    /// [`Llm::embed`], with every attempt it took.
    pub async fn embed_detailed(
        &self,
        request: switchyard_wire::embed::EmbedRequest,
    ) -> CallOutcome<switchyard_wire::embed::Embeddings> {
        if self.routed.is_none() && self.embedder.is_none() {
            return not_sent(self.cannot_embed());
        }
        let entered = match self.embed_cache_lookup(&request) {
            Some(crate::cache::Lookup::Hit(hit)) => return self.cached_embed(request, hit).await,
            Some(crate::cache::Lookup::Miss(key)) => key,
            None => None,
        };
        if let Some(routed) = &self.routed {
            return Box::pin(routed.embed(self, request, entered)).await;
        }
        let mut observed = match Observed::begin(&self.observer(), &self.model, false) {
            Ok(o) => o,
            Err(e) => return not_sent(e),
        };
        if let Some(o) = &mut observed {
            o.enter_cache(entered);
        }
        let (outcome, sent) = self.plain_embed(request).await;
        if let Some(observed) = observed {
            observed
                .end_embedding(
                    sent.call,
                    sent.shape,
                    sent.sent,
                    outcome.result.as_ref(),
                    &outcome.attempts,
                )
                .await;
        }
        outcome
    }

    fn cannot_embed(&self) -> Error {
        Error::Unsupported(format!(
            "`{}` cannot embed: backend `{}` does not list `embeddings` in its `apis`",
            self.label,
            self.backend.name()
        ))
    }

    /// The embeddings call under the handle's retries, unrecorded, with what it sent
    /// for the record a caller keeps (a route's members are called so).
    pub(crate) async fn plain_embed(
        &self,
        request: switchyard_wire::embed::EmbedRequest,
    ) -> (
        CallOutcome<switchyard_wire::embed::Embeddings>,
        crate::embed::EmbedSent,
    ) {
        let call = crate::embed::EmbedCall {
            model: self.model.clone(),
            request,
            role: self.role.clone(),
            notes: Default::default(),
        };
        let Some(embedder) = self.embedder.clone() else {
            let sent = crate::embed::EmbedSent {
                call,
                shape: switchyard_wire::embed::EmbedShape::Openai,
                sent: Default::default(),
            };
            return (not_sent(self.cannot_embed()), sent);
        };
        let retry = self.retry_loop();
        let mut outcome = retry
            .run(|| async { (embedder.embed(&call).await, None) })
            .await;
        let mut sent = call.notes.take();
        outcome.sent_body = sent.body.clone();
        if let (Some(recorded), Err(_)) = (sent.replayed_error.take(), &outcome.result) {
            outcome.result = Err(recorded);
        }
        let shape = sent
            .replayed_embed_shape
            .take()
            .unwrap_or_else(|| embedder.shape());
        (outcome, crate::embed::EmbedSent { call, shape, sent })
    }
}
