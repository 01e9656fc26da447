//! The gateway's fault matrix: every fault the mock injects × the 4 client dialects × the
//! 4 backend dialects × whole and streamed. Each case asserts what its client sees —
//! the status, and the error's type and code in the client's own shape (for a refusal
//! passed through, exactly what the provider itself sends) — that a stream broken after
//! its output began ends with an error event and never with its clean end (`[DONE]`,
//! `message_stop`, `response.completed`), how many requests reached the provider (the
//! retry schedule), and that exactly one record is written, with the right outcome.
//!
//! The retry policy is the default one (rate limits 30 s, 60 s, 120 s; malformed replies
//! 5 s, 30 s) with waits that are recorded, never slept.

mod common;

use common::{client_body, gateway_waiting, path, DIALECTS};
use futures::StreamExt;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use switchyard::backend::http::Timeouts;
use switchyard::env::MapEnv;
use switchyard::record::{read_records, CallRecord};
use switchyard::{ErrorKind, RecordingSleeper};
use switchyard_gateway::{start, GatewayConfig};
use switchyard_mock::{MockConfig, MockServer};
use switchyard_wire::{codec, ByteStreamDecoder, Dialect, Event, Request};

/// How a case must end.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    /// A reply with the prompt echoed.
    Recovers,
    /// An error of this kind before any output: an HTTP error in the client's shape.
    Refused(ErrorKind),
    /// An error of this kind after output began: 200, the text so far, then the
    /// client dialect's error event.
    Broken(ErrorKind),
}

/// One fault: what whole and streamed calls must see, and how many requests each sends.
#[derive(Debug, Clone, Copy)]
struct Fault {
    model: &'static str,
    whole: (End, usize),
    streamed: (End, usize),
}

const fn same(model: &'static str, end: End, requests: usize) -> Fault {
    Fault {
        model,
        whole: (end, requests),
        streamed: (end, requests),
    }
}

fn faults() -> Vec<Fault> {
    use End::*;
    use ErrorKind::*;
    vec![
        same("fault-400", Refused(BadRequest), 1),
        same("fault-401", Refused(Auth), 1),
        same("fault-403", Refused(Auth), 1),
        same("fault-404", Refused(BadRequest), 1),
        same("fault-413", Refused(BadRequest), 1),
        // Three retries of the default schedule, then the error.
        same("fault-429", Refused(RateLimited), 4),
        same("fault-429-then-ok", Recovers, 2),
        // A provider asking for longer than max_wait_seconds (600 s): stop at once, as
        // the library does, rather than stall the client.
        same("fault-429-retry-3600", Refused(RateLimited), 1),
        same("fault-500", Refused(Provider), 1),
        same("fault-502", Refused(Provider), 1),
        same("fault-503", Refused(Overloaded), 1),
        same("fault-504", Refused(Provider), 1),
        same("fault-529", Refused(Overloaded), 1),
        same("quota", Refused(ProviderQuotaExhausted), 1),
        same("quota-402", Refused(ProviderQuotaExhausted), 1),
        same("context-overflow", Refused(ContextLengthExceeded), 1),
        // Successes that are not replies: asked again after 5 s and 30 s.
        same("null-body", Refused(ProviderReplyMalformed), 3),
        same("null-body-then-ok", Recovers, 2),
        same("not-json", Refused(ProviderReplyMalformed), 3),
        // A stream's missing usage or end is known only after its output.
        Fault {
            model: "no-usage",
            whole: (Refused(ProviderReplyMalformed), 3),
            streamed: (Broken(ProviderReplyMalformed), 1),
        },
        Fault {
            model: "cut-stream",
            whole: (Refused(ProviderReplyMalformed), 3),
            streamed: (Broken(ProviderReplyMalformed), 1),
        },
        Fault {
            model: "cut-stream-reset",
            whole: (Refused(Transport), 1),
            streamed: (Broken(Transport), 1),
        },
        Fault {
            model: "error-mid-stream-529",
            whole: (Refused(Overloaded), 1),
            streamed: (Broken(Overloaded), 1),
        },
        Fault {
            model: "error-mid-stream-429",
            whole: (Refused(RateLimited), 4),
            streamed: (Broken(RateLimited), 1),
        },
    ]
}

/// The faults that need the gateway's timeouts (first byte and idle, 300 ms).
fn timing_faults() -> Vec<Fault> {
    vec![Fault {
        model: "hang",
        whole: (End::Refused(ErrorKind::Timeout), 1),
        streamed: (End::Broken(ErrorKind::Timeout), 1),
    }]
}

/// One case of the matrix.
#[derive(Debug, Clone)]
struct Case {
    fault: Fault,
    client: Dialect,
    backend: Dialect,
    stream: bool,
    /// The prompt: unique per case, so its requests and record can be told apart.
    prompt: String,
}

impl Case {
    fn expected(&self) -> (End, usize) {
        if self.stream {
            self.fault.streamed
        } else {
            self.fault.whole
        }
    }

    fn passthrough(&self) -> bool {
        self.client == self.backend
    }

    fn name(&self) -> String {
        format!(
            "{} · {} client → {} backend · {}",
            self.fault.model,
            self.client,
            self.backend,
            if self.stream { "streamed" } else { "whole" }
        )
    }
}

/// An error as a client reads it: the type (`type`, or Gemini's `status`) and the code.
#[derive(Debug, Clone, PartialEq)]
struct Shown {
    kind: Option<String>,
    code: Option<String>,
}

/// The status and strings the gateway answers a `kind` of upstream failure with, in the
/// client's dialect (the table of `errors.rs`, which clients branch on).
fn gateway_answer(kind: ErrorKind, upstream_status: u16, client: Dialect) -> (u16, Shown) {
    use ErrorKind::*;
    let (status, openai, anthropic, google): (u16, (&str, Option<&str>), &str, &str) = match kind {
        ContextLengthExceeded => (
            400,
            ("invalid_request_error", Some("context_length_exceeded")),
            "invalid_request_error",
            "INVALID_ARGUMENT",
        ),
        RateLimited => (
            429,
            ("requests", Some("rate_limit_exceeded")),
            "rate_limit_error",
            "RESOURCE_EXHAUSTED",
        ),
        ProviderQuotaExhausted => (
            429,
            ("insufficient_quota", Some("insufficient_quota")),
            "billing_error",
            "RESOURCE_EXHAUSTED",
        ),
        Overloaded => (
            if client == Dialect::Messages {
                529
            } else {
                503
            },
            ("server_error", Some("server_is_overloaded")),
            "overloaded_error",
            "UNAVAILABLE",
        ),
        Timeout => (
            504,
            ("server_error", Some("timeout")),
            "timeout_error",
            "DEADLINE_EXCEEDED",
        ),
        BadRequest if upstream_status == 404 => (
            404,
            ("invalid_request_error", Some("model_not_found")),
            "not_found_error",
            "NOT_FOUND",
        ),
        BadRequest => (
            upstream_status,
            ("invalid_request_error", None),
            "invalid_request_error",
            "INVALID_ARGUMENT",
        ),
        Provider => (
            upstream_status,
            ("server_error", Some("upstream_error")),
            "api_error",
            "UNAVAILABLE",
        ),
        _ => (
            502,
            ("server_error", Some("upstream_error")),
            "api_error",
            "UNAVAILABLE",
        ),
    };
    let shown = match client {
        Dialect::Chat | Dialect::Responses => Shown {
            kind: Some(openai.0.to_string()),
            code: openai.1.map(str::to_string),
        },
        Dialect::Messages => Shown {
            kind: Some(anthropic.to_string()),
            code: None,
        },
        Dialect::Gemini => Shown {
            kind: Some(google.to_string()),
            code: None,
        },
    };
    (status, shown)
}

/// The type and code of a whole error body in `dialect`'s shape.
fn shown_in_body(dialect: Dialect, body: &[u8]) -> Option<Shown> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let error = v.get("error")?;
    let text = |v: Option<&Value>| v.and_then(Value::as_str).map(str::to_string);
    Some(match dialect {
        Dialect::Chat | Dialect::Responses => Shown {
            kind: text(error.get("type")),
            code: text(error.get("code")),
        },
        Dialect::Messages => {
            if v["type"] != "error" {
                return None;
            }
            Shown {
                kind: text(error.get("type")),
                code: None,
            }
        }
        Dialect::Gemini => Shown {
            kind: text(error.get("status")),
            code: None,
        },
    })
}

/// A stream decoded by `dialect`'s client codec: its events (the decoder's end error, if
/// any, as a last `Error`).
fn stream_events(dialect: Dialect, body: &[u8]) -> Vec<Event> {
    let mut decoder = ByteStreamDecoder::new(codec(dialect));
    let mut events = decoder.push(body).unwrap_or_default();
    if let Ok(rest) = decoder.finish() {
        events.extend(rest);
    }
    events
}

/// The error event of a stream, as its client reads it.
fn shown_in_stream(dialect: Dialect, body: &[u8]) -> Option<Shown> {
    stream_events(dialect, body)
        .into_iter()
        .find_map(|e| match e {
            Event::Error(e) => Some(Shown {
                kind: e.kind,
                code: match dialect {
                    Dialect::Chat | Dialect::Responses => e.code,
                    _ => None,
                },
            }),
            _ => None,
        })
}

/// What a case got.
struct Got {
    status: u16,
    body: Vec<u8>,
}

async fn post(http: &reqwest::Client, base: &str, case: &Case, model: &str, prompt: &str) -> Got {
    let body = client_body(case.client, model, &Request::user(prompt), case.stream);
    let r = http
        .post(format!("{base}{}", path(case.client, model, case.stream)))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    // A reset stream ends with an error on the client's side too: keep what came.
    let mut body = Vec::new();
    let mut chunks = r.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
    }
    Got { status, body }
}

/// Checks one case against what it got; every problem is named.
fn check(case: &Case, got: &Got, truth: Option<&Got>) -> Vec<String> {
    let at = case.name();
    let text = String::from_utf8_lossy(&got.body).into_owned();
    let mut problems = Vec::new();
    match case.expected().0 {
        End::Recovers => {
            if got.status != 200 {
                problems.push(format!("{at}: status {}, wanted 200: {text}", got.status));
            } else {
                let reply = if case.stream {
                    switchyard_wire::assemble(&stream_events(case.client, &got.body)).ok()
                } else {
                    codec(case.client).decode_reply(&got.body).ok()
                };
                if reply.map(|r| r.text()) != Some(case.prompt.clone()) {
                    problems.push(format!("{at}: not the echoed reply: {text}"));
                }
            }
        }
        End::Refused(kind) => {
            // A refusal the provider made with a status is passed through as it wrote
            // it, except one of the gateway's own credentials.
            let relayed = case.passthrough()
                && kind != ErrorKind::Auth
                && truth.is_some_and(|t| t.status >= 400);
            let (status, shown) = match (relayed, truth) {
                (true, Some(t)) => (t.status, shown_in_body(case.client, &t.body)),
                _ => {
                    let upstream = truth.map_or(0, |t| t.status);
                    let (s, shown) = gateway_answer(kind, upstream, case.client);
                    (s, Some(shown))
                }
            };
            if got.status != status {
                problems.push(format!(
                    "{at}: status {}, wanted {status}: {text}",
                    got.status
                ));
            }
            let seen = shown_in_body(case.client, &got.body);
            if seen.is_none() || seen != shown {
                problems.push(format!("{at}: error {seen:?}, wanted {shown:?}: {text}"));
            }
        }
        End::Broken(kind) => {
            if got.status != 200 {
                problems.push(format!("{at}: status {}, wanted 200: {text}", got.status));
            }
            let provider_event = case.passthrough()
                && matches!(case.fault.model, m if m.starts_with("error-mid-stream"));
            let wanted = match (provider_event, truth) {
                (true, Some(t)) => shown_in_stream(case.client, &t.body),
                _ => Some(gateway_answer(kind, 0, case.client).1),
            };
            let seen = shown_in_stream(case.client, &got.body);
            if seen.is_none() || seen != wanted {
                problems.push(format!(
                    "{at}: error event {seen:?}, wanted {wanted:?}: {text}"
                ));
            }
            let clean_end = match case.client {
                Dialect::Chat => Some("data: [DONE]"),
                Dialect::Messages => Some("event: message_stop"),
                Dialect::Responses => Some("event: response.completed"),
                Dialect::Gemini => None,
            };
            if let Some(end) = clean_end.filter(|end| text.lines().any(|l| l.trim() == *end)) {
                problems.push(format!("{at}: a broken stream ends with {end}: {text}"));
            }
            let events = stream_events(case.client, &got.body);
            if !events.iter().any(|e| matches!(e, Event::TextDelta { .. })) {
                problems.push(format!("{at}: the text before the error is lost: {text}"));
            }
            if !matches!(events.last(), Some(Event::Error(_))) {
                problems.push(format!("{at}: the error event is not last: {text}"));
            }
        }
    }
    problems
}

/// The record of a case: exactly one, with the right outcome.
fn check_record(case: &Case, records: &[CallRecord]) -> Vec<String> {
    let at = case.name();
    let mine: Vec<&CallRecord> = records
        .iter()
        .filter(|r| {
            r.request
                .messages
                .first()
                .and_then(|m| m.content.first())
                .and_then(|p| p.as_text())
                == Some(case.prompt.as_str())
        })
        .collect();
    if mine.len() != 1 {
        return vec![format!("{at}: {} records, wanted exactly one", mine.len())];
    }
    let record = mine[0];
    let kind = record.error.as_ref().map(|e| e.kind.clone());
    let wanted = match case.expected().0 {
        End::Recovers => None,
        End::Refused(k) | End::Broken(k) => Some(k.as_str().to_string()),
    };
    let mut problems = Vec::new();
    if kind != wanted {
        problems.push(format!("{at}: recorded as {kind:?}, wanted {wanted:?}"));
    }
    if record.client_dialect != Some(case.client) || record.dialect != Some(case.backend) {
        problems.push(format!(
            "{at}: recorded dialects {:?} → {:?}",
            record.client_dialect, record.dialect
        ));
    }
    problems
}

/// The requests of a case that reached the mock.
fn requests_of(mock: &MockServer, prompt: &str) -> usize {
    let needle = format!("\"{prompt}\"");
    mock.requests()
        .iter()
        .filter(|r| r.body_text().contains(&needle))
        .count()
}

fn cases(faults: &[Fault], first: usize) -> Vec<Case> {
    let mut out = Vec::new();
    for fault in faults {
        for client in DIALECTS {
            for backend in DIALECTS {
                for stream in [false, true] {
                    out.push(Case {
                        fault: *fault,
                        client,
                        backend,
                        stream,
                        prompt: format!("case-{}-x", first + out.len()),
                    });
                }
            }
        }
    }
    out
}

/// Runs `cases` through one gateway (recording into its own store) with `timeouts`,
/// and checks every one.
async fn run_matrix(cases: Vec<Case>, timeouts: Timeouts) -> Vec<String> {
    // Every case's requests are counted after the run: keep them all, not the last 1,000.
    let mock = MockServer::start_with(MockConfig {
        keep_requests: usize::MAX,
        ..MockConfig::default()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        store: Some(dir.path().to_path_buf()),
        timeouts,
        ..GatewayConfig::default()
    };
    let sleeper = Arc::new(RecordingSleeper::new());
    let gateway = gateway_waiting(&mock.base_url(), config, MapEnv::default(), &[], sleeper);
    let running = start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let base = running.url();
    let http = reqwest::Client::new();
    let runs = cases.iter().map(|case| {
        let (http, base, mock_url) = (http.clone(), base.clone(), mock.url());
        let case = case.clone();
        async move {
            let model = format!("up-{}/{}", case.backend, case.fault.model);
            let got = post(&http, &base, &case, &model, &case.prompt).await;
            // What the provider itself answers in the backend's dialect: the status a
            // translation reports, and for a pass-through what it must relay as it is.
            let truth = if !matches!(case.expected().0, End::Recovers) && case.fault.model != "hang"
            {
                let prompt = case.prompt.replace("case", "truth");
                let direct = Case {
                    client: case.backend,
                    ..case.clone()
                };
                Some(post(&http, &mock_url, &direct, case.fault.model, &prompt).await)
            } else {
                None
            };
            (got, truth)
        }
    });
    let results = futures::future::join_all(runs).await;
    running.shutdown().await.unwrap();
    let records = read_records(dir.path()).unwrap();
    let mut problems = Vec::new();
    for (case, (got, truth)) in cases.iter().zip(&results) {
        problems.extend(check(case, got, truth.as_ref()));
        problems.extend(check_record(case, &records));
        let (end, wanted) = case.expected();
        let sent = requests_of(&mock, &case.prompt);
        // A timeout may fire before a loaded machine lets the mock read the request.
        let ok = if matches!(
            end,
            End::Refused(ErrorKind::Timeout) | End::Broken(ErrorKind::Timeout)
        ) {
            sent <= wanted
        } else {
            sent == wanted
        };
        if !ok {
            problems.push(format!(
                "{}: {sent} requests reached the provider, wanted {wanted}",
                case.name()
            ));
        }
    }
    problems
}

fn report(problems: &[String], count: usize) {
    assert!(
        problems.is_empty(),
        "{} problems in {count} cases:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_through_every_client_and_backend_dialect() {
    let started = std::time::Instant::now();
    let cases = cases(&faults(), 0);
    let count = cases.len();
    let problems = run_matrix(cases, switchyard_gateway::config::GATEWAY_TIMEOUTS).await;
    report(&problems, count);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "no wait is real: {:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_upstream_times_out_on_every_path() {
    let cases = cases(&timing_faults(), 10_000);
    let count = cases.len();
    let timeouts = Timeouts {
        first_byte: Some(Duration::from_millis(300)),
        idle: Some(Duration::from_millis(300)),
        ..switchyard_gateway::config::GATEWAY_TIMEOUTS
    };
    let problems = run_matrix(cases, timeouts).await;
    report(&problems, count);
}
