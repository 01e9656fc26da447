//! One call's meter: filled in as the call goes, closed exactly once — by [`Meter::finish`]
//! as the reply's last bytes go out, or when it is dropped (a client that went away
//! mid-stream, an error answered, a drain that ran out). Closing settles the key's budget
//! reservation, counts the call in the metrics, writes the access log line, and hands the
//! call, with the bytes it kept as they passed, to the store (see [`crate::store`]); when
//! the store says so ([`crate::store::Store::must_wait`]), `finish` gives the wait for the
//! record that the reply's last byte must follow.

pub(crate) mod access_log;
mod books;
pub(crate) mod kept_metrics;
pub(crate) mod lane_load;
pub mod metrics;
pub(crate) mod otel;
pub(crate) mod refused_calls;
pub(crate) mod unfinished;

pub(crate) use books::Books;
pub(crate) use unfinished::{bill_unfinished, SeenSoFar};

use crate::account::budget_stop;
use crate::account::budgets::CallBound;
use crate::account::keys::Key;
use crate::account::limits::InFlight;
use crate::call::upstream::{EmbedTarget, Target};
use crate::conversations::plan::Keeping;
use crate::meter::metrics::CallSummary;
use crate::store::{Draft, Finished};
use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use switchyard::{Dialect, Usage};
use tokio::sync::oneshot;

/// A call being metered.
pub(crate) struct Meter {
    /// What the call closes into (`None` once closed).
    books: Option<Arc<Books>>,
    summary: CallSummary,
    key: Option<Arc<Key>>,
    target: Option<Arc<Target>>,
    price: Option<switchyard::registry::Price>,
    arrived: Instant,
    sent: Option<Instant>,
    answered: Option<Instant>,
    head: Option<Instant>,
    done: bool,
    started_at: SystemTime,
    reference: String,
    client_body: Option<Bytes>,
    reservation: Option<crate::account::budgets::Held>,
    /// What the reservation holds (`None` without a budget, or for a model without a
    /// price): a stream is stopped once its running cost passes it (`budget_stop.rs`).
    held: Option<CallBound>,
    /// A stream's running cost, checked against `held`.
    running: budget_stop::Running,
    /// The stream was stopped at its reservation.
    stopped: bool,
    in_flight: Option<InFlight>,
    /// Counts the call among those open on its lane while it is open.
    open_here: Option<lane_load::OpenHere>,
    seen: SeenSoFar,
    record: bool,
    draft: Draft,
    /// The turn to keep for the stateful APIs once the reply is whole (`conversations/`).
    keeping: Option<Box<Keeping>>,
    /// The client's trace context (`traceparent`), continued by the call's span.
    parent: Option<switchyard::trace::Parent>,
}

impl Meter {
    /// Starts metering a call that just arrived.
    pub(crate) fn new(books: Arc<Books>, dialect: Dialect, arrived: Instant) -> Self {
        books.metrics.started();
        let draft = Draft::keeping_at_most(books.max_recorded_reply_bytes);
        Meter {
            books: Some(books),
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
                requested: String::new(),
                upstream_called: false,
                model_known: false,
            },
            key: None,
            target: None,
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
            held: None,
            running: budget_stop::Running::default(),
            stopped: false,
            in_flight: None,
            open_here: Some(lane_load::OpenHere::count()),
            seen: SeenSoFar::default(),
            record: true,
            draft,
            keeping: None,
            parent: None,
        }
    }

    /// The request's headers: its `traceparent`, when the call is traced.
    pub(crate) fn set_headers(&mut self, headers: &axum::http::HeaderMap) {
        if switchyard::trace::enabled() {
            self.parent = crate::meter::otel::parent(headers);
        }
    }

    /// The model name the client asked for (the record's reference until a target is
    /// chosen).
    pub(crate) fn set_requested(&mut self, model: &str) {
        self.summary.requested = model.to_string();
        if self.reference.is_empty() {
            self.reference = model.to_string();
        }
    }

    /// The model as the client named it: what every reply to it names
    /// (`call/client_model.rs`).
    pub(crate) fn requested(&self) -> &str {
        &self.summary.requested
    }

    /// The body the client sent (kept for the record when nothing goes upstream).
    pub(crate) fn set_client_body(&mut self, body: &Bytes) {
        self.client_body = Some(body.clone());
    }

    /// The body as sent upstream.
    pub(crate) fn set_sent_body(&mut self, body: Option<Bytes>) {
        // The client's body is needed only when nothing was sent.
        if body.is_some() {
            self.client_body = None;
        }
        self.draft.sent_body = body.as_ref().map(crate::store::compact);
    }

    /// The key's budget reservation, settled with the call's cost when it ends, and the
    /// bound it holds (`None`: the model has no price, nothing is held).
    pub(crate) fn set_reservation(
        &mut self,
        reservation: crate::account::budgets::Held,
        held: Option<CallBound>,
    ) {
        self.reservation = Some(reservation);
        self.held = held;
    }

    /// What a stream that has shown `seen` has cost, when that reached its reservation
    /// (never for a call without one, nor twice): see [`budget_stop::Running`].
    pub(crate) fn over_reservation(&mut self, seen: SeenSoFar) -> Option<budget_stop::Passed> {
        let (held, price) = (self.held.as_ref()?, self.price.as_ref()?);
        if self.stopped {
            return None;
        }
        let sent_bytes = self.draft.sent_body.as_ref().map_or(0, Bytes::len);
        self.running.passed(held, price, sent_bytes, seen)
    }

    /// The stream is stopped at its reservation: billed what was generated (`seen`), the
    /// error recorded, and given back for the client's error event.
    pub(crate) fn stop_at_reservation(
        &mut self,
        passed: budget_stop::Passed,
        seen: SeenSoFar,
    ) -> crate::errors::ApiError {
        let error = budget_stop::stopped(self.key.as_deref(), &passed);
        self.stopped = true;
        let sent_bytes = self.draft.sent_body.as_ref().map_or(0, Bytes::len);
        let (_, how) = bill_unfinished(
            seen.usage,
            sent_bytes,
            seen.output_bytes,
            "before the stream was stopped",
        );
        self.summary.usage = Some(passed.usage);
        self.outcome(0, Some(budget_stop::STOPPED_KIND.to_string()));
        let draft = self.draft();
        draft.usage_estimated = Some(how);
        draft.error = Some(switchyard::record::ErrorRecord {
            kind: budget_stop::STOPPED_KIND.to_string(),
            message: error.message.clone(),
            provider: None,
            fields: serde_json::Map::new(),
        });
        // Output had reached the client: a cut.
        draft.cut = true;
        self.complete();
        error
    }

    /// The key's place among its calls in flight, given back when the call ends.
    pub(crate) fn set_in_flight(&mut self, place: InFlight) {
        self.in_flight = Some(place);
    }

    /// Not a model call (`count_tokens`): metered, not recorded in the store.
    pub(crate) fn not_recorded(&mut self) {
        self.record = false;
    }

    /// What the record will hold (body as sent, raw bytes, attempts…).
    pub(crate) fn draft(&mut self) -> &mut Draft {
        &mut self.draft
    }

    /// A call's attempts upstream, after those of earlier route members (numbered on
    /// from them, each naming its member when the call goes through a route).
    pub(crate) fn attempts(&mut self, attempts: &[switchyard::Attempt]) {
        let offset = self.draft.attempts.len() as u32;
        let member = self.draft.route.as_ref().map(|_| self.reference.clone());
        let mut records = crate::store::attempt_records(attempts);
        if offset > 0 || member.is_some() {
            for a in &mut records {
                a.number += offset;
                a.reference = member.clone();
            }
        }
        if self.draft.attempts.is_empty() {
            // The plain path: the records move in, no second buffer.
            self.draft.attempts = records;
        } else {
            self.draft.attempts.extend(records);
        }
    }

    /// The client key.
    pub(crate) fn set_key(&mut self, key: &Arc<Key>) {
        self.summary.key = key.name.clone();
        self.key = Some(key.clone());
    }

    /// The upstream chosen.
    pub(crate) fn set_target(&mut self, target: &Arc<Target>, stream: bool, passthrough: bool) {
        self.target = Some(target.clone());
        self.summary.backend = target.backend.clone();
        self.summary.model = target.model.clone();
        self.summary.upstream_dialect = Some(target.dialect);
        self.reference = target.reference.clone();
        self.summary.stream = stream;
        self.summary.passthrough = passthrough;
        self.price = target.price;
    }

    /// The embeddings upstream chosen: no dialect target, so nothing is cached for chat
    /// calls on its account.
    pub(crate) fn set_embed_target(&mut self, target: &EmbedTarget) {
        self.summary.backend = target.backend.clone();
        self.summary.model = target.model.clone();
        self.reference = target.reference.clone();
        self.price = target.price;
    }

    /// Answered from the cache by recorded call `number`: no price, no upstream call.
    pub(crate) fn cache_hit(&mut self, number: u64) {
        self.price = None;
        self.draft.cache_hit = Some(number);
    }

    /// The key to enter the call under in the cache, once it is recorded.
    pub(crate) fn set_cache_key(&mut self, key: String) {
        self.draft.cache_key = Some(key);
    }

    /// The request is about to be sent upstream.
    pub(crate) fn sent(&mut self) {
        self.sent = Some(Instant::now());
        self.summary.upstream_called = true;
    }

    /// The upstream's answer (its head) arrived.
    pub(crate) fn answered(&mut self) {
        self.answered = Some(Instant::now());
    }

    /// The upstream's answer arrived at `at`.
    pub(crate) fn answered_at(&mut self, at: Instant) {
        self.answered = Some(at);
    }

    /// The head of the reply is being sent to the client.
    pub(crate) fn head(&mut self) {
        self.head = Some(Instant::now());
    }

    /// The first byte of the reply went out.
    pub(crate) fn first_byte(&mut self) {
        if self.summary.time_to_first_byte.is_none() {
            self.summary.time_to_first_byte = Some(self.arrived.elapsed());
        }
    }

    /// Usage read from the reply.
    pub(crate) fn usage(&mut self, usage: Usage) {
        self.summary.usage = Some(usage);
    }

    /// What a stream has shown so far, billed if the client leaves before its end.
    pub(crate) fn seen_so_far(&mut self, seen: SeenSoFar) {
        self.seen = seen;
    }

    /// The status sent and, for a failure, the error's kind.
    pub(crate) fn outcome(&mut self, status: u16, error: Option<String>) {
        if status != 0 {
            self.summary.status = status;
        }
        // The first error named (the library's kind) is the one kept.
        if self.summary.error.is_none() {
            self.summary.error = error;
        }
    }

    /// What the call is metered into, while it is open.
    pub(crate) fn books(&self) -> Option<&Arc<Books>> {
        self.books.as_ref()
    }

    /// Keeps the call's turn for the stateful APIs once its reply is whole.
    pub(crate) fn keep_turn(&mut self, keeping: Keeping) {
        self.keeping = Some(Box::new(keeping));
    }

    /// A whole reply's body as the client receives it (read for the turn to keep).
    pub(crate) fn reply_body(&mut self, body: &[u8]) {
        if let Some(k) = &mut self.keeping {
            k.capture.whole(body);
        }
    }

    /// The next bytes of a streamed reply as the client receives them.
    pub(crate) fn reply_chunk(&mut self, bytes: &[u8]) {
        if let Some(k) = &mut self.keeping {
            k.capture.chunk(bytes);
        }
    }

    /// The reply ended normally.
    pub(crate) fn complete(&mut self) {
        self.done = true;
    }

    /// The reply's last bytes are about to go out: closes the call now and, when the
    /// store must have its record first, gives the answer to wait for (`true`: written).
    pub(crate) fn finish(&mut self) -> Option<oneshot::Receiver<bool>> {
        self.close(true)
    }

    /// Whether the call is still open (not yet closed by [`Meter::finish`]).
    pub(crate) fn is_open(&self) -> bool {
        self.books.is_some()
    }

    /// Moves the meter out (into a stream), leaving an inert one behind.
    pub(crate) fn detach(&mut self) -> Meter {
        Meter {
            books: self.books.take(),
            summary: self.summary.clone(),
            key: self.key.take(),
            target: self.target.take(),
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
            held: self.held,
            running: self.running,
            stopped: self.stopped,
            in_flight: self.in_flight.take(),
            open_here: self.open_here.take(),
            seen: self.seen,
            record: self.record,
            draft: std::mem::take(&mut self.draft),
            keeping: self.keeping.take(),
            parent: self.parent,
        }
    }

    /// Closes the call once: timings, the outcome of an unfinished call, its bill, the
    /// budget, the metrics, the access log and the store. With `may_wait`, gives the
    /// store's answer when the caller must wait for the record.
    fn close(&mut self, may_wait: bool) -> Option<oneshot::Receiver<bool>> {
        let books = self.books.take()?;
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
            let cancelled = books.drain_expired.load(Ordering::Relaxed);
            // The client left before the end (its upstream request was dropped with it),
            // or the drain deadline passed.
            s.error = Some(
                if cancelled {
                    "cancelled"
                } else {
                    "client_disconnected"
                }
                .into(),
            );
            if s.upstream_called {
                let sent_bytes = self.draft.sent_body.as_ref().map_or(0, Bytes::len);
                let (usage, how) = bill_unfinished(
                    s.usage.or(self.seen.usage),
                    sent_bytes,
                    self.seen.output_bytes,
                    "before the client left",
                );
                s.usage = Some(usage);
                self.draft.usage_estimated = Some(how);
            }
        }
        if let (Some(price), Some(usage)) = (&self.price, &s.usage) {
            // The library's formula, the one every door prices with.
            s.cost_usd = Some(switchyard::internal::cost::cost_at(price, usage));
        }
        if let (Some(key), Some(usage)) = (&self.key, &s.usage) {
            key.limiter.charge_tokens(usage.total());
            if let Some(pg) = &books.pg {
                pg.charge_tokens(key, usage.total());
            }
        }
        if let Some(r) = self.reservation.take() {
            r.settle(s.usage.as_ref(), s.cost_usd);
        }
        if let (Some(held), Some(cost)) = (&self.held, s.cost_usd) {
            // A whole reply past its hold (a provider that ignored `max_tokens`) cannot
            // be cut: billed whole, flagged and counted; a stopped stream is too.
            if self.stopped || budget_stop::over(held, cost) {
                self.draft.over_reservation = Some(switchyard::record::OverReservation {
                    reserved_usd: held.usd,
                    cost_usd: cost,
                    stopped: self.stopped,
                });
                books.metrics.over_reservation(self.stopped);
            }
        }
        if s.usage.is_some_and(|u| u.suspect().is_some()) {
            books.metrics.usage_suspect();
        }
        self.in_flight.take();
        if let Some(target) = self.target.take() {
            let succeeded = s.error.is_none() && s.status < 400;
            if succeeded {
                // Its model exists upstream: the target is worth keeping.
                books.upstreams.confirm(&target, s.client_dialect);
            }
            s.model_known = succeeded || books.upstreams.is_known(&target.reference);
        }
        books.metrics.finished(s);
        crate::meter::access_log::call(s);
        // count_tokens (not recorded) is no model call: no span either.
        if self.record && switchyard::trace::enabled() {
            crate::meter::otel::emit(crate::meter::otel::Closed {
                summary: s,
                reference: &self.reference,
                started_at: self.started_at,
                parent: self.parent,
                draft: &self.draft,
                client_body: self.client_body.as_ref(),
            });
        }
        let kept = self.keep(&books);
        let record = self.record_into(&books, may_wait);
        self.open_here.take();
        match kept {
            Some(kept) if may_wait => Some(after_both(kept, record)),
            _ => record,
        }
    }

    /// Keeps the call's turn for the stateful APIs when its reply went out whole; the
    /// write, which the reply's last byte must follow.
    fn keep(&mut self, books: &Arc<Books>) -> Option<tokio::task::JoinHandle<()>> {
        let keeping = self.keeping.take()?;
        let s = &self.summary;
        if !self.done || s.error.is_some() || s.status >= 400 || self.draft.cut {
            return None;
        }
        let conversations = books.conversations.clone()?;
        let kept = keeping.into_kept()?;
        let runtime = tokio::runtime::Handle::try_current().ok()?;
        books.metrics.kept.kept(kept.kind);
        let books = books.clone();
        Some(runtime.spawn(async move {
            if let Err(e) = conversations.put(kept).await {
                tracing::warn!("a conversation turn could not be kept: {e}");
                books.metrics.kept.failed();
            }
        }))
    }

    /// Hands the call to the store; with `may_wait`, gives the store's answer when the
    /// caller must wait for the record.
    fn record_into(&mut self, books: &Books, may_wait: bool) -> Option<oneshot::Receiver<bool>> {
        let s = &self.summary;
        if !s.upstream_called && s.error.is_some() {
            // Refused before any upstream call (no key, a model that does not exist…):
            // counted and traced, not recorded in full, so a flood of them cannot fill
            // the disk.
            books.refusals.note(s);
            return None;
        }
        let store = books.store.as_ref().filter(|_| self.record)?;
        let finished = Finished {
            summary: self.summary.clone(),
            reference: std::mem::take(&mut self.reference),
            client_body: self.client_body.take().as_ref().map(crate::store::compact),
            started_at: self.started_at,
            price: self.price,
            draft: std::mem::take(&mut self.draft),
        };
        if may_wait && store.must_wait() {
            Some(store.submit_and_wait(finished))
        } else {
            let lane_busy = self.open_here.as_ref().is_some_and(|o| o.others());
            store.submit(finished, lane_busy);
            None
        }
    }
}

/// Resolves once the turn is kept and, when there is one to wait for, the record
/// written: what the reply's last byte follows.
fn after_both(
    kept: tokio::task::JoinHandle<()>,
    record: Option<oneshot::Receiver<bool>>,
) -> oneshot::Receiver<bool> {
    let (tx, rx) = oneshot::channel();
    tokio::spawn(async move {
        let _ = kept.await;
        let written = match record {
            Some(record) => record.await.unwrap_or(false),
            None => true,
        };
        let _ = tx.send(written);
    });
    rx
}

impl Drop for Meter {
    fn drop(&mut self) {
        self.close(false);
    }
}
