//! A gateway recording into a data directory, with client keys, its upstreams needing a
//! key of their own, and `echo` priced: what the metering and budget tests share.

use super::{client_body, gateway_for, path};
use std::path::Path;
use std::time::{Duration, Instant};
use switchyard::env::MapEnv;
use switchyard::record::{read_records, CallRecord};
use switchyard_gateway::{start, BudgetPeriod, GatewayConfig, KeySecret, KeySpec, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

pub(crate) const ALICE: &str = "sk-alice-0123456789-secret";
pub(crate) const BOB: &str = "sk-bob-9876543210-secret";
pub(crate) const UPSTREAM: &str = "sk-upstream-abcdef-secret";

/// How long a finished call may take to reach the disk: the gateway's documented bound
/// (the store thread, then the recorder's writer; in practice a few milliseconds).
pub(crate) const FLUSH_BOUND: Duration = Duration::from_secs(2);

pub(crate) fn key(name: &str, var: &str, budget: Option<(f64, BudgetPeriod)>) -> KeySpec {
    KeySpec {
        budget_usd: budget.map(|b| b.0),
        budget_period: budget.map(|b| b.1),
        ..KeySpec::new(name, KeySecret::Env(var.into()))
    }
}

pub(crate) fn env() -> MapEnv {
    MapEnv::new([
        ("ALICE_KEY", ALICE),
        ("BOB_KEY", BOB),
        ("UPSTREAM_KEY", UPSTREAM),
    ])
}

/// A gateway recording into `dir`, its upstreams needing `UPSTREAM_KEY`, `echo` priced.
pub(crate) async fn gateway(mock: &MockServer, dir: &Path, keys: Vec<KeySpec>) -> RunningGateway {
    gateway_pricing(mock, dir, keys, &["echo"]).await
}

/// [`gateway`] pricing `models` as the built-in `mock-small` is ($1 and $2 per million
/// tokens) on every mock backend.
pub(crate) async fn gateway_pricing(
    mock: &MockServer,
    dir: &Path,
    keys: Vec<KeySpec>,
    models: &[&str],
) -> RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys,
        store: Some(dir.to_path_buf()),
        ..GatewayConfig::default()
    };
    let mut extra = Vec::new();
    let backends = std::iter::once("mock".to_string())
        .chain(super::DIALECTS.iter().map(|d| format!("up-{d}")));
    for b in backends {
        extra.push(format!("backends.{b}.api_key_env=UPSTREAM_KEY"));
        for m in models {
            extra.push(format!("backends.{b}.prices.{m}={{input: 1, output: 2}}"));
        }
    }
    let g = gateway_for(&mock.base_url(), config, env(), &extra);
    assert_eq!(g.store_dir(), Some(dir));
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

pub(crate) async fn call(
    gw: &RunningGateway,
    key: &str,
    client: Dialect,
    model: &str,
    text: &str,
    stream: bool,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    send(gw, key, client, model, &Request::user(text), stream).await
}

/// Sends `request` as `client` would, with `key`; gives status, headers and body.
pub(crate) async fn send(
    gw: &RunningGateway,
    key: &str,
    client: Dialect,
    model: &str,
    request: &Request,
    stream: bool,
) -> (u16, reqwest::header::HeaderMap, Vec<u8>) {
    let body = client_body(client, model, request, stream);
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
pub(crate) async fn records(dir: &Path, n: usize) -> (Vec<CallRecord>, Duration) {
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
