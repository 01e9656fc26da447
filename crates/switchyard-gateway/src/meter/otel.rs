//! A served call's spans (`switchyard::trace`): built when its meter closes, from what
//! the meter kept — a SERVER span continuing the client's `traceparent`, with a CLIENT
//! span per attempt upstream. What needs the reply decoded (its id, model and finish
//! reason, and the contents when `otel: {contents: true}`) is done on the blocking pool,
//! after the reply has gone.

use crate::meter::metrics::CallSummary;
use crate::store::Draft;
use bytes::Bytes;
use std::time::SystemTime;
use switchyard::trace::{AttemptSpan, CallSpan, Operation, Parent};
use switchyard_wire::codec;

/// The caller's trace context, from a request's `traceparent` header.
pub(crate) fn parent(headers: &axum::http::HeaderMap) -> Option<Parent> {
    headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .and_then(Parent::from_traceparent)
}

/// What the meter hands over when a call closes.
pub(crate) struct Closed<'a> {
    pub summary: &'a CallSummary,
    pub reference: &'a str,
    pub started_at: SystemTime,
    pub parent: Option<Parent>,
    pub draft: &'a Draft,
    pub client_body: Option<&'a Bytes>,
}

/// Queues the call's spans; returns at once.
pub(crate) fn emit(c: Closed<'_>) {
    let s = c.summary;
    let error = c
        .draft
        .error
        .as_ref()
        .map(|e| (e.kind.clone(), e.message.clone()))
        .or_else(|| {
            s.error
                .clone()
                .map(|kind| (kind, format!("the call ended with status {}", s.status)))
        });
    let span = CallSpan {
        operation: match c.draft.embedding {
            Some(_) => Operation::Embeddings,
            None => Operation::Chat,
        },
        server: true,
        provider: s.backend.clone(),
        request_model: if s.model.is_empty() {
            s.requested.clone()
        } else {
            s.model.clone()
        },
        reference: c.reference.to_string(),
        response_model: None,
        response_id: None,
        finish_reasons: Vec::new(),
        usage: s.usage,
        cost_usd: if c.draft.cache_hit.is_some() {
            Some(0.0)
        } else {
            s.cost_usd
        },
        role: None,
        client_key: (s.key != "-").then(|| s.key.clone()),
        cache_hit: c.draft.cache_hit.is_some(),
        route: c.draft.route.clone(),
        stream: s.stream,
        status: Some(s.status),
        error,
        client_dialect: Some(s.client_dialect.to_string()),
        upstream_dialect: s.upstream_dialect.map(|d| d.to_string()),
        start: c.started_at,
        end: c.started_at + s.latency,
        time_to_first_byte: s.time_to_first_byte,
        attempts: c
            .draft
            .attempts
            .iter()
            .map(AttemptSpan::from_record)
            .collect(),
        parent: c.parent,
        input_messages: None,
        output_messages: None,
    };
    let contents = switchyard::trace::contents();
    let reply = c.draft.reply.clone();
    let raw = c.draft.raw.clone();
    let upstream = s.upstream_dialect;
    let body = contents
        .then(|| c.draft.sent_body.clone().or_else(|| c.client_body.cloned()))
        .flatten();
    let finish = move |mut span: CallSpan| {
        if let Some(dialect) = upstream.filter(|_| span.operation == Operation::Chat) {
            let reply = reply.or_else(|| {
                crate::store::build::decode_reply(
                    dialect,
                    &crate::store::build::concat(&raw),
                    span.stream,
                )
            });
            if let Some(r) = reply
                .as_ref()
                .filter(|r| !r.content.is_empty() || r.id.is_some())
            {
                span.response_model = r.model.clone();
                span.response_id = r.id.clone();
                span.finish_reasons = vec![switchyard::trace::finish_reason(r)];
                if contents {
                    span.output_messages = Some(switchyard::trace::output_messages(r));
                }
            }
            if let Some(request) = body.and_then(|b| codec(dialect).decode_request(&b).ok()) {
                span.input_messages =
                    Some(switchyard::trace::input_messages(&request.request.messages));
            }
        }
        switchyard::trace::emit(&span);
    };
    match tokio::runtime::Handle::try_current() {
        Ok(rt) => {
            rt.spawn_blocking(move || finish(span));
        }
        Err(_) => finish(span),
    }
}
