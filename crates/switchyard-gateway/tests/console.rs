//! The web console mounted by the gateway at `/console`, over its data directory: only an
//! admin key opens its API when keys are configured (any other key is refused by name),
//! the calls made through the gateway are there with their keys, costs and budgets, and
//! without keys it opens on loopback only (the guard keeping foreign `Host`s out) and
//! never on a public listener; the conversations it keeps (a Responses chain, a thread)
//! are listed there with their keys' names, to the admin key only.

mod common;

use common::recording::{call, gateway, key, records, ALICE, BOB};
use common::{gateway_for, Harness};
use serde_json::{json, Value};
use std::time::{Duration, Instant};
use switchyard_gateway::{keys::digest, start, BudgetPeriod, GatewayConfig, KeySecret, KeySpec};
use switchyard_mock::MockServer;
use switchyard_wire::Dialect;

const ADMIN: &str = "sk-admin-console-0123456789";

fn admin() -> KeySpec {
    KeySpec {
        admin: true,
        ..KeySpec::new("ops", KeySecret::Sha256(digest(ADMIN.as_bytes())))
    }
}

async fn api(base: &str, path: &str, key: Option<&str>) -> (u16, Value) {
    let mut r = reqwest::Client::new().get(format!("{base}{path}"));
    if let Some(k) = key {
        r = r.header("authorization", format!("Bearer {k}"));
    }
    let r = r.send().await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Waits until the index (written a batch at a time) lists `n` calls.
async fn indexed(base: &str, n: u64) {
    let start = Instant::now();
    loop {
        let (s, page) = api(base, "/console/api/calls", Some(ADMIN)).await;
        if s == 200 && page["total"] == n {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "{s} {page}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_an_admin_key_opens_the_console_and_it_shows_the_calls_keys_and_budgets() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let keys = vec![
        key("alice", "ALICE_KEY", Some((1.0, BudgetPeriod::Day))),
        key("bob", "BOB_KEY", None),
        admin(),
    ];
    let gw = gateway(&mock, dir.path(), keys).await;
    let base = gw.url();
    for (k, dialect, text) in [
        (ALICE, Dialect::Chat, "one"),
        (ALICE, Dialect::Messages, "two"),
        (BOB, Dialect::Chat, "three"),
    ] {
        let (s, _, b) = call(&gw, k, dialect, "mock/echo", text, false).await;
        assert_eq!(s, 200, "{}", String::from_utf8_lossy(&b));
    }
    let (s, _, _) = call(&gw, BOB, Dialect::Chat, "mock/fault-500", "four", false).await;
    assert_eq!(s, 500);
    let (recorded, _) = records(dir.path(), 4).await;
    indexed(&base, 4).await;

    // Who may read it.
    let (s, body) = api(&base, "/console/api/calls", None).await;
    assert_eq!(s, 401, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("admin key"));
    let (s, body) = api(&base, "/console/api/calls", Some(ALICE)).await;
    assert_eq!(s, 403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("key `alice` is not an admin key"),
        "{body}"
    );
    let (s, _) = api(&base, "/console/api/summary", Some("sk-nobody")).await;
    assert_eq!(s, 401);
    // The page holds no data: served to anyone, with its policy.
    let page = reqwest::get(format!("{base}/console")).await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .contains("script-src 'self'"));

    // What it shows.
    let (_, page) = api(&base, "/console/api/calls?key=alice", Some(ADMIN)).await;
    assert_eq!(page["total"], 2);
    let (_, page) = api(&base, "/console/api/calls?status=error", Some(ADMIN)).await;
    assert_eq!(page["total"], 1);
    assert_eq!(page["calls"][0]["key"], "bob");
    assert_eq!(page["calls"][0]["error_kind"], "Provider");
    let (_, page) = api(&base, "/console/api/calls?sort=cost", Some(ADMIN)).await;
    let first = &page["calls"][0];
    let (s, detail) = api(
        &base,
        &format!("/console/api/calls/{}", first["id"].as_str().unwrap()),
        Some(ADMIN),
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(detail["record"]["client_key"], first["key"]);
    assert!(!detail.to_string().contains(ALICE) && !detail.to_string().contains(BOB));
    let alice_spent: f64 = recorded
        .iter()
        .filter(|r| r.client_key.as_deref() == Some("alice"))
        .filter_map(|r| r.cost_usd)
        .sum();
    assert!(alice_spent > 0.0);
    let (_, b) = api(&base, "/console/api/budgets", Some(ADMIN)).await;
    let keys = b["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 1, "{b}");
    assert_eq!(keys[0]["key"], "alice");
    assert_eq!(keys[0]["period"], "day");
    assert_eq!(keys[0]["budget_usd"], 1.0);
    assert!((keys[0]["spent_usd"].as_f64().unwrap() - alice_spent).abs() < 1e-12);
    let (_, spend) = api(&base, "/console/api/spend?by=key&bucket=hour", Some(ADMIN)).await;
    let alice: f64 = spend["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["group"] == "alice")
        .map(|p| p["cost_usd"].as_f64().unwrap())
        .sum();
    assert!((alice - alice_spent).abs() < 1e-12);
    gw.shutdown().await.unwrap();
}

/// POSTs a JSON body to the gateway with `key`: the status and the JSON answer.
async fn post(base: &str, path: &str, key: &str, body: &Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(format!("{base}{path}"))
        .header("anthropic-version", "2023-06-01")
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_kept_conversations_are_listed_for_the_admin_key_by_key_name() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let keys = vec![
        key("alice", "ALICE_KEY", None),
        key("bob", "BOB_KEY", None),
        admin(),
    ];
    let gw = gateway(&mock, dir.path(), keys).await;
    let base = gw.url();
    // Alice: a chain of two responses, the first passed through to a Responses backend
    // (which keeps it too), the second to a chat backend.
    let (s, r1) = post(
        &base,
        "/v1/responses",
        ALICE,
        &json!({"model": "up-responses/echo", "input": "hello there"}),
    )
    .await;
    assert_eq!(s, 200, "{r1}");
    let (s, r2) = post(
        &base,
        "/v1/responses",
        ALICE,
        &json!({"model": "up-chat/echo", "input": "and again", "previous_response_id": r1["id"]}),
    )
    .await;
    assert_eq!(s, 200, "{r2}");
    // Bob: a thread of two replies.
    let (s, m1) = post(
        &base,
        "/v1/messages",
        BOB,
        &json!({"model": "up-chat/echo", "max_tokens": 64, "system": "be brief",
            "thread": {"type": "create"}, "messages": [{"role": "user", "content": "one"}]}),
    )
    .await;
    assert_eq!(s, 200, "{m1}");
    let (s, m2) = post(
        &base,
        "/v1/messages",
        BOB,
        &json!({"model": "up-chat/echo", "max_tokens": 64,
            "thread": {"type": "continue", "previous_message_id": m1["id"]},
            "messages": [{"role": "user", "content": "two"}]}),
    )
    .await;
    assert_eq!(s, 200, "{m2}");

    // Who may read them: the admin key only.
    let (s, _) = api(&base, "/console/api/conversations", None).await;
    assert_eq!(s, 401);
    let (s, body) = api(&base, "/console/api/conversations", Some(ALICE)).await;
    assert_eq!(s, 403, "{body}");
    let path = format!(
        "/console/api/conversations/response/{}?key=alice",
        r2["id"].as_str().unwrap()
    );
    let (s, _) = api(&base, &path, Some(BOB)).await;
    assert_eq!(s, 403);

    let (s, all) = api(&base, "/console/api/conversations", Some(ADMIN)).await;
    assert_eq!(s, 200, "{all}");
    assert_eq!(
        (all["kept"].as_bool(), all["total"].as_u64()),
        (Some(true), Some(4)),
        "{all}"
    );
    assert!(!all.to_string().contains(ALICE) && !all.to_string().contains(BOB));
    let (_, responses) = api(
        &base,
        "/console/api/conversations?key=alice&kind=response",
        Some(ADMIN),
    )
    .await;
    let turns = responses["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 2, "{responses}");
    let (first, second) = if turns[0]["id"] == r2["id"] {
        (&turns[1], &turns[0])
    } else {
        (&turns[0], &turns[1])
    };
    assert_eq!(first["id"], r1["id"]);
    assert_eq!(first["upstream"], "up-responses", "{first}");
    assert_eq!(first["previous"], Value::Null);
    assert_eq!(second["previous"], r1["id"]);
    assert_eq!(second["upstream"], Value::Null);
    assert_eq!(second["model"], r2["model"], "{second}");
    assert!(
        second["input_items"].as_u64().unwrap() >= 1
            && second["output_items"].as_u64().unwrap() >= 1,
        "{second}"
    );
    let (_, threads) = api(&base, "/console/api/conversations?kind=thread", Some(ADMIN)).await;
    assert_eq!(threads["total"], 2, "{threads}");
    assert!(threads["turns"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["key"] == "bob"));
    let reply = threads["turns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == m2["id"])
        .unwrap();
    assert_eq!(reply["previous"], m1["id"]);
    assert_eq!(reply["model"], Value::Null);
    let (_, none) = api(
        &base,
        "/console/api/conversations?key=bob&kind=response",
        Some(ADMIN),
    )
    .await;
    assert_eq!(none["total"], 0);

    // One turn in full, under the key that kept it only.
    let (s, turn) = api(&base, &path, Some(ADMIN)).await;
    assert_eq!(s, 200, "{turn}");
    assert_eq!(turn["turn"]["previous"], r1["id"]);
    assert_eq!(turn["turn"]["response"]["id"], r2["id"]);
    assert!(!turn.to_string().contains(ALICE));
    let (s, _) = api(&base, &path.replace("key=alice", "key=bob"), Some(ADMIN)).await;
    assert_eq!(s, 404);
    let thread = format!(
        "/console/api/conversations/thread/{}?key=bob",
        m1["id"].as_str().unwrap()
    );
    let (s, turn) = api(&base, &thread, Some(ADMIN)).await;
    assert_eq!(s, 200, "{turn}");
    assert_eq!(turn["turn"]["system"], "be brief");
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_keys_it_opens_on_loopback_behind_the_guard() {
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        store: Some(dir.path().to_path_buf()),
        ..GatewayConfig::default()
    };
    let h = Harness::start_with(config, Default::default()).await;
    let (s, body) = api(&h.url, "/console/api/summary", None).await;
    assert_eq!(s, 200, "{body}");
    assert_eq!(body["calls"], 0);
    // A DNS-rebinding page sends its own name: the gateway's guard refuses it.
    let r = reqwest::Client::new()
        .get(format!("{}/console/api/summary", h.url))
        .header("host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
}

#[tokio::test]
async fn without_keys_on_a_public_listener_it_never_opens() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        store: Some(dir.path().to_path_buf()),
        ..GatewayConfig::default()
    };
    let g = gateway_for(&mock.base_url(), config, Default::default(), &[]);
    // Every address of the machine; the test reaches it over loopback only.
    let gw = start(g, "0.0.0.0:0".parse().unwrap()).await.unwrap();
    let base = format!("http://127.0.0.1:{}", gw.addr().port());
    for path in ["/console", "/console/api/calls"] {
        let (s, body) = api(&base, path, None).await;
        assert_eq!(s, 403, "{path}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("role: admin"),
            "{body}"
        );
    }
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_gateway_without_a_store_says_the_console_has_nothing_to_show() {
    let h = Harness::start().await;
    let (s, body) = api(&h.url, "/console/api/calls", None).await;
    assert_eq!(s, 503, "{body}");
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("--data-dir"));
}
