//! Bounded memory against a stream of distinct model names: 10,000 names the upstream
//! refuses leave no cached target and one metrics series; names that work are cached and
//! labelled up to their bounds (`limits.max_targets`, `limits.max_metric_series`), then
//! the least used target leaves and new series count under `(other)`.

mod common;

use common::{client_body, gateway_for};
use futures::StreamExt;
use switchyard::env::MapEnv;
use switchyard_gateway::{start, GatewayConfig};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

async fn call_many(base: &str, models: impl Iterator<Item = String>) -> Vec<u16> {
    let http = reqwest::Client::new();
    futures::stream::iter(models)
        .map(|model| {
            let http = http.clone();
            let body = client_body(Dialect::Chat, &model, &Request::user("hi"), false);
            async move {
                let r = http
                    .post(format!("{base}/v1/chat/completions"))
                    .header("content-type", "application/json")
                    .body(body)
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                let _ = r.bytes().await;
                status
            }
        })
        .buffer_unordered(16)
        .collect()
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_bogus_model_names_leave_memory_bounded() {
    let mock = MockServer::start().await;
    let gateway = gateway_for(
        &mock.base_url(),
        GatewayConfig {
            retry: switchyard::RetryPolicy::never(),
            ..GatewayConfig::default()
        },
        MapEnv::default(),
        &[],
    );
    let observer = gateway.clone();
    let running = start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let statuses = call_many(
        &running.url(),
        (0..10_000).map(|i| format!("mock/no-such-model-{i}")),
    )
    .await;
    assert!(statuses.iter().all(|s| *s == 404), "the mock refuses them");
    assert_eq!(observer.cached_targets(), 0, "a refused name is never kept");
    assert_eq!(
        observer.metrics().series(),
        1,
        "every refused name counts under one label"
    );
    let metrics = reqwest::get(format!("{}/metrics", running.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("switchyard_gateway_requests_total{backend=\"mock\",model=\"(unknown)\",key=\"-\"} 10000"),
        "{metrics}"
    );
    assert!(
        metrics.len() < 16 * 1024,
        "/metrics is {} bytes",
        metrics.len()
    );
    running.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn working_names_are_cached_and_labelled_up_to_their_bounds() {
    let mock = MockServer::start().await;
    let gateway = gateway_for(
        &mock.base_url(),
        GatewayConfig {
            max_targets: 50,
            max_metric_series: 100,
            ..GatewayConfig::default()
        },
        MapEnv::default(),
        &[],
    );
    let observer = gateway.clone();
    let running = start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let statuses = call_many(&running.url(), (0..300).map(|i| format!("mock/say:n{i}"))).await;
    assert!(statuses.iter().all(|s| *s == 200));
    assert_eq!(observer.cached_targets(), 50);
    // 100 labelled series, and one more for everything past them.
    assert_eq!(observer.metrics().series(), 101);
    let metrics = reqwest::get(format!("{}/metrics", running.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(metrics.contains("model=\"(other)\""), "{metrics}");
    running.shutdown().await.unwrap();
}

/// Before, 62,000 unauthenticated requests in 3 s wrote 53 MB of records. Refusals before
/// any upstream call are counted and traced (sampled, at most 10 a second), never
/// recorded in full.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_refused_requests_writes_no_record_and_a_bounded_trace() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let keys = vec![switchyard_gateway::KeySpec::new(
        "alice",
        switchyard_gateway::KeySecret::Env("ALICE_KEY".into()),
    )];
    let gateway = gateway_for(
        &mock.base_url(),
        GatewayConfig {
            keys,
            store: Some(dir.path().to_path_buf()),
            ..GatewayConfig::default()
        },
        MapEnv::new([("ALICE_KEY", "sk-alice-secret")]),
        &[],
    );
    let running = start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let statuses = call_many(&running.url(), (0..2_000).map(|i| format!("mock/x{i}"))).await;
    let seconds = started.elapsed().as_secs() + 1;
    assert!(statuses.iter().all(|s| *s == 401));
    let metrics = reqwest::get(format!("{}/metrics", running.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics
            .contains("switchyard_gateway_refused_total{reason=\"gateway:Unauthenticated\"} 2000"),
        "{metrics}"
    );
    running.shutdown().await.unwrap();
    assert!(switchyard::record::read_records(dir.path())
        .unwrap()
        .is_empty());
    let trace = std::fs::read_to_string(dir.path().join("refused.jsonl")).unwrap();
    let lines = trace.lines().count() as u64;
    assert!(
        lines >= 1 && lines <= 10 * seconds,
        "{lines} lines in {seconds} s"
    );
    assert!(mock.requests().is_empty());
}
