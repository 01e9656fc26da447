//! One call seen by a handle that records or keeps a budget: what is known when it
//! starts, and the record made when it ends.

use super::{AttemptRecord, CallRecord, ErrorRecord, Recorder, Timings};
use crate::attempt::Attempt;
use crate::backend::{Backend, Call};
use crate::budget::{BudgetTracker, Reservation};
use crate::error::{Error, Result};
use crate::registry::Price;
use futures::future::BoxFuture;
use std::sync::Arc;
use std::time::{Instant, SystemTime};
use switchyard_wire::Reply;

/// A call in flight on a recording or budgeted handle.
pub(crate) struct Observed {
    recording: Option<Recording>,
    reservation: Option<Reservation>,
    price: Option<Price>,
    /// The backend, asked for the cost it reports itself when the model has no price.
    source: Arc<dyn Backend>,
}

struct Recording {
    /// Where the record goes; `None` when the call is made only for its spans.
    recorder: Option<Arc<Recorder>>,
    /// Whether the call's spans are exported.
    traced: bool,
    started: Instant,
    started_at: SystemTime,
    role: Option<String>,
    reference: String,
    backend: String,
    model: String,
    dialect: Option<switchyard_wire::Dialect>,
    stream: bool,
    /// The backend, asked for the cost it reports itself (Claude Code).
    source: Arc<dyn Backend>,
    /// The route the call went through, if any.
    route: Option<String>,
    /// The cache key the call is entered under when it succeeds.
    cache_key: Option<String>,
    /// The recorded call that answered it from the cache.
    cache_hit: Option<u64>,
    /// The run directory of that call, when not this run's.
    cache_run: Option<String>,
}

/// How a call ended, as the handle saw it.
pub(crate) enum Outcome<'a> {
    /// A reply.
    Reply(&'a Reply),
    /// An error, with the reply so far for a stream that broke.
    Failed(&'a Error, Option<&'a Reply>),
    /// A stream the caller dropped, with the reply so far.
    Dropped(&'a Reply),
}

impl<'a> Outcome<'a> {
    /// How a stream ended, with the reply it had assembled.
    pub(crate) fn of_stream(reply: &'a Reply, end: crate::reply_stream::StreamEnd<'a>) -> Self {
        use crate::reply_stream::StreamEnd;
        match end {
            StreamEnd::Done => Outcome::Reply(reply),
            StreamEnd::Failed(e) => Outcome::Failed(e, Some(reply)),
            StreamEnd::Dropped => Outcome::Dropped(reply),
        }
    }
}

/// What the handle knows about itself.
pub(crate) struct Handle<'a> {
    pub role: Option<&'a str>,
    pub label: &'a str,
    pub backend: &'a Arc<dyn Backend>,
    pub recorder: Option<&'a Arc<Recorder>>,
    pub budget: Option<&'a Arc<BudgetTracker>>,
    pub price: Option<Price>,
    /// Whether the handle's calls are traced (not a route's members, nor the gateway's
    /// handles: their calls are traced by the route and the gateway).
    pub traced: bool,
}

impl Observed {
    /// Checks the budget and notes what the record needs; `None` when the handle neither
    /// records, nor keeps a budget, nor is traced.
    pub(crate) fn begin(h: &Handle<'_>, model: &str, stream: bool) -> Result<Option<Observed>> {
        let traced = h.traced && crate::trace::enabled();
        if h.recorder.is_none() && h.budget.is_none() && !traced {
            return Ok(None);
        }
        let reservation = match h.budget {
            Some(b) => Some(b.reserve(h.role.unwrap_or(""))?),
            None => None,
        };
        // The spans are made from the record, so a traced call makes one even when it
        // records nowhere.
        let recording = (h.recorder.is_some() || traced).then(|| Recording {
            recorder: h.recorder.cloned(),
            traced,
            started: Instant::now(),
            started_at: SystemTime::now(),
            role: h.role.map(str::to_string),
            reference: h.label.to_string(),
            backend: h.backend.name().to_string(),
            model: model.to_string(),
            dialect: h.backend.dialect(),
            stream,
            source: h.backend.clone(),
            route: None,
            cache_key: None,
            cache_hit: None,
            cache_run: None,
        });
        Ok(Some(Observed {
            recording,
            reservation,
            price: h.price,
            source: h.backend.clone(),
        }))
    }

    /// A call answered from the cache by recorded call `number`: recorded as a hit, at
    /// no cost, with no reservation (a hit is never counted against a budget); `None`
    /// when the handle does not record.
    pub(crate) fn begin_hit(
        h: &Handle<'_>,
        model: &str,
        stream: bool,
        number: u64,
        run: Option<String>,
    ) -> Option<Observed> {
        if h.recorder.is_none() && !(h.traced && crate::trace::enabled()) {
            return None;
        }
        let handle = Handle {
            budget: None,
            price: None,
            ..*h
        };
        let mut observed = Observed::begin(&handle, model, stream).ok()??;
        if let Some(rec) = &mut observed.recording {
            rec.cache_hit = Some(number);
            rec.cache_run = run;
        }
        Some(observed)
    }

    /// The guard of a stream whose handle has a run budget with `max_usd` and a price
    /// (`None` otherwise): it holds the stream's running cost in the budget — the prompt
    /// as reported (else estimated from the request), the output as reported or its
    /// bytes ÷ 4 when that is more — and stops the stream once the run would pass
    /// `max_usd` with its next step ([`crate::budget::RunningHold`]).
    pub(crate) fn stream_guard(
        &self,
        request: &switchyard_wire::Request,
    ) -> Option<crate::reply_stream::Guard> {
        use switchyard_wire::Event;
        let price = self.price?;
        let mut hold = self.reservation.as_ref()?.running_hold()?;
        let prompt = crate::context_check::estimate_prompt_tokens(request);
        let mut reported: Option<crate::Usage> = None;
        let mut output_bytes = 0u64;
        Some(Box::new(move |event: &Event| {
            let grew = |n: usize| n as u64;
            match event {
                Event::TextDelta { text, .. } | Event::ThinkingDelta { text, .. } => {
                    output_bytes = output_bytes.saturating_add(grew(text.len()))
                }
                Event::ToolCallStart { name, .. } => {
                    output_bytes = output_bytes.saturating_add(grew(name.len()))
                }
                Event::ToolCallDelta { arguments, .. } => {
                    output_bytes = output_bytes.saturating_add(grew(arguments.len()))
                }
                Event::Usage(u) => reported = Some(*u),
                _ => return None,
            }
            let mut usage = reported.unwrap_or_default();
            if usage.input == 0 {
                usage.input = prompt;
            }
            usage.output = usage.output.max(output_bytes.div_ceil(4));
            let cost = crate::internal::cost::call_cost(Some(&price), Some(&usage))?;
            hold.hold(cost).err().map(|e| (e, usage))
        }))
    }

    /// Enters the call in the cache under `key` (when it succeeds).
    pub(crate) fn enter_cache(&mut self, key: Option<String>) {
        if let Some(rec) = &mut self.recording {
            rec.cache_key = key;
        }
    }

    /// The call went through `route` and was served by (or last tried on) the member
    /// `h`: the record names that member, and the call costs its price.
    pub(crate) fn served_by(&mut self, h: &Handle<'_>, model: &str, route: &str) {
        self.price = h.price;
        self.source = h.backend.clone();
        if let Some(rec) = &mut self.recording {
            rec.reference = h.label.to_string();
            rec.backend = h.backend.name().to_string();
            rec.model = model.to_string();
            rec.dialect = h.backend.dialect();
            rec.source = h.backend.clone();
            rec.route = Some(route.to_string());
        }
    }

    /// Settles the budget and queues the record; the future waits for the record to be
    /// in place.
    pub(crate) fn end(
        self,
        call: Call,
        mut sent: Option<crate::backend::Sent>,
        outcome: Outcome<'_>,
        first_byte: Option<Instant>,
        attempts: &[Attempt],
    ) -> BoxFuture<'static, ()> {
        let usage = match &outcome {
            Outcome::Reply(r) | Outcome::Failed(_, Some(r)) | Outcome::Dropped(r) => r.usage,
            Outcome::Failed(_, None) => None,
        };
        let replayed = sent.as_mut().and_then(|s| s.replayed_call.take());
        let reported = match &outcome {
            Outcome::Reply(r) | Outcome::Failed(_, Some(r)) | Outcome::Dropped(r) => {
                self.source.reported_cost(&r.raw)
            }
            Outcome::Failed(_, None) => None,
        };
        let cost = settle(
            self.price.as_ref(),
            self.reservation,
            replayed.as_ref(),
            usage.as_ref(),
            reported,
        );
        let Some(mut rec) = self.recording else {
            return Box::pin(async {});
        };
        // A hit called no provider.
        let cost = if rec.cache_hit.is_some() {
            Some(0.0)
        } else {
            cost
        };
        if let Some(r) = replayed {
            rec.reference = r.reference;
            rec.backend = r.backend;
            rec.model = r.model;
            rec.dialect = r.dialect;
        }
        let stopped = matches!(outcome, Outcome::Failed(Error::BudgetStopped { .. }, _));
        // A stream hands out nothing before its first output, so a stream that failed
        // with a reply so far broke after output reached the caller.
        let cut = rec.stream && matches!(outcome, Outcome::Failed(_, Some(_)));
        let ended = Instant::now();
        let duration_ms = ms(ended - rec.started);
        let (reply, error) = match outcome {
            Outcome::Reply(r) => (Some(r), None),
            Outcome::Failed(e, r) => (r, Some(ErrorRecord::new(e))),
            Outcome::Dropped(r) => (Some(r), Some(ErrorRecord::cancelled())),
        };
        // The raw bytes travel as `Bytes` (a reference count, no copy); the writer
        // thread turns them into the record's text, off the caller's path.
        let raw: Option<bytes::Bytes> = match reply {
            Some(r) if !r.raw.is_empty() => Some(r.raw.clone()),
            _ => None,
        };
        let error_raw = error.as_ref().and_then(|e| {
            e.provider.as_ref().map(|p| p.body.clone()).or_else(|| {
                e.fields
                    .get("body")
                    .and_then(|b| serde_json::from_value(b.clone()).ok())
            })
        });
        let (body, replayed) = match sent {
            Some(s) => (s.body, s.replayed_attempts),
            None => (None, None),
        };
        let attempts: Vec<AttemptRecord> = match replayed {
            Some(recorded) => recorded,
            None => {
                let http = rec.dialect.is_some();
                attempts.iter().map(|a| attempt_record(a, http)).collect()
            }
        };
        // Kept beside the cost from our prices, never in its place.
        let provider_cost_usd = reply.and_then(|r| rec.source.reported_cost(&r.raw));
        let request = call.request;
        let record = CallRecord {
            format: super::FORMAT,
            number: 0,
            role: rec.role,
            reference: rec.reference,
            backend: rec.backend,
            model: rec.model,
            dialect: rec.dialect,
            stream: rec.stream,
            prompt_digest: String::new(),
            parameters: serde_json::Map::new(),
            request,
            body: body.and_then(|b| {
                String::from_utf8(b.to_vec())
                    .ok()
                    .and_then(|t| serde_json::value::RawValue::from_string(t).ok())
            }),
            reply: reply.map(Reply::without_raw),
            usage_reported: None,
            raw: error_raw,
            usage,
            attempts,
            timings: Timings {
                started_at: super::timestamp(rec.started_at),
                ended_at: super::timestamp(rec.started_at + (ended - rec.started)),
                first_byte_ms: first_byte.map(|t| ms(t.saturating_duration_since(rec.started))),
                duration_ms,
            },
            cost_usd: cost,
            provider_cost_usd,
            error,
            usage_estimated: stopped.then(|| {
                "prompt as the provider reported it, else estimated from the request (÷ 4); output as reported, or its bytes ÷ 4 when that is more: the stream was stopped at the run's budget".to_string()
            }),
            client_key: None,
            client_dialect: None,
            embedding: None,
            route: rec.route,
            cut,
            raw_truncated: None,
            cache_key: rec.cache_key,
            cache_hit: rec.cache_hit,
            cache_hit_call: None,
            cache_run: rec.cache_run,
            depth_capped: false,
            usage_suspect: usage.and_then(|u| u.suspect()),
            over_reservation: None,
        };
        if rec.traced {
            crate::trace::emit_record(&record);
        }
        let Some(recorder) = rec.recorder else {
            return Box::pin(async {});
        };
        let done = recorder.submit_draft(record, raw);
        Box::pin(async move {
            done.await;
        })
    }
}

impl Observed {
    /// [`Observed::end`] for an embeddings call: usage is the input tokens reported, the
    /// cost theirs at the `input` price, the record's `embedding` holds the request and
    /// `raw` the reply's bytes (`reply` stays `null`: a vector is no chat reply).
    pub(crate) fn end_embedding(
        self,
        call: crate::embed::EmbedCall,
        shape: switchyard_wire::embed::EmbedShape,
        mut sent: crate::backend::Sent,
        result: std::result::Result<&switchyard_wire::embed::Embeddings, &Error>,
        attempts: &[Attempt],
    ) -> BoxFuture<'static, ()> {
        // A success the provider reported no usage for (Gemini's developer API never
        // does) is billed an estimate of its input, said so in the record, rather than
        // nothing: the gateway bills the same.
        let mut usage_estimated = None;
        let usage = result.ok().map(|e| {
            let input = e.input_tokens.unwrap_or_else(|| {
                let chars = call.request.input.size();
                usage_estimated = Some(format!(
                    "input estimated from the {chars} characters embedded (÷ 4): the provider reported no usage"
                ));
                (chars as u64).div_ceil(4)
            });
            switchyard_wire::Usage {
                input,
                ..Default::default()
            }
        });
        let replayed = sent.replayed_call.take();
        let cost = settle(
            self.price.as_ref(),
            self.reservation,
            replayed.as_ref(),
            usage.as_ref(),
            None,
        );
        let Some(mut rec) = self.recording else {
            return Box::pin(async {});
        };
        if let Some(r) = replayed {
            rec.reference = r.reference;
            rec.backend = r.backend;
            rec.model = r.model;
        }
        let cost = if rec.cache_hit.is_some() {
            Some(0.0)
        } else {
            cost
        };
        let ended = Instant::now();
        let error = result.err().map(ErrorRecord::new);
        let raw = match result {
            Ok(e) if !e.raw.is_empty() => Some(e.raw.clone()),
            _ => None,
        };
        let error_raw = error
            .as_ref()
            .and_then(|e| e.provider.as_ref().map(|p| p.body.clone()));
        let attempts = match sent.replayed_attempts.take() {
            Some(recorded) => recorded,
            None => {
                let http = rec.dialect.is_some();
                attempts.iter().map(|a| attempt_record(a, http)).collect()
            }
        };
        let mut parameters = serde_json::Map::new();
        if let Some(d) = call.request.dimensions {
            parameters.insert("dimensions".into(), d.into());
        }
        if let Some(f) = call.request.encoding_format {
            parameters.insert("encoding_format".into(), f.as_str().into());
        }
        let record = CallRecord {
            format: super::FORMAT,
            number: 0,
            role: rec.role,
            reference: rec.reference,
            backend: rec.backend,
            model: rec.model,
            dialect: None,
            stream: false,
            prompt_digest: super::embed_digest(&call.request),
            parameters,
            request: switchyard_wire::Request::default(),
            body: sent.body.and_then(|b| {
                String::from_utf8(b.to_vec())
                    .ok()
                    .and_then(|t| serde_json::value::RawValue::from_string(t).ok())
            }),
            reply: None,
            raw: error_raw,
            usage,
            usage_reported: None,
            attempts,
            timings: Timings {
                started_at: super::timestamp(rec.started_at),
                ended_at: super::timestamp(rec.started_at + (ended - rec.started)),
                first_byte_ms: None,
                duration_ms: ms(ended - rec.started),
            },
            cost_usd: cost,
            provider_cost_usd: None,
            error,
            usage_estimated,
            client_key: None,
            client_dialect: None,
            embedding: Some(super::EmbedRecord {
                shape,
                request: call.request,
            }),
            route: rec.route,
            cut: false,
            raw_truncated: None,
            cache_key: rec.cache_key,
            cache_hit: rec.cache_hit,
            cache_hit_call: None,
            cache_run: rec.cache_run,
            depth_capped: false,
            usage_suspect: usage.and_then(|u| u.suspect()),
            over_reservation: None,
        };
        if rec.traced {
            crate::trace::emit_record(&record);
        }
        let Some(recorder) = rec.recorder else {
            return Box::pin(async {});
        };
        let done = recorder.submit_draft(record, raw);
        Box::pin(async move {
            done.await;
        })
    }
}

/// A call's cost, settled against its budget reservation: a replayed call costs what it
/// cost when recorded, at the prices of then; any other at today's prices.
fn settle(
    price: Option<&Price>,
    reservation: Option<Reservation>,
    replayed: Option<&crate::backend::ReplayedCall>,
    usage: Option<&crate::Usage>,
    reported: Option<f64>,
) -> Option<f64> {
    let cost = match replayed {
        Some(r) => r.cost_usd,
        None => crate::internal::cost::priced_or_reported(price, usage, reported),
    };
    if let Some(r) = reservation {
        r.settle(usage, cost);
    }
    cost
}

fn attempt_record(a: &Attempt, http: bool) -> AttemptRecord {
    AttemptRecord::of(a, http)
}

fn ms(d: std::time::Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}
