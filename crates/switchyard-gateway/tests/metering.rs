//! Metering into the store: every call through the gateway becomes a record (the
//! recording issue's, plus the client key's name and dialect) in the data directory,
//! priced, and counted against its key's budget — which a restarted gateway reads back.

mod common;

use common::{client_body, decode, gateway_for, path};
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, Instant};
use switchyard::env::MapEnv;
use switchyard::record::{read_records, CallRecord, INDEX_FILE};
use switchyard_gateway::{start, BudgetPeriod, GatewayConfig, KeySecret, KeySpec, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

const ALICE: &str = "sk-alice-0123456789-secret";
const BOB: &str = "sk-bob-9876543210-secret";
const UPSTREAM: &str = "sk-upstream-abcdef-secret";

/// How long a finished call may take to reach the disk: the gateway's documented bound
/// (the store thread, then the recorder's writer; in practice a few milliseconds).
const FLUSH_BOUND: Duration = Duration::from_secs(2);

fn key(name: &str, var: &str, budget: Option<(f64, BudgetPeriod)>) -> KeySpec {
    KeySpec {
        name: name.into(),
        secret: KeySecret::Env(var.into()),
        models: Vec::new(),
        budget_usd: budget.map(|b| b.0),
        budget_period: budget.map(|b| b.1),
        rpm: None,
        tpm: None,
    }
}

fn env() -> MapEnv {
    MapEnv::new([
        ("ALICE_KEY", ALICE),
        ("BOB_KEY", BOB),
        ("UPSTREAM_KEY", UPSTREAM),
    ])
}

/// A gateway recording into `dir`, its upstreams needing `UPSTREAM_KEY`.
async fn gateway(mock: &MockServer, dir: &Path, keys: Vec<KeySpec>) -> RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys,
        store: Some(dir.to_path_buf()),
        ..GatewayConfig::default()
    };
    // `echo` priced as the built-in `mock-small` is ($1 and $2 per million tokens).
    let mut extra = vec![
        "backends.mock.api_key_env=UPSTREAM_KEY".to_string(),
        "backends.mock.prices.echo={input: 1, output: 2}".to_string(),
    ];
    for d in common::DIALECTS {
        extra.push(format!("backends.up-{d}.api_key_env=UPSTREAM_KEY"));
        extra.push(format!(
            "backends.up-{d}.prices.echo={{input: 1, output: 2}}"
        ));
    }
    let g = gateway_for(&mock.base_url(), config, env(), &extra);
    assert_eq!(g.store_dir(), Some(dir));
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

async fn call(
    gw: &RunningGateway,
    key: &str,
    client: Dialect,
    model: &str,
    text: &str,
    stream: bool,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let body = client_body(client, model, &Request::user(text), stream);
    let r = reqwest::Client::new()
        .post(format!("{}{}", gw.url(), path(client, model, stream)))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {key}"))
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    (status, headers, r.bytes().await.unwrap().to_vec())
}

/// Waits (at most [`FLUSH_BOUND`]) until `dir` holds `n` records; gives them and the
/// time it took.
async fn records(dir: &Path, n: usize) -> (Vec<CallRecord>, Duration) {
    let start = Instant::now();
    loop {
        let got = read_records(dir).unwrap_or_default();
        if got.len() >= n {
            return (got, start.elapsed());
        }
        assert!(
            start.elapsed() < FLUSH_BOUND,
            "{} records after {FLUSH_BOUND:?}, expected {n}",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// Cost at the test's price for `echo`: $1 per million input tokens, $2 per million output.
fn small_cost(r: &CallRecord) -> f64 {
    let u = r.usage.expect("usage recorded");
    (u.input as f64 + 2.0 * u.output as f64) / 1e6
}

fn index_rows(dir: &Path) -> Vec<(i64, Option<String>, Option<f64>, String)> {
    let conn = rusqlite::Connection::open(dir.join(INDEX_FILE)).unwrap();
    let mut stmt = conn
        .prepare("SELECT number, client_key, cost_usd, status FROM llm_calls ORDER BY number")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_path_is_recorded_with_the_key_name_bodies_and_cost_and_no_secret() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(
        &mock,
        dir.path(),
        vec![key("alice", "ALICE_KEY", None), key("bob", "BOB_KEY", None)],
    )
    .await;
    // (client, model, stream, pass-through?)
    let cases = [
        (Dialect::Chat, "up-chat/echo", false, true),
        (Dialect::Chat, "up-chat/echo", true, true),
        (Dialect::Messages, "up-messages/echo", true, true),
        (Dialect::Chat, "up-messages/echo", false, false),
        (Dialect::Chat, "up-messages/echo", true, false),
        (Dialect::Responses, "up-chat/echo", true, false),
    ];
    for (i, (client, model, stream, passthrough)) in cases.into_iter().enumerate() {
        let who = if i % 2 == 0 { ALICE } else { BOB };
        let text = format!("call number {i}");
        let (status, _, body) = call(&gw, who, client, model, &text, stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let got = decode(client, &body, stream);
        // The record is there right after the client's last byte (within the bound).
        let (all, waited) = records(dir.path(), i + 1).await;
        assert!(waited < FLUSH_BOUND);
        let r = all.last().unwrap();
        let what = format!("{client} → {model} stream {stream}");
        assert_eq!(
            r.client_key.as_deref(),
            Some(["alice", "bob"][i % 2]),
            "{what}"
        );
        assert_eq!(r.client_dialect, Some(client), "{what}");
        let upstream = common::upstream_dialect_of(&mock.requests().last().unwrap().path);
        assert_eq!(r.dialect, Some(upstream), "{what}");
        assert_eq!(passthrough, upstream == client, "{what}");
        assert_eq!(r.backend, model.split('/').next().unwrap());
        assert_eq!(r.model, "echo");
        assert_eq!(r.stream, stream);
        // The body as it reached the upstream, byte for byte.
        let sent = mock.requests().last().unwrap().body.clone();
        assert_eq!(
            r.body.as_ref().map(|b| b.get().as_bytes()),
            Some(&sent[..]),
            "{what}"
        );
        // The raw reply and the canonical one decoded from it.
        let raw = r.raw_bytes().unwrap();
        assert!(!raw.is_empty(), "{what}");
        if passthrough && !stream {
            assert_eq!(&raw[..], &body[..], "{what}: the bytes that went through");
        }
        let reply = r.reply.as_ref().expect("reply recorded");
        assert_eq!(reply.text(), got.text(), "{what}");
        assert!(reply.text().contains(&text), "{what}: {}", reply.text());
        assert!(r.request.messages.len() == 1, "{what}");
        assert!(r.error.is_none(), "{what}: {:?}", r.error);
        assert_eq!(r.attempts.len(), 1);
        assert_eq!(
            r.attempts[0].status, None,
            "a status is kept for refusals only"
        );
        assert_eq!(r.attempts[0].error_kind, None);
        let cost = r.cost_usd.expect("echo has a price");
        assert!((cost - small_cost(r)).abs() < 1e-12 && cost > 0.0, "{what}");
        assert!(r.timings.duration_ms > 0.0);
        if stream {
            assert!(r.timings.first_byte_ms.is_some(), "{what}");
        }
    }
    // An unpriced model's cost stays unknown; a failure is recorded with its error.
    let (s, _, _) = call(&gw, ALICE, Dialect::Chat, "up-chat/lorem-5", "x", false).await;
    assert_eq!(s, 200);
    let (s, _, _) = call(
        &gw,
        ALICE,
        Dialect::Messages,
        "up-messages/fault-400",
        "x",
        false,
    )
    .await;
    assert_eq!(s, 400);
    let (all, _) = records(dir.path(), cases.len() + 2).await;
    assert_eq!(all[cases.len()].cost_usd, None);
    let failed = &all[cases.len() + 1];
    assert_eq!(failed.error.as_ref().unwrap().kind, "BadRequest");
    assert!(failed.raw.is_some(), "the provider's error body is kept");
    gw.shutdown().await.unwrap();

    // The index has the key's name and the cost of every call.
    let rows = index_rows(dir.path());
    assert_eq!(rows.len(), cases.len() + 2);
    assert_eq!(rows[0].1.as_deref(), Some("alice"));
    assert_eq!(rows[1].1.as_deref(), Some("bob"));
    assert!((rows[0].2.unwrap() - all[0].cost_usd.unwrap()).abs() < 1e-12);
    assert_eq!(rows.last().unwrap().3, "error");

    // The upstream got its key; neither it nor any client key is anywhere in the store.
    let seen = mock.requests();
    assert!(seen
        .iter()
        .all(|r| r.headers.iter().any(|(_, v)| v.contains(UPSTREAM))));
    for file in walk(dir.path()) {
        let bytes = std::fs::read(&file).unwrap();
        for secret in [ALICE, BOB, UPSTREAM] {
            assert!(
                !contains(&bytes, secret.as_bytes()),
                "{} holds a key",
                file.display()
            );
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    assert!(!out.is_empty());
    out
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_flight_at_shutdown_and_clients_that_leave_are_recorded() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), vec![key("alice", "ALICE_KEY", None)]).await;
    // A client that leaves mid-stream: recorded as such, with what it had received.
    let body = client_body(
        Dialect::Chat,
        "up-chat/lorem-400+delay-5ms",
        &Request::user("hi"),
        true,
    );
    let mut r = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", gw.url()))
        .header("authorization", format!("Bearer {ALICE}"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let first = r.chunk().await.unwrap().unwrap();
    assert!(!first.is_empty());
    drop(r);
    let (all, _) = records(dir.path(), 1).await;
    assert_eq!(all[0].error.as_ref().unwrap().kind, "client_disconnected");
    assert!(all[0].raw.is_some());
    // Calls that finish as the gateway shuts down are all on disk when it has stopped.
    let mut calls = Vec::new();
    for i in 0..8 {
        let url = gw.url();
        calls.push(tokio::spawn(async move {
            let body = client_body(
                Dialect::Messages,
                "up-chat/echo+delay-1ms",
                &Request::user(format!("in flight {i}")),
                true,
            );
            reqwest::Client::new()
                .post(format!("{url}/v1/messages"))
                .header("x-api-key", ALICE)
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap()
        }));
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    gw.shutdown().await.unwrap();
    for c in calls {
        assert!(!c.await.unwrap().is_empty());
    }
    let all = read_records(dir.path()).unwrap();
    assert_eq!(
        all.len(),
        9,
        "every call that ended is recorded by shutdown"
    );
    assert!(all[1..].iter().all(|r| r.error.is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_past_its_budget_is_refused_and_stays_refused_after_a_restart() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    // Each call costs a few dozen millionths of a dollar.
    let keys = || {
        vec![
            key("alice", "ALICE_KEY", Some((0.0001, BudgetPeriod::Day))),
            key("bob", "BOB_KEY", Some((1.0, BudgetPeriod::Month))),
        ]
    };
    let gw = gateway(&mock, dir.path(), keys()).await;
    let mut made = 0;
    let refusal = loop {
        let (s, h, body) = call(&gw, ALICE, Dialect::Chat, "mock/echo", "spend", false).await;
        if s != 200 {
            break (s, h, body);
        }
        made += 1;
        assert!(made < 50, "the budget never refused");
    };
    assert!(made >= 1);
    let (status, headers, body) = refusal;
    assert_eq!(status, 429);
    assert_eq!(headers["x-should-retry"], "false");
    assert!(headers.contains_key("retry-after"));
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["error"]["code"], "insufficient_quota");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "budget exceeded for key `alice`: its budget is $0.0001 per day (UTC), and $0.0001"
        ),
        "{message}"
    );
    // In the Anthropic shape for an Anthropic client.
    let (s, _, body) = call(&gw, ALICE, Dialect::Messages, "mock/echo", "x", false).await;
    assert_eq!(s, 429);
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "billing_error");
    // Another key is not touched.
    let (s, _, _) = call(&gw, BOB, Dialect::Chat, "mock/echo", "x", false).await;
    assert_eq!(s, 200);
    gw.shutdown().await.unwrap();
    let upstream_calls = mock.requests().len();
    assert_eq!(
        upstream_calls,
        made + 1,
        "refused calls never went upstream"
    );

    // A new gateway on the same data directory reads the spend back.
    let gw = gateway(&mock, dir.path(), keys()).await;
    let (s, _, body) = call(&gw, ALICE, Dialect::Chat, "mock/echo", "x", false).await;
    assert_eq!(s, 429, "{}", String::from_utf8_lossy(&body));
    let (s, _, _) = call(&gw, BOB, Dialect::Chat, "mock/echo", "x", false).await;
    assert_eq!(s, 200);
    gw.shutdown().await.unwrap();
    assert_eq!(mock.requests().len(), upstream_calls + 1);
    // Refusals are recorded too, with the key's name, costing nothing.
    let all = read_records(dir.path()).unwrap();
    let refused: Vec<_> = all
        .iter()
        .filter(|r| r.error.as_ref().is_some_and(|e| e.kind == "gateway:Quota"))
        .collect();
    assert_eq!(refused.len(), 3);
    assert!(refused
        .iter()
        .all(|r| r.client_key.as_deref() == Some("alice")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_overshoot_the_budget_by_at_most_the_calls_in_flight() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let budget = 0.0003;
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
    const CONCURRENCY: usize = 12;
    let mut tasks = Vec::new();
    for _ in 0..CONCURRENCY {
        let url = gw.url();
        tasks.push(tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut ok = 0;
            loop {
                let body = client_body(
                    Dialect::Chat,
                    "mock/echo",
                    &Request::user("concurrent spending"),
                    true,
                );
                let r = client
                    .post(format!("{url}/v1/chat/completions"))
                    .header("authorization", format!("Bearer {ALICE}"))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                let _ = r.bytes().await;
                if status != 200 {
                    assert_eq!(status, 429);
                    return ok;
                }
                ok += 1;
            }
        }));
    }
    let mut ok = 0;
    for t in tasks {
        ok += t.await.unwrap();
    }
    gw.shutdown().await.unwrap();
    let all = read_records(dir.path()).unwrap();
    let priced: Vec<&CallRecord> = all.iter().filter(|r| r.error.is_none()).collect();
    assert_eq!(priced.len(), ok);
    let spent: f64 = priced.iter().map(|r| r.cost_usd.unwrap()).sum();
    let most = priced
        .iter()
        .map(|r| r.cost_usd.unwrap())
        .fold(0.0, f64::max);
    assert!(
        spent >= budget,
        "refused before the budget was spent: {spent}"
    );
    assert!(
        spent <= budget + CONCURRENCY as f64 * most + 1e-12,
        "spent {spent} with a budget of {budget}: more than the calls in flight can explain"
    );
    let _ = json!(null);
}

/// The store's backlog gauge in `/metrics`: present with a store, back to 0 once the
/// finished calls are on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_the_store_backlog_falling_to_zero_once_calls_are_written() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), Vec::new()).await;
    for i in 0..5 {
        let (status, _, _) = call(
            &gw,
            "-",
            Dialect::Chat,
            "mock/echo",
            &format!("hi {i}"),
            false,
        )
        .await;
        assert_eq!(status, 200);
    }
    records(dir.path(), 5).await;
    let start = Instant::now();
    loop {
        let text = reqwest::get(format!("{}/metrics", gw.url()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            text.contains("# TYPE switchyard_gateway_store_backlog gauge"),
            "{text}"
        );
        if text.contains("\nswitchyard_gateway_store_backlog 0\n") {
            break;
        }
        assert!(
            start.elapsed() < FLUSH_BOUND,
            "the backlog did not fall to 0 after the records were written:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}
