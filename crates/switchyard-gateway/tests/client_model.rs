//! Every reply names the model as the client named it (issue 36, point 4): every client
//! dialect, passed through and translated, whole and streamed, through a plain
//! reference, an alias of the `models:` table, a route of two members, and the cache
//! (an exact hit and a translated one), plus embeddings. Wherever the client's dialect
//! carries the model (chat: the reply's and every chunk's `model`; Responses: the
//! reply's and each response object's `model`; Messages: the reply's and
//! `message_start`'s `model`; Gemini: `modelVersion`), it is the client's name; the
//! `x-switchyard-model` header names the reference called, and the record keeps the
//! upstream's id and the bytes as they came.

mod common;

use common::recording::{env, records};
use common::{client_body, gateway_for, path, DIALECTS};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use switchyard::record::CallRecord;
use switchyard_gateway::cache::{CacheConfig, CacheMode};
use switchyard_gateway::{start, GatewayConfig, RunningGateway, StoreDurability};
use switchyard_mock::MockServer;
use switchyard_wire::sse::SseParser;
use switchyard_wire::{Dialect, Request};

/// The alias of the `models:` table (the form `docs/gateway.md` shows for Claude Code).
const ALIAS: &str = "claude-sonnet-4-5";
/// The `models:` name of a route of two members, the first failing.
const ROUTE: &str = "smart";

/// A gateway recording into `dir` (each reply waits for its record), with an alias and a
/// route in its `models:` table, and the cache as `cache` says.
async fn gateway(mock: &MockServer, dir: &Path, cache: CacheConfig) -> RunningGateway {
    let mut config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(dir.to_path_buf()),
        cache,
        models: BTreeMap::from([
            (ALIAS.to_string(), "up-messages/echo".to_string()),
            (ROUTE.to_string(), "pair".to_string()),
        ]),
        ..GatewayConfig::default()
    };
    config.store_options.durability = StoreDurability::Answered;
    let extra = [
        "routes.pair.try=[up-chat/mock-small+fault-503, up-messages/mock-large]".into(),
        "backends.up-gemini.apis=[gemini, embeddings]".into(),
    ];
    let g = gateway_for(&mock.base_url(), config, env(), &extra);
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

/// What came back: status, the `x-switchyard-model` header, the body.
async fn send(
    gw: &RunningGateway,
    client: Dialect,
    model: &str,
    request: &Request,
    stream: bool,
) -> (u16, Option<String>, Vec<u8>) {
    let r = reqwest::Client::new()
        .post(format!("{}{}", gw.url(), path(client, model, stream)))
        .header("content-type", "application/json")
        .body(client_body(client, model, request, stream))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let header = r
        .headers()
        .get("x-switchyard-model")
        .map(|v| v.to_str().unwrap().to_string());
    (status, header, r.bytes().await.unwrap().to_vec())
}

/// The JSON documents of a body: itself, or each event's data of a stream (the end
/// marker aside).
fn documents(body: &[u8], stream: bool) -> Vec<Value> {
    let parse = |b: &[u8]| {
        serde_json::from_slice::<Value>(b)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(b)))
    };
    if !stream {
        return vec![parse(body)];
    }
    let mut parser = SseParser::new();
    let mut events = parser.push(body);
    events.extend(parser.finish());
    events
        .iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| parse(e.data.as_bytes()))
        .collect()
}

/// Every string value under a key `model` or `modelVersion`, anywhere in `v`.
fn model_values(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if let (true, Value::String(s)) = (k == "model" || k == "modelVersion", v) {
                    out.push(s.clone());
                }
                model_values(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| model_values(v, out)),
        _ => {}
    }
}

/// The model named where the dialect carries it, one entry per place: a whole reply's
/// top level; in a stream, every chat and Gemini chunk, Messages' `message_start`, and
/// each Responses event carrying the response object.
fn carried(dialect: Dialect, docs: &[Value], stream: bool) -> Vec<Option<String>> {
    let s = |v: &Value| v.as_str().map(str::to_string);
    let top = match dialect {
        Dialect::Gemini => "modelVersion",
        _ => "model",
    };
    if !stream {
        return vec![s(&docs[0][top])];
    }
    match dialect {
        Dialect::Chat | Dialect::Gemini => docs.iter().map(|d| s(&d[top])).collect(),
        Dialect::Messages => docs
            .iter()
            .filter(|d| d["type"] == "message_start")
            .map(|d| s(&d["message"]["model"]))
            .collect(),
        Dialect::Responses => docs
            .iter()
            .filter(|d| d.get("response").is_some())
            .map(|d| s(&d["response"]["model"]))
            .collect(),
    }
}

/// `body` names `name` wherever `dialect` carries the model (there is at least one such
/// place, and a Responses stream has its `created` and `completed` events), and no other
/// model anywhere.
fn names_exactly(dialect: Dialect, body: &[u8], stream: bool, name: &str, case: &str) {
    let docs = documents(body, stream);
    let places = carried(dialect, &docs, stream);
    assert!(!places.is_empty(), "{case}: no model carried");
    if dialect == Dialect::Responses && stream {
        assert!(places.len() >= 2, "{case}: {places:?}");
    }
    for place in &places {
        assert_eq!(place.as_deref(), Some(name), "{case}: {places:?}");
    }
    let mut all = Vec::new();
    docs.iter().for_each(|d| model_values(d, &mut all));
    assert!(all.iter().all(|m| m == name), "{case}: {all:?}");
}

/// One call's expectations, checked against its record once every call is made.
struct Expected {
    case: String,
    /// The reference called.
    reference: String,
    /// The upstream's model id.
    upstream_id: String,
    /// The upstream's dialect (the record's bytes are in it).
    upstream: Dialect,
    stream: bool,
    /// What the client received, when its bytes are the upstream's but for the model.
    passed: Option<Vec<u8>>,
    /// The client's name for the model.
    name: String,
}

/// Asks `model` as `client` would and checks the answer; gives what its record must hold.
async fn ask(
    gw: &RunningGateway,
    client: Dialect,
    model: &str,
    stream: bool,
    called: (&str, Dialect),
) -> Expected {
    let case = format!("{client} asking {model} (stream: {stream})");
    let request = Request::user("hello").with_max_tokens(16);
    let (status, header, body) = send(gw, client, model, &request, stream).await;
    assert_eq!(status, 200, "{case}: {}", String::from_utf8_lossy(&body));
    assert_eq!(header.as_deref(), Some(called.0), "{case}: the header");
    names_exactly(client, &body, stream, model, &case);
    let (reference, upstream) = called;
    Expected {
        case,
        reference: reference.to_string(),
        upstream_id: reference.split_once('/').unwrap().1.to_string(),
        upstream,
        stream,
        passed: (client == upstream).then_some(body),
        name: model.to_string(),
    }
}

/// The record keeps the reference called, the upstream's id in its reply, and the bytes
/// as they came: the upstream's model throughout, and — passed through — the client's
/// bytes with only the model's name differing.
fn check_record(r: &CallRecord, e: &Expected) {
    let case = &e.case;
    assert_eq!(r.reference, e.reference, "{case}");
    assert_eq!(r.model, e.upstream_id, "{case}");
    if let Some(reply) = &r.reply {
        assert_eq!(
            reply.model.as_deref(),
            Some(e.upstream_id.as_str()),
            "{case}"
        );
    }
    let raw = r.raw_bytes().unwrap();
    let docs = documents(&raw, e.stream);
    assert!(
        !carried(e.upstream, &docs, e.stream).is_empty(),
        "{case}: {}",
        String::from_utf8_lossy(&raw)
    );
    names_exactly(e.upstream, &raw, e.stream, &e.upstream_id, case);
    if let Some(passed) = &e.passed {
        let json = |s: &str| Value::from(s).to_string();
        let got = String::from_utf8_lossy(passed).replace(&json(&e.name), &json(&e.upstream_id));
        assert_eq!(got, String::from_utf8_lossy(&raw), "{case}: the bytes");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_reply_names_the_client_model_and_the_record_the_upstream_one() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), CacheConfig::default()).await;
    let mut expected = Vec::new();
    for client in DIALECTS {
        for upstream in DIALECTS {
            for stream in [false, true] {
                let model = format!("up-{upstream}/echo");
                expected.push(ask(&gw, client, &model, stream, (&model, upstream)).await);
            }
        }
        for stream in [false, true] {
            // An alias of the `models:` table: passed through for a Messages client (the
            // Claude Code case), translated for the others.
            let alias = ("up-messages/echo", Dialect::Messages);
            expected.push(ask(&gw, client, ALIAS, stream, alias).await);
        }
    }
    // A route of two members: the first refuses (503), the second answers, and is named
    // in the header and the record; the reply names the route's name.
    let member = ("up-messages/mock-large", Dialect::Messages);
    for client in [Dialect::Chat, Dialect::Messages] {
        for stream in [false, true] {
            expected.push(ask(&gw, client, ROUTE, stream, member).await);
        }
    }
    gw.shutdown().await.unwrap();
    let (mut recs, _) = records(dir.path(), expected.len()).await;
    recs.sort_by_key(|r| r.number);
    assert_eq!(recs.len(), expected.len());
    for (r, e) in recs.iter().zip(&expected) {
        check_record(r, e);
    }
    // The route's records say which route served.
    assert!(recs[recs.len() - 4..]
        .iter()
        .all(|r| r.route.as_deref() == Some("pair")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cache_hit_names_the_model_of_the_client_it_answers() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let cache = CacheConfig {
        mode: CacheMode::ReadWrite,
        ..CacheConfig::default()
    };
    let gw = gateway(&mock, dir.path(), cache).await;
    for client in DIALECTS {
        for stream in [false, true] {
            let case = format!("{client} (stream: {stream})");
            let model = format!("up-{client}/echo");
            let request = Request::user(format!("cache me: {case}")).with_max_tokens(16);
            let (status, _, first) = send(&gw, client, &model, &request, stream).await;
            assert_eq!(status, 200, "{case}");
            // Exact: the recorded bytes, the model named as the client names it.
            let before = mock.received();
            let (status, header, again) = send(&gw, client, &model, &request, stream).await;
            assert_eq!(status, 200, "{case}");
            assert_eq!(mock.received(), before, "{case}: a hit");
            assert_eq!(again, first, "{case}: byte for byte");
            assert_eq!(header.as_deref(), Some(model.as_str()), "{case}");
            names_exactly(client, &again, stream, &model, &case);
            // Translated: another dialect asks the same, through the alias of the same
            // reference where it is one, and reads its own name.
            let other = DIALECTS[(DIALECTS.iter().position(|d| *d == client).unwrap() + 1) % 4];
            let (status, header, translated) = send(&gw, other, &model, &request, !stream).await;
            assert_eq!(status, 200, "{case}");
            assert_eq!(mock.received(), before, "{case} → {other}: a hit");
            assert_eq!(header.as_deref(), Some(model.as_str()), "{case} → {other}");
            names_exactly(
                other,
                &translated,
                !stream,
                &model,
                &format!("{case} → {other}"),
            );
        }
    }
    // An alias and its reference share their entries: the hit names each client's own.
    let request = Request::user("cache me through an alias").with_max_tokens(16);
    let (status, _, _) = send(&gw, Dialect::Messages, "up-messages/echo", &request, true).await;
    assert_eq!(status, 200);
    let before = mock.received();
    let (status, header, body) = send(&gw, Dialect::Messages, ALIAS, &request, true).await;
    assert_eq!(status, 200);
    let hit = mock.received() == before;
    assert_eq!(header.as_deref(), Some("up-messages/echo"));
    names_exactly(
        Dialect::Messages,
        &body,
        true,
        ALIAS,
        &format!("alias (hit: {hit})"),
    );
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn an_embedding_names_the_client_model_passed_through_and_translated() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path(), CacheConfig::default()).await;
    for model in ["mock/emb", "up-gemini/emb"] {
        let r = reqwest::Client::new()
            .post(format!("{}/v1/embeddings", gw.url()))
            .header("content-type", "application/json")
            .body(serde_json::json!({"model": model, "input": ["hello"]}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{model}");
        assert_eq!(r.headers()["x-switchyard-model"], model);
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["model"], model);
    }
    let (recs, _) = records(dir.path(), 2).await;
    let passed = recs.iter().find(|r| r.reference == "mock/emb").unwrap();
    let raw: Value = serde_json::from_slice(&passed.raw_bytes().unwrap()).unwrap();
    assert_eq!(raw["model"], "emb", "the record keeps the provider's bytes");
    gw.shutdown().await.unwrap();
}
