//! How a handle calls: retries, timeouts and the context check, as one value a run config
//! sets per run and per role.
//!
//! ```yaml
//! retry: {rate_limited: [30, 60, 120], malformed: [5, 30], overloaded: [], server_error: []}
//! timeout_seconds: 600             # one attempt, from sending to the last byte (null: none)
//! connect_timeout_seconds: 30
//! first_byte_timeout_seconds: null # from sending to the reply's headers
//! idle_timeout_seconds: 300        # between two chunks of a reply or stream
//! context_check: true              # refuse before sending what cannot fit the window
//! ```

use crate::backend::http::Timeouts;
use crate::retry::RetryPolicy;
use crate::seconds;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Retries, timeouts and the context check of a handle. Every field has a default, so
/// `{}` is the default policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CallPolicy {
    /// Waits between attempts, per reason.
    pub retry: RetryPolicy,
    /// The whole of one attempt (the issue's `timeout_seconds`); default none, so a long
    /// generation is not cut short.
    #[serde(rename = "timeout_seconds", with = "seconds::option")]
    pub total_timeout: Option<Duration>,
    /// Opening a connection; default 30 s.
    #[serde(rename = "connect_timeout_seconds", with = "seconds::option")]
    pub connect_timeout: Option<Duration>,
    /// From sending the request to the reply's headers; default none.
    #[serde(rename = "first_byte_timeout_seconds", with = "seconds::option")]
    pub first_byte_timeout: Option<Duration>,
    /// Between two chunks of a reply or stream; default 300 s.
    #[serde(rename = "idle_timeout_seconds", with = "seconds::option")]
    pub idle_timeout: Option<Duration>,
    /// Refuse before sending a request that cannot fit the backend's `context_window`.
    pub context_check: bool,
}

impl Default for CallPolicy {
    fn default() -> Self {
        let t = crate::connect::DEFAULT_TIMEOUTS;
        CallPolicy {
            retry: RetryPolicy::default(),
            total_timeout: t.total,
            connect_timeout: t.connect,
            first_byte_timeout: t.first_byte,
            idle_timeout: t.idle,
            context_check: true,
        }
    }
}

impl CallPolicy {
    /// The timeouts an HTTP backend enforces.
    pub fn timeouts(&self) -> Timeouts {
        Timeouts {
            connect: self.connect_timeout,
            first_byte: self.first_byte_timeout,
            idle: self.idle_timeout,
            total: self.total_timeout,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Before, `Timeouts::default()` waited forever while the real default lived in
    /// `connect.rs`: a backend built with `..Default::default()` never timed out.
    #[test]
    fn the_default_timeouts_are_the_real_defaults() {
        let t = crate::backend::http::Timeouts::default();
        assert_eq!(t.connect, Some(std::time::Duration::from_secs(30)));
        assert_eq!(t.idle, Some(std::time::Duration::from_secs(300)));
        assert_eq!(CallPolicy::default().timeouts(), t);
        assert_eq!(crate::connect::DEFAULT_TIMEOUTS, t);
    }

    #[test]
    fn empty_yaml_is_the_default() {
        let p: CallPolicy = serde_yaml_ng::from_str("{}").unwrap();
        assert_eq!(p, CallPolicy::default());
    }

    #[test]
    fn timeouts_and_switches_read() {
        let p: CallPolicy = serde_yaml_ng::from_str(
            "timeout_seconds: 600\nfirst_byte_timeout_seconds: 1.5\nidle_timeout_seconds: null\ncontext_check: false\nretry: {malformed: []}\n",
        )
        .unwrap();
        assert_eq!(p.total_timeout, Some(Duration::from_secs(600)));
        assert_eq!(p.first_byte_timeout, Some(Duration::from_millis(1500)));
        assert_eq!(p.idle_timeout, None);
        assert!(!p.context_check);
        assert!(p.retry.malformed.is_empty());
        assert_eq!(p.retry.rate_limited.len(), 3);
        // What a run config writes back reads the same.
        let text = serde_yaml_ng::to_string(&p).unwrap();
        assert_eq!(serde_yaml_ng::from_str::<CallPolicy>(&text).unwrap(), p);
    }
}
