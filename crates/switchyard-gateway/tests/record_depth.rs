//! A body at any depth the gateway accepts makes a record the store's readers read: on
//! every dialect's endpoint, a value nested at every depth up to `listen.max_json_depth`
//! (at the body's top level, and inside a tool's schema, which a record wraps deeper) is
//! answered, and its record reads back whole (the reader `log show` uses), its body as
//! sent; one level past the limit is refused with 400 before anything is forwarded or
//! recorded. Translated to another dialect, where the body sent upstream nests deeper
//! than the client's, every record still reads.

mod common;

use common::{gateway_for, path, DIALECTS};
use serde_json::Value;
use switchyard::env::MapEnv;
use switchyard::record::{self, read_log, read_record, MAX_BODY_DEPTH};
use switchyard_gateway::{start, GatewayConfig, StoreDurability, StoreOptions};
use switchyard_mock::MockServer;
use switchyard_wire::Dialect;

/// A value `levels` arrays deep (0: a number).
fn nested(levels: usize) -> String {
    format!("{}7{}", "[".repeat(levels), "]".repeat(levels))
}

/// Where the deep value goes.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// A field of the body's own (kept by the record under `request.passthrough`).
    TopLevel,
    /// A tool's parameter schema, as its `default` (kept under `request.tools[0]`).
    ToolSchema,
}

/// The level the deep value opens at in the body (the body's object is level 1).
fn opens_at(client: Dialect, place: Place) -> usize {
    match (place, client) {
        (Place::TopLevel, _) => 2,
        // tools[0].function.parameters.default, tools[0].parameters.default,
        // tools[0].input_schema.default, tools[0].functionDeclarations[0].parameters.default
        (Place::ToolSchema, Dialect::Chat) => 6,
        (Place::ToolSchema, Dialect::Responses | Dialect::Messages) => 5,
        (Place::ToolSchema, Dialect::Gemini) => 7,
    }
}

/// A client's body with `value` at `place`.
fn body(client: Dialect, model: &str, place: Place, value: &str) -> String {
    let schema = format!(r#"{{"type":"object","properties":{{}},"default":{value}}}"#);
    let (extra, tools) = match place {
        Place::TopLevel => (value.to_string(), String::new()),
        Place::ToolSchema => ("1".to_string(), schema),
    };
    match client {
        Dialect::Chat => {
            let tools = if tools.is_empty() {
                String::new()
            } else {
                format!(
                    r#","tools":[{{"type":"function","function":{{"name":"f","parameters":{tools}}}}}]"#
                )
            };
            format!(
                r#"{{"model":"{model}","messages":[{{"role":"user","content":"deep"}}],"metadata":{extra}{tools}}}"#
            )
        }
        Dialect::Responses => {
            let tools = if tools.is_empty() {
                String::new()
            } else {
                format!(r#","tools":[{{"type":"function","name":"f","parameters":{tools}}}]"#)
            };
            format!(r#"{{"model":"{model}","input":"deep","metadata":{extra}{tools}}}"#)
        }
        Dialect::Messages => {
            let tools = if tools.is_empty() {
                String::new()
            } else {
                format!(r#","tools":[{{"name":"f","input_schema":{tools}}}]"#)
            };
            format!(
                r#"{{"model":"{model}","max_tokens":5,"messages":[{{"role":"user","content":"deep"}}],"metadata":{extra}{tools}}}"#
            )
        }
        Dialect::Gemini => {
            let tools = if tools.is_empty() {
                String::new()
            } else {
                format!(
                    r#","tools":[{{"functionDeclarations":[{{"name":"f","parameters":{tools}}}]}}]"#
                )
            };
            format!(
                r#"{{"contents":[{{"role":"user","parts":[{{"text":"deep"}}]}}],"labels":{extra}{tools}}}"#
            )
        }
    }
}

/// The deep value as the record's body holds it.
fn recorded_value(client: Dialect, place: Place, body: &Value) -> Value {
    match (place, client) {
        (Place::TopLevel, Dialect::Gemini) => body["labels"].clone(),
        (Place::TopLevel, _) => body["metadata"].clone(),
        (Place::ToolSchema, Dialect::Chat) => {
            body["tools"][0]["function"]["parameters"]["default"].clone()
        }
        (Place::ToolSchema, Dialect::Gemini) => {
            body["tools"][0]["functionDeclarations"][0]["parameters"]["default"].clone()
        }
        (Place::ToolSchema, Dialect::Responses) => {
            body["tools"][0]["parameters"]["default"].clone()
        }
        (Place::ToolSchema, Dialect::Messages) => {
            body["tools"][0]["input_schema"]["default"].clone()
        }
    }
}

/// How deep a JSON text nests.
fn depth_of(json: &[u8]) -> usize {
    let (mut low, mut high) = (0, record::MAX_RECORD_DEPTH);
    while low < high {
        let mid = (low + high) / 2;
        if record::first_too_deep(json, mid).is_none() {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    low
}

async fn recording_gateway(
    mock: &MockServer,
    dir: &std::path::Path,
) -> switchyard_gateway::RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        store: Some(dir.to_path_buf()),
        // Each reply's last byte waits for its record: read at once, it is there.
        store_options: StoreOptions {
            durability: StoreDurability::Answered,
            ..StoreOptions::default()
        },
        ..GatewayConfig::default()
    };
    let gateway = gateway_for(&mock.base_url(), config, MapEnv::default(), &[]);
    start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap()
}

async fn post(http: &reqwest::Client, url: &str, body: String) -> (u16, String) {
    let r = http
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_depth_the_gateway_accepts_is_answered_and_its_record_reads_back() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = recording_gateway(&mock, dir.path()).await;
    let http = reqwest::Client::new();
    let mut sent = Vec::new();
    for client in DIALECTS {
        let url = format!("{}{}", gw.url(), path(client, "mock/echo", false));
        for place in [Place::TopLevel, Place::ToolSchema] {
            let first = opens_at(client, place);
            // The value opens at `first`: it nests up to the limit, then one past it.
            for levels in 0..=(MAX_BODY_DEPTH + 2 - first) {
                let value = nested(levels);
                // The body's deepest level along the value (its other fields are shallower).
                let deepest = first - 1 + levels;
                let (status, reply) =
                    post(&http, &url, body(client, "mock/echo", place, &value)).await;
                if deepest <= MAX_BODY_DEPTH {
                    assert_eq!(
                        status, 200,
                        "{client} {place:?} at depth {deepest}: {reply}"
                    );
                    sent.push((client, place, deepest, value));
                } else {
                    assert_eq!(
                        status, 400,
                        "{client} {place:?} at depth {deepest}: {reply}"
                    );
                    assert!(
                        reply.contains(&format!("more than {MAX_BODY_DEPTH} levels deep"))
                            && reply.contains("listen.max_json_depth"),
                        "{client} {place:?}: {reply}"
                    );
                }
            }
        }
    }
    let forwarded = mock.received() as usize;
    assert_eq!(forwarded, sent.len(), "a body past the limit was forwarded");
    gw.shutdown().await.unwrap();

    let log = read_log(dir.path()).unwrap();
    assert!(log.set_aside.is_empty(), "{:?}", log.set_aside);
    assert_eq!(
        log.records.len(),
        sent.len(),
        "one record per answered call"
    );
    // How much deeper a record is than its body: what RECORD_WRAPPING leaves room for.
    let mut lines = Vec::new();
    record::for_each_record_line(dir.path(), |_, line| {
        lines.push(depth_of(line));
        Ok(())
    })
    .unwrap();
    let wrapping = sent
        .iter()
        .zip(&lines)
        .filter(|((_, _, deepest, _), _)| *deepest >= 10)
        .map(|((_, _, deepest, _), line)| line - deepest)
        .max()
        .unwrap();
    assert!(
        (1..=4).contains(&wrapping),
        "a record nests {wrapping} levels deeper than its body"
    );
    assert!(lines.iter().all(|d| *d <= MAX_BODY_DEPTH + 4));
    for (n, (client, place, deepest, value)) in sent.iter().enumerate() {
        // As `log show N` reads it: by number, through the index.
        let r = read_record(dir.path(), n as u64 + 1).unwrap_or_else(|e| {
            panic!(
                "{client} {place:?} at depth {deepest}: call {} does not read: {e}",
                n + 1
            )
        });
        assert!(!r.depth_capped, "{client} {place:?} at depth {deepest}");
        assert_eq!(r.client_dialect, Some(*client));
        let body = record::body_json(&r).expect("the body sent is recorded");
        let expected: Value = record::from_slice_bounded(value.as_bytes(), MAX_BODY_DEPTH).unwrap();
        assert_eq!(
            recorded_value(*client, *place, &body),
            expected,
            "{client} {place:?} at depth {deepest}: the body as sent"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn translated_the_deepest_bodies_still_make_records_that_read() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = recording_gateway(&mock, dir.path()).await;
    let http = reqwest::Client::new();
    let mut calls = 0;
    for client in DIALECTS {
        for upstream in DIALECTS.into_iter().filter(|d| *d != client) {
            let model = format!("up-{upstream}/echo");
            let url = format!("{}{}", gw.url(), path(client, &model, false));
            let first = opens_at(client, Place::ToolSchema);
            for levels in (MAX_BODY_DEPTH - 2 - first)..=(MAX_BODY_DEPTH + 2 - first) {
                let (status, reply) = post(
                    &http,
                    &url,
                    body(client, &model, Place::ToolSchema, &nested(levels)),
                )
                .await;
                // Translated, the schema may sit deeper upstream than the client had it:
                // the upstream may refuse it (the mock reads 127 levels, as the gateway
                // does). Whatever it answers, the call is answered and recorded.
                assert!(
                    [200, 400].contains(&status),
                    "{client} → {upstream} at {levels}: {status} {reply}"
                );
                if first + levels - 1 <= MAX_BODY_DEPTH {
                    calls += 1;
                }
            }
        }
    }
    gw.shutdown().await.unwrap();
    let log = read_log(dir.path()).unwrap();
    assert!(log.set_aside.is_empty(), "{:?}", log.set_aside);
    assert_eq!(log.records.len(), calls);
    for n in 1..=calls as u64 {
        read_record(dir.path(), n).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_the_deepest_bodies_are_answered_and_their_records_read_back() {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = recording_gateway(&mock, dir.path()).await;
    let http = reqwest::Client::new();
    let mut calls = 0;
    for client in DIALECTS {
        let url = format!("{}{}", gw.url(), path(client, "mock/echo", true));
        for place in [Place::TopLevel, Place::ToolSchema] {
            let first = opens_at(client, place);
            for levels in (MAX_BODY_DEPTH - 2 - first)..=(MAX_BODY_DEPTH + 2 - first) {
                let mut body = body(client, "mock/echo", place, &nested(levels));
                if client != Dialect::Gemini {
                    body.replace_range(0..1, r#"{"stream":true,"#);
                }
                let (status, reply) = post(&http, &url, body).await;
                if first - 1 + levels <= MAX_BODY_DEPTH {
                    assert_eq!(status, 200, "{client} {place:?} at {levels}: {reply}");
                    assert!(reply.contains("data:"), "{client}: not a stream: {reply}");
                    calls += 1;
                } else {
                    assert_eq!(status, 400, "{client} {place:?} at {levels}: {reply}");
                }
            }
        }
    }
    gw.shutdown().await.unwrap();
    let log = read_log(dir.path()).unwrap();
    assert!(log.set_aside.is_empty(), "{:?}", log.set_aside);
    assert_eq!(log.records.len(), calls);
    for n in 1..=calls as u64 {
        let r = read_record(dir.path(), n).unwrap();
        assert!(r.stream && !r.depth_capped, "call {n}");
    }
}
