//! Budgets that hold: a key's calls reserve their most possible cost before they are
//! sent, so concurrency cannot walk past the budget; a model without a price is refused
//! under a dollar budget; a client that leaves a stream early is billed for what it was
//! sent; a key's calls in flight can be capped; refusals are traced, not recorded.

mod common;

use common::recording::{
    call, gateway, gateway_pricing, key, records, send, ALICE, BOB, FLUSH_BOUND,
};
use common::{client_body, path};
use futures::StreamExt;
use serde_json::Value;
use std::time::{Duration, Instant};
use switchyard::record::{read_records, CallRecord};
use switchyard_gateway::{BudgetPeriod, KeySpec};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

/// A prompt that states its output limit: the bound its reservation is held to.
fn limited(text: &str) -> Request {
    Request::user(text).with_max_tokens(16)
}

fn spent(records: &[CallRecord]) -> f64 {
    records.iter().filter_map(|r| r.cost_usd).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_past_its_budget_is_refused_traced_and_stays_refused_after_a_restart() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let keys = || {
        vec![
            key("alice", "ALICE_KEY", Some((0.001, BudgetPeriod::Day))),
            key("bob", "BOB_KEY", Some((1.0, BudgetPeriod::Month))),
        ]
    };
    let gw = gateway(&mock, dir.path(), keys()).await;
    let mut made = 0;
    let refusal = loop {
        let (s, h, body) = send(
            &gw,
            ALICE,
            Dialect::Chat,
            "mock/echo",
            &limited("spend"),
            false,
        )
        .await;
        if s != 200 {
            break (s, h, body);
        }
        made += 1;
        assert!(made < 500, "the budget never refused");
    };
    assert!(made >= 10, "refused too early: after {made} calls");
    let (status, headers, body) = refusal;
    assert_eq!(status, 429);
    assert_eq!(headers["x-should-retry"], "false");
    assert!(headers.contains_key("retry-after"));
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], "insufficient_quota");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "budget exceeded for key `alice`: its budget is $0.001 per day (UTC), and $0.000"
        ),
        "{message}"
    );
    assert!(
        message.contains("this call could cost up to $")
            && message.contains("16 output tokens, its output limit"),
        "{message}"
    );
    // In the Anthropic shape for an Anthropic client (a call that could cost more than
    // the whole budget).
    let dear = Request::user("x").with_max_tokens(1_000_000);
    let (s, _, body) = send(&gw, ALICE, Dialect::Messages, "mock/echo", &dear, false).await;
    assert_eq!(s, 429);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "billing_error");
    // Another key is not touched.
    let (s, _, _) = send(&gw, BOB, Dialect::Chat, "mock/echo", &limited("x"), false).await;
    assert_eq!(s, 200);
    gw.shutdown().await.unwrap();
    let upstream_calls = mock.received() as usize;
    assert_eq!(
        upstream_calls,
        made + 1,
        "refused calls never went upstream"
    );
    let before_restart = read_records(dir.path()).unwrap();
    let alice_spent = spent(
        &before_restart
            .iter()
            .filter(|r| r.client_key.as_deref() == Some("alice"))
            .cloned()
            .collect::<Vec<_>>(),
    );
    assert!(alice_spent <= 0.001, "spent {alice_spent}");

    // A new gateway on the same data directory reads the spend back.
    let gw = gateway(&mock, dir.path(), keys()).await;
    let (s, _, body) = send(
        &gw,
        ALICE,
        Dialect::Chat,
        "mock/echo",
        &limited("spend"),
        false,
    )
    .await;
    assert_eq!(s, 429, "{}", String::from_utf8_lossy(&body));
    let (s, _, _) = send(&gw, BOB, Dialect::Chat, "mock/echo", &limited("x"), false).await;
    assert_eq!(s, 200);
    gw.shutdown().await.unwrap();
    assert_eq!(mock.received() as usize, upstream_calls + 1);
    // Refusals are traced (sampled, bounded), not recorded as calls.
    let all = read_records(dir.path()).unwrap();
    assert_eq!(
        all.len(),
        made + 2,
        "one record per call made, none per refusal"
    );
    assert!(all.iter().all(|r| r.error.is_none()));
    let trace = std::fs::read_to_string(dir.path().join("refused.jsonl")).unwrap();
    let lines: Vec<Value> = trace
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{trace}");
    assert!(lines
        .iter()
        .all(|l| l["key"] == "alice" && l["reason"] == "gateway:Quota" && l["status"] == 429));
}

/// The measurement: 1,000 calls at once on a small budget. Before, they spent
/// 180 times the budget; now the total stays within it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_never_spend_past_a_small_budget() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let budget = 0.002;
    let gw = gateway(
        &mock,
        dir.path(),
        vec![key(
            "alice",
            "ALICE_KEY",
            Some((budget, BudgetPeriod::Total)),
        )],
    )
    .await;
    let client = reqwest::Client::new();
    let calls = (0..1000).map(|i| {
        let stream = i % 2 == 0;
        let body = client_body(
            Dialect::Chat,
            "mock/echo",
            &limited("concurrent spending"),
            stream,
        );
        let r = client
            .post(format!(
                "{}{}",
                gw.url(),
                path(Dialect::Chat, "mock/echo", stream)
            ))
            .header("authorization", format!("Bearer {ALICE}"))
            .header("content-type", "application/json")
            .body(body)
            .send();
        async move {
            let r = r.await.unwrap();
            let status = r.status().as_u16();
            let _ = r.bytes().await;
            status
        }
    });
    let statuses = futures::future::join_all(calls).await;
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let refused = statuses.iter().filter(|s| **s == 429).count();
    assert_eq!(ok + refused, 1000, "{statuses:?}");
    assert!(ok >= 1 && refused >= 1, "{ok} made, {refused} refused");
    gw.shutdown().await.unwrap();
    let all = read_records(dir.path()).unwrap();
    assert_eq!(all.len(), ok);
    let total = spent(&all);
    assert!(total > 0.0 && total <= budget, "spent {total} of {budget}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_without_a_price_is_refused_under_a_dollar_budget_unless_the_key_allows_it() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let allowing = KeySpec {
        unknown_cost_allowed: true,
        ..key("bob", "BOB_KEY", Some((1.0, BudgetPeriod::Day)))
    };
    let gw = gateway(
        &mock,
        dir.path(),
        vec![
            key("alice", "ALICE_KEY", Some((1.0, BudgetPeriod::Day))),
            allowing,
        ],
    )
    .await;
    let (s, headers, body) = call(&gw, ALICE, Dialect::Chat, "mock/say:free!", "x", false).await;
    assert_eq!(s, 429);
    assert_eq!(headers["x-should-retry"], "false");
    let v: Value = serde_json::from_slice(&body).unwrap();
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("model `mock/say:free!` has no price")
            && message.contains("key `alice`'s budget of $1 per day (UTC)")
            && message.contains("unknown_cost: allow"),
        "{message}"
    );
    assert!(mock.requests().is_empty(), "nothing went upstream");
    let (s, _, _) = call(&gw, BOB, Dialect::Chat, "mock/say:free!", "x", false).await;
    assert_eq!(s, 200);
    gw.shutdown().await.unwrap();
}

/// A client that reads part of a stream and leaves: before, the call cost $0 and a
/// budgeted key could spend without limit by closing early.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_a_stream_is_billed_for_what_it_was_sent() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let model = "lorem-400+chunk-8+delay-5ms";
    let gw = gateway_pricing(
        &mock,
        dir.path(),
        vec![key("alice", "ALICE_KEY", Some((5.0, BudgetPeriod::Day)))],
        &[model],
    )
    .await;
    // Pass-through (chat to the mock's chat) and translation (chat to a Messages-only
    // backend).
    for reference in [format!("mock/{model}"), format!("up-messages/{model}")] {
        let body = client_body(Dialect::Chat, &reference, &Request::user("go on"), true);
        let r = reqwest::Client::new()
            .post(format!("{}/v1/chat/completions", gw.url()))
            .header("authorization", format!("Bearer {ALICE}"))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let mut chunks = r.bytes_stream();
        let mut got = 0;
        while got < 6000 {
            got += chunks.next().await.unwrap().unwrap().len();
        }
        drop(chunks);
    }
    let started = Instant::now();
    let cut = loop {
        let all = read_records(dir.path()).unwrap_or_default();
        if all.len() >= 2 {
            break all;
        }
        assert!(started.elapsed() < FLUSH_BOUND, "not recorded");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for r in &cut {
        let at = format!("{} ({:?})", r.reference, r.client_dialect);
        assert_eq!(
            r.error.as_ref().map(|e| e.kind.as_str()),
            Some("client_disconnected"),
            "{at}"
        );
        let usage = r.usage.expect("billed usage");
        assert!(usage.input > 0 && usage.output > 20, "{at}: {usage:?}");
        assert!(
            r.cost_usd.is_some_and(|c| c > 0.0),
            "{at}: {:?}",
            r.cost_usd
        );
        let how = r.usage_estimated.as_deref().unwrap_or_default();
        assert!(
            how.contains("bytes of output relayed before the client left"),
            "{at}: {how}"
        );
    }
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_is_held_to_its_calls_in_flight() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let capped = KeySpec {
        max_in_flight: Some(2),
        ..key("alice", "ALICE_KEY", None)
    };
    let gw = gateway(&mock, dir.path(), vec![capped]).await;
    let slow = "mock/slow-first-byte-400ms+echo";
    let calls = (0..3).map(|i| {
        let gw = &gw;
        async move {
            // The third starts once the first two are surely in flight.
            tokio::time::sleep(Duration::from_millis(if i == 2 { 150 } else { 0 })).await;
            call(gw, ALICE, Dialect::Messages, slow, "x", false).await
        }
    });
    let answers = futures::future::join_all(calls).await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.0).collect();
    assert_eq!(statuses, [200, 200, 429], "{answers:?}");
    let v: Value = serde_json::from_slice(&answers[2].2).unwrap();
    assert_eq!(v["error"]["type"], "rate_limit_error");
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("2 calls in flight, its max_in_flight"));
    // Once they end, the key may call again.
    let (s, _, _) = call(&gw, ALICE, Dialect::Chat, "mock/echo", "x", false).await;
    assert_eq!(s, 200);
    gw.shutdown().await.unwrap();
    let _ = records;
}
