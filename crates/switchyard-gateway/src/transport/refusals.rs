//! The listener's refusals — requests it answered itself before any model call, and
//! connections it cut — counted by reason for `/metrics`
//! (`switchyard_gateway_listener_refusals_total{reason="…"}`), and the error each refusal
//! answers with, in the dialect's shape.

use crate::errors::{ApiError, Category};
use axum::http::StatusCode;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use switchyard::Dialect;

/// Why the listener refused a request or cut a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// A `Host` that is neither loopback nor in `listen.allowed_hosts` (no client keys).
    Host,
    /// An `Origin` that is neither loopback nor listed (no client keys).
    Origin,
    /// A model call whose body is not declared `application/json` (no client keys).
    ContentType,
    /// A CORS preflight from an origin not in `listen.cors_origins`.
    Preflight,
    /// No such route (404).
    NotFound,
    /// A route asked with a method it does not take (405).
    Method,
    /// A body nested deeper than `listen.max_json_depth`.
    JsonDepth,
    /// A request head that did not arrive within `listen.header_timeout_seconds`.
    HeaderTimeout,
    /// A request body that did not arrive within `listen.body_timeout_seconds`.
    BodyTimeout,
    /// A keep-alive connection closed after `listen.idle_timeout_seconds` without a request.
    IdleTimeout,
    /// A connection turned away at `listen.max_connections`.
    ConnectionCap,
    /// An idle kept-alive connection closed at `listen.max_connections` for a new one.
    IdleEvicted,
    /// A request refused at `listen.max_calls_in_flight`.
    CallsInFlight,
    /// A request head longer than `listen.max_header_bytes`, or with more header fields
    /// than `listen.max_headers` (431).
    HeadTooLarge,
    /// A request target longer than `listen.max_uri_bytes` (414).
    UriTooLong,
    /// A request head hyper could not read (400).
    MalformedHead,
}

impl Reason {
    const ALL: [Reason; 16] = [
        Reason::Host,
        Reason::Origin,
        Reason::ContentType,
        Reason::Preflight,
        Reason::NotFound,
        Reason::Method,
        Reason::JsonDepth,
        Reason::HeaderTimeout,
        Reason::BodyTimeout,
        Reason::IdleTimeout,
        Reason::ConnectionCap,
        Reason::IdleEvicted,
        Reason::CallsInFlight,
        Reason::HeadTooLarge,
        Reason::UriTooLong,
        Reason::MalformedHead,
    ];

    /// The `reason` label.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Reason::Host => "host",
            Reason::Origin => "origin",
            Reason::ContentType => "content_type",
            Reason::Preflight => "preflight",
            Reason::NotFound => "not_found",
            Reason::Method => "method",
            Reason::JsonDepth => "json_depth",
            Reason::HeaderTimeout => "header_timeout",
            Reason::BodyTimeout => "body_timeout",
            Reason::IdleTimeout => "idle_timeout",
            Reason::ConnectionCap => "connection_cap",
            Reason::IdleEvicted => "idle_evicted",
            Reason::CallsInFlight => "calls_in_flight",
            Reason::HeadTooLarge => "header_too_large",
            Reason::UriTooLong => "uri_too_long",
            Reason::MalformedHead => "malformed_head",
        }
    }
}

/// One counter per reason.
#[derive(Default)]
pub(crate) struct Refusals {
    counts: [AtomicU64; Reason::ALL.len()],
}

impl Refusals {
    /// Counts one refusal.
    pub(crate) fn count(&self, reason: Reason) {
        self.counts[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How many refusals of `reason` so far.
    pub(crate) fn get(&self, reason: Reason) -> u64 {
        self.counts[reason as usize].load(Ordering::Relaxed)
    }

    /// The Prometheus text, every reason listed (zeros included, so rates start at once).
    pub(crate) fn render(&self, out: &mut String) {
        let name = "switchyard_gateway_listener_refusals_total";
        let _ = writeln!(
            out,
            "# HELP {name} Requests the listener refused and connections it cut, by reason.\n# TYPE {name} counter"
        );
        for reason in Reason::ALL {
            let _ = writeln!(
                out,
                "{name}{{reason=\"{}\"}} {}",
                reason.label(),
                self.get(reason)
            );
        }
    }
}

/// The error a listener refusal answers with: `status`, in `dialect`'s shape. The category
/// is chosen per dialect so that no client reads a misleading code: OpenAI's shape gets
/// `invalid_request_error` with no code (its `NotFound` and `Forbidden` codes name
/// models), Anthropic's and Gemini's get their not-found and permission types.
pub(crate) fn error(dialect: Dialect, status: StatusCode, message: impl Into<String>) -> ApiError {
    let openai = matches!(dialect, Dialect::Chat | Dialect::Responses);
    let category = match status {
        StatusCode::NOT_FOUND if !openai => Category::NotFound,
        StatusCode::FORBIDDEN if !openai => Category::Forbidden,
        StatusCode::SERVICE_UNAVAILABLE => Category::Overloaded,
        _ => Category::BadRequest,
    };
    let mut e = ApiError::new(category, message);
    e.status = status;
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_reason_is_rendered_with_its_count() {
        let r = Refusals::default();
        r.count(Reason::Host);
        r.count(Reason::Host);
        r.count(Reason::ConnectionCap);
        let mut text = String::new();
        r.render(&mut text);
        assert!(text.contains("switchyard_gateway_listener_refusals_total{reason=\"host\"} 2\n"));
        assert!(text.contains("{reason=\"connection_cap\"} 1\n"));
        assert!(text.contains("{reason=\"json_depth\"} 0\n"));
        assert_eq!(text.matches("{reason=").count(), Reason::ALL.len());
        for (i, reason) in Reason::ALL.iter().enumerate() {
            assert_eq!(*reason as usize, i);
        }
    }
}
