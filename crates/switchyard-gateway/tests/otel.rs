//! The gateway's traces, received by an OTLP collector over HTTP (the library's
//! tests/common/otlp.rs): a SERVER span per call continuing the client's `traceparent`,
//! with the client key's name, the cost, the status, and a CLIENT span per attempt
//! upstream; a whole call passed through, a streamed one translated, a retried one
//! (waits recorded, never slept), a failed one; the export's counts in `/metrics`.

mod common;
#[path = "../../switchyard/tests/common/otlp.rs"]
mod otlp;

use common::recording::{env, key, ALICE};
use common::{client_body, gateway_waiting, path};
use otlp::{children, Collector, Got, CLIENT, SERVER};
use serde_json::json;
use std::sync::{Arc, OnceLock};
use switchyard::trace::{OtelConfig, Protocol};
use switchyard_gateway::{start, GatewayConfig, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

fn collector() -> &'static Collector {
    static C: OnceLock<Collector> = OnceLock::new();
    C.get_or_init(|| {
        let c = Collector::http();
        switchyard::trace::start(&OtelConfig::new(c.url.clone(), Protocol::HttpProtobuf))
            .expect("the export starts");
        c
    })
}

/// A gateway with the key `alice`, `echo` priced, retrying through a recording sleeper
/// and recording nowhere (spans need no store).
async fn gateway(mock: &MockServer) -> (RunningGateway, Arc<switchyard::RecordingSleeper>) {
    let config = GatewayConfig {
        keys: vec![key("alice", "ALICE_KEY", None)],
        ..GatewayConfig::default()
    };
    let mut extra = Vec::new();
    for b in [
        "mock",
        "up-chat",
        "up-messages",
        "up-responses",
        "up-gemini",
    ] {
        extra.push(format!("backends.{b}.prices.echo={{input: 1, output: 2}}"));
    }
    let sleeper = Arc::new(switchyard::RecordingSleeper::new());
    let g = gateway_waiting(&mock.base_url(), config, env(), &extra, sleeper.clone());
    assert!(g.store_dir().is_none());
    (
        start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap(),
        sleeper,
    )
}

/// Sends `text` as `client` to `model` with a `traceparent` of trace `trace`; gives the
/// status and body.
async fn send(
    gw: &RunningGateway,
    client: Dialect,
    model: &str,
    text: &str,
    stream: bool,
    trace: &str,
) -> (u16, Vec<u8>) {
    let r = reqwest::Client::new()
        .post(format!("{}{}", gw.url(), path(client, model, stream)))
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {ALICE}"))
        .header("traceparent", format!("00-{trace}-00f067aa0ba902b7-01"))
        .body(client_body(client, model, &Request::user(text), stream))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    (status, r.bytes().await.unwrap().to_vec())
}

/// The call span of trace `trace` and its attempts, waiting for `attempts` of them: a
/// call's spans are queued one by one, so a batch may end between the call and its
/// attempts.
fn call_of(c: &Collector, trace: &str, attempts: usize) -> (Got, Vec<Got>) {
    let t = trace.to_string();
    let got = c.wait_for(1, move |s| s.trace_id == t && s.kind == SERVER);
    assert_eq!(got.len(), 1, "{:?}", c.spans());
    let call = got[0].clone();
    // The caller's span is the parent, remote.
    assert_eq!(call.parent_span_id, "00f067aa0ba902b7");
    let parent = call.clone();
    c.wait_for(attempts, move |s| {
        s.parent_span_id == parent.span_id && s.trace_id == parent.trace_id
    });
    let attempts = children(&c.spans(), &call);
    (call, attempts)
}

#[tokio::test]
async fn a_whole_call_passed_through_continues_the_callers_trace() {
    let c = collector();
    let mock = MockServer::start().await;
    let (gw, _) = gateway(&mock).await;
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let (status, _) = send(&gw, Dialect::Chat, "up-chat/echo", "whole", false, trace).await;
    assert_eq!(status, 200);
    let (call, attempts) = call_of(c, trace, 1);
    assert_eq!(call.name, "chat echo");
    assert!(!call.error);
    let a = &call.attrs;
    assert_eq!(a["gen_ai.operation.name"], "chat");
    assert_eq!(a["gen_ai.provider.name"], "up-chat");
    assert_eq!(a["gen_ai.request.model"], "echo");
    assert_eq!(a["switchyard.client_key"], "alice");
    assert_eq!(a["switchyard.client_dialect"], "chat");
    assert_eq!(a["switchyard.upstream_dialect"], "chat");
    assert_eq!(a["http.response.status_code"], json!(200));
    assert_eq!(a["gen_ai.response.finish_reasons"], json!(["stop"]));
    assert!(a.contains_key("gen_ai.response.id"), "{a:?}");
    assert!(a["gen_ai.usage.input_tokens"].as_i64().unwrap() > 0);
    assert!(
        a["switchyard.cost_usd"].as_f64().unwrap() > 0.0,
        "priced: {a:?}"
    );
    // No contents unless the config asks, and never the key.
    assert!(!a.contains_key("gen_ai.input.messages"));
    assert!(!format!("{:?}", c.spans()).contains(ALICE));
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].kind, CLIENT);
    assert_eq!(attempts[0].attrs["switchyard.attempt"], json!(1));
}

#[tokio::test]
async fn a_streamed_call_translated_is_one_span() {
    let c = collector();
    let mock = MockServer::start().await;
    let (gw, _) = gateway(&mock).await;
    let trace = "5bf92f3577b34da6a3ce929d0e0e4736";
    let (status, _) = send(
        &gw,
        Dialect::Messages,
        "up-chat/echo",
        "streamed",
        true,
        trace,
    )
    .await;
    assert_eq!(status, 200);
    let (call, attempts) = call_of(c, trace, 1);
    let a = &call.attrs;
    assert_eq!(a["switchyard.stream"], json!(true));
    assert_eq!(a["switchyard.client_dialect"], "messages");
    assert_eq!(a["switchyard.upstream_dialect"], "chat");
    assert!(a["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0);
    assert!(a.contains_key("switchyard.time_to_first_byte_ms"));
    assert_eq!(attempts.len(), 1);
}

#[tokio::test]
async fn a_retried_call_has_both_attempts() {
    let c = collector();
    let mock = MockServer::start().await;
    let (gw, sleeper) = gateway(&mock).await;
    let trace = "6bf92f3577b34da6a3ce929d0e0e4736";
    let (status, _) = send(
        &gw,
        Dialect::Chat,
        "up-chat/fault-429-then-ok",
        "retried",
        false,
        trace,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(sleeper.waits().len(), 1, "waited once, never slept");
    let (call, attempts) = call_of(c, trace, 2);
    assert!(!call.error);
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert_eq!(attempts[0].attrs["http.response.status_code"], json!(429));
    assert_eq!(attempts[0].attrs["error.type"], "RateLimited");
    assert!(
        attempts[1].attrs["switchyard.wait_before_ms"]
            .as_f64()
            .unwrap()
            > 0.0
    );
}

#[tokio::test]
async fn a_failed_call_is_an_error_span() {
    let c = collector();
    let mock = MockServer::start().await;
    let (gw, _) = gateway(&mock).await;
    let trace = "7bf92f3577b34da6a3ce929d0e0e4736";
    let (status, _) = send(
        &gw,
        Dialect::Chat,
        "up-chat/fault-400",
        "failed",
        false,
        trace,
    )
    .await;
    assert_eq!(status, 400);
    let (call, attempts) = call_of(c, trace, 1);
    assert!(call.error);
    assert_eq!(call.attrs["http.response.status_code"], json!(400));
    assert!(call.attrs.contains_key("error.type"), "{:?}", call.attrs);
    assert_eq!(attempts.len(), 1);
    assert!(attempts[0].error);

    // The export's counts in /metrics.
    let metrics = reqwest::get(format!("{}/metrics", gw.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let exported = metrics
        .lines()
        .find_map(|l| l.strip_prefix("switchyard_otel_spans_exported_total "))
        .and_then(|v| v.parse::<u64>().ok())
        .expect("the exported count");
    assert!(exported >= 2, "{metrics}");
    assert!(metrics.contains("switchyard_otel_spans_dropped_total{reason=\"queue_full\"} 0"));
    assert!(metrics.contains("switchyard_otel_spans_dropped_total{reason=\"export_failed\"} 0"));
}
