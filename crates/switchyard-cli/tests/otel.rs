//! `switchyard ask`'s traces, as the built binary sends them before it exits: to the
//! collector `OTEL_EXPORTER_OTLP_ENDPOINT` names, or the run config's `otel:` (contents
//! when it asks); a section with a mistake refused, naming what is accepted; a collector
//! that never answers delaying the exit by the export timeout at most.

mod common;
use common::serving;
#[path = "../../switchyard/tests/common/otlp.rs"]
mod otlp;

use common::*;
use otlp::{by, children, Collector, CLIENT, SERVER};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

#[test]
fn ask_exports_to_the_endpoint_in_the_environment_before_it_exits() {
    let collector = Collector::http();
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let r = run(switchyard(home.path())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &collector.url)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
        .env("OTEL_SERVICE_NAME", "cli-test")
        .args([
            "ask",
            "mock/echo",
            "traced ask",
            "--no-stream",
            "--role",
            "asker",
        ])
        .arg(mock_override(&mock)));
    assert!(r.ok, "{}", r.err);
    // The process has exited: its spans are in already (no waiting here).
    let calls: Vec<_> = collector
        .spans()
        .into_iter()
        .filter(by("switchyard.role", "asker"))
        .collect();
    assert_eq!(calls.len(), 1, "{:?}", collector.spans());
    let call = &calls[0];
    assert_eq!(call.name, "chat echo");
    assert_eq!(call.kind, CLIENT);
    assert_eq!(call.service, "cli-test");
    assert_eq!(call.attrs["gen_ai.provider.name"], "mock");
    assert!(!call.attrs.contains_key("gen_ai.input.messages"));
    assert_eq!(children(&collector.spans(), call).len(), 1);
}

#[test]
fn the_run_configs_otel_section_and_its_contents() {
    let collector = Collector::http();
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("run.yaml");
    std::fs::write(
        &config,
        format!(
            "otel:\n  endpoint: {}\n  contents: true\n  service_name: from-file\n",
            collector.url
        ),
    )
    .unwrap();
    let r = run(switchyard(home.path())
        .args(["ask", "--config"])
        .arg(&config)
        .args([
            "mock/echo",
            "with contents",
            "--no-stream",
            "--role",
            "filed",
        ])
        .arg(mock_override(&mock)));
    assert!(r.ok, "{}", r.err);
    let calls: Vec<_> = collector
        .spans()
        .into_iter()
        .filter(by("switchyard.role", "filed"))
        .collect();
    assert_eq!(calls.len(), 1, "{:?}", collector.spans());
    assert_eq!(calls[0].service, "from-file");
    assert!(calls[0].attrs["gen_ai.input.messages"]
        .as_str()
        .unwrap()
        .contains("with contents"));
}

#[test]
fn a_mistake_in_the_section_is_refused_naming_what_is_accepted() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("run.yaml");
    std::fs::write(
        &config,
        "otel:\n  endpoint: http://127.0.0.1:4318\n  sampler: always\n  protocol: thrift\n",
    )
    .unwrap();
    let r = run(switchyard(home.path())
        .args(["check", "--config"])
        .arg(&config));
    assert!(!r.ok);
    let text = format!("{}{}", r.out, r.err);
    assert!(text.contains("otel.sampler"), "{text}");
    assert!(text.contains("endpoint, protocol, contents"), "{text}");
    assert!(text.contains("grpc, http/protobuf"), "{text}");
}

#[test]
fn a_collector_that_never_answers_delays_the_exit_by_the_timeout_at_most() {
    let hanging = Collector::hanging();
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("run.yaml");
    std::fs::write(
        &config,
        format!("otel:\n  endpoint: {hanging}\n  timeout: 500ms\n"),
    )
    .unwrap();
    let started = Instant::now();
    let r = run(switchyard(home.path())
        .args(["ask", "--config"])
        .arg(&config)
        .args(["mock/echo", "hang", "--no-stream"])
        .arg(mock_override(&mock)));
    let took = started.elapsed();
    assert!(r.ok, "the call succeeds: {}", r.err);
    assert_eq!(r.out, "hang\n");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn serve_continues_a_traceparent_and_sends_its_spans_before_it_exits() {
    let collector = Collector::http();
    let home = tempfile::tempdir().unwrap();
    let (child, addr) = serving::serve(
        home.path(),
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url.as_str())],
        &[],
    );
    let body = serving::chat("served and traced");
    let mut s = std::net::TcpStream::connect(&addr).unwrap();
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ntraceparent: 00-8bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    // Stopped at once: the span is still in its batch, and must be sent on the way out.
    let (code, err) = serving::stop(child);
    assert_eq!(code, Some(0), "{err}");
    let spans = collector.spans();
    let call = spans
        .iter()
        .find(|s| s.trace_id == "8bf92f3577b34da6a3ce929d0e0e4736")
        .unwrap_or_else(|| panic!("{spans:?}"));
    assert_eq!(call.kind, SERVER);
    assert_eq!(call.parent_span_id, "00f067aa0ba902b7");
    assert_eq!(call.name, "chat echo");
    assert_eq!(children(&spans, call).len(), 1);
}
