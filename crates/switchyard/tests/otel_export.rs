//! The export itself, in one test since there is one export per process: over gRPC to a
//! tonic collector; to a collector that never answers (calls as fast as ever, the spans
//! past the queue's bound dropped and counted); to a port nobody listens on (the failed
//! exports counted).

mod common;
#[path = "common/otlp.rs"]
mod otlp;

use common::{default_timeouts, handle};
use otlp::{by, children, Collector};
use std::time::{Duration, Instant};
use switchyard::trace::{OtelConfig, Protocol};
use switchyard::{Dialect, Request};
use switchyard_mock::MockServer;

#[tokio::test]
async fn grpc_then_a_hanging_then_an_unreachable_collector() {
    let mock = MockServer::start().await;
    let (llm, _) = handle(&mock, Dialect::Chat, "echo", default_timeouts());

    // gRPC.
    let grpc = Collector::grpc();
    switchyard::trace::start(&OtelConfig::new(grpc.url.clone(), Protocol::Grpc)).unwrap();
    let traced = llm.clone().with_role("grpc");
    traced.complete(Request::user("over grpc")).await.unwrap();
    let got = grpc.wait_for(1, by("switchyard.role", "grpc"));
    assert_eq!(got.len(), 1, "{:?}", grpc.spans());
    assert_eq!(got[0].name, "chat echo");
    assert_eq!(got[0].service, "switchyard");
    // No contents unless asked.
    assert!(!got[0].attrs.contains_key("gen_ai.input.messages"));
    assert_eq!(children(&grpc.spans(), &got[0]).len(), 1);
    let exported = switchyard::trace::stats().exported;
    assert!(exported >= 2, "{:?}", switchyard::trace::stats());

    // A collector that accepts and never answers: the export thread waits on it, the
    // calls do not.
    let mut hanging = OtelConfig::new(Collector::hanging(), Protocol::HttpProtobuf);
    hanging.max_queue = 4;
    hanging.timeout = Duration::from_secs(30);
    switchyard::trace::start(&hanging).unwrap();
    let before = switchyard::trace::stats();
    let started = Instant::now();
    for i in 0..40 {
        llm.complete(Request::user(format!("hang {i}")))
            .await
            .unwrap();
    }
    let took = started.elapsed();
    // 40 calls to a loopback mock; a call that waited on the export would take 30 s.
    assert!(took < Duration::from_secs(10), "{took:?}");
    let after = switchyard::trace::stats();
    // 80 spans; at most a batch (4) in the thread's hands and 4 queued.
    assert!(
        after.dropped_queue_full - before.dropped_queue_full >= 70,
        "{before:?} → {after:?}"
    );

    // Nobody listening: each export fails at once, its spans counted.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let mut unreachable = OtelConfig::new(closed, Protocol::HttpProtobuf);
    unreachable.timeout = Duration::from_secs(2);
    switchyard::trace::start(&unreachable).unwrap();
    let before = switchyard::trace::stats();
    let started = Instant::now();
    llm.complete(Request::user("nobody listens")).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(switchyard::trace::flush(Duration::from_secs(5)));
    let after = switchyard::trace::stats();
    assert_eq!(
        after.dropped_export_failed - before.dropped_export_failed,
        2,
        "{before:?} → {after:?}"
    );
    assert!(switchyard::trace::shutdown(Duration::from_secs(5)));
    assert!(!switchyard::trace::enabled());
}
