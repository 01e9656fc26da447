//! The server: the router, binding (loopback unless keys are configured),
//! and serving through the gateway's own listener (`listener.rs`: deadlines, the
//! connection cap, the request guard, and a drain that lets calls in flight finish up to
//! the drain timeout).

use crate::account::keys::Keys;
use crate::call::request_body::BodyLimits;
use crate::call::translate::envelope::StateKey;
use crate::call::upstream::Upstreams;
use crate::config::GatewayConfig;
use crate::endpoints;
use crate::meter::metrics::{CallRecorder, Metrics};
use crate::meter::Books;
use crate::shared::Shared;
use crate::store::Store;
use axum::routing::{any, get, post};
use axum::Router;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchyard::env::EnvSource;
use switchyard::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A gateway ready to serve: config checked, keys read.
#[derive(Clone)]
pub struct Gateway {
    state: Arc<Shared>,
    listen: crate::transport::listener::Options,
}

impl Gateway {
    /// Builds a gateway; every problem (a `models:` entry naming no backend, an unset
    /// key variable…) is listed.
    pub fn new(
        config: &GatewayConfig,
        registry: Registry,
        env: Arc<dyn EnvSource + Send + Sync>,
    ) -> Result<Gateway, Vec<String>> {
        Gateway::with_sleeper(config, registry, env, Arc::new(switchyard::TokioSleeper))
    }

    /// [`Gateway::new`] with the retry loop waiting through `sleeper` (tests pass a
    /// [`switchyard::RecordingSleeper`], so that no retry wait is real).
    pub fn with_sleeper(
        config: &GatewayConfig,
        registry: Registry,
        env: Arc<dyn EnvSource + Send + Sync>,
        sleeper: Arc<dyn switchyard::Sleeper>,
    ) -> Result<Gateway, Vec<String>> {
        let mut errors = Vec::new();
        let keys = Keys::load(&config.keys, env.as_ref()).unwrap_or_else(|e| {
            errors.extend(e);
            Keys::default()
        });
        let calling = crate::call::upstream::Calling {
            retry: config.retry.clone(),
            timeouts: config.timeouts,
            sleeper,
            max_targets: config.max_targets,
            reply_limits: config.reply_limits,
        };
        let state_key_env = env.var(crate::call::translate::envelope::STATE_KEY_ENV);
        let upstreams = Arc::new(Upstreams::new(
            registry,
            config.models.clone(),
            env.clone(),
            calling,
        ));
        if let Err(e) = upstreams.check_models() {
            errors.extend(e);
        }
        // A replica sharing a PostgreSQL store ships its records from its own log.
        let shipping = config.postgres.as_ref().map(|_| crate::store::Shipping {
            written: Arc::default(),
            gate: Arc::default(),
        });
        let store = match &config.store {
            Some(dir) => match Store::open_shipping(
                dir,
                config.store_options,
                config.cache,
                shipping.clone(),
            ) {
                Ok(store) => Some(store),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
            None if config.store_without_path || config.postgres.is_some() => {
                errors.push(
                    "store: the directory is missing: write {path: DIR, …} in the config, or pass --data-dir DIR (with a PostgreSQL store too: it is the replica's own copy of its calls, and their buffer while the database is away)".into(),
                );
                None
            }
            None => None,
        };
        let pg = match (&config.postgres, &store, shipping) {
            (Some(pg), Some(store), Some(shipping)) => {
                let opened = pg.url(|name| env.var(name)).and_then(|url| {
                    crate::store::pg::SharedStore::open(
                        pg,
                        url,
                        store.dir(),
                        shipping.gate,
                        shipping.written,
                    )
                });
                match opened {
                    Ok(shared) => Some(Arc::new(shared)),
                    Err(e) => {
                        errors.push(e);
                        None
                    }
                }
            }
            _ => None,
        };
        if let Some(store) = &store {
            // With a shared store the ledger holds the spend, across replicas.
            if pg.is_none() {
                resume_budgets(&keys, store, &mut errors);
            }
            store.load_cache();
        }
        let conversations = open_conversations(config, store.as_ref(), pg.as_ref(), &mut errors);
        let state_key = StateKey::load(state_key_env, store.as_ref().map(Store::dir))
            .unwrap_or_else(|e| {
                errors.push(e);
                StateKey::from_bytes(Vec::new())
            });
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Gateway {
            state: Arc::new(Shared {
                upstreams: upstreams.clone(),
                keys,
                books: Arc::new(Books {
                    metrics: Metrics::new(config.max_metric_series)
                        .with_max_bytes(config.max_metrics_bytes),
                    refusals: crate::meter::refused_calls::Refusals::new(
                        store.as_ref().map(Store::dir),
                    ),
                    store,
                    pg,
                    conversations,
                    upstreams,
                    max_recorded_reply_bytes: config.max_recorded_reply_bytes,
                    drain_expired: AtomicBool::new(false),
                }),
                body: BodyLimits {
                    max_bytes: config.max_body_bytes,
                    timeout: config.body_timeout,
                    // A config made in code is held to what a config file may say.
                    max_json_depth: config
                        .max_json_depth
                        .min(crate::config::DEFAULT_MAX_JSON_DEPTH),
                },
                started: Instant::now(),
                state_key,
            }),
            listen: crate::transport::listener::Options::from_config(config),
        })
    }

    /// Serves connections on `lanes` threads of their own (one single-threaded runtime
    /// each, `lanes.rs`) instead of the runtime that runs [`Gateway::serve`]; 0 turns
    /// lanes off (what `listen.lanes` sets; `switchyard serve` runs one per core unless
    /// told otherwise).
    pub fn set_lanes(&mut self, lanes: usize) {
        self.listen.lanes = lanes;
    }

    /// Plugs in the call recorder (see [`CallRecorder`]).
    pub fn set_recorder(&self, recorder: Arc<dyn CallRecorder>) {
        self.state.books.metrics.set_recorder(recorder);
    }

    /// The data directory calls are recorded into, when there is one.
    pub fn store_dir(&self) -> Option<&std::path::Path> {
        self.state.books.store.as_ref().map(Store::dir)
    }

    /// The PostgreSQL store it shares, when it does: the URL without its password, and
    /// this replica's id.
    pub fn postgres(&self) -> Option<(&str, &str)> {
        self.state
            .books
            .pg
            .as_ref()
            .map(|pg| (pg.shown_url(), pg.replica()))
    }

    /// Whether the store writes what it is given, and how many records were lost
    /// (`None` without a store). `switchyard serve` exits non-zero when any was lost.
    pub fn store_health(&self) -> Option<crate::store::StoreHealth> {
        self.state.books.store.as_ref().map(Store::health)
    }

    /// Upstream targets cached now (bounded by `limits.max_targets`).
    pub fn cached_targets(&self) -> usize {
        self.state.upstreams.cached()
    }

    /// The metrics, rendered by `GET /metrics`.
    pub fn metrics(&self) -> &Metrics {
        &self.state.books.metrics
    }

    /// Why the connection cap is lower than `listen.max_connections` (the process's
    /// open-file limit), when it is.
    pub fn connection_cap_warning(&self) -> Option<String> {
        self.listen.cap.warning()
    }

    /// True when client keys are configured.
    pub fn has_keys(&self) -> bool {
        !self.state.keys.is_empty()
    }

    /// The routes, with the web console's for a gateway listening on `local` (whether
    /// it opens without keys depends on the address).
    pub fn router(&self, local: SocketAddr) -> Router {
        self.api_router()
            .merge(crate::endpoints::console::router(&self.state, local))
    }

    /// The model-call, model-list, health and metrics routes.
    fn api_router(&self) -> Router {
        Router::new()
            .route(
                "/",
                get(endpoints::health::root).head(endpoints::health::root),
            )
            .route("/healthz", get(endpoints::health::healthz))
            .route("/metrics", get(endpoints::health::metrics))
            .route("/v1/models", get(endpoints::models::list))
            .route("/v1beta/models", get(endpoints::models::list_gemini))
            .route(
                "/v1/chat/completions",
                post(endpoints::calls::chat_completions),
            )
            .route("/v1/responses", post(endpoints::calls::responses))
            .route(
                "/v1/responses/{id}",
                get(endpoints::responses::get).delete(endpoints::responses::delete),
            )
            .route(
                "/v1/responses/{id}/input_items",
                get(endpoints::responses::input_items),
            )
            .route("/v1/embeddings", post(endpoints::calls::embeddings))
            .route("/v1/messages", post(endpoints::calls::messages))
            .route(
                "/v1/messages/count_tokens",
                post(endpoints::calls::count_tokens),
            )
            .route(
                "/v1beta/models/{*rest}",
                post(endpoints::gemini::call).get(endpoints::models::get_gemini),
            )
            .route(
                "/v1/models/{*rest}",
                post(endpoints::gemini::call).get(endpoints::models::get),
            )
            // Gemini's `{backend}/{model…}:{method}` (what a Google client sends for an id
            // holding `/`); every other path under these roots is no route, as before.
            .route("/v1beta/{*rest}", any(endpoints::gemini::by_backend))
            .route("/v1/{*rest}", any(endpoints::gemini::by_backend))
            // Both in the path's dialect, naming the routes that exist.
            .method_not_allowed_fallback(crate::endpoints::not_found::method_not_allowed)
            .fallback(crate::endpoints::not_found::not_found)
            // The body limit is enforced per call, to answer in the client's dialect.
            .layer(axum::extract::DefaultBodyLimit::disable())
            .with_state(self.state.clone())
    }

    /// Serves on `listener` until `shutdown` resolves, then waits for calls in flight
    /// (at most the drain timeout; those still running then are aborted and recorded as
    /// cancelled).
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        let state = self.state.clone();
        let router = self.router(listener.local_addr()?);
        let served = crate::transport::listener::serve(
            listener,
            router,
            state.clone(),
            &self.listen,
            shutdown,
        )
        .await;
        // Every call that ended is written before the gateway says it stopped.
        if let Some(store) = &state.books.store {
            let closing = tokio::task::spawn_blocking({
                let state = state.clone();
                move || state.books.store.as_ref().map(Store::close)
            });
            if let Ok(Some(Err(e))) = closing.await {
                tracing::error!("the gateway's store {}: {e}", store.dir().display());
            }
        }
        // Then what is in the log reaches the shared store, and the holds are settled.
        if let Some(pg) = state.books.pg.clone() {
            let _ = tokio::task::spawn_blocking(move || pg.close()).await;
        }
        served
    }
}

/// Reads back each budgeted key's spend in its current period from the store.
fn resume_budgets(keys: &Keys, store: &Store, errors: &mut Vec<String>) {
    for key in keys.iter() {
        let Some(budget) = &key.budget else {
            continue;
        };
        let since = budget.since();
        match switchyard::record::spend_by_client_key(store.dir(), since.as_deref()) {
            Ok(spent) => budget.resume(spent.get(&key.name).copied().unwrap_or(0.0)),
            Err(e) => errors.push(format!(
                "key `{}`: cannot read its spend from the store: {e}",
                key.name
            )),
        }
    }
}

/// Refuses to listen beyond loopback without client keys, unless the operator said so.
pub fn check_exposure(addr: SocketAddr, has_keys: bool, allow_public: bool) -> Result<(), String> {
    if has_keys || allow_public || addr.ip().is_loopback() {
        Ok(())
    } else {
        Err(format!(
            "refusing to listen on {addr} without client keys: anyone who can reach it could spend your backends' keys. \
             Add `keys:` to the gateway config, listen on 127.0.0.1, or pass --allow-public-without-keys"
        ))
    }
}

/// A gateway running in this process (for `switchyard bind` and tests).
pub struct RunningGateway {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<std::io::Result<()>>,
}

impl RunningGateway {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR` (the Anthropic base URL; OpenAI clients add `/v1`).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, waits for calls in flight (up to the drain timeout), and returns.
    pub async fn shutdown(self) -> std::io::Result<()> {
        let _ = self.stop.send(true);
        self.task
            .await
            .map_err(|e| std::io::Error::other(format!("the gateway task failed: {e}")))?
    }
}

/// Starts `gateway` on `addr` (port 0: any free port) in the current tokio runtime.
pub async fn start(gateway: Gateway, addr: SocketAddr) -> std::io::Result<RunningGateway> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let (stop, mut rx) = watch::channel(false);
    let task = tokio::spawn(gateway.serve(listener, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    Ok(RunningGateway { addr, stop, task })
}

/// True when a Switchyard gateway answers at `base` (`http://127.0.0.1:8080`): its
/// `/healthz` names the service. How `switchyard bind` finds one to reuse.
pub async fn probe(base: &str) -> bool {
    let client = match reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
    {
        Ok(c) => c,
        Err(_) => return false,
    };
    let url = format!("{}/healthz", base.trim_end_matches('/'));
    match client.get(url).send().await {
        Ok(r) if r.status().is_success() => r
            .json::<serde_json::Value>()
            .await
            .is_ok_and(|v| v["service"] == endpoints::health::SERVICE),
        _ => false,
    }
}

/// The kept conversations: in the shared store when there is one (replicas serve one
/// chain together), else in the data directory; none without a store or when the
/// config turns them off.
fn open_conversations(
    config: &GatewayConfig,
    store: Option<&Store>,
    pg: Option<&Arc<crate::store::pg::SharedStore>>,
    errors: &mut Vec<String>,
) -> Option<Arc<crate::conversations::Conversations>> {
    use crate::conversations::{local::Local, Conversations};
    let c = config.conversations;
    if !c.on {
        return None;
    }
    if let Some(pg) = pg {
        return Some(Arc::new(Conversations::shared(pg.clone(), c.ttl)));
    }
    match Local::open(store?.dir()) {
        Ok(local) => Some(Arc::new(Conversations::local(local, c.ttl))),
        Err(e) => {
            errors.push(e);
            None
        }
    }
}
