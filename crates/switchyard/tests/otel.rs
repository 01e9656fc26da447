//! Traces received by an OTLP collector over HTTP (tests/common/otlp.rs): a library
//! call's span and its attempts' for a whole, a streamed, a retried (the waits recorded,
//! never slept) and a failed call, with the GenAI attributes, Switchyard's own, and the
//! contents this binary's export asks for. One export per process, so every test of
//! this binary shares it and finds its own spans by role.

mod common;
#[path = "common/otlp.rs"]
mod otlp;

use common::{default_timeouts, handle};
use futures::StreamExt;
use otlp::{by, children, Collector, CLIENT};
use serde_json::json;
use std::sync::OnceLock;
use switchyard::trace::{OtelConfig, Protocol};
use switchyard::{Dialect, Request, RetryPolicy};
use switchyard_mock::MockServer;

fn collector() -> &'static Collector {
    static C: OnceLock<Collector> = OnceLock::new();
    C.get_or_init(|| {
        let c = Collector::http();
        let mut config = OtelConfig::new(c.url.clone(), Protocol::HttpProtobuf);
        config.contents = true;
        config.service_name = "otel-test".into();
        switchyard::trace::start(&config).expect("the export starts");
        c
    })
}

#[tokio::test]
async fn a_whole_call_is_one_client_span_with_one_attempt() {
    let c = collector();
    let mock = MockServer::start().await;
    let (llm, _) = handle(&mock, Dialect::Chat, "echo", default_timeouts());
    let llm = llm.with_role("whole");
    let reply = llm.complete(Request::user("trace me whole")).await.unwrap();
    let all = c.wait_for(1, by("switchyard.role", "whole"));
    assert_eq!(all.len(), 1, "{all:?}");
    let call = &all[0];
    assert_eq!(call.name, "chat echo");
    assert_eq!(call.kind, CLIENT);
    assert_eq!(call.service, "otel-test");
    assert_eq!(call.parent_span_id, "", "a root span");
    assert!(!call.error);
    let a = &call.attrs;
    assert_eq!(a["gen_ai.operation.name"], "chat");
    assert_eq!(a["gen_ai.provider.name"], "mock");
    assert_eq!(a["gen_ai.request.model"], "echo");
    let usage = reply.usage.unwrap();
    assert_eq!(a["gen_ai.usage.input_tokens"], json!(usage.input));
    assert_eq!(a["gen_ai.usage.output_tokens"], json!(usage.output));
    assert_eq!(a["gen_ai.response.finish_reasons"], json!(["stop"]));
    if let Some(id) = &reply.id {
        assert_eq!(a["gen_ai.response.id"], json!(id));
    }
    assert_eq!(a["switchyard.stream"], json!(false));
    assert_eq!(a["switchyard.cache_hit"], json!(false));
    assert_eq!(a["switchyard.attempts"], json!(1));
    // The mock's models have no price here: no cost, rather than a cost of 0.
    assert!(!a.contains_key("switchyard.cost_usd"), "{a:?}");
    assert!(!a.contains_key("error.type"));
    // Contents, as this export asks.
    let input: serde_json::Value =
        serde_json::from_str(a["gen_ai.input.messages"].as_str().unwrap()).unwrap();
    assert_eq!(input[0]["parts"][0]["content"], "trace me whole");
    assert!(a["gen_ai.output.messages"]
        .as_str()
        .unwrap()
        .contains("trace me whole"));
    let attempts = children(&c.spans(), call);
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].kind, CLIENT);
    assert_eq!(attempts[0].attrs["switchyard.attempt"], json!(1));
    assert_eq!(attempts[0].attrs["switchyard.wait_before_ms"], json!(0.0));
    assert!(attempts[0].start_ns >= call.start_ns && attempts[0].end_ns <= call.end_ns);
}

#[tokio::test]
async fn a_streamed_call_is_traced_when_its_stream_ends() {
    let c = collector();
    let mock = MockServer::start().await;
    let (llm, _) = handle(&mock, Dialect::Messages, "echo", default_timeouts());
    let llm = llm.with_role("streamed");
    let mut stream = llm
        .stream(Request::user("trace me streamed"))
        .await
        .unwrap();
    while let Some(e) = stream.next().await {
        e.unwrap();
    }
    drop(stream);
    let all = c.wait_for(1, by("switchyard.role", "streamed"));
    assert_eq!(all.len(), 1, "{all:?}");
    let a = &all[0].attrs;
    assert_eq!(a["switchyard.stream"], json!(true));
    assert_eq!(a["gen_ai.operation.name"], "chat");
    assert_eq!(a["switchyard.upstream_dialect"], "messages");
    assert!(a["gen_ai.usage.output_tokens"].as_i64().unwrap() > 0);
    assert!(a.contains_key("gen_ai.response.finish_reasons"));
    assert_eq!(children(&c.spans(), &all[0]).len(), 1);
}

#[tokio::test]
async fn a_retried_call_has_an_attempt_span_per_try() {
    let c = collector();
    let mock = MockServer::start().await;
    let (llm, sleeper) = handle(
        &mock,
        Dialect::Chat,
        "fault-429-then-ok",
        default_timeouts(),
    );
    let llm = llm.with_role("retried");
    llm.complete(Request::user("trace me retried"))
        .await
        .unwrap();
    assert_eq!(sleeper.waits().len(), 1, "waited once, recorded, not slept");
    let all = c.wait_for(1, by("switchyard.role", "retried"));
    assert_eq!(all.len(), 1);
    let call = &all[0];
    assert!(!call.error, "the call succeeded");
    assert_eq!(call.attrs["switchyard.attempts"], json!(2));
    let attempts = children(&c.spans(), call);
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    let first = &attempts[0].attrs;
    assert_eq!(first["switchyard.attempt"], json!(1));
    assert_eq!(first["http.response.status_code"], json!(429));
    assert_eq!(first["error.type"], "RateLimited");
    assert!(attempts[0].error);
    let second = &attempts[1].attrs;
    assert_eq!(second["switchyard.attempt"], json!(2));
    assert_eq!(
        second["switchyard.wait_before_ms"],
        json!(sleeper.waits()[0].as_secs_f64() * 1000.0)
    );
    assert!(!second.contains_key("error.type"));
    assert!(!attempts[1].error);
}

#[tokio::test]
async fn a_failed_call_has_error_type_and_status_error() {
    let c = collector();
    let mock = MockServer::start().await;
    let (llm, _) = handle(&mock, Dialect::Chat, "fault-500", default_timeouts());
    let llm = llm.with_role("failed").with_retry(RetryPolicy::never());
    let e = llm
        .complete(Request::user("trace me failed"))
        .await
        .unwrap_err();
    let all = c.wait_for(1, by("switchyard.role", "failed"));
    assert_eq!(all.len(), 1);
    let call = &all[0];
    assert!(call.error);
    assert_eq!(call.attrs["error.type"], json!(e.kind().as_str()));
    assert!(!call.attrs.contains_key("gen_ai.usage.input_tokens"));
    let attempts = children(&c.spans(), call);
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].attrs["http.response.status_code"], json!(500));
}

#[tokio::test]
async fn a_route_is_one_span_with_its_members_attempts() {
    let c = collector();
    let mock = MockServer::start().await;
    let env = switchyard::env::MapEnv::default();
    let registry = common::registry(
        &mock,
        &["routes.traced.try=[mock/fault-500, mock/echo]"],
        &env,
    );
    let llm = switchyard::Llm::resolve(&registry, "traced", &env)
        .unwrap()
        .with_retry(RetryPolicy::never())
        .with_role("routed");
    llm.complete(Request::user("trace me routed"))
        .await
        .unwrap();
    let all = c.wait_for(1, by("switchyard.role", "routed"));
    assert_eq!(
        all.len(),
        1,
        "one span for the route, none for its members: {all:?}"
    );
    assert_eq!(all[0].attrs["switchyard.route"], "traced");
    assert_eq!(all[0].attrs["switchyard.reference"], "mock/echo");
    let attempts = children(&c.spans(), &all[0]);
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].attrs["switchyard.member"], "mock/fault-500");
    assert_eq!(attempts[1].attrs["switchyard.member"], "mock/echo");
    assert_eq!(attempts[1].attrs["gen_ai.request.model"], "echo");
}
