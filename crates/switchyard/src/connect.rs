//! From a resolved reference to a callable backend: the one place where the registry's
//! description of a backend becomes an HTTP client with its URL, key and settings.

use crate::backend::auth::{Credential, Secret};
use crate::backend::http::{
    new_client, Endpoint, HttpBackend, HttpClient, HttpConfig, ReplyLimits, Timeouts,
};
use crate::backend::Backend;
use crate::env::EnvSource;
use crate::error::{Error, Result};
use crate::registry::{self, Auth, DeveloperRole, EndpointError, Kind, MaxTokensField};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchyard_wire::Dialect;

/// The waits used unless a run says otherwise ([`Timeouts::DEFAULT`]).
pub const DEFAULT_TIMEOUTS: Timeouts = Timeouts::DEFAULT;

/// The dialect a backend is called in: the first it lists (the built-ins list each
/// backend's best-supported dialect first).
pub fn preferred_dialect(backend: &registry::Backend) -> Option<Dialect> {
    backend.apis.value.first().copied()
}

/// A callable backend for `model` on `backend`, speaking `dialect` (or the preferred one).
pub fn http_backend(
    backend: &registry::Backend,
    model: &str,
    dialect: Option<Dialect>,
    env: &dyn EnvSource,
) -> Result<HttpBackend> {
    http_backend_with(backend, model, dialect, env, DEFAULT_TIMEOUTS)
}

/// [`http_backend`] with its own timeouts.
pub fn http_backend_with(
    backend: &registry::Backend,
    model: &str,
    dialect: Option<Dialect>,
    env: &dyn EnvSource,
    timeouts: Timeouts,
) -> Result<HttpBackend> {
    http_backend_pooled(backend, model, dialect, env, timeouts, &ClientPool::new())
}

/// [`http_backend_with`] taking its connection pool from `pool`.
pub fn http_backend_pooled(
    backend: &registry::Backend,
    model: &str,
    dialect: Option<Dialect>,
    env: &dyn EnvSource,
    timeouts: Timeouts,
    pool: &ClientPool,
) -> Result<HttpBackend> {
    if backend.kind.value != Kind::Http {
        return Err(Error::Unsupported(format!(
            "backend `{}` is of kind `{}`, which is not called over HTTP",
            backend.name, backend.kind.value
        )));
    }
    let dialect = match dialect.or_else(|| preferred_dialect(backend)) {
        Some(d) => d,
        None => {
            return Err(Error::Config(format!(
                "backend `{}` lists no dialect in `apis`; accepted: {}",
                backend.name,
                Dialect::NAMES.join(", ")
            )))
        }
    };
    let endpoint = Endpoint {
        complete: endpoint_url(backend, dialect, model, false, env)?,
        stream: endpoint_url(backend, dialect, model, true, env)?,
    };
    let key = backend
        .api_key(env)
        .map_err(endpoint_error)?
        .map(Secret::new);
    let unsent_key = (key.is_none()
        && !backend.api_key_env.value.is_empty()
        && !matches!(backend.auth_for(dialect), Auth::None | Auth::GoogleAdc))
    .then(|| backend.api_key_env.value.clone());
    let credential = match (backend.auth_for(dialect), key) {
        (Auth::GoogleAdc, _) => google_adc(&backend.name, env)?,
        (Auth::None, _) | (_, None) => Credential::None,
        (Auth::Bearer, Some(key)) => Credential::Bearer(key),
        (Auth::XApiKey, Some(key)) => Credential::Header("x-api-key", key),
        (Auth::XGoogApiKey, Some(key)) => Credential::Header("x-goog-api-key", key),
    };
    let client = pool.client(&backend.name, timeouts.connect)?;
    Ok(HttpBackend::with_client(
        HttpConfig {
            name: backend.name.clone(),
            dialect,
            endpoint,
            auth: credential,
            unsent_key,
            extra_body: backend
                .extra_body_for(dialect)
                .map(|(k, v)| (k.clone(), v.value.clone()))
                .collect(),
            developer_as_system: backend.developer_role.value == DeveloperRole::System,
            legacy_max_tokens: backend.max_tokens_field.value == MaxTokensField::MaxTokens,
            timeouts,
            limits: ReplyLimits::DEFAULT,
        },
        client,
    ))
}

/// Connection pools by backend, for a program that makes many handles (a run's roles, the
/// gateway): every handle on the same backend reuses one client's connections.
///
/// Owned by the caller rather than global, because a client's connections belong to the
/// async runtime they were opened on: a pool shared across runtimes (one per test, say)
/// would hand out connections whose runtime is gone.
#[derive(Debug, Default, Clone)]
pub struct ClientPool {
    clients: Arc<Mutex<HashMap<PoolKey, HttpClient>>>,
}

/// A backend's name and its connect timeout.
type PoolKey = (String, Option<Duration>);

impl ClientPool {
    /// An empty pool.
    pub fn new() -> Self {
        Self::default()
    }

    /// The client for `backend`, made on first use.
    pub fn client(&self, backend: &str, connect: Option<Duration>) -> Result<HttpClient> {
        // A poisoned lock only means another thread panicked while inserting; the map is
        // still usable.
        let mut clients = self
            .clients
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let key = (backend.to_string(), connect);
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        let client = new_client(backend, connect)?;
        clients.insert(key, client.clone());
        Ok(client)
    }
}

/// A callable backend for any kind the library can call.
pub fn backend_for(
    backend: &registry::Backend,
    model: &str,
    env: &dyn EnvSource,
) -> Result<Arc<dyn Backend>> {
    backend_with(backend, model, env, DEFAULT_TIMEOUTS)
}

/// [`backend_for`] with its own timeouts.
pub fn backend_with(
    backend: &registry::Backend,
    model: &str,
    env: &dyn EnvSource,
    timeouts: Timeouts,
) -> Result<Arc<dyn Backend>> {
    match backend.kind.value {
        Kind::Http => Ok(Arc::new(http_backend_with(
            backend, model, None, env, timeouts,
        )?)),
        #[cfg(feature = "cli-agents")]
        Kind::ClaudeCode | Kind::Codex => crate::backend::cli::cli_backend(backend, env),
        #[cfg(not(feature = "cli-agents"))]
        Kind::ClaudeCode | Kind::Codex => Err(Error::Unsupported(format!(
            "backend `{}` runs a CLI agent (kind {}), which this build leaves out: build switchyard with the `cli-agents` feature (on by default)",
            backend.name, backend.kind.value
        ))),
        Kind::Replay => replay_backend(backend, None),
    }
}

/// A backend of kind `replay`: answers from the recorded run its `log` names, calling no
/// provider. With `role`, it answers for that role of the recorded run; without, for the
/// role of the handle making each call (a handle without one: the role its name gives,
/// `role:<name>`, else the calls recorded without a role).
pub fn replay_backend(backend: &registry::Backend, role: Option<&str>) -> Result<Arc<dyn Backend>> {
    let Some(log) = &backend.log else {
        return Err(Error::Config(format!(
            "backend `{}` is of kind `replay` and needs `log`: the recorded run's call log (`<run_dir>/llm_log`)",
            backend.name
        )));
    };
    let replay = crate::backend::replay::ReplayLog::open(std::path::Path::new(&log.value))?;
    Ok(match role {
        Some(r) => Arc::new(crate::backend::replay::ReplayBackend::new(replay, Some(r))?),
        None => Arc::new(crate::backend::replay::ReplayBackend::for_handles(
            replay,
            &backend.name,
            backend.name.strip_prefix("role:"),
        )),
    })
}

fn endpoint_url(
    backend: &registry::Backend,
    dialect: Dialect,
    model: &str,
    stream: bool,
    env: &dyn EnvSource,
) -> Result<url::Url> {
    backend
        .endpoint(dialect, model, stream, env)
        .map_err(endpoint_error)
}

/// One Application Default Credentials source for the process, so its token cache is
/// shared by every Vertex backend; or, when the resolved environment names a key file in
/// `GOOGLE_APPLICATION_CREDENTIALS` (an env file's included, which `gcp_auth`'s own
/// lookup of the process environment would miss), one source per such file.
#[cfg(feature = "google-auth")]
fn google_adc(_backend: &str, env: &dyn EnvSource) -> Result<Credential> {
    use crate::backend::auth::GoogleAdc;
    use std::path::PathBuf;
    use std::sync::OnceLock;
    static ADC: OnceLock<Arc<GoogleAdc>> = OnceLock::new();
    static BY_FILE: OnceLock<Mutex<HashMap<PathBuf, Arc<GoogleAdc>>>> = OnceLock::new();
    let Some(file) = env.var("GOOGLE_APPLICATION_CREDENTIALS") else {
        return Ok(Credential::Token(
            ADC.get_or_init(|| Arc::new(GoogleAdc::new())).clone(),
        ));
    };
    // A poisoned lock only means another thread panicked while inserting.
    let mut sources = BY_FILE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let source = sources
        .entry(PathBuf::from(file))
        .or_insert_with_key(|path| Arc::new(GoogleAdc::from_file(path.clone())))
        .clone();
    Ok(Credential::Token(source))
}

/// Without the `google-auth` feature a backend that authenticates with Google's
/// credentials cannot be reached: said when it is connected, not when it is first called.
#[cfg(not(feature = "google-auth"))]
fn google_adc(backend: &str, _env: &dyn EnvSource) -> Result<Credential> {
    Err(Error::Unsupported(format!(
        "backend `{backend}` authenticates with Google Application Default Credentials, which this build leaves out: build switchyard with the `google-auth` feature (on by default)"
    )))
}

pub(crate) fn endpoint_error(e: EndpointError) -> Error {
    match e {
        EndpointError::MissingKey { backend, variable } => Error::MissingKey { backend, variable },
        EndpointError::DialectNotServed { .. }
        | EndpointError::EmbeddingsNotServed { .. }
        | EndpointError::NotHttp { .. } => Error::Unsupported(e.to_string()),
        EndpointError::UnsetVariable { .. }
        | EndpointError::BadUrl { .. }
        | EndpointError::BadModelId { .. } => Error::Config(e.to_string()),
    }
}
