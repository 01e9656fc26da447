//! What happened on each attempt of a call: the record a call log keeps and a program can
//! inspect (`Llm::complete_detailed`, `Llm::stream_detailed`).
//!
//! This is a small, stable surface: the call log writes one entry per [`Attempt`].

use crate::error::{ErrorKind, Result};
use std::time::{Duration, SystemTime};

/// One try of a call: when it started, how long it took, and how it failed if it did.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// 1 for the first try, 2 for the first retry…
    pub number: u32,
    /// How long the retry loop waited before this attempt (zero for the first).
    pub wait_before: Duration,
    /// When the request was sent (after the wait).
    pub started_at: SystemTime,
    /// From sending to the whole reply (or the error). For a stream that began, from
    /// sending to its first output event: the rest belongs to the stream itself.
    pub duration: Duration,
    /// For a stream, from sending to its first output event; `None` for whole replies
    /// and for streams that failed before any output.
    pub first_output: Option<Duration>,
    /// The HTTP status of a provider's refusal (`None` on success, on a transport
    /// failure, a timeout, or an error reported without a status).
    pub status: Option<u16>,
    /// The kind of the error this attempt ended with; `None` when it succeeded.
    pub error_kind: Option<ErrorKind>,
    /// The error's message as a person would read it; `None` when it succeeded.
    pub error: Option<String>,
    /// For a call through a route, the member this attempt was sent to (the reference
    /// as the route writes it); `None` for a plain reference.
    pub reference: Option<String>,
}

impl Attempt {
    /// Whether this attempt gave the result (it ended without an error).
    pub fn succeeded(&self) -> bool {
        self.error_kind.is_none()
    }
}

/// The result of a call together with every attempt it took.
///
/// `result` is what `complete` / `stream` return; `attempts` is never empty unless the
/// call failed before sending (a context overflow caught locally, a cancelled handle).
#[derive(Debug)]
pub struct CallOutcome<T> {
    /// The reply (or stream), or the final error after the retries.
    pub result: Result<T>,
    /// Every attempt in order.
    pub attempts: Vec<Attempt>,
    /// The request body the backend noted as sent, byte for byte (the last attempt's):
    /// how a program that keeps its own records (the gateway) gets it without encoding
    /// the request a second time.
    pub sent_body: Option<bytes::Bytes>,
    /// For a call through a route, the member that served it (or, when it failed, the
    /// member tried last), as the route writes it; `None` for a plain reference.
    pub member: Option<String>,
}

impl<T> CallOutcome<T> {
    /// Total time spent waiting between attempts.
    pub fn waited(&self) -> Duration {
        self.attempts.iter().map(|a| a.wait_before).sum()
    }
}
