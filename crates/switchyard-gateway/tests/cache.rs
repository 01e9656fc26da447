//! The response cache: an identical call is answered from the call log, byte for byte,
//! streamed as recorded, across a restart; a hit is recorded as one, at no cost, counted
//! in `/metrics` and never against a budget; `temperature > 0` and expired entries miss.

mod common;

use common::recording::{env, key, send, ALICE};
use common::{client_body, decode, gateway_for};
use std::path::Path;
use std::time::Duration;
use switchyard::record::{read_records, CallRecord};
use switchyard_gateway::cache::{cache_key, CacheConfig, CacheMode, CacheScope};
use switchyard_gateway::{start, BudgetPeriod, GatewayConfig, RunningGateway, StoreDurability};
use switchyard_mock::MockServer;
use switchyard_wire::{codec, Dialect, Request};

fn read_write() -> CacheConfig {
    CacheConfig {
        mode: CacheMode::ReadWrite,
        ..CacheConfig::default()
    }
}

/// A gateway recording into `dir` (each reply waits for its record, so the next call
/// finds it), `echo` priced, Alice's key with a budget of $0.001 in total.
async fn gateway(mock: &MockServer, dir: &Path, cache: CacheConfig) -> RunningGateway {
    gateway_with(mock, dir, cache, &[]).await
}

async fn gateway_with(
    mock: &MockServer,
    dir: &Path,
    cache: CacheConfig,
    more: &[&str],
) -> RunningGateway {
    let mut config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys: vec![key(
            "alice",
            "ALICE_KEY",
            Some((0.001, BudgetPeriod::Total)),
        )],
        store: Some(dir.to_path_buf()),
        cache,
        ..GatewayConfig::default()
    };
    config.store_options.durability = StoreDurability::Answered;
    let extra = vec![
        "backends.mock.api_key_env=UPSTREAM_KEY".to_string(),
        "backends.mock.prices.echo={input: 1, output: 2}".to_string(),
    ]
    .into_iter()
    .chain(more.iter().map(|s| s.to_string()))
    .collect::<Vec<_>>();
    let g = gateway_for(&mock.base_url(), config, env(), &extra);
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

async fn ask(gw: &RunningGateway, client: Dialect, request: &Request, stream: bool) -> Vec<u8> {
    let (status, _, body) = send(gw, ALICE, client, "mock/echo", request, stream).await;
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    body
}

async fn metric(gw: &RunningGateway, name: &str) -> u64 {
    let text = reqwest::Client::new()
        .get(format!("{}/metrics", gw.url()))
        .header("authorization", format!("Bearer {ALICE}"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

fn hits(records: &[CallRecord]) -> Vec<Option<u64>> {
    records.iter().map(|r| r.cache_hit).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repeated_call_is_answered_from_the_log_byte_for_byte_across_a_restart() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), read_write()).await;
    let request = Request::user("what is a cache?").with_max_tokens(16);
    let first = ask(&gw, Dialect::Chat, &request, false).await;
    assert_eq!(mock.received(), 1);
    let second = ask(&gw, Dialect::Chat, &request, false).await;
    assert_eq!(
        second, first,
        "the hit is the recorded reply, byte for byte"
    );
    assert_eq!(mock.received(), 1, "the hit called no provider");
    // Different settings are a different call.
    ask(
        &gw,
        Dialect::Chat,
        &request.clone().with_max_tokens(17),
        false,
    )
    .await;
    assert_eq!(mock.received(), 2);
    // Streamed: a stream is answered by a stream, as recorded.
    let other = Request::user("what is a stream?").with_max_tokens(16);
    let streamed = ask(&gw, Dialect::Chat, &other, true).await;
    assert_eq!(mock.received(), 3);
    let again = ask(&gw, Dialect::Chat, &other, true).await;
    assert_eq!(again, streamed);
    assert!(String::from_utf8_lossy(&again).contains("data: [DONE]"));
    assert_eq!(mock.received(), 3);
    // Each form answers the other, translated: the recorded reply streamed, the
    // recorded stream's reply whole.
    let as_stream = ask(&gw, Dialect::Chat, &request, true).await;
    assert_eq!(
        decode(Dialect::Chat, &as_stream, true).text(),
        decode(Dialect::Chat, &first, false).text()
    );
    let as_whole = ask(&gw, Dialect::Chat, &other, false).await;
    assert_eq!(
        decode(Dialect::Chat, &as_whole, false).text(),
        decode(Dialect::Chat, &streamed, true).text()
    );
    assert_eq!(mock.received(), 3);
    assert_eq!(metric(&gw, "switchyard_gateway_cache_hits_total").await, 4);
    assert_eq!(
        metric(&gw, "switchyard_gateway_cache_misses_total").await,
        3
    );
    gw.shutdown().await.unwrap();

    // A new gateway on the same data directory answers from the calls already there.
    let gw = gateway(&mock, dir.path(), read_write()).await;
    assert_eq!(ask(&gw, Dialect::Chat, &request, false).await, first);
    assert_eq!(ask(&gw, Dialect::Chat, &other, true).await, streamed);
    assert_eq!(mock.received(), 3);
    assert_eq!(metric(&gw, "switchyard_gateway_cache_hits_total").await, 2);
    gw.shutdown().await.unwrap();

    let records = read_records(dir.path()).unwrap();
    assert_eq!(
        hits(&records),
        [
            None,
            Some(1),
            None,
            None,
            Some(4),
            Some(1),
            Some(4),
            Some(1),
            Some(4)
        ]
    );
    for r in records.iter().filter(|r| r.cache_hit.is_some()) {
        assert_eq!(r.cost_usd, Some(0.0), "a hit costs nothing");
        assert!(r.attempts.is_empty(), "a hit makes no attempt");
        assert!(r.cache_key.is_none());
        assert_eq!(r.client_key.as_deref(), Some("alice"));
    }
    assert!(records[0].cost_usd.is_some_and(|c| c > 0.0));
    // The streamed call of the first request hit the whole call's entry: the stream
    // flag is not in the key, the prompt and the settings are.
    assert_eq!(records[5].cache_hit, Some(1));
    assert_ne!(records[0].cache_key, records[2].cache_key);
    assert_ne!(records[0].cache_key, records[3].cache_key);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_canonical_request_from_two_dialects_hits_one_entry_answered_in_each_dialect() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), read_write()).await;
    let request = Request::user("one key, two dialects").with_max_tokens(16);
    let key_of = |d: Dialect| {
        let body = client_body(d, "mock/echo", &request, false);
        cache_key(
            "mock/echo",
            &codec(d).decode_request(&body).unwrap().request,
        )
    };
    assert_eq!(key_of(Dialect::Chat), key_of(Dialect::Messages));
    let chat = ask(&gw, Dialect::Chat, &request, false).await;
    // The entry's bytes are Chat Completions: an Anthropic client is answered with the
    // recorded reply in its own dialect, whole and streamed, without a provider call.
    let (status, headers, messages) =
        send(&gw, ALICE, Dialect::Messages, "mock/echo", &request, false).await;
    assert_eq!(status, 200);
    assert_eq!(
        headers["x-switchyard-cache"].to_str().unwrap(),
        "hit; call=1; translated"
    );
    let recorded = decode(Dialect::Chat, &chat, false);
    let translated = decode(Dialect::Messages, &messages, false);
    assert_eq!(translated.text(), recorded.text());
    assert_eq!(translated.usage, recorded.usage);
    let streamed = ask(&gw, Dialect::Messages, &request, true).await;
    assert_eq!(
        decode(Dialect::Messages, &streamed, true).text(),
        recorded.text()
    );
    assert_eq!(ask(&gw, Dialect::Chat, &request, false).await, chat);
    assert_eq!(mock.received(), 1);
    gw.shutdown().await.unwrap();
    let records = read_records(dir.path()).unwrap();
    assert_eq!(hits(&records), [None, Some(1), Some(1), Some(1)]);
    assert_eq!(
        records[0].cache_key.as_deref(),
        Some(key_of(Dialect::Chat).as_str())
    );
    assert_eq!(records[1].client_dialect, Some(Dialect::Messages));
    assert_eq!(
        records[1].reply.as_ref().map(|r| r.text()),
        Some(recorded.text())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_are_never_charged_to_the_budget() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), read_write()).await;
    let request = Request::user("budget").with_max_tokens(16);
    ask(&gw, Dialect::Chat, &request, false).await;
    // Alice's $0.001 holds about a dozen such calls; a hundred hits all go through.
    for _ in 0..100 {
        ask(&gw, Dialect::Chat, &request, false).await;
    }
    assert_eq!(mock.received(), 1);
    gw.shutdown().await.unwrap();
    let records = read_records(dir.path()).unwrap();
    let spent: f64 = records.iter().filter_map(|r| r.cost_usd).sum();
    assert_eq!(spent, records[0].cost_usd.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_requests_expired_entries_and_a_cache_off_miss() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), read_write()).await;
    let mut warm = Request::user("sample me").with_max_tokens(16);
    warm.temperature = Some(0.7);
    ask(&gw, Dialect::Chat, &warm, false).await;
    ask(&gw, Dialect::Chat, &warm, false).await;
    assert_eq!(
        mock.received(),
        2,
        "temperature > 0 is not cached by default"
    );
    assert_eq!(
        metric(&gw, "switchyard_gateway_cache_misses_total").await,
        0
    );
    gw.shutdown().await.unwrap();

    let allowed = CacheConfig {
        temperature_above_zero: true,
        ..read_write()
    };
    let gw = gateway(&mock, dir.path(), allowed).await;
    let first = ask(&gw, Dialect::Chat, &warm, false).await;
    assert_eq!(ask(&gw, Dialect::Chat, &warm, false).await, first);
    assert_eq!(mock.received(), 3, "cached when the config says so");
    gw.shutdown().await.unwrap();

    // A ttl of 0: every entry has expired.
    let expired = CacheConfig {
        ttl: Some(Duration::ZERO),
        temperature_above_zero: true,
        ..read_write()
    };
    let gw = gateway(&mock, dir.path(), expired).await;
    ask(&gw, Dialect::Chat, &warm, false).await;
    assert_eq!(mock.received(), 4);
    assert_eq!(
        metric(&gw, "switchyard_gateway_cache_misses_total").await,
        1
    );
    gw.shutdown().await.unwrap();

    // Off: no lookup at all.
    let gw = gateway(&mock, dir.path(), CacheConfig::default()).await;
    ask(&gw, Dialect::Chat, &warm, false).await;
    assert_eq!(mock.received(), 5);
    assert_eq!(
        metric(&gw, "switchyard_gateway_cache_misses_total").await,
        0
    );
    gw.shutdown().await.unwrap();
    let records = read_records(dir.path()).unwrap();
    assert_eq!(hits(&records), [None, None, None, Some(3), None, None]);
    assert!(records[0].cache_key.is_none() && records[1].cache_key.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_is_cached_under_its_name() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let routes = [
        "routes.smart.try=[up-chat/fault-503, up-chat/echo]",
        "routes.smart.on=[overloaded, server_error]",
        "backends.up-chat.api_key_env=UPSTREAM_KEY",
        "backends.up-chat.prices.echo={input: 1, output: 2}",
        "backends.up-chat.prices.fault-503={input: 1, output: 2}",
    ];
    let gw = gateway_with(&mock, dir.path(), read_write(), &routes).await;
    let request = Request::user("through a route").with_max_tokens(16);
    let ask_route = || async {
        let (status, _, body) = send(&gw, ALICE, Dialect::Chat, "smart", &request, false).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        body
    };
    let first = ask_route().await;
    let upstream = mock.received();
    assert!(upstream >= 2, "the first member failed, the second served");
    assert_eq!(ask_route().await, first);
    assert_eq!(mock.received(), upstream, "the hit called no member");
    // The route's entry is not the plain reference's.
    let (status, _, _) = send(&gw, ALICE, Dialect::Chat, "up-chat/echo", &request, false).await;
    assert_eq!(status, 200);
    assert_eq!(mock.received(), upstream + 1);
    gw.shutdown().await.unwrap();
    let records = read_records(dir.path()).unwrap();
    assert_eq!(hits(&records), [None, Some(1), None]);
    assert_eq!(records[1].route.as_deref(), Some("smart"));
    assert_eq!(records[1].cost_usd, Some(0.0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dialect_whole_and_streamed_is_answered_byte_for_byte_and_translated() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), read_write()).await;
    let forms: Vec<(Dialect, bool)> = common::DIALECTS
        .into_iter()
        .flat_map(|d| [(d, false), (d, true)])
        .collect();
    let prompt = |(d, stream): (Dialect, bool)| {
        Request::user(format!("every dialect: {d} stream {stream}")).with_max_tokens(16)
    };
    let mut recorded = Vec::new();
    for (upstream, &(client, stream)) in forms.iter().enumerate() {
        let request = prompt((client, stream));
        let first = ask(&gw, client, &request, stream).await;
        assert_eq!(
            mock.received(),
            upstream as u64 + 1,
            "{client} stream {stream}: a miss"
        );
        let again = ask(&gw, client, &request, stream).await;
        assert_eq!(again, first, "{client} stream {stream}: byte for byte");
        recorded.push(decode(client, &first, stream).text());
    }
    // Every form asks what the next form asked: a hit on that form's entry, translated.
    for (i, &(client, stream)) in forms.iter().enumerate() {
        let j = (i + 1) % forms.len();
        let (status, headers, body) =
            send(&gw, ALICE, client, "mock/echo", &prompt(forms[j]), stream).await;
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        assert!(headers["x-switchyard-cache"]
            .to_str()
            .unwrap()
            .ends_with("; translated"));
        assert_eq!(
            decode(client, &body, stream).text(),
            recorded[j],
            "{client} stream {stream} answered from {:?}",
            forms[j]
        );
    }
    assert_eq!(mock.received(), forms.len() as u64);
    assert_eq!(metric(&gw, "switchyard_gateway_cache_hits_total").await, 16);
    gw.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scope_run_answers_only_the_calls_made_since_the_gateway_started() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let run_scope = CacheConfig {
        scope: Some(CacheScope::Run),
        ..read_write()
    };
    let request = Request::user("scope run").with_max_tokens(16);
    let gw = gateway(&mock, dir.path(), run_scope).await;
    let first = ask(&gw, Dialect::Chat, &request, false).await;
    assert_eq!(ask(&gw, Dialect::Chat, &request, false).await, first);
    assert_eq!(mock.received(), 1);
    gw.shutdown().await.unwrap();
    // Restarted: the calls of the earlier process do not answer; the new one's do.
    let gw = gateway(&mock, dir.path(), run_scope).await;
    ask(&gw, Dialect::Chat, &request, false).await;
    assert_eq!(mock.received(), 2);
    ask(&gw, Dialect::Chat, &request, false).await;
    assert_eq!(mock.received(), 2);
    gw.shutdown().await.unwrap();
    // The default scope (store) answers from every call in the data directory.
    let gw = gateway(&mock, dir.path(), read_write()).await;
    ask(&gw, Dialect::Chat, &request, false).await;
    assert_eq!(mock.received(), 2);
    gw.shutdown().await.unwrap();
}
