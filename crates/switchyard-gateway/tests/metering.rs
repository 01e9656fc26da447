//! Metering into the store: every call through the gateway becomes a record (the
//! recording issue's, plus the client key's name and dialect) in the data directory,
//! priced, and counted against its key's budget — which a restarted gateway reads back.

mod common;

use common::recording::{call, gateway, key, records, ALICE, BOB, FLUSH_BOUND, UPSTREAM};
use common::{client_body, decode};
use std::path::Path;
use std::time::{Duration, Instant};
use switchyard::record::{read_records, CallRecord, INDEX_FILE};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

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
            // The bytes that went through, but for the model: the client reads its own
            // name, the record keeps the upstream's (`client_model.rs`).
            let as_sent = String::from_utf8_lossy(&body)
                .replace(&format!("\"model\":\"{model}\""), "\"model\":\"echo\"");
            assert_eq!(got.model.as_deref(), Some(model), "{what}");
            assert_eq!(
                String::from_utf8_lossy(&raw),
                as_sent,
                "{what}: the bytes that went through"
            );
        }
        let reply = r.reply.as_ref().expect("reply recorded");
        assert_eq!(reply.text(), got.text(), "{what}");
        assert!(reply.text().contains(&text), "{what}: {}", reply.text());
        assert!(r.request.messages.len() == 1, "{what}");
        assert!(r.error.is_none(), "{what}: {:?}", r.error);
        assert_eq!(r.attempts.len(), 1);
        // A success over HTTP was a 200, recorded as the library records it.
        assert_eq!(r.attempts[0].status, Some(200), "{what}");
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
    // Shut down once all eight reached the upstream (a fixed sleep let a loaded machine
    // shut down before some had connected, and those were refused, not in flight).
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while mock.received() < 9 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(mock.received(), 9, "the eight calls reached the upstream");
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
