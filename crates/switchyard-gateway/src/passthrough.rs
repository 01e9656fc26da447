//! Same dialect on both sides: the body goes up with minimal edits spliced into its bytes
//! (the model id, `extra_body`, a `developer` role renamed for backends that refuse it),
//! with the backend's credential and never the client's, and the reply's bytes come back
//! as they arrive. Usage is read from a copy of the bytes as they pass.
//!
//! One edit touches the reply: a chat client streaming without
//! `stream_options.include_usage` gets the option added upstream (so the call can be
//! metered) and the usage-only chunk it did not ask for is left out of its stream.

use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use crate::raw::RawBody;
use crate::upstream::Target;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};
use switchyard::backend::http::ANTHROPIC_VERSION;
use switchyard::record::{AttemptRecord, ErrorRecord};
use switchyard::{classify, retry_hint, Dialect, RetryPolicy, RetryReason};
use switchyard_wire::sse::{write_event, SseParser};
use switchyard_wire::{codec, ByteStreamDecoder, Event};

/// Response headers worth passing back: the content type, retry hints, request ids and
/// rate-limit counters. Nothing else (no upstream cookies, no server banners).
fn kept_header(name: &str) -> bool {
    matches!(
        name,
        "content-type" | "retry-after" | "retry-after-ms" | "x-request-id" | "request-id"
    ) || name.starts_with("x-ratelimit-")
        || name.starts_with("anthropic-ratelimit-")
}

/// Forwards a call whose client speaks the backend's dialect.
pub async fn forward(
    target: &Target,
    raw: &RawBody<'_>,
    bytes: &Bytes,
    stream: bool,
    dialect: Dialect,
    headers: &HeaderMap,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let config = target.http.config();
    let mut edits: Vec<(&str, String)> = Vec::new();
    if dialect != Dialect::Gemini && raw.string("model").as_deref() != Some(&target.model) {
        edits.push(("model", Value::from(target.model.as_str()).to_string()));
    }
    for (k, v) in &config.extra_body {
        edits.push((k.as_str(), v.to_string()));
    }
    let mut hide_usage = false;
    if dialect == Dialect::Chat && stream {
        let options = raw
            .raw("stream_options")
            .and_then(|r| serde_json::from_str::<Value>(r).ok());
        if options
            .as_ref()
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            != Some(true)
        {
            let mut o = match options {
                Some(Value::Object(m)) => m,
                _ => serde_json::Map::new(),
            };
            o.insert("include_usage".into(), json!(true));
            edits.push(("stream_options", Value::Object(o).to_string()));
            hide_usage = true;
        }
    }
    let mut body = if edits.is_empty() {
        bytes.clone()
    } else {
        Bytes::from(raw.patched(&edits))
    };
    let rename_developer = config.developer_as_system
        && matches!(dialect, Dialect::Chat | Dialect::Responses)
        && memchr::memmem::find(&body, b"\"developer\"").is_some();
    let legacy_limit = config.legacy_max_tokens
        && dialect == Dialect::Chat
        && raw.raw("max_completion_tokens").is_some();
    if rename_developer || legacy_limit {
        body = reserialised(&body, |v| {
            if rename_developer {
                developer_as_system(v, dialect);
            }
            if legacy_limit {
                switchyard::backend::http::legacy_max_tokens(v);
            }
        })
        .unwrap_or(body);
    }

    let sent_body = body.clone();
    let mut request = target
        .client
        .post(config.endpoint.url(stream).clone())
        .header("content-type", "application/json")
        .body(body);
    if stream {
        request = request.header("accept", "text/event-stream");
    }
    if dialect == Dialect::Messages {
        let version = headers
            .get("anthropic-version")
            .cloned()
            .unwrap_or(HeaderValue::from_static(ANTHROPIC_VERSION));
        request = request.header("anthropic-version", version);
        // Beta flags mean something only to Anthropic itself; other Messages servers
        // (and Vertex) may refuse flags they do not know, so they never see them.
        if target.anthropic_first_party {
            if let Some(beta) = headers.get("anthropic-beta") {
                request = request.header("anthropic-beta", beta.clone());
            }
        }
    }
    let request = config
        .auth
        .apply(request)
        .await
        .map_err(|e| ApiError::from_upstream(&e))?;
    meter.set_sent_body(Some(sent_body));
    meter.sent();
    let mut failures: HashMap<RetryReason, usize> = HashMap::new();
    let mut tries = Tries::default();
    let (status, out_headers, response) = loop {
        let attempt = request.try_clone().ok_or_else(|| {
            ApiError::new(Category::Internal, "the request could not be sent again")
        })?;
        tries.start();
        let response = match attempt.send().await {
            Ok(r) => r,
            Err(e) => {
                let error = switchyard::Error::Transport {
                    backend: target.backend.clone(),
                    message: chain(&e),
                };
                tries.end(meter, None, Some(&error));
                if let Some(wait) = wait_to_retry(&target.retry, &error, &mut failures).await {
                    tries.waited(wait);
                    continue;
                }
                meter.draft().error = Some(ErrorRecord::new(&error));
                return Err(ApiError::new(
                    Category::Upstream,
                    format!(
                        "could not reach backend `{}`: {}",
                        target.backend,
                        chain(&e)
                    ),
                ));
            }
        };
        meter.answered();
        let status = response.status();
        let mut out_headers = HeaderMap::new();
        for (k, v) in response.headers() {
            if kept_header(k.as_str()) {
                out_headers.insert(k.clone(), v.clone());
            }
        }
        if status.is_success() {
            // As the library records attempts: a status only for a refusal.
            tries.end(meter, None, None);
            break (status, out_headers, response);
        }
        // The upstream's error is already in the client's dialect: unless it is retried,
        // it goes back as is.
        let body = response.bytes().await.unwrap_or_default();
        let pairs: Vec<(String, String)> = out_headers
            .iter()
            .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
            .collect();
        let (details, _) =
            classify::details(&target.backend, status.as_u16(), &pairs, body.clone());
        let error = classify::classify(details);
        tries.end(meter, Some(status.as_u16()), Some(&error));
        if let Some(wait) = wait_to_retry(&target.retry, &error, &mut failures).await {
            tries.waited(wait);
            continue;
        }
        meter.draft().keep(&body);
        meter.draft().error = Some(ErrorRecord::new(&error));
        meter.outcome(status.as_u16(), Some(error.kind().as_str().to_string()));
        meter.complete();
        meter.head();
        return Ok(build(status, out_headers, Body::from(body)));
    };
    if !stream {
        let body = response.bytes().await.map_err(|e| {
            ApiError::new(
                Category::Upstream,
                format!(
                    "backend `{}` broke off its reply: {}",
                    target.backend,
                    chain(&e)
                ),
            )
        })?;
        meter.draft().keep(&body);
        // Only the usage object is read here; the store decodes the whole reply for its
        // record, off the reply's path.
        if let Some(u) = switchyard_wire::usage_scan::reply_usage(codec(dialect), &body) {
            meter.usage(u);
        }
        meter.outcome(status.as_u16(), None);
        meter.head();
        meter.first_byte();
        meter.complete();
        return Ok(build(status, out_headers, Body::from(body)));
    }
    meter.head();
    let mut scan = Scan {
        decoder: Some(ByteStreamDecoder::new(codec(dialect))),
        hide_usage: hide_usage.then(SseParser::new),
        meter: meter.detach(),
    };
    let upstream = response.bytes_stream();
    let relayed = upstream.map(move |chunk| match chunk {
        Ok(bytes) => Ok::<Bytes, std::io::Error>(scan.pass(bytes)),
        Err(e) => {
            scan.meter.outcome(502, Some("Transport".into()));
            Err(std::io::Error::other(format!("upstream stream broke: {e}")))
        }
    });
    Ok(build(status, out_headers, Body::from_stream(relayed)))
}

/// Waits before the next attempt when `policy` retries `error` (the n-th failure of a
/// kind waits the n-th wait of its schedule, or longer when the provider asks, up to the
/// policy's longest wait), giving the wait. `None` when the error is not retried.
async fn wait_to_retry(
    policy: &RetryPolicy,
    error: &switchyard::Error,
    failures: &mut HashMap<RetryReason, usize>,
) -> Option<Duration> {
    let reason = RetryReason::of(error)?;
    let n = failures.entry(reason).or_insert(0);
    let planned = policy.schedule(reason).get(*n).copied()?;
    *n += 1;
    let wait = retry_hint(error).map_or(planned, |hint| hint.max(planned));
    if policy.max_wait.is_some_and(|max| wait > max) {
        return None;
    }
    tokio::time::sleep(wait).await;
    Some(wait)
}

/// The attempts of a pass-through call, as its record keeps them.
#[derive(Default)]
struct Tries {
    number: u32,
    wait: Duration,
    started: Option<(Instant, SystemTime)>,
}

impl Tries {
    fn start(&mut self) {
        self.number += 1;
        self.started = Some((Instant::now(), SystemTime::now()));
    }

    fn waited(&mut self, wait: Duration) {
        self.wait = wait;
    }

    fn end(&mut self, meter: &mut Meter, status: Option<u16>, error: Option<&switchyard::Error>) {
        let Some((at, when)) = self.started.take() else {
            return;
        };
        meter.draft().attempts.push(AttemptRecord {
            number: self.number,
            wait_before_ms: ms(std::mem::take(&mut self.wait)),
            started_at: switchyard::record::timestamp(when),
            duration_ms: ms(at.elapsed()),
            status,
            error_kind: error.map(|e| e.kind().as_str().to_string()),
            error: error.map(|e| e.to_string()),
        });
    }
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// Reads usage from a copy of the stream's bytes, and drops the usage-only chat chunk a
/// client did not ask for.
struct Scan {
    decoder: Option<ByteStreamDecoder>,
    hide_usage: Option<SseParser>,
    meter: Meter,
}

impl Scan {
    fn pass(&mut self, bytes: Bytes) -> Bytes {
        self.meter.first_byte();
        // The bytes as received, for the record: a reference count, not a copy.
        self.meter.draft().keep(&bytes);
        if let Some(decoder) = &mut self.decoder {
            match decoder.push(&bytes) {
                Ok(events) => self.note(&events),
                Err(_) => self.decoder = None,
            }
        }
        match &mut self.hide_usage {
            None => bytes,
            Some(parser) => {
                let mut out = Vec::with_capacity(bytes.len());
                for event in parser.push(&bytes) {
                    if !is_usage_only_chunk(&event.data) {
                        write_event(&mut out, event.event.as_deref(), &event.data);
                    }
                }
                Bytes::from(out)
            }
        }
    }

    fn note(&mut self, events: &[Event]) {
        for e in events {
            match e {
                Event::Usage(u) => self.meter.usage(*u),
                Event::Finish { .. } => self.meter.complete(),
                Event::Error(err) => {
                    self.meter.outcome(
                        err.status.unwrap_or(200),
                        Some(err.kind.clone().unwrap_or_else(|| "stream_error".into())),
                    );
                    self.meter.complete();
                }
                _ => {}
            }
        }
    }
}

impl Drop for Scan {
    fn drop(&mut self) {
        if let Some(decoder) = &mut self.decoder {
            if let Ok(events) = decoder.finish() {
                self.note(&events);
            }
        }
    }
}

fn is_usage_only_chunk(data: &str) -> bool {
    data.contains("\"usage\"")
        && serde_json::from_str::<Value>(data).is_ok_and(|v| {
            v.get("choices")
                .and_then(Value::as_array)
                .is_some_and(|c| c.is_empty())
                && v.get("usage").is_some_and(|u| !u.is_null())
        })
}

fn build(status: StatusCode, headers: HeaderMap, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// The body parsed, changed by `edit` and written again: for the edits that need more
/// than a top-level splice, made only for the backends configured to want them.
fn reserialised(body: &[u8], edit: impl FnOnce(&mut Map<String, Value>)) -> Option<Bytes> {
    let mut v: Map<String, Value> = serde_json::from_slice(body).ok()?;
    edit(&mut v);
    serde_json::to_vec(&v).ok().map(Bytes::from)
}

/// Renames `developer` messages to `system` (for backends configured with
/// `developer_role: system`; the role exists in chat and Responses only).
fn developer_as_system(body: &mut Map<String, Value>, dialect: Dialect) {
    let list = match dialect {
        Dialect::Chat => "messages",
        Dialect::Responses => "input",
        _ => return,
    };
    let Some(messages) = body.get_mut(list).and_then(Value::as_array_mut) else {
        return;
    };
    for m in messages {
        if m.get("role").and_then(Value::as_str) == Some("developer") {
            m["role"] = json!("system");
        }
    }
}

fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let t = cause.to_string();
        if !out.contains(&t) {
            out.push_str(": ");
            out.push_str(&t);
        }
        source = cause.source();
    }
    out
}
