//! An OTLP collector for the trace tests, on 127.0.0.1: `ExportTraceServiceRequest`s
//! received over HTTP (`POST /v1/traces`, axum) or gRPC (tonic), decoded with the
//! protocol's own prost types and kept as flat [`Got`] spans; or a collector that accepts
//! connections and never answers (`hanging`). Shared by the library's, the gateway's and
//! the CLI's trace tests (`#[path]`).

#![allow(dead_code)]

use axum::response::IntoResponse;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::AnyValue;
use prost::Message;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One received span, flattened.
#[derive(Debug, Clone)]
pub(crate) struct Got {
    pub(crate) name: String,
    /// 2 SERVER, 3 CLIENT (the protocol's numbers).
    pub(crate) kind: i32,
    pub(crate) trace_id: String,
    pub(crate) span_id: String,
    pub(crate) parent_span_id: String,
    pub(crate) attrs: BTreeMap<String, Value>,
    /// Status code 2 (error).
    pub(crate) error: bool,
    /// The status's message.
    pub(crate) status_message: String,
    pub(crate) service: String,
    pub(crate) start_ns: u64,
    pub(crate) end_ns: u64,
}

impl Got {
    pub(crate) fn attr(&self, key: &str) -> Option<&Value> {
        self.attrs.get(key)
    }
}

pub(crate) const SERVER: i32 = 2;
pub(crate) const CLIENT: i32 = 3;

/// The collector: its base URL and what it received.
#[derive(Clone)]
pub(crate) struct Collector {
    pub(crate) url: String,
    spans: Arc<Mutex<Vec<Got>>>,
    pub(crate) requests: Arc<Mutex<Vec<BTreeMap<String, String>>>>,
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn value(v: &Option<AnyValue>) -> Value {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(Any::StringValue(s)) => Value::String(s.clone()),
        Some(Any::BoolValue(b)) => Value::Bool(*b),
        Some(Any::IntValue(i)) => Value::from(*i),
        Some(Any::DoubleValue(d)) => Value::from(*d),
        Some(Any::ArrayValue(a)) => {
            Value::Array(a.values.iter().map(|v| value(&Some(v.clone()))).collect())
        }
        _ => Value::Null,
    }
}

fn keep(spans: &Mutex<Vec<Got>>, request: ExportTraceServiceRequest) {
    let mut out = spans.lock().unwrap();
    for rs in request.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| value(&kv.value).as_str().map(str::to_string))
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for s in ss.spans {
                out.push(Got {
                    name: s.name,
                    kind: s.kind,
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_span_id: hex(&s.parent_span_id),
                    attrs: s
                        .attributes
                        .iter()
                        .map(|kv| (kv.key.clone(), value(&kv.value)))
                        .collect(),
                    error: s.status.as_ref().is_some_and(|st| st.code == 2),
                    status_message: s
                        .status
                        .as_ref()
                        .map(|st| st.message.clone())
                        .unwrap_or_default(),
                    service: service.clone(),
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                });
            }
        }
    }
}

/// Runs `serve` on a runtime of its own, on a thread of its own, for the whole test
/// binary (the tests' runtimes come and go).
fn in_thread<F>(make: impl FnOnce(tokio::net::TcpListener) -> F + Send + 'static) -> String
where
    F: std::future::Future<Output = ()> + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            make(listener).await;
        });
    });
    format!("http://{}", rx.recv().unwrap())
}

impl Collector {
    /// OTLP over HTTP, protobuf bodies.
    pub(crate) fn http() -> Collector {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (s, r) = (spans.clone(), requests.clone());
        let url = in_thread(move |listener| async move {
            let app = axum::Router::new().route(
                "/v1/traces",
                axum::routing::post(
                    move |headers: axum::http::HeaderMap, body: axum::body::Bytes| async move {
                        r.lock().unwrap().push(
                            headers
                                .iter()
                                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                                .collect(),
                        );
                        match ExportTraceServiceRequest::decode(body) {
                            Ok(req) => {
                                keep(&s, req);
                                (
                                    [("content-type", "application/x-protobuf")],
                                    ExportTraceServiceResponse::default().encode_to_vec(),
                                )
                                    .into_response()
                            }
                            Err(_) => axum::http::StatusCode::BAD_REQUEST.into_response(),
                        }
                    },
                ),
            );
            axum::serve(listener, app).await.unwrap();
        });
        Collector {
            url,
            spans,
            requests,
        }
    }

    /// OTLP over gRPC.
    pub(crate) fn grpc() -> Collector {
        let spans = Arc::new(Mutex::new(Vec::new()));
        let s = spans.clone();
        let url = in_thread(move |listener| async move {
            let incoming = tonic::transport::server::TcpIncoming::from(listener);
            tonic::transport::Server::builder()
                .add_service(TraceServiceServer::new(Grpc(s)))
                .serve_with_incoming(incoming)
                .await
                .unwrap();
        });
        Collector {
            url,
            spans,
            requests: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// Accepts connections and never answers: an export to it hangs until its timeout.
    pub(crate) fn hanging() -> String {
        in_thread(|listener| async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        })
    }

    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<Got> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits (polling, 5 s at most) until `pick` finds `n` spans, and gives them.
    pub(crate) fn wait_for(&self, n: usize, pick: impl Fn(&Got) -> bool) -> Vec<Got> {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            switchyard::trace::flush(Duration::from_secs(2));
            let found: Vec<Got> = self.spans().into_iter().filter(|s| pick(s)).collect();
            if found.len() >= n || Instant::now() > until {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

struct Grpc(Arc<Mutex<Vec<Got>>>);

#[tonic::async_trait]
impl TraceService for Grpc {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        keep(&self.0, request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

/// The call spans whose `key` attribute is `value`.
pub(crate) fn by(key: &'static str, value: &'static str) -> impl Fn(&Got) -> bool {
    move |s| s.attr(key).and_then(Value::as_str) == Some(value)
}

/// The children of `parent`, by attempt number.
pub(crate) fn children(all: &[Got], parent: &Got) -> Vec<Got> {
    let mut c: Vec<Got> = all
        .iter()
        .filter(|s| s.parent_span_id == parent.span_id && s.trace_id == parent.trace_id)
        .cloned()
        .collect();
    c.sort_by_key(|s| s.attr("switchyard.attempt").and_then(Value::as_i64));
    c
}
