//! Redaction over real sockets (docs/reliability.md, "Redaction"). An upstream repeating
//! the backend's key (the mock's `echo-key` fault: in `www-authenticate`, the request-id
//! header, an error's message or a reply's text), for every client × upstream dialect,
//! whole and streamed, passed through and translated; and a client key of `keys:` sent up
//! in a prompt and a model name and echoed back. Neither key is found anywhere: not in the
//! client's reply bytes or headers, not in any file of the data directory (records, index,
//! refusal trace), not in the log events, not in the spans (contents captured), not in
//! `/metrics`. Each echo is also seen to come back as `[redacted]`, so the test cannot pass
//! because nothing was echoed.

mod common;
#[path = "../../switchyard/tests/common/otlp.rs"]
mod otlp;
#[path = "../../switchyard/tests/common/split_key.rs"]
mod split_key;

use common::recording::{env, key, records, send, ALICE, UPSTREAM};
use common::{decode, gateway_for, DIALECTS};
use otlp::Collector;
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use switchyard::trace::{OtelConfig, Protocol};
use switchyard_gateway::{start, GatewayConfig, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::{Dialect, Request};

const MARKER: &str = "[redacted]";

/// The spans' collector, with contents on (prompts and replies on the spans), and the log
/// events of the whole binary at trace level, both set up once.
fn collector() -> &'static Collector {
    static C: OnceLock<Collector> = OnceLock::new();
    C.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_writer(|| LogWriter)
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "switchyard=trace,switchyard_gateway=trace",
            ))
            .with_ansi(false)
            .try_init();
        let c = Collector::http();
        let mut config = OtelConfig::new(c.url.clone(), Protocol::HttpProtobuf);
        config.contents = true;
        switchyard::trace::start(&config).expect("the export starts");
        c
    })
}

static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

/// Every log event, as the formatter wrote it (before any writer of `serve`'s).
struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A gateway with the client key `alice`, every mock backend sending `UPSTREAM_KEY`,
/// recording into `dir`, not retrying.
async fn gateway(mock: &MockServer, dir: &Path) -> RunningGateway {
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys: vec![key("alice", "ALICE_KEY", None)],
        store: Some(dir.to_path_buf()),
        ..GatewayConfig::default()
    };
    let extra: Vec<String> = std::iter::once("mock".to_string())
        .chain(DIALECTS.iter().map(|d| format!("up-{d}")))
        .map(|b| format!("backends.{b}.api_key_env=UPSTREAM_KEY"))
        .collect();
    let g = gateway_for(&mock.base_url(), config, env(), &extra);
    start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// Asserts that no reply byte and no header holds `secret`.
fn clean_reply(case: &str, headers: &reqwest::header::HeaderMap, body: &[u8], secret: &str) {
    assert!(
        !holds(body, secret),
        "{case}: the key in the reply: {}",
        String::from_utf8_lossy(body)
    );
    for (name, value) in headers {
        assert!(
            !holds(value.as_bytes(), secret),
            "{case}: the key in the header {name}"
        );
    }
}

/// Every file under `dir`, read raw: none holds a key.
fn clean_files(dir: &Path, secrets: &[&str]) -> usize {
    let mut files = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files += clean_files(&path, secrets);
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for secret in secrets {
            assert!(!holds(&bytes, secret), "a key in {}", path.display());
        }
        files += 1;
    }
    files
}

/// `/metrics`, the log and the spans: none holds a key.
async fn clean_elsewhere(gw: &RunningGateway, c: &Collector, secrets: &[&str]) {
    let metrics = reqwest::get(format!("{}/metrics", gw.url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for secret in secrets {
        assert!(!metrics.contains(secret), "a key in /metrics:\n{metrics}");
        let spans = format!("{:?}", c.spans());
        assert!(!spans.contains(secret), "a key in the spans: {spans}");
    }
    // The log: the backend's key only (a client's prompt and model name are its own
    // words, written in an event as they came; `serve`'s log writer redacts those, see
    // the CLI's tests/redaction.rs).
    let log = LOG.lock().unwrap().clone();
    assert!(!holds(&log, UPSTREAM), "the backend's key in the log");
}

#[tokio::test]
async fn a_backend_key_echoed_by_the_upstream_reaches_no_exit() {
    let c = collector();
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path()).await;
    let mut calls = 0;
    for upstream in DIALECTS {
        for client in DIALECTS {
            for fault in ["echo-key", "echo-key-500", "echo-key-200"] {
                for stream in [false, true] {
                    let model = format!("up-{upstream}/{fault}");
                    let case = format!("{client} → {model}, stream {stream}");
                    let request = Request::user(format!("case {calls}"));
                    let (status, headers, body) =
                        send(&gw, ALICE, client, &model, &request, stream).await;
                    calls += 1;
                    clean_reply(&case, &headers, &body, UPSTREAM);
                    let text = String::from_utf8_lossy(&body);
                    assert!(text.contains(MARKER), "{case}: no echo came back: {text}");
                    match fault {
                        // The upstream refusing the gateway's key is the gateway's
                        // problem: a 502 quoting the refusal.
                        "echo-key" => assert_eq!(status, 502, "{case}: {text}"),
                        "echo-key-500" => assert_eq!(status, 500, "{case}: {text}"),
                        _ => {
                            assert_eq!(status, 200, "{case}: {text}");
                            let reply = decode(client, &body, stream);
                            assert_eq!(reply.text(), format!("The key you sent is {MARKER}."));
                        }
                    }
                    assert!(
                        mock.requests()
                            .last()
                            .is_some_and(|r| r.headers.iter().any(|(_, v)| v.contains(UPSTREAM))),
                        "{case}: the upstream was sent the key"
                    );
                }
            }
        }
    }
    let (got, _) = records(dir.path(), calls).await;
    assert_eq!(got.len(), calls);
    // The records say what the upstream said, without the key: the refusals' messages in
    // `attempts[].error` and the replies' texts.
    let log = std::fs::read_dir(dir.path().join("llm_log"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect::<String>();
    let refusals = format!("Incorrect API key provided: {MARKER}");
    assert!(log.matches(&refusals).count() >= 2 * 16, "{log}");
    assert!(log.contains(&format!("The key you sent is {MARKER}.")));
    clean_elsewhere(&gw, c, &[UPSTREAM, ALICE]).await;
    gw.shutdown().await.unwrap();
    assert!(clean_files(dir.path(), &[UPSTREAM, ALICE]) >= 2);
}

#[tokio::test]
async fn metrics_and_spans_of_echoed_keys_hold_no_key() {
    let c = collector();
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path()).await;
    for d in DIALECTS {
        let model = format!("up-{d}/echo-key-200");
        let (status, _, _) = send(&gw, ALICE, d, &model, &Request::user("m"), true).await;
        assert_eq!(status, 200);
    }
    // The spans carry the reply's contents: `[redacted]` where the key was.
    let spans = c.wait_for(1, |s| {
        format!("{:?}", s.attrs).contains(&format!("The key you sent is {MARKER}"))
    });
    assert!(!spans.is_empty());
    clean_elsewhere(&gw, c, &[UPSTREAM, ALICE]).await;
    gw.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_client_key_sent_up_and_echoed_back_reaches_no_exit() {
    let c = collector();
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let gw = gateway(&mock, dir.path()).await;
    let mut calls = 0;
    for client in DIALECTS {
        for upstream in [client, Dialect::Chat] {
            for stream in [false, true] {
                // In the prompt (echoed as the reply's text) and in the model name (the
                // mock says it: the reply's text, a metrics label, a span's name). The
                // text is one delta: a key a model spells out over several events of a
                // stream is not one run of bytes, and reaches a streaming client (see
                // docs/reliability.md, "Redaction").
                for (model, prompt) in [
                    (
                        format!("up-{upstream}/echo+chunk-1000"),
                        format!("my key is {ALICE}"),
                    ),
                    (
                        format!("up-{upstream}/chunk-1000+say:{ALICE}"),
                        "say it".to_string(),
                    ),
                ] {
                    let case = format!("{client} → {model}, stream {stream}");
                    let (status, headers, body) =
                        send(&gw, ALICE, client, &model, &Request::user(prompt), stream).await;
                    calls += 1;
                    clean_reply(&case, &headers, &body, ALICE);
                    assert_eq!(status, 200, "{case}: {}", String::from_utf8_lossy(&body));
                    let reply = decode(client, &body, stream);
                    assert!(reply.text().contains(MARKER), "{case}: {}", reply.text());
                }
            }
        }
    }
    records(dir.path(), calls).await;
    clean_elsewhere(&gw, c, &[UPSTREAM, ALICE]).await;
    gw.shutdown().await.unwrap();
    assert!(clean_files(dir.path(), &[UPSTREAM, ALICE]) >= 2);
}

#[tokio::test]
async fn a_key_cut_between_two_network_chunks_is_found_passed_through_and_translated() {
    // A chat provider whose reply holds the backend's key cut between two writes.
    let base = split_key::start(UPSTREAM).await;
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys: vec![key("alice", "ALICE_KEY", None)],
        store: Some(dir.path().to_path_buf()),
        ..GatewayConfig::default()
    };
    let extra = vec!["backends.up-chat.api_key_env=UPSTREAM_KEY".to_string()];
    let gw = start(
        gateway_for(&base, config, env(), &extra),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let mut calls = 0;
    for client in DIALECTS {
        for stream in [false, true] {
            let case = format!("{client} → up-chat, stream {stream}");
            let (status, headers, body) =
                send(&gw, ALICE, client, "up-chat/m", &Request::user("x"), stream).await;
            calls += 1;
            assert_eq!(status, 200, "{case}: {}", String::from_utf8_lossy(&body));
            clean_reply(&case, &headers, &body, UPSTREAM);
            let reply = decode(client, &body, stream);
            assert_eq!(reply.text(), split_key::text(MARKER), "{case}");
        }
    }
    records(dir.path(), calls).await;
    gw.shutdown().await.unwrap();
    assert!(clean_files(dir.path(), &[UPSTREAM, ALICE]) >= 2);
}
