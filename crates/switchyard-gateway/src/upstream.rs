//! From a client's model name to an upstream: the `models:` table, the reference, the
//! backend dialect (the client's when the backend serves it, else the backend's
//! preferred one), and one pooled HTTP client per backend. Targets are built once per
//! (backend, model, client dialect) and reused.

use crate::errors::{ApiError, Category};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use switchyard::backend::http::HttpBackend;
use switchyard::connect::{http_backend_pooled, preferred_dialect, ClientPool, DEFAULT_TIMEOUTS};
use switchyard::env::EnvSource;
use switchyard::registry::{Kind, Price, Registry};
use switchyard::{Dialect, Llm, Parsed, Reference, RetryPolicy};

/// Where one client request goes.
pub struct Target {
    /// The backend's name.
    pub backend: String,
    /// The model id on the backend (aliases expanded).
    pub model: String,
    /// `<backend>/<model>`.
    pub reference: String,
    /// The dialect spoken upstream.
    pub dialect: Dialect,
    /// The library's HTTP backend: its URL, credential and settings.
    pub http: Arc<HttpBackend>,
    /// A handle on it with the retry policy (translation calls through it).
    pub llm: Llm,
    /// The retry policy (pass-through applies it to its own sends).
    pub retry: RetryPolicy,
    /// The backend's pooled client (pass-through sends raw bytes on it).
    pub client: reqwest::Client,
    /// The model's price, when known.
    pub price: Option<Price>,
    /// The first-party Anthropic API, which understands `anthropic-beta` flags.
    pub anthropic_first_party: bool,
    /// `…/v1/messages/count_tokens` when the backend serves Messages.
    pub count_tokens_url: Option<String>,
}

/// Every upstream the gateway may call.
pub struct Upstreams {
    registry: Registry,
    env: Arc<dyn EnvSource + Send + Sync>,
    models: BTreeMap<String, String>,
    pool: ClientPool,
    retry: RetryPolicy,
    targets: RwLock<HashMap<(String, Dialect), Arc<Target>>>,
}

impl Upstreams {
    /// Upstreams from a registry, a `models:` table and the environment holding the
    /// backends' keys.
    pub fn new(
        registry: Registry,
        models: BTreeMap<String, String>,
        env: Arc<dyn EnvSource + Send + Sync>,
        retry: RetryPolicy,
    ) -> Self {
        Upstreams {
            registry,
            env,
            models,
            pool: ClientPool::new(),
            retry,
            targets: RwLock::new(HashMap::new()),
        }
    }

    /// The registry.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The `models:` table.
    pub fn models(&self) -> &BTreeMap<String, String> {
        &self.models
    }

    /// Checks that every `models:` entry names a backend; lists every problem.
    pub fn check_models(&self) -> Result<(), Vec<String>> {
        let errors: Vec<String> = self
            .models
            .iter()
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
    pub fn resolve(&self, requested: &str) -> Result<Reference, ApiError> {
        let text = self
            .models
            .get(requested)
            .map(String::as_str)
            .unwrap_or(requested);
        match self.registry.parse_reference(text) {
            Ok(Parsed::Reference(r)) => Ok(r),
            Ok(Parsed::NotAReference(_)) => {
                let names: Vec<&str> = self.models.keys().map(String::as_str).collect();
                Err(ApiError::new(
                    Category::NotFound,
                    format!(
                        "model `{requested}` is neither a name in the gateway's models table ({}) nor a reference `<backend>/<model id>` to a known backend ({})",
                        if names.is_empty() { "empty".to_string() } else { names.join(", ") },
                        self.registry.names().collect::<Vec<_>>().join(", ")
                    ),
                ))
            }
            Err(e) => Err(ApiError::new(Category::NotFound, e.to_string())),
        }
    }

    /// The target for `reference` called by a client speaking `client`.
    pub fn target(&self, reference: &Reference, client: Dialect) -> Result<Arc<Target>, ApiError> {
        let key = (format!("{}/{}", reference.backend, reference.model), client);
        if let Some(t) = self
            .targets
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            return Ok(t.clone());
        }
        let target = Arc::new(self.build(reference, client)?);
        self.targets
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, target.clone());
        Ok(target)
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
            DEFAULT_TIMEOUTS,
            &self.pool,
        )
        .map_err(|e| ApiError::from_upstream(&e))?;
        let client_pool = self
            .pool
            .client(&backend.name, DEFAULT_TIMEOUTS.connect)
            .map_err(|e| ApiError::from_upstream(&e))?;
        let http = Arc::new(http);
        let label = format!("{}/{}", backend.name, reference.model);
        let llm =
            Llm::new(label, http.clone(), reference.model.clone()).with_retry(self.retry.clone());
        let messages_root = backend.messages_root();
        let count_tokens_url = backend
            .serves(Dialect::Messages)
            .then(|| {
                messages_root
                    .clone()
                    .map(|r| format!("{r}/v1/messages/count_tokens"))
            })
            .flatten()
            .filter(|u| !u.contains('{'));
        Ok(Target {
            backend: backend.name.clone(),
            model: reference.model.clone(),
            reference: format!("{}/{}", backend.name, reference.model),
            dialect,
            http,
            llm,
            retry: self.retry.clone(),
            client: client_pool,
            price: backend.price(&reference.model).map(|p| p.value),
            anthropic_first_party: messages_root
                .is_some_and(|r| r.contains("://api.anthropic.com")),
            count_tokens_url,
        })
    }
}
