//! What a replica holds of the shared store: a pool for its calls' budget and rate
//! checks, the shipper of its records and the settler of its budget holds (both on a
//! thread of their own), and whether the database is reachable.
//!
//! Per call, on its path: one statement to reserve from the key's budget (when it has
//! one) and one to take a request from its rate window (when it has `rpm` or `tpm`),
//! each a single-row upsert on a primary key. Off its path: the settlement of the hold
//! and the tokens charged to the window (the settler), and the record (the shipper).

use super::config::{OnStoreDown, PgStoreConfig};
use super::connect::Pool;
use super::gate::Gate;
use super::shipper::{Shipper, CLOSE_DEADLINE};
use super::{ledger, redact_url, schema, PgError};
use crate::account::budgets::{CallBound, KeyBudget};
use crate::account::keys::Key;
use crate::errors::{ApiError, Category};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;

/// The longest a cache lookup in the database may hold a call up: past it the call
/// goes upstream as on a miss.
pub const CACHE_DEADLINE: Duration = Duration::from_millis(250);

/// The file in the data directory naming the replica (its records' ids start with it).
pub const REPLICA_FILE: &str = "replica-id";

/// Whether the database is reachable, and what was shipped.
#[derive(Debug, Default)]
pub struct Health {
    down: AtomicBool,
    error: Mutex<Option<String>>,
    /// Records shipped since the replica started.
    pub shipped: AtomicU64,
    /// The number of the last record shipped.
    pub last_shipped: AtomicU64,
    /// Settlements and token charges waiting for the database.
    pub unsettled: AtomicU64,
    pub(super) closing: AtomicBool,
}

impl Health {
    /// Marks the database unreachable (with why) or reachable (`None`); true when that
    /// changed.
    pub(super) fn set_down(&self, error: Option<String>) -> bool {
        let down = error.is_some();
        *self.error.lock().unwrap_or_else(|p| p.into_inner()) = error;
        self.down.swap(down, Ordering::AcqRel) != down
    }

    /// Whether the database is unreachable now.
    pub fn is_down(&self) -> bool {
        self.down.load(Ordering::Acquire)
    }

    /// Why it is, when it is.
    pub fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A step of the ledger taken off the call's path.
enum LedgerOp {
    Settle {
        key: String,
        period: String,
        reserved: f64,
        cost: f64,
    },
    Tokens {
        key: String,
        window: i64,
        tokens: i64,
    },
}

/// A call's hold on its key's budget in the shared ledger: settled with its cost, or
/// given back whole when dropped unsettled.
pub struct SharedHold {
    ops: UnboundedSender<LedgerOp>,
    key: String,
    period: String,
    reserved: f64,
    settled: bool,
    unsettled: Arc<Health>,
}

impl SharedHold {
    /// Settles the hold: the call cost `cost` (nothing when unknown).
    pub fn settle(mut self, cost: Option<f64>) {
        self.send(cost.unwrap_or(0.0));
    }

    fn send(&mut self, cost: f64) {
        if std::mem::replace(&mut self.settled, true) {
            return;
        }
        self.unsettled.unsettled.fetch_add(1, Ordering::Relaxed);
        let op = LedgerOp::Settle {
            key: std::mem::take(&mut self.key),
            period: std::mem::take(&mut self.period),
            reserved: self.reserved,
            cost,
        };
        if self.ops.send(op).is_err() {
            self.unsettled.unsettled.fetch_sub(1, Ordering::Relaxed);
            tracing::error!(
                "PostgreSQL store: a budget hold was not settled: the settler has stopped"
            );
        }
    }
}

impl Drop for SharedHold {
    fn drop(&mut self) {
        self.send(0.0);
    }
}

/// The replica's side of the shared store.
pub struct SharedStore {
    pool: Pool,
    replica: String,
    on_down: OnStoreDown,
    shown: String,
    health: Arc<Health>,
    ops: Mutex<Option<UnboundedSender<LedgerOp>>>,
    background: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("url", &self.shown)
            .field("replica", &self.replica)
            .finish()
    }
}

/// The replica's id, read from the data directory (made the first time: a replica keeps
/// its id, and so its place in the database, across restarts on the same disk).
pub fn replica_id(dir: &Path) -> Result<String, String> {
    let path = dir.join(REPLICA_FILE);
    match std::fs::read_to_string(&path) {
        Ok(id) if !id.trim().is_empty() => return Ok(id.trim().to_string()),
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    }
    let mut bytes = [0u8; 6];
    getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a replica id: {e}"))?;
    let id: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let id = format!("r{id}");
    std::fs::write(&path, format!("{id}\n"))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(id)
}

impl SharedStore {
    /// Opens the shared store for the replica whose data directory is `dir`: the schema
    /// is created or upgraded now (a database that cannot be reached at start is an
    /// error: the operator learns at once), then the shipper and the settler start.
    /// `gate` and `written` are the embedded store's (see `Store::open_shipping`).
    pub fn open(
        config: &PgStoreConfig,
        url: String,
        dir: &Path,
        gate: Arc<Gate>,
        written: Arc<Notify>,
    ) -> Result<SharedStore, String> {
        let shown = redact_url(&url);
        let replica = replica_id(dir)?;
        let migrated = std::thread::scope(|s| {
            s.spawn(|| {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| PgError(format!("PostgreSQL store: a runtime: {e}")))?;
                rt.block_on(async {
                    let mut client = super::connect(&url).await?;
                    schema::migrate(&mut client).await
                })
            })
            .join()
            .unwrap_or_else(|_| Err(PgError("PostgreSQL store: the migration panicked".into())))
        });
        migrated.map_err(|e| e.to_string())?;
        let pool = super::connect::pool(&url, config.pool_size).map_err(|e| e.to_string())?;
        let health = Arc::new(Health::default());
        let (ops, pending) = unbounded_channel();
        let shipper = Shipper {
            url: url.clone(),
            replica: replica.clone(),
            dir: dir.to_path_buf(),
            gate,
            written,
            health: health.clone(),
        };
        let background = {
            let (url, health) = (url.clone(), health.clone());
            std::thread::Builder::new()
                .name("switchyard-gateway-pg".into())
                .spawn(move || {
                    let rt = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(e) => {
                            tracing::error!("PostgreSQL store: no runtime for the shipper: {e}");
                            return;
                        }
                    };
                    rt.block_on(async move {
                        let settler = tokio::spawn(settle_loop(url, pending, health));
                        shipper.run().await;
                        let _ = settler.await;
                    });
                })
                .map_err(|e| format!("cannot start the PostgreSQL store's thread: {e}"))?
        };
        tracing::info!(
            replica = %replica,
            "PostgreSQL store {shown}: schema at version {}, this replica is {replica}",
            schema::SCHEMA_VERSION
        );
        Ok(SharedStore {
            pool,
            replica,
            on_down: config.on_store_down,
            shown,
            health,
            ops: Mutex::new(Some(ops)),
            background: Mutex::new(Some(background)),
        })
    }

    /// The replica's id.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// The connection pool (the console reads through it).
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The web console's reading of every replica's calls, through the pool.
    pub fn call_source(&self) -> Arc<dyn switchyard_console::CallSource> {
        Arc::new(super::call_source::PgCallSource::new(
            self.pool.clone(),
            self.shown.clone(),
        ))
    }

    /// The URL without its password.
    pub fn shown_url(&self) -> &str {
        &self.shown
    }

    /// Whether the database is reachable, and what was shipped.
    pub fn health(&self) -> &Health {
        &self.health
    }

    /// Refuses a call while the database is unreachable, as `on_store_down` says: every
    /// call (`refuse`), or those of keys whose budget or rates live in the database
    /// (`serve`: nothing else needs it; records wait on the local disk).
    pub fn check_serving(&self, key: Option<&Key>) -> Result<(), ApiError> {
        if !self.health.is_down() {
            return Ok(());
        }
        let why = self.health.error().unwrap_or_default();
        let message = match (self.on_down, key) {
            (OnStoreDown::Serve, Some(k))
                if k.budget.is_some() || k.limiter.rpm().is_some() || k.limiter.tpm().is_some() =>
            {
                format!(
                    "the gateway cannot reach its PostgreSQL store ({why}), where key `{}`'s budget and rate limits are held across replicas; its calls are refused until the database is back",
                    k.name
                )
            }
            (OnStoreDown::Serve, _) => return Ok(()),
            (OnStoreDown::Refuse, _) => format!(
                "the gateway cannot reach its PostgreSQL store ({why}) and is configured to refuse calls until it is back (store.postgres.on_store_down: refuse)"
            ),
        };
        Err(ApiError::new(Category::Overloaded, message).with_retry_after(Duration::from_secs(1)))
    }

    pub(super) async fn client(&self, doing: &str) -> Result<deadpool_postgres::Object, ApiError> {
        self.pool
            .get()
            .await
            .map_err(|e| self.unreachable(doing, &e.to_string()))
    }

    fn unreachable(&self, doing: &str, error: &str) -> ApiError {
        tracing::warn!("PostgreSQL store: {doing}: {error}");
        ApiError::new(
            Category::Overloaded,
            format!("the gateway could not reach its PostgreSQL store while {doing} ({error}); try again"),
        )
        .with_retry_after(Duration::from_secs(1))
    }

    /// Reserves the most a call can cost from `key`'s budget in the shared ledger (one
    /// statement), or refuses it as the local budget would.
    pub async fn reserve(
        &self,
        key: &str,
        budget: &KeyBudget,
        model: &str,
        bound: Option<CallBound>,
    ) -> Result<SharedHold, ApiError> {
        let amount = match bound {
            Some(b) => b.usd,
            None if budget.unknown_cost_allowed() => 0.0,
            None => return Err(budget.no_price(key, model)),
        };
        let now = chrono::Utc::now();
        let period = budget.period_label(now);
        let doing = format!("reserving from key `{key}`'s budget");
        let client = self.client(&doing).await?;
        match ledger::reserve(&client, key, &period, amount, budget.usd()).await {
            Ok(Some(_)) => Ok(SharedHold {
                ops: self
                    .sender()
                    .ok_or_else(|| self.unreachable(&doing, "the gateway is stopping"))?,
                key: key.to_string(),
                period,
                reserved: amount,
                settled: false,
                unsettled: self.health.clone(),
            }),
            Ok(None) => {
                let (spent, held) = ledger::balance(&client, key, &period)
                    .await
                    .unwrap_or((f64::NAN, 0.0));
                Err(budget.exceeded(key, spent, Some((held, 0)), bound, now))
            }
            Err(e) => Err(self.unreachable(&doing, &e.to_string())),
        }
    }

    /// Takes a request from `key`'s rate window shared by the replicas (one statement),
    /// when it has `rpm` or `tpm`.
    pub async fn admit(&self, key: &Key) -> Result<(), ApiError> {
        let (rpm, tpm) = (key.limiter.rpm(), key.limiter.tpm());
        if rpm.is_none() && tpm.is_none() {
            return Ok(());
        }
        let (window, next) = window_now();
        let doing = format!("counting a request of key `{}`", key.name);
        let client = self.client(&doing).await?;
        let big = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        match ledger::take_request(&client, &key.name, window, rpm.map(i64::from), tpm.map(big))
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => {
                let what = match rpm {
                    Some(n) => format!("{n} requests"),
                    None => String::new(),
                };
                let tokens = match tpm {
                    Some(n) if what.is_empty() => format!("{n} tokens"),
                    Some(n) => format!(" or {n} tokens"),
                    None => String::new(),
                };
                Err(ApiError::new(
                    Category::RateLimited,
                    format!(
                        "Rate limit reached for key `{}`: {what}{tokens} per minute, counted across the gateway's replicas.",
                        key.name
                    ),
                )
                .with_retry_after(next))
            }
            Err(e) => Err(self.unreachable(&doing, &e.to_string())),
        }
    }

    /// The call every replica recorded under cache `key` that answers a client in
    /// `dialect` asking `stream` (see [`super::cache::find`]). A cache that cannot be
    /// read is a miss, never a failed call: `None` while the database is away or slower
    /// than [`CACHE_DEADLINE`].
    pub async fn cached(
        &self,
        key: &str,
        dialect: Option<switchyard::Dialect>,
        stream: bool,
        ttl: Option<Duration>,
    ) -> Option<super::cache::SharedHit> {
        if self.health.is_down() {
            return None;
        }
        let lookup = async {
            let client = self.pool.get().await.ok()?;
            match super::cache::find(&client, key, dialect, stream, ttl).await {
                Ok(hit) => hit,
                Err(e) => {
                    tracing::warn!("{e}; the call goes upstream");
                    None
                }
            }
        };
        tokio::time::timeout(CACHE_DEADLINE, lookup)
            .await
            .ok()
            .flatten()
    }

    /// Charges the tokens a call of `key` used to its shared window (off the call's path),
    /// when it has a `tpm` limit.
    pub fn charge_tokens(&self, key: &Key, tokens: u64) {
        if key.limiter.tpm().is_none() || tokens == 0 {
            return;
        }
        if let Some(ops) = self.sender() {
            self.health.unsettled.fetch_add(1, Ordering::Relaxed);
            let op = LedgerOp::Tokens {
                key: key.name.clone(),
                window: window_now().0,
                tokens: i64::try_from(tokens).unwrap_or(i64::MAX),
            };
            if ops.send(op).is_err() {
                self.health.unsettled.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    fn sender(&self) -> Option<UnboundedSender<LedgerOp>> {
        self.ops.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Ships what is left and settles what is pending, then stops (after the embedded
    /// store has closed: every record is in the log). Blocks, at most about the close
    /// deadline when the database is unreachable.
    pub fn close(&self) {
        self.ops.lock().unwrap_or_else(|p| p.into_inner()).take();
        self.health.closing.store(true, Ordering::Release);
        if let Some(t) = self
            .background
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            let _ = t.join();
        }
    }
}

/// The rate window holding now (Unix seconds of its minute) and how long until the next.
fn window_now() -> (i64, Duration) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let start = secs - secs % 60;
    let next = Duration::from_secs(start + 60).saturating_sub(now);
    (
        i64::try_from(start).unwrap_or(i64::MAX),
        next.max(Duration::from_secs(1)),
    )
}

/// Applies the ledger's off-path steps in order on a connection of its own, waiting out
/// an unreachable database (a settlement is never dropped while the replica runs; at
/// close, those still pending after the close deadline are logged).
async fn settle_loop(url: String, mut ops: UnboundedReceiver<LedgerOp>, health: Arc<Health>) {
    let mut client: Option<tokio_postgres::Client> = None;
    let mut closing_since: Option<std::time::Instant> = None;
    while let Some(op) = ops.recv().await {
        loop {
            if client.as_ref().is_some_and(|c| c.is_closed()) {
                client = None;
            }
            if health.closing.load(Ordering::Acquire) {
                let since = *closing_since.get_or_insert_with(std::time::Instant::now);
                if client.is_none() && since.elapsed() > CLOSE_DEADLINE {
                    tracing::error!(
                        "PostgreSQL store: closing with the database unreachable; {} budget settlements and token charges were not applied",
                        health.unsettled.load(Ordering::Relaxed)
                    );
                    return;
                }
            }
            let c = match &client {
                Some(c) => c,
                None => match super::connect(&url).await {
                    Ok(c) => client.insert(c),
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                },
            };
            let done = match &op {
                LedgerOp::Settle {
                    key,
                    period,
                    reserved,
                    cost,
                } => ledger::settle(c, key, period, *reserved, *cost).await,
                LedgerOp::Tokens {
                    key,
                    window,
                    tokens,
                } => ledger::charge_tokens(c, key, *window, *tokens).await,
            };
            match done {
                Ok(()) => {
                    health.unsettled.fetch_sub(1, Ordering::Relaxed);
                    break;
                }
                // The connection went: the step is tried again on the next one.
                Err(_) if c.is_closed() => client = None,
                Err(e) => {
                    health.unsettled.fetch_sub(1, Ordering::Relaxed);
                    tracing::error!("PostgreSQL store: {e}");
                    break;
                }
            }
        }
    }
}
