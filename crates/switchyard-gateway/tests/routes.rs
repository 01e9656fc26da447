//! Routes through the gateway, the mock's fault models as members: fallback before the
//! first byte on each listed kind, whole and streamed, passed through and translated
//! (each member in its own dialect); a stream cut after its first byte ends with the
//! dialect's error event and is recorded as cut; the record names the member that served
//! and every attempt; the `models:` table naming a route; the OpenAI SDK through a route.

mod common;

use common::python::run_sdk_script;
use common::recording::records;
use common::{client_body, decode, gateway_for, path};
use std::collections::BTreeMap;
use std::time::Duration;
use switchyard::backend::http::Timeouts;
use switchyard::env::MapEnv;
use switchyard_gateway::{start, GatewayConfig, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

/// A gateway before the mock with `down` (nobody listening) beside the `up-*` backends,
/// the routes of `extra`, a store in `dir` when given, and short upstream timeouts.
async fn gateway(
    mock: &MockServer,
    extra: &[&str],
    dir: Option<&std::path::Path>,
) -> RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: dir.map(|d| d.to_path_buf()),
        timeouts: Timeouts {
            first_byte: Some(Duration::from_millis(300)),
            idle: Some(Duration::from_millis(300)),
            ..GatewayConfig::default().timeouts
        },
        models: BTreeMap::from([("smart".to_string(), "fallback".to_string())]),
        ..GatewayConfig::default()
    };
    let mut overrides = vec![
        "backends.down.from=mock".to_string(),
        "backends.down.base_url=http://127.0.0.1:1/v1".to_string(),
    ];
    overrides.extend(extra.iter().map(|s| s.to_string()));
    let g = gateway_for(&mock.base_url(), config, MapEnv::default(), &overrides);
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

async fn send(
    gw: &RunningGateway,
    client: Dialect,
    model: &str,
    text: &str,
    stream: bool,
) -> (u16, Vec<u8>) {
    let body = client_body(client, model, &Request::user(text), stream);
    let r = reqwest::Client::new()
        .post(format!("{}{}", gw.url(), path(client, model, stream)))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.bytes().await.unwrap().to_vec())
}

const FIRST_MEMBERS: &[(&str, &str)] = &[
    ("quota", "up-chat/quota"),
    ("rate_limited", "up-chat/fault-429"),
    ("overloaded", "up-chat/fault-503"),
    ("server_error", "up-chat/fault-500"),
    ("transport", "down/echo"),
    ("timeout", "up-chat/slow-first-byte-5s"),
];

#[tokio::test]
async fn each_listed_kind_falls_back_before_the_first_byte_whole_and_streamed() {
    let mock = MockServer::start().await;
    for (kind, first) in FIRST_MEMBERS {
        let gw = gateway(
            &mock,
            &[
                &format!("routes.fallback.try=[{first}, up-messages/echo]"),
                &format!("routes.fallback.on=[{kind}]"),
            ],
            None,
        )
        .await;
        for client in [Dialect::Chat, Dialect::Messages] {
            for stream in [false, true] {
                // By the route's name and by its name in the `models:` table.
                for model in ["fallback", "smart"] {
                    let text = format!("{kind} {client} {stream} {model}");
                    let (status, body) = send(&gw, client, model, &text, stream).await;
                    assert_eq!(
                        status,
                        200,
                        "{kind} {client} stream={stream}: {}",
                        String::from_utf8_lossy(&body)
                    );
                    assert_eq!(decode(client, &body, stream).text(), text, "{kind}");
                }
            }
        }
        gw.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn a_kind_not_listed_is_answered_as_the_member_gave_it() {
    let mock = MockServer::start().await;
    let gw = gateway(
        &mock,
        &[
            "routes.fallback.try=[up-chat/fault-503, up-messages/echo]",
            "routes.fallback.on=[quota]",
        ],
        None,
    )
    .await;
    let (status, body) = send(&gw, Dialect::Chat, "fallback", "hi", false).await;
    assert_eq!(status, 503, "{}", String::from_utf8_lossy(&body));
    // The route is listed beside the models, and found by name.
    let list = reqwest::get(format!("{}/v1/models", gw.url()))
        .await
        .unwrap();
    assert!(list.text().await.unwrap().contains("\"id\":\"fallback\""));
    let one = reqwest::get(format!("{}/v1/models/fallback", gw.url()))
        .await
        .unwrap();
    assert_eq!(one.status().as_u16(), 200);
    assert!(mock
        .requests()
        .iter()
        .all(|r| r.path.ends_with("/chat/completions")));
}

#[tokio::test]
async fn a_stream_cut_after_its_first_byte_ends_with_the_dialects_error_and_is_recorded_as_cut() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    // An error event, a cut before the end marker, a reset connection, silence past the
    // idle timeout; passed through (chat → chat) and translated (chat → messages).
    let faults = ["error-mid-stream", "cut-stream", "cut-stream-reset", "hang"];
    let mut routes = Vec::new();
    for (i, fault) in faults.iter().enumerate() {
        for upstream in ["up-chat", "up-messages"] {
            routes.push((
                format!("r{i}-{upstream}"),
                format!("routes.r{i}-{upstream}.try=[{upstream}/lorem-40+{fault}, up-chat/echo]"),
            ));
        }
    }
    let mut extra: Vec<&str> = routes.iter().map(|(_, o)| o.as_str()).collect();
    // What the harness's `models:` names.
    extra.push("routes.fallback.try=[up-chat/echo, up-messages/echo]");
    let gw = gateway(&mock, &extra, Some(dir.path())).await;
    for (name, _) in &routes {
        let (status, body) = send(&gw, Dialect::Chat, name, "hi", true).await;
        assert_eq!(status, 200);
        let text = String::from_utf8_lossy(&body);
        assert!(
            text.contains("\"content\":\"lore\""),
            "{name}: output reached the client: {text}"
        );
        assert!(text.contains("\"error\""), "{name}: {text}");
        assert!(!text.trim_end().ends_with("data: [DONE]"), "{name}: {text}");
    }
    let (recs, _) = records(dir.path(), routes.len()).await;
    for r in &recs {
        assert!(r.cut, "{r:?}");
        assert!(r.error.is_some());
        assert!(r.reference.contains("lorem-40"), "{}", r.reference);
    }
    // The second members were never asked.
    assert!(mock
        .requests()
        .iter()
        .all(|r| !r.body_text().contains("\"echo\"")));
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn the_record_names_the_member_that_served_and_every_attempt() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(
        &mock,
        &["routes.fallback.try=[up-chat/mock-small+fault-503, up-messages/mock-large]"],
        Some(dir.path()),
    )
    .await;
    for stream in [false, true] {
        let (status, body) = send(&gw, Dialect::Chat, "smart", "which", stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        let reply = decode(Dialect::Chat, &body, stream);
        // The reply names the model as the client named it; the member that served is
        // in the record (below) and the `x-switchyard-model` header (`client_model.rs`).
        assert_eq!(reply.model.as_deref(), Some("smart"));
    }
    let (mut recs, _) = records(dir.path(), 2).await;
    recs.sort_by_key(|r| r.number);
    // The first call tried both; the second found the first member cooling (the
    // route's default 30 s after a 503 without Retry-After) and went straight on.
    assert_eq!(recs[1].attempts.len(), 1);
    assert_eq!(
        recs[1].attempts[0].reference.as_deref(),
        Some("up-messages/mock-large")
    );
    recs.truncate(1);
    for r in &recs {
        assert_eq!(r.route.as_deref(), Some("fallback"));
        assert_eq!(r.reference, "up-messages/mock-large");
        assert_eq!(r.dialect, Some(Dialect::Messages));
        assert_eq!(r.client_dialect, Some(Dialect::Chat));
        assert!(!r.cut);
        let refs: Vec<_> = r.attempts.iter().map(|a| a.reference.as_deref()).collect();
        assert_eq!(
            refs,
            [
                Some("up-chat/mock-small+fault-503"),
                Some("up-messages/mock-large")
            ]
        );
        assert_eq!(r.attempts[0].status, Some(503));
        assert_eq!(r.attempts[1].number, 2);
        let u = r.usage.expect("usage");
        let large = (u.input as f64 * 3.0 + u.output as f64 * 15.0) / 1e6;
        assert!((r.cost_usd.unwrap() - large).abs() < 1e-12);
    }
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_cooling_member_is_skipped_until_its_retry_after_ends() {
    let mock = MockServer::start().await;
    let gw = gateway(
        &mock,
        &["routes.fallback.try=[up-chat/fault-503-retry-60, up-messages/echo]"],
        None,
    )
    .await;
    for i in 0..3 {
        let (status, _) = send(&gw, Dialect::Chat, "fallback", &format!("{i}"), false).await;
        assert_eq!(status, 200);
    }
    let chat = mock
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .count();
    assert_eq!(
        chat, 1,
        "the member cools for its Retry-After after its first 503"
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn every_member_cooling_past_max_wait_is_a_503_naming_each() {
    let mock = MockServer::start().await;
    let gw = gateway(
        &mock,
        &["routes.fallback.try=[up-chat/fault-503-retry-60, up-messages/fault-503-retry-90]"],
        None,
    )
    .await;
    let (status, _) = send(&gw, Dialect::Chat, "fallback", "a", false).await;
    assert_eq!(status, 503);
    let (status, body) = send(&gw, Dialect::Chat, "fallback", "b", false).await;
    assert_eq!(status, 503);
    let text = String::from_utf8_lossy(&body);
    assert!(
        text.contains("every member of route `fallback` is cooling down"),
        "{text}"
    );
    assert!(
        text.contains("up-chat/fault-503-retry-60 cooling for"),
        "{text}"
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_work_through_a_route() {
    let mock = MockServer::start().await;
    let gw = gateway(
        &mock,
        &["routes.fallback.try=[up-chat/fault-503, up-responses/fault-429, up-messages/echo]"],
        None,
    )
    .await;
    let test = "the_official_sdks_work_through_a_route";
    let Some(out) = run_sdk_script(test, "sdk_routes.py", &gw.url()).await else {
        return;
    };
    assert!(
        out.lines().filter(|l| l.starts_with("ok ")).count() == 28,
        "{out}"
    );
}

#[tokio::test]
async fn a_budget_reserves_for_the_dearest_member_that_may_serve() {
    use common::recording::{env, key, ALICE};
    use switchyard_gateway::BudgetPeriod;
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(dir.path().to_path_buf()),
        keys: vec![key("alice", "ALICE_KEY", Some((0.1, BudgetPeriod::Total)))],
        ..GatewayConfig::default()
    };
    // With no stated output limit, a call is bound by 32,768 output tokens: $0.066 at
    // mock-small's $2 per million, $0.49 at mock-large's $15.
    let extra = [
        "routes.cheap.try=[up-chat/mock-small, up-messages/mock-small]".to_string(),
        "routes.mixed.try=[up-chat/mock-small, up-messages/mock-large]".to_string(),
    ];
    let g = gateway_for(&mock.base_url(), config, env(), &extra);
    let gw = start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    let ask = |model: &'static str| {
        let url = gw.url();
        async move {
            let body = client_body(Dialect::Chat, model, &Request::user("hi"), false);
            let r = reqwest::Client::new()
                .post(format!("{url}/v1/chat/completions"))
                .header("content-type", "application/json")
                .header("authorization", format!("Bearer {ALICE}"))
                .body(body)
                .send()
                .await
                .unwrap();
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    let (status, body) = ask("cheap").await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = ask("mixed").await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("budget exceeded for key `alice`"), "{body}");
    assert!(body.contains("could cost up to $0.49"), "{body}");
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_route_of_one_member_is_its_reference() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(
        &mock,
        &["routes.fallback.try=[up-chat/echo]"],
        Some(dir.path()),
    )
    .await;
    for stream in [false, true] {
        let (status, body) = send(&gw, Dialect::Chat, "smart", "one", stream).await;
        assert_eq!(status, 200);
        assert_eq!(decode(Dialect::Chat, &body, stream).text(), "one");
    }
    let (recs, _) = records(dir.path(), 2).await;
    for r in &recs {
        // The plain path: no router, the member's reference in the record.
        assert_eq!(r.reference, "up-chat/echo");
        assert_eq!(r.route, None);
        assert_eq!(r.attempts[0].reference, None);
    }
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn each_members_retries_run_first_unless_retry_each_is_false() {
    let mock = MockServer::start().await;
    for (retry_each, upstream_503s) in [(true, 3), (false, 1)] {
        let config = GatewayConfig {
            retry: switchyard::RetryPolicy {
                overloaded: vec![Duration::from_millis(1); 2],
                ..switchyard::RetryPolicy::never()
            },
            ..GatewayConfig::default()
        };
        let extra = [
            "routes.fallback.try=[up-chat/fault-503, up-messages/echo]".to_string(),
            format!("routes.fallback.retry_each={retry_each}"),
        ];
        let g = gateway_for(&mock.base_url(), config, MapEnv::default(), &extra);
        let gw = start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap();
        mock.clear();
        let (status, _) = send(&gw, Dialect::Chat, "fallback", "retries", false).await;
        assert_eq!(status, 200);
        let chat = mock
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/chat/completions"))
            .count();
        assert_eq!(chat, upstream_503s, "retry_each: {retry_each}");
        gw.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn least_busy_sends_calls_past_a_member_holding_a_stream() {
    let mock = MockServer::start().await;
    let gw = gateway(
        &mock,
        &[
            "routes.fallback={pick: least_busy, members: [up-chat/lorem-200+delay-20ms, up-messages/echo]}",
        ],
        None,
    )
    .await;
    // The first stream goes to the first member (no call in flight anywhere) and is held
    // open, its head read, its body not.
    let body = client_body(Dialect::Chat, "fallback", &Request::user("long"), true);
    let held = reqwest::Client::new()
        .post(format!("{}/v1/chat/completions", gw.url()))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(held.status().as_u16(), 200);
    // While it streams, every call goes to the member with none in flight.
    for i in 0..3 {
        let (status, body) = send(&gw, Dialect::Chat, "fallback", &format!("{i}"), false).await;
        assert_eq!(status, 200);
        assert_eq!(decode(Dialect::Chat, &body, false).text(), format!("{i}"));
    }
    // The first member got the held stream only (a call sent to it would also have
    // timed out there and fallen back, so the chat requests are what tell).
    let chat = mock
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .count();
    assert_eq!(chat, 1);
    drop(held);
    gw.shutdown().await.unwrap();
}
