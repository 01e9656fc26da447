//! The PostgreSQL store in a build without the `postgres` feature: no driver, pool or
//! TLS, and no store. The config's section ([`config`]) and the ack gate ([`gate`]) are
//! the same files as in the full build; [`read_config`] refuses the section, naming the
//! feature, and [`SharedStore`] is a type with no value, so the gateway's
//! `Option<Arc<SharedStore>>` is always `None` and its call sites compile unchanged.

#[path = "config.rs"]
pub mod config;
#[path = "gate.rs"]
pub mod gate;

pub use config::{redact_url, OnStoreDown, PgStoreConfig, NOT_BUILT};
pub use gate::Gate;

use crate::account::budgets::{CallBound, KeyBudget};
use crate::account::keys::Key;
use crate::errors::ApiError;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;
use switchyard::record::CallRecord;
use tokio::sync::Notify;

/// Refuses `store.postgres`: this build has no PostgreSQL store.
pub fn read_config(_section: &serde_json::Value) -> Result<PgStoreConfig, String> {
    Err(refused())
}

fn refused() -> String {
    format!("store.postgres: {NOT_BUILT} or remove store.postgres")
}

/// A replica's side of a shared store, which this build cannot have.
#[derive(Debug)]
pub enum SharedStore {}

/// A hold on a shared budget, which this build cannot take.
#[derive(Debug)]
pub enum SharedHold {}

/// Whether the database is reachable, and what was shipped (the full build's fields).
#[derive(Debug, Default)]
pub struct Health {
    /// Records shipped since the replica started.
    pub shipped: AtomicU64,
    /// The number of the last record shipped.
    pub last_shipped: AtomicU64,
    /// Settlements and token charges waiting for the database.
    pub unsettled: AtomicU64,
}

impl Health {
    /// Whether the database is unreachable now: there is none.
    pub fn is_down(&self) -> bool {
        false
    }

    /// Why it is, when it is.
    pub fn error(&self) -> Option<String> {
        None
    }
}

/// A recorded call that answers a key, found in the shared store (the full build's fields).
#[derive(Debug)]
pub struct SharedHit {
    /// Its record.
    pub record: CallRecord,
    /// Its call id (`<replica>-<number>`).
    pub call_id: String,
    /// Whether its raw bytes answer the asker as they are.
    pub exact: bool,
}

impl SharedHold {
    /// Settles the hold.
    pub fn settle(self, _cost: Option<f64>) {
        match self {}
    }
}

impl SharedStore {
    /// Refuses: a config made in code may name a PostgreSQL store this build cannot open.
    pub fn open(
        _config: &PgStoreConfig,
        _url: String,
        _dir: &Path,
        _gate: Arc<Gate>,
        _written: Arc<Notify>,
    ) -> Result<SharedStore, String> {
        Err(refused())
    }

    /// The replica's id.
    pub fn replica(&self) -> &str {
        match *self {}
    }

    /// The URL without its password.
    pub fn shown_url(&self) -> &str {
        match *self {}
    }

    /// The web console's reading of every replica's calls.
    pub fn call_source(&self) -> Arc<dyn switchyard_console::CallSource> {
        match *self {}
    }

    /// Whether the database is reachable, and what was shipped.
    pub fn health(&self) -> &Health {
        match *self {}
    }

    /// Refuses a call while the database is unreachable.
    pub fn check_serving(&self, _key: Option<&Key>) -> Result<(), ApiError> {
        match *self {}
    }

    /// Reserves from a key's shared budget.
    pub async fn reserve(
        &self,
        _key: &str,
        _budget: &KeyBudget,
        _model: &str,
        _bound: Option<CallBound>,
    ) -> Result<SharedHold, ApiError> {
        match *self {}
    }

    /// Takes a request from a key's shared rate window.
    pub async fn admit(&self, _key: &Key) -> Result<(), ApiError> {
        match *self {}
    }

    /// The call every replica recorded under a cache key.
    pub async fn cached(
        &self,
        _key: &str,
        _dialect: Option<switchyard::Dialect>,
        _stream: bool,
        _ttl: Option<Duration>,
    ) -> Option<SharedHit> {
        match *self {}
    }

    /// Charges a call's tokens to its key's shared window.
    pub fn charge_tokens(&self, _key: &Key, _tokens: u64) {
        match *self {}
    }

    /// Ships what is left, then stops.
    pub fn close(&self) {
        match *self {}
    }

    /// A kept conversation's turn.
    pub(crate) async fn conversation_get(
        &self,
        _kind: &str,
        _owner: &str,
        _id: &str,
        _now: i64,
    ) -> Result<Option<String>, ApiError> {
        match *self {}
    }

    /// The turn holding a kept item.
    pub(crate) async fn conversation_item(
        &self,
        _owner: &str,
        _item_id: &str,
        _now: i64,
    ) -> Result<Option<String>, ApiError> {
        match *self {}
    }

    /// Keeps a turn.
    pub(crate) async fn conversation_put(
        &self,
        _row: &crate::conversations::turn::Row,
    ) -> Result<(), String> {
        match *self {}
    }

    /// Forgets a turn.
    pub(crate) async fn conversation_delete(
        &self,
        _kind: &str,
        _owner: &str,
        _id: &str,
        _now: i64,
    ) -> Result<bool, ApiError> {
        match *self {}
    }
}
