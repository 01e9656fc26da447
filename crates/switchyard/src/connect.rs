//! From a resolved reference to a callable backend: the one place where the registry's
//! description of a backend becomes an HTTP client with its URL, key and settings.

use crate::backend::auth::{Credential, GoogleAdc, Secret};
use crate::backend::http::{new_client, Endpoint, HttpBackend, HttpConfig, Timeouts};
use crate::backend::Backend;
use crate::env::EnvSource;
use crate::error::{Error, Result};
use crate::registry::{self, Auth, DeveloperRole, EndpointError, Kind};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use switchyard_wire::Dialect;

/// The waits used unless a run says otherwise: a connection that takes 30 s or a stream
/// silent for 5 minutes is taken as lost; a long generation is not cut short.
pub const DEFAULT_TIMEOUTS: Timeouts = Timeouts {
    connect: Some(Duration::from_secs(30)),
    first_byte: None,
    idle: Some(Duration::from_secs(300)),
    total: None,
};

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
    let credential = match (backend.auth_for(dialect), key) {
        (Auth::GoogleAdc, _) => Credential::Token(google_adc()),
        (Auth::None, _) | (_, None) => Credential::None,
        (Auth::Bearer, Some(key)) => Credential::Bearer(key),
        (Auth::XApiKey, Some(key)) => Credential::Header("x-api-key", key),
        (Auth::XGoogApiKey, Some(key)) => Credential::Header("x-goog-api-key", key),
    };
    let client = pooled_client(&backend.name, DEFAULT_TIMEOUTS.connect)?;
    Ok(HttpBackend::with_client(
        HttpConfig {
            name: backend.name.clone(),
            dialect,
            endpoint,
            auth: credential,
            extra_body: backend
                .extra_body
                .iter()
                .map(|(k, v)| (k.clone(), v.value.clone()))
                .collect(),
            developer_as_system: backend.developer_role.value == DeveloperRole::System,
            timeouts: DEFAULT_TIMEOUTS,
        },
        client,
    ))
}

/// The process's connection pool for a backend: every handle on the same backend (and
/// the same connect timeout) shares one client, so connections are reused across roles.
fn pooled_client(backend: &str, connect: Option<Duration>) -> Result<reqwest::Client> {
    type Pools = Mutex<HashMap<(String, Option<Duration>), reqwest::Client>>;
    static POOLS: OnceLock<Pools> = OnceLock::new();
    let pools = POOLS.get_or_init(Pools::default);
    let key = (backend.to_string(), connect);
    // A poisoned lock only means another thread panicked while inserting; the map is
    // still usable.
    let mut pools = pools
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(client) = pools.get(&key) {
        return Ok(client.clone());
    }
    let client = new_client(backend, connect)?;
    pools.insert(key, client.clone());
    Ok(client)
}

/// A callable backend for any kind the library can call.
pub fn backend_for(
    backend: &registry::Backend,
    model: &str,
    env: &dyn EnvSource,
) -> Result<Arc<dyn Backend>> {
    match backend.kind.value {
        Kind::Http => Ok(Arc::new(http_backend(backend, model, None, env)?)),
        other => Err(Error::Unsupported(format!(
            "backend `{}` is of kind `{other}`, which this version cannot call yet",
            backend.name
        ))),
    }
}

fn endpoint_url(
    backend: &registry::Backend,
    dialect: Dialect,
    model: &str,
    stream: bool,
    env: &dyn EnvSource,
) -> Result<String> {
    let url = backend
        .endpoint(dialect, model, stream, env)
        .map_err(endpoint_error)?;
    Ok(url.to_string())
}

/// One Application Default Credentials source for the process, so its token cache is
/// shared by every Vertex backend.
fn google_adc() -> Arc<GoogleAdc> {
    static ADC: OnceLock<Arc<GoogleAdc>> = OnceLock::new();
    ADC.get_or_init(|| Arc::new(GoogleAdc::new())).clone()
}

fn endpoint_error(e: EndpointError) -> Error {
    match e {
        EndpointError::MissingKey { backend, variable } => Error::MissingKey { backend, variable },
        EndpointError::DialectNotServed { .. } | EndpointError::NotHttp { .. } => {
            Error::Unsupported(e.to_string())
        }
        EndpointError::UnsetVariable { .. } | EndpointError::BadUrl { .. } => {
            Error::Config(e.to_string())
        }
    }
}
