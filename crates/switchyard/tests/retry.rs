//! The retry loop against the mock: what is waited, what is re-sent, what is recorded.

mod common;

use common::{default_timeouts, handle};
use std::time::Duration;
use switchyard::{Dialect, ErrorKind, Request};
use switchyard_mock::MockServer;

#[tokio::test]
async fn rate_limit_then_ok_waits_the_first_step_and_records_both_attempts() {
    let mock = MockServer::start().await;
    let (llm, sleeper) = handle(
        &mock,
        Dialect::Chat,
        "fault-429-then-ok",
        default_timeouts(),
    );
    let outcome = llm.complete_detailed(Request::user("hello")).await;
    let reply = outcome.result.as_ref().expect("the second attempt answers");
    assert_eq!(reply.text(), "hello");
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(sleeper.waits(), vec![Duration::from_secs(30)]);
    let a = &outcome.attempts;
    assert_eq!(a.len(), 2);
    assert_eq!(a[0].number, 1);
    assert_eq!(a[0].status, Some(429));
    assert_eq!(a[0].error_kind, Some(ErrorKind::RateLimited));
    assert!(a[0].error.as_deref().unwrap_or("").contains("HTTP 429"));
    assert_eq!(a[0].wait_before, Duration::ZERO);
    assert_eq!(a[1].number, 2);
    assert_eq!(a[1].wait_before, Duration::from_secs(30));
    assert!(a[1].succeeded());
    assert_eq!(outcome.waited(), Duration::from_secs(30));
}

#[tokio::test]
async fn cancelling_ends_a_wait_with_cancelled() {
    let mock = MockServer::start().await;
    let (llm, _) = handle(&mock, Dialect::Chat, "fault-429", default_timeouts());
    // A real sleeper: the wait is 30 s, the cancel comes after 50 ms.
    let llm = llm.with_sleeper(std::sync::Arc::new(switchyard::TokioSleeper));
    let token = llm.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    });
    let started = std::time::Instant::now();
    let outcome = llm.complete_detailed(Request::user("hello")).await;
    assert!(started.elapsed() < Duration::from_secs(5));
    let error = outcome.result.expect_err("cancelled");
    assert_eq!(error.kind(), ErrorKind::Cancelled);
    assert!(
        error
            .to_string()
            .contains("cancelled while waiting 30 s before attempt 2 (rate_limited)"),
        "{error}"
    );
    assert_eq!(outcome.attempts.len(), 1);
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn the_final_errors_count_attempts_and_waiting() {
    let mock = MockServer::start().await;
    let (llm, _) = handle(&mock, Dialect::Gemini, "fault-429", default_timeouts());
    let error = llm.complete(Request::user("hi")).await.expect_err("429s");
    match &error {
        switchyard::Error::RateLimited {
            attempts,
            waited,
            last,
        } => {
            assert_eq!(*attempts, 4);
            assert_eq!(*waited, Duration::from_secs(210));
            assert_eq!(last.kind.as_deref(), Some("RESOURCE_EXHAUSTED"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        error.to_string().starts_with(
            "rate limited after 4 attempts and 3 min 30 s waiting: mock answered HTTP 429"
        ),
        "{error}"
    );

    let (llm, _) = handle(&mock, Dialect::Chat, "null-body-blank", default_timeouts());
    let error = llm.complete(Request::user("hi")).await.expect_err("null");
    assert!(
        error
            .to_string()
            .starts_with("mock sent a malformed reply 3 times:"),
        "{error}"
    );
}
