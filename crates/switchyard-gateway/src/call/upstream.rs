//! From a client's model name to an upstream: the `models:` table, the reference, the
//! backend dialect (the client's when the backend serves it, else the backend's
//! preferred one), and one pooled HTTP client per backend.
//!
//! Targets are cached by reference (one per client dialect), but only once a call through
//! one succeeded — a model name the upstream refuses is built again on each call rather than
//! kept — and the cache is bounded ([`DEFAULT_MAX_TARGETS`], least recently used out
//! first), so a client sending endless bogus names cannot grow the gateway's memory.

use crate::errors::{ApiError, Category};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use switchyard::backend::http::{HttpBackend, Timeouts};
use switchyard::connect::{http_backend_pooled, preferred_dialect, ClientPool};
use switchyard::env::EnvSource;
use switchyard::registry::{Kind, Price, Registry};
use switchyard::router::Router;
use switchyard::{Dialect, Llm, Parsed, Reference, ReferenceError, RetryPolicy, Sleeper};

/// The most targets kept by default.
pub(crate) const DEFAULT_MAX_TARGETS: usize = 1024;

/// Where one client request goes.
#[derive(Clone)]
pub(crate) struct Target {
    /// The backend's name.
    pub backend: String,
    /// The model id on the backend (aliases expanded).
    pub model: String,
    /// `<backend>/<model>`.
    pub reference: String,
    /// The dialect spoken upstream.
    pub dialect: Dialect,
    /// The library's HTTP backend: its URL, credential, timeouts and the send path both
    /// pass-through and translation use.
    pub http: Arc<HttpBackend>,
    /// A handle on it with the retry policy: translation calls through it, pass-through
    /// retries its own sends with it (`Llm::retrying`).
    pub llm: Llm,
    /// The model's price, when known.
    pub price: Option<Price>,
    /// The backend's context window, when known (a route skips a member too small for
    /// the request).
    pub context_window: Option<u64>,
    /// The most output a call that states no limit may be reserved for: the backend's
    /// `max_output_tokens`, else its `context_window`.
    pub output_limit: Option<u64>,
    /// The first-party Anthropic API, which understands `anthropic-beta` flags.
    pub anthropic_first_party: bool,
    /// The upstream keeps the state of the dialect the call goes in itself (a Responses
    /// server its responses, the first-party Anthropic API its threads): a request passed
    /// through to it may name the ids it gave.
    pub keeps_state: bool,
    /// `…/v1/messages/count_tokens` when the backend serves Messages.
    pub count_tokens_url: Option<url::Url>,
    /// False for a copy made for one call (a route's member without its retries): never
    /// kept in the cache, where plain calls would find it.
    pub(crate) cacheable: bool,
}

/// `target` for a route with `retry_each: false`: the same upstream, no retries of its
/// own (the route goes on to its next member instead).
pub(crate) fn without_retries(target: &Arc<Target>) -> Arc<Target> {
    Arc::new(Target {
        llm: target.llm.clone().with_retry(RetryPolicy::never()),
        cacheable: false,
        ..Target::clone(target)
    })
}

/// Where one embeddings call goes.
pub(crate) struct EmbedTarget {
    /// The backend's name.
    pub backend: String,
    /// The model id on the backend.
    pub model: String,
    /// `<backend>/<model>`.
    pub reference: String,
    /// The backend's embeddings URL and credential.
    pub embedder: switchyard::embed::HttpEmbedder,
    /// A handle with the gateway's retry policy, for `Llm::retrying`.
    pub llm: Llm,
    /// The model's price, when known.
    pub price: Option<Price>,
}

/// How upstreams are called: the retry policy, the timeouts and the waits.
#[derive(Clone)]
pub(crate) struct Calling {
    /// Retries of upstream calls.
    pub retry: RetryPolicy,
    /// The waits of each attempt.
    pub timeouts: Timeouts,
    /// How the retry loop waits (tests pass one that does not sleep).
    pub sleeper: Arc<dyn Sleeper>,
    /// The most targets cached.
    pub max_targets: usize,
    /// How much of each upstream answer is read.
    pub reply_limits: switchyard::backend::http::ReplyLimits,
}

/// The targets of a reference whose calls have succeeded (one per client dialect), and
/// when they were last used.
struct Cached {
    by_dialect: [Option<Arc<Target>>; 4],
    used: AtomicU64,
}

fn slot(dialect: Dialect) -> usize {
    Dialect::ALL.iter().position(|d| *d == dialect).unwrap_or(0)
}

/// Every upstream the gateway may call.
pub(crate) struct Upstreams {
    registry: Registry,
    env: Arc<dyn EnvSource + Send + Sync>,
    models: BTreeMap<String, String>,
    pool: ClientPool,
    calling: Calling,
    targets: RwLock<HashMap<String, Cached>>,
    clock: AtomicU64,
    /// One router per route of two members or more, shared by every call (its cooldowns
    /// and calls in flight); a route of one member is its reference.
    routers: BTreeMap<String, Arc<Router>>,
}

impl Upstreams {
    /// Upstreams from a registry, a `models:` table and the environment holding the
    /// backends' keys.
    pub(crate) fn new(
        registry: Registry,
        models: BTreeMap<String, String>,
        env: Arc<dyn EnvSource + Send + Sync>,
        calling: Calling,
    ) -> Self {
        let routers = registry
            .routes()
            .filter(|r| r.members.len() > 1)
            .map(|r| (r.name.clone(), Arc::new(Router::new(r.clone()))))
            .collect();
        Upstreams {
            registry,
            env,
            models,
            pool: ClientPool::new(),
            calling,
            targets: RwLock::new(HashMap::new()),
            clock: AtomicU64::new(0),
            routers,
        }
    }

    /// The router of the route a client's model name means (directly or through the
    /// `models:` table), when it names a route of two members or more.
    pub(crate) fn router(&self, requested: &str) -> Option<&Arc<Router>> {
        if self.routers.is_empty() {
            return None;
        }
        let text = self
            .models
            .get(requested)
            .map(String::as_str)
            .unwrap_or(requested);
        self.routers.get(text)
    }

    /// How the gateway waits (a route's cooldowns).
    pub(crate) fn sleeper(&self) -> &Arc<dyn Sleeper> {
        &self.calling.sleeper
    }

    /// The registry.
    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The `models:` table.
    pub(crate) fn models(&self) -> &BTreeMap<String, String> {
        &self.models
    }

    /// Checks that every `models:` entry names a backend; lists every problem.
    pub(crate) fn check_models(&self) -> Result<(), Vec<String>> {
        let errors: Vec<String> = self
            .models
            .iter()
            .filter(|(_, r)| self.registry.route(r).is_none())
            .filter_map(|(name, r)| match self.registry.require_reference(r) {
                Ok(_) => None,
                Err(e) => Some(format!("models.{name}: {e}")),
            })
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// The reference a client's model name means.
    pub(crate) fn resolve(&self, requested: &str) -> Result<Reference, ApiError> {
        let mut text = self
            .models
            .get(requested)
            .map(String::as_str)
            .unwrap_or(requested);
        // A route of one member is its reference: no router on the call's path.
        if let Some([only]) = self.registry.route(text).map(|r| r.members.as_slice()) {
            text = &only.reference;
        }
        // A backend named alone (`mock`, `vertex`) is its default model, as at every door.
        // (A reference, the common case, is read as it is: nothing allocated for it.)
        let completed = if text.contains('/') {
            std::borrow::Cow::Borrowed(text)
        } else {
            match switchyard::run::default_reference(&self.registry, text) {
                Some(reference) => std::borrow::Cow::Owned(reference),
                None => {
                    return Err(ApiError::new(
                        Category::NotFound,
                        switchyard::run::no_default_model(text),
                    ))
                }
            }
        };
        match self.registry.parse_reference(&completed) {
            Ok(Parsed::Reference(r)) => Ok(r),
            Ok(Parsed::NotAReference(_)) => {
                let names: Vec<&str> = self.models.keys().map(String::as_str).collect();
                Err(ApiError::new(
                    Category::NotFound,
                    format!(
                        "model `{}` is neither a name in the gateway's models table ({}) nor a reference `<backend>/<model id>` to a known backend ({})",
                        // The client's text, cut short and escaped: a body-sized name is
                        // not echoed back whole.
                        switchyard::model_id::shown(requested),
                        if names.is_empty() { "empty".to_string() } else { names.join(", ") },
                        self.registry.names().collect::<Vec<_>>().join(", ")
                    ),
                ))
            }
            // An id that cannot be sent is the client's mistake, refused before any
            // key, alias, route or price is decided on it.
            Err(e @ ReferenceError::BadModelId { .. }) => {
                Err(ApiError::new(Category::BadRequest, e.to_string()))
            }
            Err(e) => Err(ApiError::new(Category::NotFound, e.to_string())),
        }
    }

    /// The target for `reference` called by a client speaking `client`: the cached one,
    /// or one built for this call (cached by [`Upstreams::confirm`] once a call through
    /// it succeeds).
    pub(crate) fn target(
        &self,
        reference: &Reference,
        client: Dialect,
    ) -> Result<Arc<Target>, ApiError> {
        let key = format!("{}/{}", reference.backend, reference.model);
        if let Some(cached) = self
            .targets
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            cached.used.store(self.tick(), Ordering::Relaxed);
            if let Some(target) = &cached.by_dialect[slot(client)] {
                return Ok(target.clone());
            }
        }
        Ok(Arc::new(self.build(reference, client)?))
    }

    /// A call through `target` succeeded: its model exists upstream, so the target is
    /// kept for the next calls (the least recently used reference leaves a full cache).
    pub(crate) fn confirm(&self, target: &Arc<Target>, client: Dialect) {
        if !target.cacheable {
            return;
        }
        let slot = slot(client);
        if self
            .targets
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&target.reference)
            .is_some_and(|c| c.by_dialect[slot].is_some())
        {
            return;
        }
        let mut targets = self.targets.write().unwrap_or_else(|p| p.into_inner());
        if !targets.contains_key(&target.reference)
            && targets.len() >= self.calling.max_targets.max(1)
        {
            let oldest = targets
                .iter()
                .min_by_key(|(_, c)| c.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                targets.remove(&oldest);
            }
        }
        let used = self.tick();
        let cached = targets
            .entry(target.reference.clone())
            .or_insert_with(|| Cached {
                by_dialect: Default::default(),
                used: AtomicU64::new(used),
            });
        cached.by_dialect[slot] = Some(target.clone());
    }

    /// Whether calls to `reference` have succeeded (it is cached): a model the metrics
    /// may name.
    pub(crate) fn is_known(&self, reference: &str) -> bool {
        self.targets
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(reference)
    }

    /// References cached now.
    pub(crate) fn cached(&self) -> usize {
        self.targets.read().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
    }

    fn build(&self, reference: &Reference, client: Dialect) -> Result<Target, ApiError> {
        let backend = self.registry.backend(&reference.backend).ok_or_else(|| {
            ApiError::new(
                Category::NotFound,
                format!("no backend `{}`", reference.backend),
            )
        })?;
        if backend.kind.value != Kind::Http {
            return Err(ApiError::new(
                Category::BadRequest,
                format!(
                    "backend `{}` is of kind `{}`, which the gateway cannot call over HTTP",
                    backend.name, backend.kind.value
                ),
            ));
        }
        let dialect = if backend.serves(client) {
            client
        } else {
            preferred_dialect(backend).ok_or_else(|| {
                ApiError::new(
                    Category::Internal,
                    format!("backend `{}` lists no dialect in `apis`", backend.name),
                )
            })?
        };
        let env: &dyn EnvSource = self.env.as_ref();
        let http = http_backend_pooled(
            backend,
            &reference.model,
            Some(dialect),
            env,
            self.calling.timeouts,
            &self.pool,
        )
        .map_err(|e| ApiError::from_upstream(&e))?
        .with_limits(self.calling.reply_limits);
        let http = Arc::new(http);
        let label = format!("{}/{}", backend.name, reference.model);
        // The library's handle of the model (its price and context window, as a run's
        // role gets them); traced by the gateway's meter, with the client's key and trace
        // context.
        let llm = switchyard::run::model_handle(label, http.clone(), backend, &reference.model)
            .with_retry(self.calling.retry.clone())
            .with_sleeper(self.calling.sleeper.clone())
            .without_trace();
        let messages_root = backend.messages_root();
        let count_tokens_url = backend
            .serves(Dialect::Messages)
            .then(|| {
                messages_root
                    .clone()
                    .map(|r| format!("{r}/v1/messages/count_tokens"))
            })
            .flatten()
            .filter(|u| !u.contains('{'))
            .and_then(|u| url::Url::parse(&u).ok());
        Ok(Target {
            backend: backend.name.clone(),
            model: reference.model.clone(),
            reference: format!("{}/{}", backend.name, reference.model),
            dialect,
            price: llm.price().cloned(),
            context_window: llm.context_window(),
            http,
            llm,
            output_limit: backend
                .max_output_tokens
                .as_ref()
                .or(backend.context_window.as_ref())
                .map(|r| r.value),
            anthropic_first_party: messages_root
                .as_ref()
                .is_some_and(|r| r.contains("://api.anthropic.com")),
            // A Responses server keeps the responses it made, as the API defines (`store`
            // is true unless a request says otherwise); of Messages servers only
            // Anthropic's own keeps threads.
            keeps_state: match dialect {
                Dialect::Responses => true,
                Dialect::Messages => messages_root
                    .as_ref()
                    .is_some_and(|r| r.contains("://api.anthropic.com")),
                _ => false,
            },
            count_tokens_url,
            cacheable: true,
        })
    }
}

/// Embeddings (`embeddings.rs`): built for each call on the shared connection pool, never
/// cached beside the dialect targets.
impl Upstreams {
    /// The embeddings target of `reference`: its backend must list `embeddings`.
    pub(crate) fn embed_target(&self, reference: &Reference) -> Result<EmbedTarget, ApiError> {
        let backend = self.registry.backend(&reference.backend).ok_or_else(|| {
            ApiError::new(
                Category::NotFound,
                format!("no backend `{}`", reference.backend),
            )
        })?;
        if backend.embed_shape().is_none() {
            return Err(ApiError::new(
                Category::BadRequest,
                format!(
                    "backend `{}` does not serve embeddings: its `apis` does not list `embeddings`",
                    backend.name
                ),
            ));
        }
        let env: &dyn EnvSource = self.env.as_ref();
        let embedder = switchyard::embed::HttpEmbedder::connect(
            backend,
            &reference.model,
            env,
            self.calling.timeouts,
            &self.pool,
        )
        .map_err(|e| ApiError::from_upstream(&e))?
        .with_limits(self.calling.reply_limits);
        let label = format!("{}/{}", backend.name, reference.model);
        let llm = switchyard::run::model_handle(
            label.clone(),
            embedder.http().clone(),
            backend,
            &reference.model,
        )
        .with_retry(self.calling.retry.clone())
        .with_sleeper(self.calling.sleeper.clone())
        .without_trace();
        Ok(EmbedTarget {
            backend: backend.name.clone(),
            model: reference.model.clone(),
            reference: label,
            embedder,
            price: llm.price().cloned(),
            llm,
        })
    }
}
