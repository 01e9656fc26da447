//! The gateway's part of a run config: `listen`, `models`, `keys` and `store`, read from the
//! sections [`switchyard::Config`] keeps for later parts of Switchyard, with every problem
//! collected and named.
//!
//! ```yaml
//! listen: 127.0.0.1:8080            # or {address: …, max_body_bytes: …, drain_timeout_seconds: …,
//!                                   #     header_timeout_seconds, body_timeout_seconds, idle_timeout_seconds,
//!                                   #     max_connections, max_calls_in_flight, max_streams_per_connection,
//!                                   #     max_header_bytes, max_uri_bytes, max_headers, max_json_depth,
//!                                   #     allowed_hosts, cors_origins, lanes, pin_lanes}
//! models:                           # client-visible name → reference
//!   claude-sonnet-4-5: vllm/qwen3
//!   gpt-5.4: mock/echo
//! keys:
//!   - {name: alice, key_env: ALICE_GATEWAY_KEY, models: ["mock/*"], rpm: 60, tpm: 100000}
//!   - {name: ci, key_sha256: 9f86d08…, budget_usd: 5, budget_period: day}
//! store: ./gateway-data             # or {path: DIR, durability: fast|answered|synced, max_backlog: N}
//! timeouts: {first_byte_timeout_seconds: 600, idle_timeout_seconds: 300}
//! limits: {max_targets: 1024, max_metric_series: 1000, max_metrics_bytes: 4194304,
//!          max_reply_bytes: …, max_stream_bytes: …, max_event_bytes: …,
//!          max_error_body_bytes: …, max_recorded_reply_bytes: …}
//! cache: {mode: read-write, ttl: 1h, temperature_above_zero: false}   # or off | read | read-write
//! conversations: {ttl: 30d}          # or off: the stateful APIs' state (with a store)
//! ```

mod key_spec;
mod renamed;
mod sections;

pub use key_spec::parse_sha256;

use serde_json::Value;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use switchyard::backend::http::Timeouts;
use switchyard::RetryPolicy;

pub use crate::conversations::config::ConversationsConfig;
pub use crate::store::{StoreDurability, StoreOptions};
pub use sections::GATEWAY_TIMEOUTS;

/// The default bound on a request body: large enough for long agent transcripts with
/// images, small enough that one client cannot exhaust memory.
pub const DEFAULT_MAX_BODY_BYTES: usize = 32 * 1024 * 1024;

/// How long `SIGTERM` waits for streams in flight before the process exits anyway.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// The loopback address used when nothing says where to listen.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";

/// How long a request's head (request line and headers) may take to arrive, counted from
/// the connection's start, or on a keep-alive connection from the head's first byte.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a request's whole body may take to arrive once its head is in.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a keep-alive connection may wait, idle, for its next request.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// Connections served at once (see docs/gateway.md, *The listener*, for the reasoning).
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;

/// How deep a request body may nest arrays and objects: the most the gateway's parsers
/// read (serde_json's own limit refuses a 128th level), which is also the most
/// `listen.max_json_depth` may be. The store's records are read up to this plus the levels
/// a record adds (`switchyard::record::MAX_RECORD_DEPTH`), so every call answered is
/// readable.
pub const DEFAULT_MAX_JSON_DEPTH: usize = switchyard::record::MAX_BODY_DEPTH;

/// Requests in flight at once, over every connection and HTTP/2 stream: as many as
/// connections, so that an h2c client's streams get no more than HTTP/1 clients'
/// connections would (see docs/gateway.md, *Calls in flight*).
pub const DEFAULT_MAX_CALLS_IN_FLIGHT: usize = DEFAULT_MAX_CONNECTIONS;

/// Streams one HTTP/2 connection may have open at once (its `SETTINGS_MAX_CONCURRENT_STREAMS`):
/// the floor RFC 9113 recommends and what nginx and most servers advertise, enough for
/// an agent's parallel tool calls on one connection; hyper's own default is 200.
pub const DEFAULT_MAX_STREAMS_PER_CONNECTION: u32 = 100;

/// The most bytes of one request head (request line and headers): far above any SDK's
/// (a few hundred bytes) or a browser's with cookies (a few KiB).
pub const DEFAULT_MAX_HEADER_BYTES: usize = 64 * 1024;

/// The most bytes of a request target (path and query), as nginx's default header line.
pub const DEFAULT_MAX_URI_BYTES: usize = 8 * 1024;

/// The most header fields of one request (hyper's default).
pub const DEFAULT_MAX_HEADERS: usize = 100;

/// The largest `listen.max_uri_bytes`: hyper refuses targets of 65,534 bytes and more on
/// its own (with an empty body), so the gateway's bound must stay under it.
pub const MAX_URI_BYTES_CEILING: usize = 65_000;

/// The largest `listen.max_header_bytes`.
pub const MAX_HEADER_BYTES_CEILING: usize = 1024 * 1024;

/// The largest `listen.max_headers`.
pub const MAX_HEADERS_CEILING: usize = 1000;

const LISTEN_FIELDS: &str = "address, max_body_bytes, drain_timeout_seconds, \
     header_timeout_seconds, body_timeout_seconds, idle_timeout_seconds, max_connections, \
     max_calls_in_flight, max_streams_per_connection, max_header_bytes, max_uri_bytes, \
     max_headers, max_json_depth, allowed_hosts, cors_origins, lanes, pin_lanes";

/// The most lanes `listen.lanes` (and `serve --lanes`) may ask for.
pub const MAX_LANES: usize = 1024;

/// Everything the gateway reads from its config.
#[derive(Debug, Clone, PartialEq)]
pub struct GatewayConfig {
    /// Where to listen (`--listen` wins).
    pub listen: Option<SocketAddr>,
    /// Client-visible model names and the references they go to.
    pub models: BTreeMap<String, String>,
    /// Client keys; empty means no key is asked (loopback only).
    pub keys: Vec<KeySpec>,
    /// Where calls are recorded (`--data-dir` wins).
    pub store: Option<PathBuf>,
    /// A `store:` section set its options but named no directory: the gateway refuses to
    /// start unless one comes from elsewhere (`--data-dir`), rather than run unrecorded.
    pub store_without_path: bool,
    /// The largest request body accepted.
    pub max_body_bytes: usize,
    /// How long shutdown waits for calls in flight (`listen.drain_timeout_seconds`).
    pub drain_timeout: Duration,
    /// How long a request's head may take (`listen.header_timeout_seconds`).
    pub header_timeout: Duration,
    /// How long a request's body may take (`listen.body_timeout_seconds`).
    pub body_timeout: Duration,
    /// How long a keep-alive connection may idle between requests
    /// (`listen.idle_timeout_seconds`).
    pub idle_timeout: Duration,
    /// Connections served at once (`listen.max_connections`).
    pub max_connections: usize,
    /// Requests in flight at once, over every connection and stream
    /// (`listen.max_calls_in_flight`).
    pub max_calls_in_flight: usize,
    /// Streams one HTTP/2 connection may have open (`listen.max_streams_per_connection`).
    pub max_streams_per_connection: u32,
    /// The most bytes of one request head (`listen.max_header_bytes`).
    pub max_header_bytes: usize,
    /// The most bytes of one request target (`listen.max_uri_bytes`).
    pub max_uri_bytes: usize,
    /// The most header fields of one request (`listen.max_headers`).
    pub max_headers: usize,
    /// How deep a body may nest arrays and objects (`listen.max_json_depth`).
    pub max_json_depth: usize,
    /// Host names a gateway without client keys answers besides loopback ones
    /// (`listen.allowed_hosts`).
    pub allowed_hosts: Vec<String>,
    /// Browser origins whose CORS preflights are answered (`listen.cors_origins`).
    pub cors_origins: Vec<String>,
    /// Threads serving connections (`listen.lanes`; `serve --lanes` wins); `None`: one per
    /// core. 0: every connection on the runtime that serves (docs/gateway.md, *Threads*).
    pub lanes: Option<usize>,
    /// Whether lanes run one to a core, with the background threads off the first lane's
    /// (`listen.pin_lanes`, on by default; docs/gateway.md, *Threads*).
    pub pin_lanes: bool,
    /// Retries of upstream calls (the run config's `retry:`, as everywhere): whole calls,
    /// and streams before their first byte.
    pub retry: RetryPolicy,
    /// The waits of every upstream call, pass-through and translated alike (`timeouts:`).
    pub timeouts: Timeouts,
    /// How the store records (`store: {durability, max_backlog}`).
    pub store_options: StoreOptions,
    /// The PostgreSQL store replicas share (`store: {postgres: {url_env, …}}`), beside
    /// the data directory (each replica's own copy of its records).
    pub postgres: Option<crate::store::pg::PgStoreConfig>,
    /// The most upstream targets kept (`limits.max_targets`).
    pub max_targets: usize,
    /// The most metric series (`limits.max_metric_series`): calls past it are counted
    /// under `model="(other)"`.
    pub max_metric_series: usize,
    /// The most bytes of the `/metrics` text (`limits.max_metrics_bytes`): series past it
    /// are shown summed under `(other)`.
    pub max_metrics_bytes: usize,
    /// How much of an upstream's answer is read (`limits.max_reply_bytes`,
    /// `max_stream_bytes`, `max_event_bytes`, `max_error_body_bytes`).
    pub reply_limits: switchyard::backend::http::ReplyLimits,
    /// How many bytes of a reply a record keeps (`limits.max_recorded_reply_bytes`); the
    /// record says when it kept less than came.
    pub max_recorded_reply_bytes: usize,
    /// The response cache (`cache:`; off by default, and only with a store).
    pub cache: crate::store::cache::CacheConfig,
    /// The stateful APIs' state kept for clients (`conversations:`; on with a store).
    pub conversations: ConversationsConfig,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            listen: None,
            models: BTreeMap::new(),
            keys: Vec::new(),
            store: None,
            store_without_path: false,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            max_calls_in_flight: DEFAULT_MAX_CALLS_IN_FLIGHT,
            max_streams_per_connection: DEFAULT_MAX_STREAMS_PER_CONNECTION,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_uri_bytes: DEFAULT_MAX_URI_BYTES,
            max_headers: DEFAULT_MAX_HEADERS,
            max_json_depth: DEFAULT_MAX_JSON_DEPTH,
            allowed_hosts: Vec::new(),
            cors_origins: Vec::new(),
            lanes: None,
            pin_lanes: true,
            retry: RetryPolicy::default(),
            timeouts: GATEWAY_TIMEOUTS,
            store_options: StoreOptions::default(),
            postgres: None,
            max_targets: crate::call::upstream::DEFAULT_MAX_TARGETS,
            max_metric_series: crate::meter::metrics::DEFAULT_MAX_SERIES,
            max_metrics_bytes: crate::meter::metrics::DEFAULT_MAX_BYTES,
            reply_limits: switchyard::backend::http::ReplyLimits::DEFAULT,
            max_recorded_reply_bytes: crate::store::DEFAULT_MAX_RECORDED_REPLY_BYTES,
            cache: crate::store::cache::CacheConfig::default(),
            conversations: ConversationsConfig::default(),
        }
    }
}

/// One client key.
#[derive(Debug, Clone, PartialEq)]
pub struct KeySpec {
    /// The name metrics and records show (never the key).
    pub name: String,
    /// Where the key is found.
    pub secret: KeySecret,
    /// The models this key may use: client-visible names or references; a trailing `*`
    /// matches any suffix (`mock/*`). Empty: every model.
    pub models: Vec<String>,
    /// Spend allowed per period, in USD.
    pub budget_usd: Option<f64>,
    /// The budget's period.
    pub budget_period: Option<BudgetPeriod>,
    /// `unknown_cost: allow`: calls of models without a price go through a USD budget
    /// (counting nothing); refused by default, since their spend cannot be held.
    pub unknown_cost_allowed: bool,
    /// The most calls of this key in flight at once.
    pub max_in_flight: Option<u32>,
    /// Requests per minute.
    pub rpm: Option<u32>,
    /// Tokens (input + output) per minute.
    pub tpm: Option<u64>,
    /// `role: admin`: the key also opens the web console (`/console`), which no other
    /// key does. An admin key calls models as any key does.
    pub admin: bool,
}

impl KeySpec {
    /// A key of that name with no limits (every model, no budget, no rates).
    pub fn new(name: impl Into<String>, secret: KeySecret) -> Self {
        KeySpec {
            name: name.into(),
            secret,
            models: Vec::new(),
            budget_usd: None,
            budget_period: None,
            unknown_cost_allowed: false,
            max_in_flight: None,
            rpm: None,
            tpm: None,
            admin: false,
        }
    }
}

/// Where a client key is found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySecret {
    /// The environment variable holding it.
    Env(String),
    /// Its SHA-256, so the config file need not hold the key.
    Sha256([u8; 32]),
}

/// The period a budget is counted over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetPeriod {
    /// A UTC day.
    Day,
    /// A week (Monday to Sunday, UTC).
    Week,
    /// A calendar month (UTC).
    Month,
    /// For as long as the store is kept.
    Total,
}

impl BudgetPeriod {
    const NAMES: &'static str = "day, week, month, total";

    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "day" | "daily" => BudgetPeriod::Day,
            "week" | "weekly" => BudgetPeriod::Week,
            "month" | "monthly" => BudgetPeriod::Month,
            "total" => BudgetPeriod::Total,
            _ => return None,
        })
    }

    /// Its name in the config (`day`, `week`, `month`, `total`).
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetPeriod::Day => "day",
            BudgetPeriod::Week => "week",
            BudgetPeriod::Month => "month",
            BudgetPeriod::Total => "total",
        }
    }
}

/// What reading the gateway's sections found: the config or every problem, and the
/// settings written under an old name, which still read.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigReading {
    /// The config, or every problem, each naming the field and what is accepted.
    pub config: Result<GatewayConfig, Vec<String>>,
    /// One note per old name used, with the name to use instead
    /// (`listen.body_timeout_secs: use listen.body_timeout_seconds`).
    pub deprecated: Vec<String>,
}

impl GatewayConfig {
    /// Reads the `listen`, `models`, `keys` and `store` sections of a loaded config.
    /// Every problem is listed, each naming the field and what is accepted.
    pub fn from_sections(sections: &BTreeMap<String, Value>) -> Result<Self, Vec<String>> {
        Self::read(sections).config
    }

    /// [`GatewayConfig::from_sections`], with the deprecated names the sections use
    /// (`switchyard check` prints them).
    pub fn read(sections: &BTreeMap<String, Value>) -> ConfigReading {
        let mut deprecated = Vec::new();
        let config = Self::read_noting(sections, &mut deprecated);
        ConfigReading { config, deprecated }
    }

    fn read_noting(
        sections: &BTreeMap<String, Value>,
        deprecated: &mut Vec<String>,
    ) -> Result<Self, Vec<String>> {
        let mut errors = Vec::new();
        let mut config = GatewayConfig::default();
        if let Some(listen) = sections.get("listen") {
            read_listen(listen, &mut config, deprecated, &mut errors);
        }
        if let Some(models) = sections.get("models") {
            match models {
                Value::Object(map) => {
                    for (name, target) in map {
                        match target.as_str() {
                            Some(r) if !r.trim().is_empty() => {
                                config.models.insert(name.clone(), r.to_string());
                            }
                            _ => errors.push(format!(
                                "models.{name}: expected a reference `<backend>/<model id>` as a string, found {target}"
                            )),
                        }
                    }
                }
                other => errors.push(format!(
                    "models: expected a mapping of client-visible names to references, found {other}"
                )),
            }
        }
        if let Some(keys) = sections.get("keys") {
            match keys {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        if let Some(k) = key_spec::read_key(i, item, &mut errors) {
                            if config.keys.iter().any(|o| o.name == k.name) {
                                errors.push(format!(
                                    "keys[{i}]: the name `{}` is used twice",
                                    k.name
                                ));
                            }
                            config.keys.push(k);
                        }
                    }
                }
                Value::Null => {}
                other => errors.push(format!("keys: expected a list of keys, found {other}")),
            }
        }
        if let Some(retry) = sections.get("retry") {
            match serde_json::from_value::<RetryPolicy>(retry.clone()) {
                Ok(r) => config.retry = r,
                Err(e) => errors.push(format!("retry: {e}")),
            }
        }
        if let Some(store) = sections.get("store") {
            sections::read_store(store, &mut config, &mut errors);
        }
        if let Some(timeouts) = sections.get("timeouts") {
            sections::read_timeouts(timeouts, &mut config, &mut errors);
        }
        if let Some(limits) = sections.get("limits") {
            sections::read_limits(limits, &mut config, &mut errors);
        }
        if let Some(cache) = sections.get("cache") {
            config.cache = crate::store::cache::read_cache(cache, &mut errors);
        }
        if let Some(c) = sections.get("conversations") {
            match ConversationsConfig::read(c) {
                Ok(c) => config.conversations = c,
                Err(e) => errors.extend(e),
            }
        }
        if errors.is_empty() {
            Ok(config)
        } else {
            Err(errors)
        }
    }
}

fn read_listen(
    value: &Value,
    config: &mut GatewayConfig,
    deprecated: &mut Vec<String>,
    errors: &mut Vec<String>,
) {
    let mut set_addr = |s: &str, errors: &mut Vec<String>| match s.parse::<SocketAddr>() {
        Ok(a) => config.listen = Some(a),
        Err(_) => errors.push(format!(
            "listen: `{s}` is not an address; write IP:PORT, e.g. {DEFAULT_LISTEN} or 0.0.0.0:8080"
        )),
    };
    match value {
        Value::String(s) => set_addr(s, errors),
        Value::Object(map) => {
            renamed::note("listen", renamed::LISTEN_RENAMED, map, deprecated, errors);
            for (k, v) in map {
                if renamed::shadowed(renamed::LISTEN_RENAMED, map, k) {
                    continue;
                }
                // An old name reads as its new one; its problems name it as written.
                match (renamed::current(renamed::LISTEN_RENAMED, k), v) {
                    ("address", Value::String(s)) => set_addr(s, errors),
                    ("max_body_bytes", v) => match v.as_u64() {
                        Some(n) if n > 0 => config.max_body_bytes = n as usize,
                        _ => errors.push(format!(
                            "listen.max_body_bytes: expected a positive number of bytes, found {v}"
                        )),
                    },
                    ("drain_timeout_seconds", v) => match v.as_f64() {
                        Some(s) if s >= 0.0 && s.is_finite() => {
                            config.drain_timeout = Duration::from_secs_f64(s)
                        }
                        _ => errors.push(format!(
                            "listen.{k}: expected seconds (a number ≥ 0), found {v}"
                        )),
                    },
                    ("header_timeout_seconds", v) => {
                        read_deadline(v, k, &mut config.header_timeout, errors)
                    }
                    ("body_timeout_seconds", v) => {
                        read_deadline(v, k, &mut config.body_timeout, errors)
                    }
                    ("idle_timeout_seconds", v) => {
                        read_deadline(v, k, &mut config.idle_timeout, errors)
                    }
                    ("max_connections", v) => match v.as_u64() {
                        Some(n) if n > 0 => config.max_connections = n as usize,
                        _ => errors.push(format!(
                            "listen.max_connections: expected a whole number of connections > 0, found {v}"
                        )),
                    },
                    ("max_calls_in_flight", v) => {
                        if let Some(n) = read_count(v, "max_calls_in_flight", "calls", None, errors) {
                            config.max_calls_in_flight = n;
                        }
                    }
                    ("max_streams_per_connection", v) => {
                        if let Some(n) = read_count(v, "max_streams_per_connection", "streams", Some(u32::MAX as usize), errors) {
                            config.max_streams_per_connection = n as u32;
                        }
                    }
                    ("max_header_bytes", v) => {
                        if let Some(n) = read_count(v, "max_header_bytes", "bytes", Some(MAX_HEADER_BYTES_CEILING), errors) {
                            config.max_header_bytes = n;
                        }
                    }
                    ("max_uri_bytes", v) => {
                        if let Some(n) = read_count(v, "max_uri_bytes", "bytes", Some(MAX_URI_BYTES_CEILING), errors) {
                            config.max_uri_bytes = n;
                        }
                    }
                    ("max_headers", v) => {
                        if let Some(n) = read_count(v, "max_headers", "header fields", Some(MAX_HEADERS_CEILING), errors) {
                            config.max_headers = n;
                        }
                    }
                    ("max_json_depth", v) => match v.as_u64() {
                        Some(n) if n > 0 && n <= DEFAULT_MAX_JSON_DEPTH as u64 => {
                            config.max_json_depth = n as usize
                        }
                        Some(n) if n > 0 => errors.push(format!(
                            "listen.max_json_depth: {n} levels is more than the gateway's parsers read ({DEFAULT_MAX_JSON_DEPTH}, the default and the most it may be); lower it"
                        )),
                        _ => errors.push(format!(
                            "listen.max_json_depth: expected a whole number of levels from 1 to {DEFAULT_MAX_JSON_DEPTH}, found {v}"
                        )),
                    },
                    ("allowed_hosts", v) => {
                        config.allowed_hosts = read_names(v, "allowed_hosts", host_problem, errors)
                    }
                    ("cors_origins", v) => {
                        config.cors_origins = read_names(v, "cors_origins", origin_problem, errors)
                    }
                    ("lanes", v) => match v.as_u64() {
                        Some(n) if n <= MAX_LANES as u64 => config.lanes = Some(n as usize),
                        _ => errors.push(format!(
                            "listen.lanes: expected a whole number of threads from 0 to {MAX_LANES} (0: no lanes), found {v}"
                        )),
                    },
                    ("pin_lanes", v) => match v.as_bool() {
                        Some(pin) => config.pin_lanes = pin,
                        None => errors.push(format!(
                            "listen.pin_lanes: expected true or false, found {v}"
                        )),
                    },
                    (other, _) => errors.push(format!(
                        "listen.{other}: unknown field; accepted: {LISTEN_FIELDS}"
                    )),
                }
            }
        }
        other => errors.push(format!(
            "listen: expected an address such as {DEFAULT_LISTEN}, found {other}"
        )),
    }
}

/// A whole number of `what` for `listen.{field}`, from 1 to `ceiling` when there is one.
fn read_count(
    v: &Value,
    field: &str,
    what: &str,
    ceiling: Option<usize>,
    errors: &mut Vec<String>,
) -> Option<usize> {
    let top = ceiling.unwrap_or(usize::MAX) as u64;
    match v.as_u64() {
        Some(n) if n > 0 && n <= top => Some(n as usize),
        _ => {
            errors.push(match ceiling {
                Some(c) => format!(
                    "listen.{field}: expected a whole number of {what} from 1 to {c}, found {v}"
                ),
                None => format!("listen.{field}: expected a whole number of {what} > 0, found {v}"),
            });
            None
        }
    }
}

/// A deadline in seconds: a number > 0 (a zero deadline would cut every request).
fn read_deadline(v: &Value, field: &str, into: &mut Duration, errors: &mut Vec<String>) {
    match v.as_f64() {
        Some(s) if s > 0.0 && s.is_finite() => *into = Duration::from_secs_f64(s),
        _ => errors.push(format!(
            "listen.{field}: expected seconds (a number > 0, e.g. 5 or 0.5), found {v}"
        )),
    }
}

/// A list of strings, each checked by `problem` (which says what is wrong with one).
fn read_names(
    v: &Value,
    field: &str,
    problem: fn(&str) -> Option<String>,
    errors: &mut Vec<String>,
) -> Vec<String> {
    let Value::Array(items) = v else {
        errors.push(format!(
            "listen.{field}: expected a list of strings, found {v}"
        ));
        return Vec::new();
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match item.as_str() {
            Some(s) => match problem(s) {
                None => out.push(s.to_ascii_lowercase()),
                Some(p) => errors.push(format!("listen.{field}[{i}]: {p}")),
            },
            None => errors.push(format!(
                "listen.{field}[{i}]: expected a string, found {item}"
            )),
        }
    }
    out
}

/// What is wrong with an `allowed_hosts` entry: a host name or IP address, no scheme,
/// port or path (every port of a listed name is answered).
fn host_problem(s: &str) -> Option<String> {
    let bare = s
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .unwrap_or(s);
    (!crate::transport::host::is_host_name(bare)).then(|| {
        format!(
            "`{s}` is not a host name; write the name clients put in their URL, without scheme, \
             port or path (e.g. gw.internal or 10.0.0.5)"
        )
    })
}

/// What is wrong with a `cors_origins` entry: a browser origin, `http(s)://host[:port]`.
fn origin_problem(s: &str) -> Option<String> {
    crate::transport::host::origin_host(s).is_none().then(|| {
        format!(
            "`{s}` is not an origin; write it as a browser sends it, scheme, host and port only \
             (e.g. https://app.example.com or http://localhost:5173)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;
    use switchyard::backend::http::ReplyLimits;

    fn sections(v: Value) -> BTreeMap<String, Value> {
        v.as_object().unwrap().clone().into_iter().collect()
    }

    #[test]
    fn a_full_config_reads() {
        let c = GatewayConfig::from_sections(&sections(json!({
            "listen": {"address": "0.0.0.0:9000", "max_body_bytes": 1024},
            "models": {"claude-sonnet-4-5": "mock/echo"},
            "keys": [{"name": "alice", "key_env": "ALICE", "models": ["mock/*"], "rpm": 5, "tpm": 100,
                      "budget_usd": 2.5, "budget_period": "day"}],
            "store": "data"
        })))
        .unwrap();
        assert_eq!(c.listen, Some("0.0.0.0:9000".parse().unwrap()));
        assert_eq!(c.max_body_bytes, 1024);
        assert_eq!(c.models["claude-sonnet-4-5"], "mock/echo");
        assert_eq!(c.keys[0].secret, KeySecret::Env("ALICE".into()));
        assert_eq!(c.keys[0].budget_period, Some(BudgetPeriod::Day));
        assert_eq!(c.keys[0].rpm, Some(5));
    }

    #[test]
    fn the_listener_fields_read() {
        let c = GatewayConfig::from_sections(&sections(json!({
            "listen": {"header_timeout_seconds": 0.5, "body_timeout_seconds": 10, "idle_timeout_seconds": 90,
                       "max_connections": 64, "max_json_depth": 32,
                       "allowed_hosts": ["GW.internal", "10.0.0.5", "[fd00::1]"],
                       "cors_origins": ["https://app.example.com", "http://localhost:5173"]}
        })))
        .unwrap();
        assert_eq!(c.header_timeout, Duration::from_millis(500));
        assert_eq!(c.body_timeout, Duration::from_secs(10));
        assert_eq!(c.idle_timeout, Duration::from_secs(90));
        assert_eq!(c.max_connections, 64);
        assert_eq!(c.max_json_depth, 32);
        assert_eq!(c.allowed_hosts, ["gw.internal", "10.0.0.5", "[fd00::1]"]);
        assert_eq!(c.cors_origins[1], "http://localhost:5173");
        let d = GatewayConfig::default();
        assert_eq!(d.max_calls_in_flight, d.max_connections);
        assert_eq!(
            (d.header_timeout, d.body_timeout, d.idle_timeout),
            (
                DEFAULT_HEADER_TIMEOUT,
                DEFAULT_BODY_TIMEOUT,
                DEFAULT_IDLE_TIMEOUT
            )
        );
    }

    #[test]
    fn the_listeners_bounds_are_read_and_their_problems_named() {
        let c = GatewayConfig::from_sections(&sections(json!({
            "listen": {"max_calls_in_flight": 8, "max_streams_per_connection": 4,
                       "max_header_bytes": 2048, "max_uri_bytes": 512, "max_headers": 20},
            "limits": {"max_metrics_bytes": 200000}
        })))
        .unwrap();
        assert_eq!(
            (
                c.max_calls_in_flight,
                c.max_streams_per_connection,
                c.max_header_bytes
            ),
            (8, 4, 2048)
        );
        assert_eq!(
            (c.max_uri_bytes, c.max_headers, c.max_metrics_bytes),
            (512, 20, 200000)
        );
        let e = GatewayConfig::from_sections(&sections(json!({
            "listen": {"max_calls_in_flight": 0, "max_uri_bytes": 70000, "max_headers": "many"}
        })))
        .unwrap_err();
        assert_eq!(
            e,
            [
                "listen.max_calls_in_flight: expected a whole number of calls > 0, found 0",
                "listen.max_uri_bytes: expected a whole number of bytes from 1 to 65000, found 70000",
                "listen.max_headers: expected a whole number of header fields from 1 to 1000, found \"many\"",
            ]
        );
    }

    #[test]
    fn the_cache_section_is_read_and_its_problems_named() {
        let c = GatewayConfig::from_sections(&sections(json!({
            "cache": {"mode": "read-write", "ttl": "10m"}
        })))
        .unwrap();
        assert_eq!(c.cache.mode, crate::store::cache::CacheMode::ReadWrite);
        assert_eq!(c.cache.ttl, Some(Duration::from_secs(600)));
        assert_eq!(
            GatewayConfig::default().cache.mode,
            crate::store::cache::CacheMode::Off
        );
        let e = GatewayConfig::from_sections(&sections(json!({
            "cache": {"mode": "on", "ttl": "a while"}
        })))
        .unwrap_err();
        assert_eq!(
            e,
            [
                "cache.mode: expected one of off, read, read-write, found \"on\"",
                "cache.ttl: expected a number of seconds (3600) or a text with a unit (\"90s\", \"10m\", \"1h\", \"7d\"), found \"a while\""
            ]
        );
    }

    #[test]
    fn listen_lanes_is_read_and_left_unset_by_default() {
        assert_eq!(GatewayConfig::default().lanes, None);
        for (given, read) in [(json!(0), 0), (json!(3), 3), (json!(1024), 1024)] {
            let c = GatewayConfig::from_sections(&sections(json!({"listen": {"lanes": given}})))
                .unwrap();
            assert_eq!(c.lanes, Some(read));
        }
        for wrong in [json!(-1), json!(2.5), json!("four")] {
            let e = GatewayConfig::from_sections(&sections(json!({"listen": {"lanes": wrong}})))
                .unwrap_err();
            assert_eq!(
                e,
                [format!("listen.lanes: expected a whole number of threads from 0 to 1024 (0: no lanes), found {wrong}")]
            );
        }
    }

    #[test]
    fn listen_pin_lanes_is_on_unless_turned_off() {
        assert!(GatewayConfig::default().pin_lanes);
        let off = GatewayConfig::from_sections(&sections(json!({"listen": {"pin_lanes": false}})));
        assert!(!off.unwrap().pin_lanes);
        let e = GatewayConfig::from_sections(&sections(json!({"listen": {"pin_lanes": "no"}})))
            .unwrap_err();
        assert_eq!(
            e,
            ["listen.pin_lanes: expected true or false, found \"no\""]
        );
    }

    #[test]
    fn every_listener_problem_is_named() {
        let e = GatewayConfig::from_sections(&sections(json!({
            "listen": {"header_timeout_seconds": 0, "body_timeout_seconds": "soon", "idle_timeout_seconds": -1,
                       "max_connections": 0, "max_json_depth": 1.5,
                       "allowed_hosts": ["http://gw.internal", 3], "cors_origins": "https://a.example",
                       "lanes": 1025, "backlog": 5}
        })))
        .unwrap_err();
        let all = e.join("\n");
        for expected in [
            "listen.header_timeout_seconds: expected seconds (a number > 0, e.g. 5 or 0.5), found 0",
            "listen.body_timeout_seconds: expected seconds",
            "listen.idle_timeout_seconds: expected seconds",
            "listen.max_connections: expected a whole number of connections > 0, found 0",
            "listen.max_json_depth: expected a whole number of levels from 1 to 127, found 1.5",
            "listen.allowed_hosts[0]: `http://gw.internal` is not a host name",
            "listen.allowed_hosts[1]: expected a string, found 3",
            "listen.cors_origins: expected a list of strings",
            "listen.lanes: expected a whole number of threads from 0 to 1024 (0: no lanes), found 1025",
            "listen.backlog: unknown field; accepted: address, max_body_bytes",
        ] {
            assert!(all.contains(expected), "missing `{expected}` in:\n{all}");
        }
        let e = GatewayConfig::from_sections(&sections(json!({
            "listen": {"cors_origins": ["https://a.example/app", "*"]}
        })))
        .unwrap_err();
        assert!(
            e[0].contains("listen.cors_origins[0]: `https://a.example/app` is not an origin"),
            "{e:?}"
        );
        assert!(
            e[1].contains("listen.cors_origins[1]: `*` is not an origin"),
            "{e:?}"
        );
        // Deeper than the gateway's parsers (and so its store's records) read.
        let e = GatewayConfig::from_sections(&sections(json!({
            "listen": {"max_json_depth": 128}
        })))
        .unwrap_err();
        assert_eq!(
            e,
            ["listen.max_json_depth: 128 levels is more than the gateway's parsers read (127, the default and the most it may be); lower it"]
        );
    }

    #[test]
    fn the_listeners_old_secs_names_still_read_each_noted_as_deprecated() {
        let new = GatewayConfig::read(&sections(json!({
            "listen": {"drain_timeout_seconds": 0, "header_timeout_seconds": 0.5,
                       "body_timeout_seconds": 10, "idle_timeout_seconds": 90}
        })));
        assert!(new.deprecated.is_empty(), "{:?}", new.deprecated);
        let old = GatewayConfig::read(&sections(json!({
            "listen": {"drain_timeout_secs": 0, "header_timeout_secs": 0.5,
                       "body_timeout_secs": 10, "idle_timeout_secs": 90}
        })));
        assert_eq!(old.config, new.config);
        let c = old.config.unwrap();
        assert_eq!(
            (
                c.drain_timeout,
                c.header_timeout,
                c.body_timeout,
                c.idle_timeout
            ),
            (
                Duration::ZERO,
                Duration::from_millis(500),
                Duration::from_secs(10),
                Duration::from_secs(90)
            )
        );
        let mut notes = old.deprecated;
        notes.sort();
        assert_eq!(
            notes,
            [
                "listen.body_timeout_secs: use listen.body_timeout_seconds",
                "listen.drain_timeout_secs: use listen.drain_timeout_seconds",
                "listen.header_timeout_secs: use listen.header_timeout_seconds",
                "listen.idle_timeout_secs: use listen.idle_timeout_seconds",
            ]
        );

        // The same validation, the problem naming the field as written.
        let e = GatewayConfig::from_sections(&sections(json!({
            "listen": {"drain_timeout_secs": -1, "header_timeout_secs": 0}
        })))
        .unwrap_err();
        assert_eq!(
            e,
            [
                "listen.drain_timeout_secs: expected seconds (a number ≥ 0), found -1",
                "listen.header_timeout_secs: expected seconds (a number > 0, e.g. 5 or 0.5), found 0",
            ]
        );

        // Both names of one setting: refused, naming both, and nothing else said of them.
        let both = GatewayConfig::read(&sections(json!({
            "listen": {"body_timeout_secs": 10, "body_timeout_seconds": 20}
        })));
        assert_eq!(
            both.config.unwrap_err(),
            [
                "listen.body_timeout_secs and listen.body_timeout_seconds: both given, for one \
              setting; keep listen.body_timeout_seconds (`body_timeout_secs` is its old name)"
            ]
        );
        assert_eq!(
            both.deprecated,
            ["listen.body_timeout_secs: use listen.body_timeout_seconds"]
        );

        // The list of accepted fields names only today's names.
        let e =
            GatewayConfig::from_sections(&sections(json!({"listen": {"backlog": 5}}))).unwrap_err();
        assert!(
            e[0].contains("drain_timeout_seconds, header_timeout_seconds, body_timeout_seconds, idle_timeout_seconds")
                && !e[0].contains("_secs"),
            "{e:?}"
        );
    }

    #[test]
    fn every_problem_is_named() {
        let e = GatewayConfig::from_sections(&sections(json!({
            "listen": "nowhere",
            "keys": [{"name": "a", "key_sha256": "abc", "rpm": 0, "colour": "red"},
                     {"key_env": "X", "budget_period": "fortnight", "budget_usd": 1}]
        })))
        .unwrap_err();
        let all = e.join("\n");
        assert!(all.contains("listen: `nowhere` is not an address"), "{all}");
        assert!(
            all.contains("keys[0] (a).key_sha256: expected 64 hexadecimal digits"),
            "{all}"
        );
        assert!(
            all.contains("keys[0] (a).rpm: expected a whole number > 0"),
            "{all}"
        );
        assert!(all.contains("keys[0].colour: unknown field"), "{all}");
        assert!(all.contains("keys[1]: `name` is required"), "{all}");
        assert!(
            all.contains("budget_period: expected one of day, week, month, total"),
            "{all}"
        );
    }

    #[test]
    fn the_store_timeouts_limits_and_key_sections_read_with_every_problem_named() {
        let c = GatewayConfig::from_sections(&sections(json!({
            "store": {"path": "data", "durability": "answered", "max_backlog": 64},
            "timeouts": {"first_byte_timeout_seconds": 0.3, "idle_timeout_seconds": "2s"},
            "limits": {"max_targets": 10, "max_metric_series": 20},
            "keys": [{"name": "a", "key_env": "A", "budget_usd": 1, "unknown_cost": "allow", "max_in_flight": 3}]
        })))
        .unwrap();
        assert_eq!(c.store, Some(PathBuf::from("data")));
        assert_eq!(c.store_options.durability, StoreDurability::Answered);
        assert_eq!(c.store_options.max_backlog, 64);
        assert_eq!(c.timeouts.first_byte, Some(Duration::from_millis(300)));
        assert_eq!(c.timeouts.idle, Some(Duration::from_secs(2)));
        // What is not given keeps the gateway's default.
        assert_eq!(c.timeouts.connect, GATEWAY_TIMEOUTS.connect);
        assert_eq!((c.max_targets, c.max_metric_series), (10, 20));
        assert!(c.keys[0].unknown_cost_allowed);
        assert_eq!(c.keys[0].max_in_flight, Some(3));
        // Without `timeouts:` an upstream that never answers is still cut (10 minutes).
        assert_eq!(
            GatewayConfig::default().timeouts.first_byte,
            Some(Duration::from_secs(600))
        );

        // `role: admin` opens the console; `client` (the default) does not.
        let c = GatewayConfig::from_sections(&sections(json!({
            "keys": [{"name": "ops", "key_env": "OPS", "role": "admin"},
                     {"name": "app", "key_env": "APP", "role": "client"},
                     {"name": "ci", "key_env": "CI"}]
        })))
        .unwrap();
        let admin: Vec<bool> = c.keys.iter().map(|k| k.admin).collect();
        assert_eq!(admin, [true, false, false]);
        let e = GatewayConfig::from_sections(&sections(json!({
            "keys": [{"name": "x", "key_env": "X", "role": "root"}]
        })))
        .unwrap_err()
        .join("\n");
        assert!(e.contains("keys[0] (x).role: expected `admin`"), "{e}");

        let e = GatewayConfig::from_sections(&sections(json!({
            "store": {"path": "d", "durability": "eventually", "max_backlog": 0, "colour": 1},
            "timeouts": {"first_byte_timeout": 1},
            "limits": {"max_targets": 0, "max_series": 5},
            "keys": [{"name": "a", "key_env": "A", "unknown_cost": "maybe"}]
        })))
        .unwrap_err()
        .join("\n");
        assert!(
            e.contains("store.durability: expected one of fast, answered, synced"),
            "{e}"
        );
        assert!(
            e.contains("store.max_backlog: expected a whole number of calls > 0"),
            "{e}"
        );
        assert!(
            e.contains("store.colour: unknown field; accepted: path, durability, max_backlog"),
            "{e}"
        );
        assert!(
            e.contains("timeouts: unknown field `first_byte_timeout`"),
            "{e}"
        );
        assert!(
            e.contains("limits.max_targets: expected a whole number > 0"),
            "{e}"
        );
        assert!(e.contains("limits.max_series: unknown field"), "{e}");
        assert!(
            e.contains("keys[0] (a).unknown_cost: expected `allow`"),
            "{e}"
        );
    }

    #[test]
    fn the_reply_bounds_read_from_limits_and_default_past_any_real_reply() {
        let c = GatewayConfig::default();
        assert_eq!(c.reply_limits, ReplyLimits::DEFAULT);
        assert_eq!(c.max_recorded_reply_bytes, 64 << 20);
        let c = GatewayConfig::from_sections(&sections(json!({
            "limits": {"max_reply_bytes": 1000, "max_stream_bytes": 2000, "max_event_bytes": 300,
                       "max_error_body_bytes": 40, "max_recorded_reply_bytes": 500}
        })))
        .unwrap();
        assert_eq!(
            c.reply_limits,
            ReplyLimits {
                max_reply_bytes: 1000,
                max_stream_bytes: 2000,
                max_event_bytes: 300,
                max_error_body_bytes: 40,
            }
        );
        assert_eq!(c.max_recorded_reply_bytes, 500);
        let e = GatewayConfig::from_sections(&sections(json!({
            "limits": {"max_stream_bytes": 0, "max_event_bytes": "16MB", "max_reply_size": 1}
        })))
        .unwrap_err()
        .join("\n");
        assert!(
            e.contains("limits.max_stream_bytes: expected a positive number of bytes, found 0"),
            "{e}"
        );
        assert!(
            e.contains(
                "limits.max_event_bytes: expected a positive number of bytes, found \"16MB\""
            ),
            "{e}"
        );
        assert!(
            e.contains("limits.max_reply_size: unknown field; accepted: max_targets, max_metric_series, max_metrics_bytes, max_reply_bytes"),
            "{e}"
        );
    }

    #[test]
    fn store_options_without_a_directory_wait_for_data_dir() {
        // `--data-dir` may give the directory, so the section alone is no error...
        let mut c = GatewayConfig::from_sections(&sections(json!({
            "store": {"durability": "answered"}
        })))
        .unwrap();
        assert!(c.store_without_path && c.store.is_none());
        assert_eq!(c.store_options.durability, StoreDurability::Answered);
        // ...but a gateway with none is refused, saying both ways to give one.
        let env: Arc<dyn switchyard::env::EnvSource + Send + Sync> =
            Arc::new(switchyard::env::MapEnv::default());
        let registry = switchyard::registry::Registry::builtin().unwrap();
        let errors = crate::Gateway::new(&c, registry.clone(), env.clone())
            .err()
            .expect("refused");
        assert!(
            errors
                .iter()
                .any(|e| e.contains("store: the directory is missing")
                    && e.contains("--data-dir DIR")),
            "{errors:?}"
        );
        let dir = tempfile::tempdir().unwrap();
        c.store = Some(dir.path().to_path_buf());
        assert!(crate::Gateway::new(&c, registry, env).is_ok());
    }

    /// `store.postgres` as the tests of a build with the store read it.
    fn postgres_sections() -> BTreeMap<String, Value> {
        sections(json!({
            "store": {"path": "data", "postgres": {"url_env": "PG", "on_store_down": "serve"}}
        }))
    }

    #[cfg(feature = "postgres")]
    #[test]
    fn a_postgres_store_is_read_in_a_build_with_it() {
        let c = GatewayConfig::from_sections(&postgres_sections()).unwrap();
        let pg = c.postgres.expect("store.postgres read");
        assert_eq!(
            (pg.url_env.as_str(), pg.on_store_down, pg.pool_size),
            (
                "PG",
                crate::store::pg::OnStoreDown::Serve,
                crate::store::pg::config::DEFAULT_POOL_SIZE
            )
        );
    }

    #[cfg(not(feature = "postgres"))]
    #[test]
    fn a_postgres_store_is_refused_by_a_build_without_it() {
        let refusal = "this build of switchyard has no PostgreSQL store: built without the `postgres` feature; rebuild with it (the default) or remove store.postgres";
        let e = GatewayConfig::from_sections(&postgres_sections()).unwrap_err();
        assert_eq!(e, [format!("store.postgres: {refusal}")]);
        // A config made in code (`switchyard serve --store`) is refused by the gateway.
        let dir = tempfile::tempdir().unwrap();
        let c = GatewayConfig {
            store: Some(dir.path().to_path_buf()),
            postgres: Some(crate::store::pg::PgStoreConfig {
                url: Some("postgres://db/switchyard".into()),
                ..Default::default()
            }),
            ..GatewayConfig::default()
        };
        let env: Arc<dyn switchyard::env::EnvSource + Send + Sync> =
            Arc::new(switchyard::env::MapEnv::default());
        let registry = switchyard::registry::Registry::builtin().unwrap();
        let errors = crate::Gateway::new(&c, registry, env)
            .err()
            .expect("refused");
        assert_eq!(errors, [format!("store.postgres: {refusal}")]);
    }
}
