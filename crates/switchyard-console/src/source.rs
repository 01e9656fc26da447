//! What the console reads calls through: the [`CallSource`] trait and the values it
//! answers with. A store of recorded calls (a run or data directory, a PostgreSQL store)
//! implements it; the console's handlers see nothing else.

use futures::future::BoxFuture;
use serde::Serialize;
use std::collections::BTreeMap;
use switchyard::record::CallRecord;

/// A failure to read the store: what was being read and why (never a password).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError(pub String);

impl std::fmt::Display for SourceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a source answers.
pub type SourceResult<T> = Result<T, SourceError>;

/// The column a page of calls is sorted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// The order calls were recorded in (their number; start time but for overlapping calls).
    Time,
    /// Cost in USD (calls of unknown cost last, whatever the order).
    Cost,
    /// Start to end.
    Latency,
    /// Input plus output tokens.
    Tokens,
}

impl Sort {
    /// The accepted names, for a refusal's message.
    pub const NAMES: &'static str = "time, cost, latency, tokens";

    /// Parses a name of [`Sort::NAMES`].
    pub fn parse(s: &str) -> Option<Sort> {
        Some(match s {
            "time" => Sort::Time,
            "cost" => Sort::Cost,
            "latency" => Sort::Latency,
            "tokens" => Sort::Tokens,
            _ => return None,
        })
    }
}

/// Which calls, in which order, which slice.
#[derive(Debug, Clone, PartialEq)]
pub struct CallsQuery {
    /// Calls per page.
    pub limit: u32,
    /// Calls skipped before the page.
    pub offset: u64,
    /// The column sorted on.
    pub sort: Sort,
    /// Descending (the newest, dearest, slowest first) when true.
    pub descending: bool,
    /// The filters.
    pub filter: Filter,
}

/// The calls a page or a plot counts: every field set must match.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Filter {
    /// `ok` or `error`.
    pub status: Option<Status>,
    /// The error kind (`RateLimited`…).
    pub kind: Option<String>,
    /// The reference exactly (`mock/echo`).
    pub reference: Option<String>,
    /// The model id on its backend exactly.
    pub model: Option<String>,
    /// The role exactly (`""`: calls made without one).
    pub role: Option<String>,
    /// The gateway client key's name exactly.
    pub key: Option<String>,
    /// Text anywhere in the reference or the model id (case as written).
    pub text: Option<String>,
    /// Calls that started at or after this time (RFC 3339 UTC, or a prefix of one).
    pub since: Option<String>,
    /// Calls that started before this time.
    pub until: Option<String>,
}

/// A call's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Answered.
    Ok,
    /// Failed (with an error kind).
    Error,
}

/// One call as a row of the calls table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRow {
    /// What `/console/api/calls/{id}` takes: the number in a directory, `<replica>-<number>`
    /// in a PostgreSQL store.
    pub id: String,
    /// The record's number.
    pub number: u64,
    /// Start, RFC 3339 UTC.
    pub time: String,
    /// The role (`""` without one).
    pub role: String,
    /// The gateway client key's name.
    pub key: Option<String>,
    /// The reference (or the route's member that served).
    pub reference: String,
    /// The model id on its backend.
    pub model: String,
    /// The dialect spoken upstream.
    pub dialect: Option<String>,
    /// The dialect the gateway's client spoke.
    pub client_dialect: Option<String>,
    /// Whether it was streamed.
    pub stream: bool,
    /// `ok` or `error`.
    pub status: &'static str,
    /// The error kind, when it failed.
    pub error_kind: Option<String>,
    /// Prompt tokens (cached included); `None`: no usage.
    pub input_tokens: Option<i64>,
    /// Generated tokens (reasoning included).
    pub output_tokens: Option<i64>,
    /// USD; `None`: unknown (the model has no price), never 0.
    pub cost_usd: Option<f64>,
    /// Start to end.
    pub latency_ms: f64,
    /// Attempts made.
    pub attempts: i64,
    /// For a call answered from the cache, the call whose reply it served.
    pub cache_hit: Option<i64>,
}

/// A page of calls.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page {
    /// The calls of the page, in order.
    pub calls: Vec<CallRow>,
    /// How many calls match the filter.
    pub total: u64,
}

/// What spend is grouped by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpendBy {
    /// The model's reference.
    Model,
    /// The gateway client key.
    Key,
    /// The role.
    Role,
}

impl SpendBy {
    /// The accepted names.
    pub const NAMES: &'static str = "model, key, role";

    /// Parses a name of [`SpendBy::NAMES`].
    pub fn parse(s: &str) -> Option<SpendBy> {
        Some(match s {
            "model" => SpendBy::Model,
            "key" => SpendBy::Key,
            "role" => SpendBy::Role,
            _ => return None,
        })
    }
}

/// The width of a plot's bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    /// An hour (`2026-12-03T11`).
    Hour,
    /// A UTC day (`2026-12-03`).
    Day,
}

impl Bucket {
    /// The accepted names.
    pub const NAMES: &'static str = "hour, day";

    /// Parses a name of [`Bucket::NAMES`].
    pub fn parse(s: &str) -> Option<Bucket> {
        Some(match s {
            "hour" => Bucket::Hour,
            "day" => Bucket::Day,
            _ => return None,
        })
    }

    /// How many leading characters of an RFC 3339 time name the bucket.
    pub fn prefix_len(self) -> usize {
        match self {
            Bucket::Hour => 13,
            Bucket::Day => 10,
        }
    }
}

/// Spend over time.
#[derive(Debug, Clone, PartialEq)]
pub struct SpendQuery {
    /// Grouped by.
    pub by: SpendBy,
    /// Bucket width.
    pub bucket: Bucket,
    /// The calls counted.
    pub filter: Filter,
}

/// One bucket of one group.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendPoint {
    /// The bucket (`2026-12-03T11` or `2026-12-03`).
    pub bucket: String,
    /// The group (a reference, a key's name, a role; `""` for none).
    pub group: String,
    /// Known dollars.
    pub cost_usd: f64,
    /// Calls.
    pub calls: u64,
    /// Calls whose cost is unknown (not in `cost_usd`).
    pub unknown_cost_calls: u64,
    /// Input plus output tokens.
    pub tokens: u64,
}

/// The store at a glance, and the values the filters offer.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct Summary {
    /// Where the calls are read from (a path, or a URL without its password).
    pub source: String,
    /// Calls recorded.
    pub calls: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Known dollars.
    pub cost_usd: f64,
    /// Calls whose cost is unknown.
    pub unknown_cost_calls: u64,
    /// The first and last start times.
    pub first_time: Option<String>,
    /// The last start time.
    pub last_time: Option<String>,
    /// Calls per reference.
    pub references: BTreeMap<String, u64>,
    /// Calls per role.
    pub roles: BTreeMap<String, u64>,
    /// Calls per key.
    pub keys: BTreeMap<String, u64>,
    /// Calls per error kind.
    pub kinds: BTreeMap<String, u64>,
}

/// A run's own budget (`budget:` of its run config, in its `run.yaml`) and its use.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunBudget {
    /// `max_usd`, `max_calls`, `max_tokens` as configured.
    pub max_usd: Option<f64>,
    /// Most calls.
    pub max_calls: Option<u64>,
    /// Most tokens.
    pub max_tokens: Option<u64>,
    /// Roles left out of it.
    pub exclude_roles: Vec<String>,
    /// Dollars spent by the calls it counts.
    pub spent_usd: f64,
    /// Calls it counts.
    pub calls: u64,
    /// Tokens it counts.
    pub tokens: u64,
}

/// What kind of state a kept conversation turn is (the gateway's `conversations:`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeptKind {
    /// An OpenAI Responses response, under its `resp_…` id.
    Response,
    /// An Anthropic thread's reply, under its `msg_…` id.
    Thread,
}

impl KeptKind {
    /// The accepted names.
    pub const NAMES: &'static str = "response, thread";

    /// Parses a name of [`KeptKind::NAMES`].
    pub fn parse(s: &str) -> Option<KeptKind> {
        Some(match s {
            "response" => KeptKind::Response,
            "thread" => KeptKind::Thread,
            _ => return None,
        })
    }

    /// The name the gateway stores it under.
    pub fn as_str(self) -> &'static str {
        match self {
            KeptKind::Response => "response",
            KeptKind::Thread => "thread",
        }
    }
}

/// Which kept turns, which slice: the newest first, expired ones never.
#[derive(Debug, Clone, PartialEq)]
pub struct KeptQuery {
    /// Turns per page.
    pub limit: u32,
    /// Turns skipped before the page.
    pub offset: u64,
    /// The client key's name that kept them exactly (`""`: kept without keys).
    pub key: Option<String>,
    /// Responses or threads only.
    pub kind: Option<KeptKind>,
}

/// One kept turn as a row of the conversations table: what it is, whose, and its size;
/// never its content (that is [`KeptTurn`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeptRow {
    /// `response` or `thread`.
    pub kind: String,
    /// The name of the client key that kept it (`""` without keys), never the key.
    pub key: String,
    /// The response's or the reply's id.
    pub id: String,
    /// The turn before it in its chain or thread.
    pub previous: Option<String>,
    /// When it was kept, in seconds since the epoch.
    pub created: i64,
    /// When it expires, in seconds since the epoch.
    pub expires: i64,
    /// The items (Responses) or messages (threads) its request added.
    pub input_items: u64,
    /// Its output items (Responses) or its assistant message (threads).
    pub output_items: u64,
    /// The backend that keeps this turn too (it was passed through with its state).
    pub upstream: Option<String>,
    /// The model of a response, from its response object.
    pub model: Option<String>,
}

/// A page of kept turns.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeptPage {
    /// The turns of the page, the newest first.
    pub turns: Vec<KeptRow>,
    /// How many unexpired turns match the filter.
    pub total: u64,
}

/// One kept turn in full: its row and its JSON as kept (redacted when it was kept).
#[derive(Debug, Clone, PartialEq)]
pub struct KeptTurn {
    /// What the table shows of it.
    pub row: KeptRow,
    /// `{previous, upstream, input, output, response, system, tools}` as the gateway
    /// wrote it.
    pub turn: String,
}

/// A source of recorded calls.
pub trait CallSource: Send + Sync + 'static {
    /// Where the calls are read from, for people (a path, a URL without its password).
    fn describe(&self) -> String;

    /// A page of calls.
    fn page(&self, query: CallsQuery) -> BoxFuture<'_, SourceResult<Page>>;

    /// One call in full, by its id (`None`: no such call).
    fn record(&self, id: String) -> BoxFuture<'_, SourceResult<Option<CallRecord>>>;

    /// Call `number` of the run `failed` replayed (the nearest recorded call a
    /// `ReplayExhausted` error names); `None` when it cannot be found.
    fn replayed_record(
        &self,
        failed: &CallRecord,
        number: u64,
    ) -> BoxFuture<'_, SourceResult<Option<CallRecord>>>;

    /// Spend per bucket and group.
    fn spend(&self, query: SpendQuery) -> BoxFuture<'_, SourceResult<Vec<SpendPoint>>>;

    /// The store at a glance.
    fn summary(&self) -> BoxFuture<'_, SourceResult<Summary>>;

    /// Dollars per client key spent by calls that started at or after `since` (`None`:
    /// every call).
    fn key_spend(
        &self,
        since: Option<String>,
    ) -> BoxFuture<'_, SourceResult<BTreeMap<String, f64>>>;

    /// The run's own budget and its use, when the source is a run with one.
    fn run_budget(&self) -> BoxFuture<'_, SourceResult<Option<RunBudget>>>;

    /// A page of the conversation turns the gateway keeps (`None`: this source keeps
    /// none, such as a run directory). Unexpired turns only, the newest first.
    fn kept(&self, query: KeptQuery) -> BoxFuture<'_, SourceResult<Option<KeptPage>>> {
        let _ = query;
        Box::pin(async { Ok(None) })
    }

    /// One kept turn by its kind, its key's name and its id (`None`: no such unexpired
    /// turn, or this source keeps none).
    fn kept_turn(
        &self,
        kind: KeptKind,
        key: String,
        id: String,
    ) -> BoxFuture<'_, SourceResult<Option<KeptTurn>>> {
        let _ = (kind, key, id);
        Box::pin(async { Ok(None) })
    }
}
