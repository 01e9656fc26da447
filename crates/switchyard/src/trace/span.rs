//! A finished call's [`CallSpan`] as OpenTelemetry spans, after the fact and with the
//! call's own timestamps: one span for the call (`"{operation} {model}"`, CLIENT for a
//! program's call, SERVER for a call the gateway served) and a child CLIENT span per
//! attempt upstream. Attribute names follow the GenAI semantic conventions; Switchyard's
//! own are under `switchyard.*`.

use super::facts::{AttemptSpan, CallSpan};
use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_sdk::trace::{IdGenerator, RandomIdGenerator, SpanData, SpanEvents, SpanLinks};
use std::borrow::Cow;

/// The spans of `call`: the call's first, then its attempts'. Empty when the caller's
/// trace is not sampled.
pub(crate) fn build(call: &CallSpan, scope: &InstrumentationScope) -> Vec<SpanData> {
    let ids = RandomIdGenerator::default();
    if call.parent.is_some_and(|p| !p.sampled) {
        return Vec::new();
    }
    let trace_id = match call.parent {
        Some(p) => TraceId::from_bytes(p.trace_id),
        None => ids.new_trace_id(),
    };
    let (parent_span_id, remote) = match call.parent {
        Some(p) => (SpanId::from_bytes(p.span_id), true),
        None => (SpanId::INVALID, false),
    };
    let context = |span_id| {
        SpanContext::new(
            trace_id,
            span_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::NONE,
        )
    };
    let call_id = ids.new_span_id();
    let operation = call.operation.as_str();
    let name: Cow<'static, str> = format!("{operation} {}", call.request_model).into();
    let mut spans = Vec::with_capacity(1 + call.attempts.len());
    spans.push(SpanData {
        span_context: context(call_id),
        parent_span_id,
        parent_span_is_remote: remote,
        span_kind: if call.server {
            SpanKind::Server
        } else {
            SpanKind::Client
        },
        name: name.clone(),
        start_time: call.start,
        end_time: call.end.max(call.start),
        attributes: call_attributes(call),
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: match &call.error {
            Some((_, message)) => Status::error(message.clone()),
            None => Status::Unset,
        },
        instrumentation_scope: scope.clone(),
    });
    for a in &call.attempts {
        spans.push(SpanData {
            span_context: context(ids.new_span_id()),
            parent_span_id: call_id,
            parent_span_is_remote: false,
            span_kind: SpanKind::Client,
            name: name.clone(),
            start_time: a.start,
            end_time: a.start + a.duration,
            attributes: attempt_attributes(call, a),
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: match &a.error_kind {
                Some(kind) => Status::error(kind.clone()),
                None => Status::Unset,
            },
            instrumentation_scope: scope.clone(),
        });
    }
    spans.iter_mut().for_each(redact);
    spans
}

/// Every key the process holds out of a span's texts: its name, its status message and
/// its string attributes (a model name, an error message, the contents when captured).
fn redact(span: &mut SpanData) {
    use crate::internal::redact::redact as clean;
    if let Cow::Owned(name) = clean(&span.name) {
        span.name = name.into();
    }
    if let Status::Error { description } = &span.status {
        if let Cow::Owned(d) = clean(description) {
            span.status = Status::error(d);
        }
    }
    for kv in &mut span.attributes {
        match &kv.value {
            Value::String(s) => {
                if let Cow::Owned(c) = clean(s.as_str()) {
                    kv.value = Value::String(c.into());
                }
            }
            Value::Array(Array::String(items))
                if items
                    .iter()
                    .any(|s| matches!(clean(s.as_str()), Cow::Owned(_))) =>
            {
                let items = items
                    .iter()
                    .map(|s| StringValue::from(clean(s.as_str()).into_owned()))
                    .collect();
                kv.value = Value::Array(Array::String(items));
            }
            _ => {}
        }
    }
}

fn common(call: &CallSpan, provider: &str, model: &str) -> Vec<KeyValue> {
    let mut a = vec![
        KeyValue::new("gen_ai.operation.name", call.operation.as_str()),
        KeyValue::new("gen_ai.request.model", model.to_string()),
    ];
    // None before a backend was chosen (a call the gateway refused).
    if !provider.is_empty() {
        a.push(KeyValue::new(
            "gen_ai.provider.name",
            well_known_provider(provider)
                .unwrap_or(provider)
                .to_string(),
        ));
        a.push(KeyValue::new("switchyard.backend", provider.to_string()));
    }
    a
}

/// The GenAI conventions' own name for a built-in hosted backend whose name differs
/// from it (`gemini` is `gcp.gemini`); any other backend goes by its own name, which
/// `switchyard.backend` always carries.
fn well_known_provider(backend: &str) -> Option<&'static str> {
    Some(match backend {
        "gemini" => "gcp.gemini",
        "vertex" => "gcp.vertex_ai",
        "mistral" => "mistral_ai",
        "xai" => "x_ai",
        _ => return None,
    })
}

fn call_attributes(call: &CallSpan) -> Vec<KeyValue> {
    let mut a = common(call, &call.provider, &call.request_model);
    let mut text = |key: &'static str, v: &Option<String>| {
        if let Some(v) = v {
            a.push(KeyValue::new(key, v.clone()));
        }
    };
    text("gen_ai.response.model", &call.response_model);
    text("gen_ai.response.id", &call.response_id);
    text("switchyard.role", &call.role);
    text("switchyard.client_key", &call.client_key);
    text("switchyard.route", &call.route);
    text("switchyard.client_dialect", &call.client_dialect);
    text("switchyard.upstream_dialect", &call.upstream_dialect);
    text("gen_ai.input.messages", &call.input_messages);
    text("gen_ai.output.messages", &call.output_messages);
    if !call.finish_reasons.is_empty() {
        let reasons: Vec<StringValue> = call
            .finish_reasons
            .iter()
            .map(|r| StringValue::from(r.clone()))
            .collect();
        a.push(KeyValue::new(
            "gen_ai.response.finish_reasons",
            Value::Array(Array::from(reasons)),
        ));
    }
    if let Some(u) = &call.usage {
        a.push(KeyValue::new("gen_ai.usage.input_tokens", big(u.input)));
        a.push(KeyValue::new("gen_ai.usage.output_tokens", big(u.output)));
        if u.cached_input > 0 {
            a.push(KeyValue::new(
                "gen_ai.usage.cache_read.input_tokens",
                u.cached_input as i64,
            ));
        }
    }
    if let Some((kind, _)) = &call.error {
        a.push(KeyValue::new("error.type", kind.clone()));
    }
    if let Some(status) = call.status {
        a.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
    }
    // Absent when unknown: a price nobody gave is not a cost of 0.
    if let Some(cost) = call.cost_usd {
        a.push(KeyValue::new("switchyard.cost_usd", cost));
    }
    if let Some(ttfb) = call.time_to_first_byte {
        a.push(KeyValue::new(
            "switchyard.time_to_first_byte_ms",
            ttfb.as_secs_f64() * 1000.0,
        ));
    }
    a.push(KeyValue::new(
        "switchyard.reference",
        call.reference.clone(),
    ));
    a.push(KeyValue::new("switchyard.stream", call.stream));
    a.push(KeyValue::new("switchyard.cache_hit", call.cache_hit));
    a.push(KeyValue::new(
        "switchyard.attempts",
        call.attempts.len() as i64,
    ));
    a
}

fn attempt_attributes(call: &CallSpan, at: &AttemptSpan) -> Vec<KeyValue> {
    // A route's attempt went to its member: that member's backend and model.
    let (provider, model) = at
        .reference
        .as_deref()
        .and_then(|r| r.split_once('/'))
        .unwrap_or((&call.provider, &call.request_model));
    let mut a = common(call, provider, model);
    a.push(KeyValue::new("switchyard.attempt", i64::from(at.number)));
    a.push(KeyValue::new(
        "switchyard.wait_before_ms",
        at.wait_before.as_secs_f64() * 1000.0,
    ));
    if let Some(status) = at.status {
        a.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
    }
    if let Some(kind) = &at.error_kind {
        a.push(KeyValue::new("error.type", kind.clone()));
    }
    if let Some(member) = &at.reference {
        a.push(KeyValue::new("switchyard.member", member.clone()));
    }
    a
}

/// A token count as an attribute's integer, saturating at `i64::MAX` (never wrapped).
fn big(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::well_known_provider;

    #[test]
    fn built_in_backends_get_the_conventions_names_and_others_keep_theirs() {
        assert_eq!(well_known_provider("gemini"), Some("gcp.gemini"));
        assert_eq!(well_known_provider("vertex"), Some("gcp.vertex_ai"));
        assert_eq!(well_known_provider("xai"), Some("x_ai"));
        assert_eq!(
            well_known_provider("openai"),
            None,
            "already the conventions' name"
        );
        assert_eq!(well_known_provider("vllm"), None);
    }
}
