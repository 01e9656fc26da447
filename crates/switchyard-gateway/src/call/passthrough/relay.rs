//! A passed-through stream relayed to its client: the upstream's bytes as they arrive,
//! cut only at event boundaries (an event a client could not read yet anyway waits for
//! its end), read and written on the way in one [`Pass`].
//!
//! How a stream ends is the gateway's to say, as for a translated one:
//! - at its end marker with an answer and usage: the end goes out once the call is
//!   recorded (when the store asks for that: `durability: answered`);
//! - at its end marker without an answer or usage: the end marker is replaced by the
//!   dialect's error event (`ProviderReplyMalformed`);
//! - with the provider's own error event: relayed as it came, and recorded as that error;
//! - cut before its end marker, broken (`Transport`) or silent past the idle timeout
//!   (`Timeout`): the dialect's error event, never a clean end. An event left incomplete
//!   is dropped rather than sent half.

use super::pass::Pass;
use crate::errors::ApiError;
use crate::meter::Meter;
use bytes::Bytes;
use std::collections::VecDeque;
use std::time::Duration;
use switchyard::backend::http::{decode_error, stream_error, RawResponse};
use switchyard::internal::redact::Redacted;
use switchyard::record::ErrorRecord;
use switchyard::{Dialect, Error};
use switchyard_wire::codec;

/// How long the upstream may take to close after its end marker before the gateway ends
/// the client's stream anyway.
const AFTER_END: Duration = Duration::from_secs(2);

/// A stream being relayed.
pub(super) struct Relay {
    upstream: Option<RawResponse>,
    /// The output of the chunks read before the relay began is still to go out.
    opening: bool,
    /// The keys the upstream's chunks were redacted under as they entered.
    redacted: Redacted,
    /// Reads each event and writes what the client gets of it; after the end marker,
    /// what it writes is held there until the stream ends.
    pass: Pass,
    dialect: Dialect,
    backend: String,
    headers: Vec<(String, String)>,
    out: VecDeque<Bytes>,
    meter: Meter,
    over: bool,
}

impl Relay {
    /// Relays `upstream` after the chunks `pass` already read, its chunks redacted under
    /// the keys `redacted` as they entered.
    pub(super) fn new(
        upstream: Option<RawResponse>,
        redacted: Redacted,
        pass: Pass,
        dialect: Dialect,
        backend: &str,
        headers: Vec<(String, String)>,
        meter: Meter,
    ) -> Relay {
        Relay {
            upstream,
            opening: true,
            redacted,
            pass,
            dialect,
            backend: backend.to_string(),
            headers,
            out: VecDeque::new(),
            meter,
            over: false,
        }
    }

    /// The next bytes for the client; `None` once the stream is over.
    pub(super) async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(bytes) = self.out.pop_front() {
                self.meter.first_byte();
                return Some(bytes);
            }
            if self.over {
                return None;
            }
            if std::mem::take(&mut self.opening) {
                self.step().await;
                continue;
            }
            let ended = self.pass.watch.ended();
            let Some(upstream) = self.upstream.as_mut() else {
                self.end().await;
                continue;
            };
            let next = if ended {
                tokio::time::timeout(AFTER_END, upstream.chunk())
                    .await
                    .unwrap_or_default()
            } else {
                upstream.chunk().await
            };
            match next {
                Some(Ok(bytes)) => self.take(bytes).await,
                Some(Err(e)) => {
                    self.upstream = None;
                    if self.pass.watch.ended() {
                        // Broken after its end marker: the reply is whole.
                        self.end().await;
                    } else {
                        self.fail(e).await;
                    }
                }
                None => {
                    self.upstream = None;
                    self.end().await;
                }
            }
        }
    }

    /// One chunk from the upstream.
    async fn take(&mut self, bytes: Bytes) {
        self.meter.draft().keep_redacted(&bytes, self.redacted);
        if let Err(e) = self.pass.push(&bytes) {
            let received = self.received();
            let error = decode_error(&self.backend, &self.headers, e, received);
            self.fail(error).await;
            return;
        }
        self.step().await;
    }

    /// What the pass wrote goes out, unless the stream must stop here; after the end
    /// marker it is held until the stream ends.
    async fn step(&mut self) {
        let ended = self.pass.watch.ended();
        // The reservation is the promise: a stream whose cost passed it goes no further.
        if !ended {
            if let Some(passed) = self.meter.over_reservation(self.pass.watch.seen()) {
                self.stop_at_reservation(passed).await;
                return;
            }
        }
        if let Some(e) = self.pass.watch.error.clone() {
            // The provider's own error event, already in the client's dialect: relayed
            // as it came, and the call recorded as that error.
            let received = self.received();
            let error = stream_error(&self.backend, &self.headers, e, received);
            self.note_failure(&error);
            let last = self.pass.take();
            self.release(last).await;
            return;
        }
        if !ended {
            let bytes = self.pass.take();
            self.emit(bytes);
        }
    }

    /// The upstream closed (or fell silent after its end marker): the reply ends here.
    async fn end(&mut self) {
        if self.over {
            return;
        }
        if let Err(e) = self.pass.finish() {
            // Cut before its end marker: what was relayed stays, the incomplete event
            // does not, and the client is told.
            let reason = match e {
                switchyard_wire::DecodeError::Malformed(m) => m,
                other => other.to_string(),
            };
            let error = Error::ProviderReplyMalformed {
                backend: self.backend.clone(),
                reason: format!("stream: {reason}"),
                attempts: 1,
                body: self.received(),
            };
            self.fail(error).await;
            return;
        }
        if let Some(problem) = self.pass.watch.problem() {
            let error = Error::ProviderReplyMalformed {
                backend: self.backend.clone(),
                reason: format!("stream: {problem}"),
                attempts: 1,
                body: self.received(),
            };
            // Everything but the end marker, then the error in its place.
            let before = self.pass.take_all_but_last();
            self.emit(before);
            self.fail(error).await;
            return;
        }
        if let Some(usage) = self.pass.watch.usage {
            self.meter.usage(usage);
        }
        self.meter.complete();
        let last = self.pass.take();
        self.release(last).await;
    }

    /// Ends the stream with `error`: recorded, and told to the client as its dialect's
    /// error event.
    async fn fail(&mut self, error: Error) {
        self.note_failure(&error);
        // What the pass wrote of a stream that failed is not sent.
        let _ = self.pass.take();
        let api = ApiError::from_upstream(&error);
        let event = codec(self.dialect).stream_error_event(
            &api.stream_error(self.dialect),
            self.pass.watch.response_id.as_deref(),
        );
        let event = self.pass.named(Bytes::from(event));
        self.release(event).await;
    }

    /// The stream's running cost passed what its key's budget reserved for it
    /// (`budget_stop.rs`): nothing more is relayed, the upstream connection is dropped
    /// (which ends the generation), and the client gets its dialect's error event.
    async fn stop_at_reservation(&mut self, passed: crate::account::budget_stop::Passed) {
        self.upstream = None;
        let _ = self.pass.take();
        let api = self
            .meter
            .stop_at_reservation(passed, self.pass.watch.seen());
        let event = codec(self.dialect).stream_error_event(
            &api.stream_error(self.dialect),
            self.pass.watch.response_id.as_deref(),
        );
        let event = self.pass.named(Bytes::from(event));
        self.release(event).await;
    }

    fn note_failure(&mut self, error: &Error) {
        if let Some(usage) = self.pass.watch.usage {
            self.meter.usage(usage);
        }
        self.meter.seen_so_far(self.pass.watch.seen());
        self.meter
            .outcome(0, Some(error.kind().as_str().to_string()));
        let draft = self.meter.draft();
        draft.error = Some(ErrorRecord::new(error));
        // The relay runs once the stream's output began: a failure now is a cut.
        draft.cut = true;
        self.meter.complete();
    }

    /// The stream's last bytes: out once the call is recorded, when the store must have
    /// the record first.
    async fn release(&mut self, last: Bytes) {
        self.meter.first_byte();
        // Queued before the call closes, so the turn kept of it has its end; nothing
        // queued goes out before this returns.
        self.emit(last);
        if let Some(written) = self.meter.finish() {
            let _ = written.await;
        }
        self.over = true;
        // Left unread, the upstream connection could not be reused: it is read to its
        // close (briefly) apart from the client, whose stream ends now.
        if let Some(mut upstream) = self.upstream.take() {
            tokio::spawn(async move {
                let drain = async { while let Some(Ok(_)) = upstream.chunk().await {} };
                let _ = tokio::time::timeout(AFTER_END, drain).await;
            });
        }
    }

    /// Queues bytes for the client, as the pass wrote them (the record has kept them as
    /// they came).
    fn emit(&mut self, bytes: Bytes) {
        if !bytes.is_empty() {
            self.meter.reply_chunk(&bytes);
            self.out.push_back(bytes);
        }
    }

    /// Every byte received so far, for an error's details.
    fn received(&mut self) -> Bytes {
        let raw = &self.meter.draft().raw;
        Bytes::from(raw.concat())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        // A client that leaves is billed for what it was sent.
        self.meter.seen_so_far(self.pass.watch.seen());
    }
}
