//! A role's backend: the configured (or custom) backend with the role's settings applied
//! to every request as defaults.

use std::sync::Arc;

use async_trait::async_trait;
use switchyard_wire::Reply;

use super::settings::Settings;
use crate::backend::{Backend, Call};
use crate::error::{Error, Result, TimeoutPhase};
use crate::reply_stream::ReplyStream;

/// Wraps a backend so that every call carries the role's settings where the request sets
/// none of its own.
pub struct RoleBackend {
    inner: Arc<dyn Backend>,
    settings: Settings,
    total: Option<std::time::Duration>,
}

impl RoleBackend {
    /// `inner` with `settings`. `total` bounds each call here, for a backend that does
    /// not take the policy's `timeout_seconds` itself (one given in code, a CLI agent); the
    /// HTTP backend is given its timeouts when it is made, so this is `None` for it.
    pub fn new(
        inner: Arc<dyn Backend>,
        settings: Settings,
        total: Option<std::time::Duration>,
    ) -> Self {
        RoleBackend {
            inner,
            settings,
            total,
        }
    }

    /// The role's settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    fn prepare(&self, call: &Call) -> Call {
        let mut call = call.clone();
        self.settings.apply(&mut call.request);
        call
    }

    fn timeout(&self, after: std::time::Duration) -> Error {
        Error::Timeout {
            backend: self.inner.name().to_string(),
            phase: TimeoutPhase::Total,
            after,
        }
    }
}

#[async_trait]
impl Backend for RoleBackend {
    fn name(&self) -> &str {
        self.inner.name()
    }

    // A record names the dialect the call was made in: without it a role's recorded
    // replies could not be decoded again (replay reads the raw bytes in that dialect).
    fn dialect(&self) -> Option<switchyard_wire::Dialect> {
        self.inner.dialect()
    }

    fn reported_cost(&self, raw: &[u8]) -> Option<f64> {
        self.inner.reported_cost(raw)
    }

    fn reports_usage(&self) -> bool {
        self.inner.reports_usage()
    }

    async fn complete(&self, call: &Call) -> Result<Reply> {
        let call = self.prepare(call);
        match self.total {
            Some(limit) => tokio::time::timeout(limit, self.inner.complete(&call))
                .await
                .map_err(|_| self.timeout(limit))?,
            None => self.inner.complete(&call).await,
        }
    }

    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        let call = self.prepare(call);
        // For a stream the limit bounds its opening; the stream's own idle timeout covers
        // the rest.
        match self.total {
            Some(limit) => tokio::time::timeout(limit, self.inner.stream(&call))
                .await
                .map_err(|_| self.timeout(limit))?,
            None => self.inner.stream(&call).await,
        }
    }
}
