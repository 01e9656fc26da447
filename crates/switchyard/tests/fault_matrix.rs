//! Every fault the mock injects × every dialect it applies to × whole and streamed calls:
//! the error kind or the recovery, how many requests reached the mock, the waits the
//! retry loop asked for (recorded, never slept), and what a stream kept.
//!
//! The default policy throughout (rate limited 30 s, 60 s, 120 s; malformed 5 s, 30 s;
//! nothing else retried) unless a row sets its own.

mod common;

use common::{default_timeouts, handle, DIALECTS};
use futures::StreamExt;
use std::time::Duration;
use switchyard::backend::http::Timeouts;
use switchyard::{Dialect, ErrorKind, Request, RetryPolicy};
use switchyard_mock::MockServer;

/// What a call must end with.
#[derive(Debug, Clone, Copy, PartialEq)]
enum End {
    /// The reply, its text the prompt echoed.
    Recovers,
    /// This kind of error.
    Fails(ErrorKind),
}

/// One row: a mock model, the dialects it applies to, and what whole and streamed calls
/// must see.
#[derive(Clone)]
struct Row {
    model: &'static str,
    dialects: &'static [Dialect],
    whole: Want,
    streamed: Want,
    policy: fn() -> RetryPolicy,
    timeouts: Timeouts,
}

/// The expectation of one call.
#[derive(Debug, Clone, Copy)]
struct Want {
    end: End,
    /// Requests that reached the mock.
    requests: usize,
    /// Waits asked for, in seconds.
    waits: &'static [f64],
    /// A streamed call kept some text before its error.
    partial: bool,
}

const fn ok(requests: usize, waits: &'static [f64]) -> Want {
    Want {
        end: End::Recovers,
        requests,
        waits,
        partial: false,
    }
}

const fn fails(kind: ErrorKind, requests: usize, waits: &'static [f64]) -> Want {
    Want {
        end: End::Fails(kind),
        requests,
        waits,
        partial: false,
    }
}

/// Fails after output began: one request, the text so far kept.
const fn fails_after_output(kind: ErrorKind) -> Want {
    Want {
        end: End::Fails(kind),
        requests: 1,
        waits: &[],
        partial: true,
    }
}

const ALL: &[Dialect] = &DIALECTS;
const RATE_WAITS: &[f64] = &[30.0, 60.0, 120.0];
const MALFORMED_WAITS: &[f64] = &[5.0, 30.0];

fn default_policy() -> RetryPolicy {
    RetryPolicy::default()
}

fn retry_overload_and_5xx() -> RetryPolicy {
    RetryPolicy {
        overloaded: vec![Duration::from_secs(2)],
        server_error: vec![Duration::from_secs(3)],
        ..RetryPolicy::default()
    }
}

fn timeouts(first_byte: Option<u64>, idle: Option<u64>, total: Option<u64>) -> Timeouts {
    Timeouts {
        first_byte: first_byte.map(Duration::from_millis),
        idle: idle.map(Duration::from_millis),
        total: total.map(Duration::from_millis),
        ..default_timeouts()
    }
}

/// The same expectation for whole and streamed calls.
fn row(model: &'static str, dialects: &'static [Dialect], want: Want) -> Row {
    Row {
        model,
        dialects,
        whole: want,
        streamed: want,
        policy: default_policy,
        timeouts: default_timeouts(),
    }
}

fn rows() -> Vec<Row> {
    use ErrorKind::*;
    let mut rows = vec![
        // Refusals that are never retried.
        row("fault-400", ALL, fails(BadRequest, 1, &[])),
        row("fault-401", ALL, fails(Auth, 1, &[])),
        row("fault-403", ALL, fails(Auth, 1, &[])),
        row("fault-404", ALL, fails(BadRequest, 1, &[])),
        row("fault-413", ALL, fails(BadRequest, 1, &[])),
        row("quota", ALL, fails(ProviderQuotaExhausted, 1, &[])),
        row("quota-402", ALL, fails(ProviderQuotaExhausted, 1, &[])),
        row(
            "quota-spend-limit",
            ALL,
            fails(ProviderQuotaExhausted, 1, &[]),
        ),
        row("quota-credit", ALL, fails(ProviderQuotaExhausted, 1, &[])),
        row(
            "context-overflow",
            ALL,
            fails(ContextLengthExceeded, 1, &[]),
        ),
        row(
            "context-overflow-max-tokens",
            ALL,
            fails(ContextLengthExceeded, 1, &[]),
        ),
        row(
            "context-overflow-vllm",
            ALL,
            fails(ContextLengthExceeded, 1, &[]),
        ),
        // Rate limits: the schedule, longer waits honoured, too long a wait refused.
        row("fault-429", ALL, fails(RateLimited, 4, RATE_WAITS)),
        row("fault-429-then-ok", ALL, ok(2, &[30.0])),
        row("fault-429-2-then-ok", ALL, ok(3, &[30.0, 60.0])),
        row("fault-429-3-then-ok", ALL, ok(4, RATE_WAITS)),
        row(
            "fault-429-4-then-ok",
            ALL,
            fails(RateLimited, 4, RATE_WAITS),
        ),
        row(
            "fault-429-retry-45",
            ALL,
            fails(RateLimited, 4, &[45.0, 60.0, 120.0]),
        ),
        row("fault-429-retry-ms-90500-then-ok", ALL, ok(2, &[90.5])),
        row("fault-429-retry-5-then-ok", ALL, ok(2, &[30.0])),
        // More than max_wait_seconds (600): stop at once rather than stall.
        row("fault-429-retry-3600", ALL, fails(RateLimited, 1, &[])),
        // Server trouble: raised at once by default…
        row("fault-500", ALL, fails(Provider, 1, &[])),
        row("fault-503", ALL, fails(Overloaded, 1, &[])),
        row("fault-529", ALL, fails(Overloaded, 1, &[])),
        row("fault-529-then-ok", ALL, fails(Overloaded, 1, &[])),
        // Malformed successes: asked again after 5 s and 30 s.
        row(
            "null-body",
            ALL,
            fails(ProviderReplyMalformed, 3, MALFORMED_WAITS),
        ),
        row(
            "null-body-blank",
            ALL,
            fails(ProviderReplyMalformed, 3, MALFORMED_WAITS),
        ),
        row("null-body-then-ok", ALL, ok(2, &[5.0])),
        row(
            "not-json",
            ALL,
            fails(ProviderReplyMalformed, 3, MALFORMED_WAITS),
        ),
        row(
            "no-text",
            ALL,
            fails(ProviderReplyMalformed, 3, MALFORMED_WAITS),
        ),
        row("no-text-2-then-ok", ALL, ok(3, MALFORMED_WAITS)),
        // A stream without usage is only known at its end, after output: not re-sent.
        Row {
            streamed: fails_after_output(ProviderReplyMalformed),
            ..row(
                "no-usage",
                ALL,
                fails(ProviderReplyMalformed, 3, MALFORMED_WAITS),
            )
        },
        // A body cut in half is malformed and asked again; a stream cut after output
        // ends with the error and keeps its text.
        Row {
            streamed: fails_after_output(ProviderReplyMalformed),
            ..row(
                "cut-stream",
                ALL,
                fails(ProviderReplyMalformed, 3, MALFORMED_WAITS),
            )
        },
        // A connection that breaks is a transport failure, not retried by default.
        Row {
            streamed: fails_after_output(Transport),
            ..row("cut-stream-reset", ALL, fails(Transport, 1, &[]))
        },
        Row {
            streamed: fails_after_output(Overloaded),
            ..row("error-mid-stream-529", ALL, fails(Overloaded, 1, &[]))
        },
        Row {
            streamed: fails_after_output(Provider),
            ..row("error-mid-stream-500", ALL, fails(Provider, 1, &[]))
        },
        Row {
            streamed: fails_after_output(RateLimited),
            ..row(
                "error-mid-stream-429",
                ALL,
                fails(RateLimited, 4, RATE_WAITS),
            )
        },
    ];
    // …and retried when the policy gives them a schedule.
    for (model, waits) in [
        ("fault-503-then-ok", &[2.0][..]),
        ("fault-529-then-ok", &[2.0][..]),
        ("fault-500-then-ok", &[3.0][..]),
        ("fault-502-then-ok", &[3.0][..]),
    ] {
        rows.push(Row {
            policy: retry_overload_and_5xx,
            ..row(model, ALL, ok(2, waits))
        });
    }
    rows.push(Row {
        policy: retry_overload_and_5xx,
        ..row("fault-529-2-then-ok", ALL, fails(Overloaded, 2, &[2.0]))
    });
    rows
}

/// Timeouts, with waits of a few hundred milliseconds: four at a time, so that a loaded
/// machine does not blur them.
fn timing_rows() -> Vec<Row> {
    use ErrorKind::*;
    vec![
        Row {
            timeouts: timeouts(Some(100), None, None),
            ..row("slow-first-byte-500ms+echo", ALL, fails(Timeout, 1, &[]))
        },
        // The total covers the wait for the headers.
        Row {
            timeouts: timeouts(None, None, Some(150)),
            ..row("slow-first-byte-500ms+echo", ALL, fails(Timeout, 1, &[]))
        },
        Row {
            timeouts: timeouts(Some(2000), None, None),
            ..row("slow-first-byte-100ms+echo", ALL, ok(1, &[]))
        },
        // A body that never comes: the total; a stream that falls silent after its first
        // output: the idle wait, and the text so far is kept.
        Row {
            timeouts: timeouts(None, Some(100), Some(200)),
            streamed: fails_after_output(Timeout),
            ..row("hang", ALL, fails(Timeout, 1, &[]))
        },
        // A stream that keeps talking but too long: the total, mid-stream.
        Row {
            timeouts: timeouts(None, Some(2000), Some(200)),
            whole: fails(Timeout, 1, &[]),
            streamed: fails_after_output(Timeout),
            ..row("lorem-200+chunk-4+delay-10ms", ALL, ok(1, &[]))
        },
        // Timeouts retried when the policy says so.
        Row {
            timeouts: timeouts(Some(100), None, None),
            policy: || RetryPolicy {
                timeout: vec![Duration::from_secs(1)],
                ..RetryPolicy::default()
            },
            ..row(
                "slow-first-byte-500ms+echo",
                &[Dialect::Chat],
                fails(Timeout, 2, &[1.0]),
            )
        },
    ]
}

/// What one call gave.
#[derive(Debug)]
struct Seen {
    end: Result<String, (ErrorKind, String)>,
    requests: usize,
    waits: Vec<Duration>,
    partial: String,
}

async fn run(row: &Row, dialect: Dialect, streamed: bool) -> Seen {
    let mock = MockServer::start().await;
    let (llm, sleeper) = handle(&mock, dialect, row.model, row.timeouts);
    let llm = llm.with_retry((row.policy)());
    let request = Request::user("the prompt");
    let mut partial = String::new();
    let end = if streamed {
        match llm.stream(request).await {
            Ok(mut stream) => {
                let mut error = None;
                while let Some(item) = stream.next().await {
                    if let Err(e) = item {
                        error = Some(e);
                        break;
                    }
                }
                partial = stream.reply().text();
                match error {
                    Some(e) => Err(e),
                    None => Ok(stream.reply().text()),
                }
            }
            Err(e) => Err(e),
        }
    } else {
        llm.complete(request).await.map(|r| r.text())
    };
    Seen {
        end: end.map_err(|e| (e.kind(), e.to_string())),
        requests: mock.requests().len(),
        waits: sleeper.waits(),
        partial,
    }
}

fn check(row: &Row, dialect: Dialect, streamed: bool, seen: &Seen) -> Vec<String> {
    let want = if streamed { row.streamed } else { row.whole };
    let mode = if streamed { "streamed" } else { "whole" };
    let at = format!("{} · {dialect} · {mode}", row.model);
    let mut problems = Vec::new();
    match (&want.end, &seen.end) {
        (End::Recovers, Ok(text)) if text == "the prompt" => {}
        (End::Fails(kind), Err((got, _))) if kind == got => {}
        (want_end, got) => problems.push(format!("{at}: wanted {want_end:?}, got {got:?}")),
    }
    if seen.requests != want.requests {
        problems.push(format!(
            "{at}: wanted {} requests, the mock received {}",
            want.requests, seen.requests
        ));
    }
    let waits: Vec<Duration> = want
        .waits
        .iter()
        .map(|s| Duration::from_secs_f64(*s))
        .collect();
    if seen.waits != waits {
        problems.push(format!(
            "{at}: wanted waits {waits:?}, asked {:?}",
            seen.waits
        ));
    }
    if streamed && want.partial && seen.partial.is_empty() {
        problems.push(format!("{at}: the text before the error was not kept"));
    }
    problems
}

fn cases(rows: Vec<Row>) -> Vec<(Row, Dialect, bool)> {
    let mut cases = Vec::new();
    for row in rows {
        for &dialect in row.dialects {
            for streamed in [false, true] {
                cases.push((row.clone(), dialect, streamed));
            }
        }
    }
    cases
}

async fn run_case(row: Row, dialect: Dialect, streamed: bool) -> Vec<String> {
    let seen = tokio::time::timeout(Duration::from_secs(10), run(&row, dialect, streamed)).await;
    match seen {
        Ok(seen) => check(&row, dialect, streamed, &seen),
        Err(_) => vec![format!(
            "{} · {dialect} · streamed {streamed}: no answer within 10 s",
            row.model
        )],
    }
}

#[tokio::test]
async fn timeouts_in_every_dialect() {
    let cases = cases(timing_rows());
    let count = cases.len();
    let problems: Vec<String> = futures::stream::iter(cases)
        .map(|(row, dialect, streamed)| run_case(row, dialect, streamed))
        .buffer_unordered(4)
        .concat()
        .await;
    assert!(
        problems.is_empty(),
        "{} of {count} cases wrong:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_in_every_dialect() {
    let started = std::time::Instant::now();
    let cases = cases(rows());
    let count = cases.len();
    let results = futures::future::join_all(
        cases
            .into_iter()
            .map(|(row, dialect, streamed)| tokio::spawn(run_case(row, dialect, streamed))),
    )
    .await;
    let problems: Vec<String> = results
        .into_iter()
        .flat_map(|r| r.unwrap_or_else(|e| vec![format!("a case panicked: {e}")]))
        .collect();
    assert!(
        problems.is_empty(),
        "{} of {count} cases wrong:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The whole matrix runs in a few seconds: no wait is real.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}
