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
