//! Bounded memory against a stream of distinct model names: 10,000 names the upstream
//! refuses leave no cached target and one metrics series; names that work are cached and
//! labelled up to their bounds (`limits.max_targets`, `limits.max_metric_series`), then
//! the least used target leaves and new series count under `(other)`; `/metrics` at its
//! series bound with long names stays under `limits.max_metrics_bytes`.

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

/// A call's summary as the metering makes it, for `model` and `key`.
fn summary(model: &str, key: &str, input: u64) -> switchyard_gateway::CallSummary {
    switchyard_gateway::CallSummary {
        key: key.into(),
        backend: "mock".into(),
        model: model.into(),
        client_dialect: Dialect::Chat,
        upstream_dialect: Some(Dialect::Chat),
        stream: false,
        passthrough: true,
        status: 200,
        error: None,
        usage: Some(switchyard::Usage {
            input,
            ..Default::default()
        }),
        cost_usd: None,
        latency: std::time::Duration::from_millis(3),
        time_to_first_byte: None,
        overhead: std::time::Duration::from_micros(50),
        requested: model.into(),
        upstream_called: true,
        model_known: true,
    }
}

/// The sum of `family`'s values in a `/metrics` text.
fn total(metrics: &str, family: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| l.starts_with(&format!("{family}{{")))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap())
        .sum()
}

/// Before, 1,000 series (the default bound) of long names made a `/metrics` text of
/// megabytes (5.3 MB measured, more with longer names). Label values are cut at 100
/// characters and the text kept under `limits.max_metrics_bytes`; the series that do not
/// fit are summed under `(other)`, so every total stays whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_at_the_series_bound_with_long_names_stay_under_their_byte_bound() {
    let mock = MockServer::start().await;
    for (max_bytes, name_len) in [
        (switchyard_gateway::metrics::DEFAULT_MAX_BYTES, 4_000),
        (256 * 1024, 60),
    ] {
        let gateway = gateway_for(
            &mock.base_url(),
            GatewayConfig {
                max_metrics_bytes: max_bytes,
                ..GatewayConfig::default()
            },
            MapEnv::default(),
            &[],
        );
        let observer = gateway.clone();
        let running = start(gateway, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        // 1,100 distinct series: the bound (1,000) and 100 more under (other); the
        // busiest first, so that the ones shown are the busiest.
        for i in 0..1_100u64 {
            let model = format!("m{i:04}-{}\"\\", "x".repeat(name_len));
            let key = format!("key-{i}-{}", "k".repeat(name_len));
            for _ in 0..(1 + (1_100 - i) / 100) {
                observer.metrics().finished(&summary(&model, &key, 10));
            }
        }
        assert_eq!(observer.metrics().series(), 1_001);
        let calls: u64 = (0..1_100u64).map(|i| 1 + (1_100 - i) / 100).sum();
        let metrics = reqwest::get(format!("{}/metrics", running.url()))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(
            metrics.len() <= max_bytes,
            "{} bytes, bound {max_bytes}",
            metrics.len()
        );
        assert_eq!(total(&metrics, "switchyard_gateway_requests_total"), calls);
        assert_eq!(
            total(&metrics, "switchyard_gateway_input_tokens_total"),
            calls * 10
        );
        assert_eq!(
            total(
                &metrics,
                "switchyard_gateway_request_duration_seconds_count"
            ),
            calls
        );
        let folded: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("switchyard_gateway_metrics_series_folded "))
            .unwrap()
            .parse()
            .unwrap();
        let shown = metrics
            .lines()
            .filter(|l| l.starts_with("switchyard_gateway_requests_total{"))
            .count() as u64;
        // Every series is either shown or folded (the (other) one is shown).
        assert_eq!(shown - 1 + folded, 1_000, "{shown} shown, {folded} folded");
        assert!(folded > 0 && shown > 10, "{shown} shown, {folded} folded");
        // The busiest is shown, its labels cut at 100 characters (when longer) and escaped.
        let busiest = if name_len > 100 {
            format!("model=\"m0000-{}…\"", "x".repeat(94))
        } else {
            format!("model=\"m0000-{}\\\"\\\\\"", "x".repeat(name_len))
        };
        assert!(
            metrics.contains(&busiest),
            "{busiest}: {}",
            &metrics[..2000]
        );
        println!(
            "names of {name_len}: {} bytes (bound {max_bytes}), {shown} series shown, {folded} folded",
            metrics.len()
        );
        running.shutdown().await.unwrap();
    }
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
