//! One call's meter: filled in as the call goes, recorded exactly once when it is dropped
//! (after the last byte of a stream, or when a client goes away mid-stream), so no
//! finished call is lost and the stream is never held back for it. When it is dropped it
//! settles the key's budget, counts the call in the metrics and hands the call, with the
//! bytes it kept as they passed, to the store (see [`crate::store`]).

use crate::keys::Key;
use crate::metrics::{cost, CallSummary};
use crate::server::State;
use crate::store::{Draft, Finished};
use crate::upstream::Target;
use bytes::Bytes;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use switchyard::budget::Reservation;
use switchyard::{Dialect, Usage};

/// A call being metered.
pub struct Meter {
    state: Option<Arc<State>>,
    summary: CallSummary,
    key: Option<Arc<Key>>,
    price: Option<switchyard::registry::Price>,
    arrived: Instant,
    sent: Option<Instant>,
    answered: Option<Instant>,
    head: Option<Instant>,
    done: bool,
    started_at: SystemTime,
    reference: String,
    client_body: Option<Bytes>,
    reservation: Option<Reservation>,
    record: bool,
    draft: Draft,
}

impl Meter {
    /// Starts metering a call that just arrived.
    pub fn new(state: Arc<State>, dialect: Dialect, arrived: Instant) -> Self {
        state.metrics.started();
        Meter {
            state: Some(state),
            summary: CallSummary {
                key: "-".into(),
                backend: String::new(),
                model: String::new(),
                client_dialect: dialect,
                upstream_dialect: None,
                stream: false,
                passthrough: false,
                status: 200,
                error: None,
                usage: None,
                cost_usd: None,
                latency: Duration::ZERO,
                time_to_first_byte: None,
                overhead: Duration::ZERO,
            },
            key: None,
            price: None,
            arrived,
            sent: None,
            answered: None,
            head: None,
            done: false,
            started_at: SystemTime::now(),
            reference: String::new(),
            client_body: None,
            reservation: None,
            record: true,
            draft: Draft::default(),
        }
    }

    /// The model name the client asked for (the record's reference until a target is
    /// chosen).
    pub fn set_requested(&mut self, model: &str) {
        if self.reference.is_empty() {
            self.reference = model.to_string();
        }
    }

    /// The body the client sent (kept for the record when nothing goes upstream).
    pub fn set_client_body(&mut self, body: &Bytes) {
        self.client_body = Some(body.clone());
    }

    /// The body as sent upstream.
    pub fn set_sent_body(&mut self, body: Option<Bytes>) {
        // The client's body is needed only when nothing was sent.
        if body.is_some() {
            self.client_body = None;
        }
        self.draft.sent_body = body.as_ref().map(crate::store::compact);
    }

    /// The key's budget reservation, settled with the call's cost when it ends.
    pub fn set_reservation(&mut self, reservation: Reservation) {
        self.reservation = Some(reservation);
    }

    /// Not a model call (`count_tokens`): metered, not recorded in the store.
    pub fn not_recorded(&mut self) {
        self.record = false;
    }

    /// What the record will hold (body as sent, raw bytes, attempts…).
    pub fn draft(&mut self) -> &mut Draft {
        &mut self.draft
    }

    /// The client key.
    pub fn set_key(&mut self, key: &Arc<Key>) {
        self.summary.key = key.name.clone();
        self.key = Some(key.clone());
    }

    /// The upstream chosen.
    pub fn set_target(&mut self, target: &Target, stream: bool, passthrough: bool) {
        self.summary.backend = target.backend.clone();
        self.summary.model = target.model.clone();
        self.summary.upstream_dialect = Some(target.dialect);
        self.reference = target.reference.clone();
        self.summary.stream = stream;
        self.summary.passthrough = passthrough;
        self.price = target.price;
    }

    /// The request is about to be sent upstream.
    pub fn sent(&mut self) {
        self.sent = Some(Instant::now());
    }

    /// The upstream's answer (its head) arrived.
    pub fn answered(&mut self) {
        self.answered = Some(Instant::now());
    }

    /// The head of the reply is being sent to the client.
    pub fn head(&mut self) {
        self.head = Some(Instant::now());
    }

    /// The first byte of the reply went out.
    pub fn first_byte(&mut self) {
        if self.summary.time_to_first_byte.is_none() {
            self.summary.time_to_first_byte = Some(self.arrived.elapsed());
        }
    }

    /// Usage read from the reply.
    pub fn usage(&mut self, usage: Usage) {
        self.summary.usage = Some(usage);
    }

    /// The status sent and, for a failure, the error's kind.
    pub fn outcome(&mut self, status: u16, error: Option<String>) {
        if status != 0 {
            self.summary.status = status;
        }
        // The first error named (the library's kind) is the one kept.
        if self.summary.error.is_none() {
            self.summary.error = error;
        }
    }

    /// The reply ended normally.
    pub fn complete(&mut self) {
        self.done = true;
    }

    /// Moves the meter out (into a stream), leaving an inert one behind.
    pub fn detach(&mut self) -> Meter {
        Meter {
            state: self.state.take(),
            summary: self.summary.clone(),
            key: self.key.take(),
            price: self.price.take(),
            arrived: self.arrived,
            sent: self.sent,
            answered: self.answered,
            head: self.head,
            done: self.done,
            started_at: self.started_at,
            reference: std::mem::take(&mut self.reference),
            client_body: self.client_body.take(),
            reservation: self.reservation.take(),
            record: self.record,
            draft: std::mem::take(&mut self.draft),
        }
    }
}

impl Drop for Meter {
    fn drop(&mut self) {
        let Some(state) = self.state.take() else {
            return;
        };
        let now = Instant::now();
        let s = &mut self.summary;
        s.latency = now.duration_since(self.arrived);
        let head = self.head.unwrap_or(now);
        s.overhead = match (self.sent, self.answered) {
            (Some(sent), Some(answered)) => {
                sent.duration_since(self.arrived) + head.saturating_duration_since(answered)
            }
            (Some(sent), None) => sent.duration_since(self.arrived),
            _ => head.duration_since(self.arrived),
        };
        if !self.done && s.error.is_none() && s.status < 400 {
            // The client left before the end (its upstream request was dropped with it), or
            // the drain deadline passed and the gateway dropped the call.
            s.error = Some(match state.drain_expired.load(SeqCst) {
                true => "cancelled".into(),
                false => "client_disconnected".into(),
            });
        }
        if let (Some(price), Some(usage)) = (&self.price, &s.usage) {
            s.cost_usd = Some(cost(price, usage));
        }
        if let (Some(key), Some(usage)) = (&self.key, &s.usage) {
            key.limiter.charge_tokens(usage.total());
        }
        if let Some(r) = self.reservation.take() {
            let cost = switchyard::cost::call_cost(self.price.as_ref(), s.usage.as_ref());
            r.settle(s.usage.as_ref(), cost);
        }
        state.metrics.finished(s);
        if let (Some(store), true) = (&state.store, self.record) {
            store.submit(Finished {
                summary: self.summary.clone(),
                reference: std::mem::take(&mut self.reference),
                client_body: self.client_body.take().as_ref().map(crate::store::compact),
                started_at: self.started_at,
                price: self.price,
                draft: std::mem::take(&mut self.draft),
            });
        }
    }
}
