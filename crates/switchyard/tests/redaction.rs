//! Redaction in the library (docs/reliability.md, "Redaction"): a provider repeating the
//! backend's key (the mock's `echo-key` fault: in `www-authenticate`, the request-id
//! header, an error's message or a reply's text), through `Llm` in every dialect, whole and
//! streamed. The key is found nowhere: not in the error (its message, its details, its
//! debug print), not in the reply or its raw bytes, not in any file the recorder wrote, not
//! in the log events, not in the spans (contents captured). Each echo is also seen to come
//! back as `[redacted]`, so the test cannot pass because nothing was echoed.

mod common;
#[path = "common/otlp.rs"]
mod otlp;
#[path = "common/split_key.rs"]
mod split_key;

use common::{llm_with, registry, DIALECTS};
use futures::StreamExt;
use std::io::Write;
use std::sync::{Mutex, OnceLock};
use switchyard::env::MapEnv;
use switchyard::record::RecorderOptions;
use switchyard::registry::{LoadOptions, Registry};
use switchyard::trace::{OtelConfig, Protocol};
use switchyard::{Llm, Recorder, Request, RetryPolicy, RunInfo};
use switchyard_mock::MockServer;

const KEY: &str = "sk-library-redaction-0123456789abcdef";
const MARKER: &str = "[redacted]";

static LOG: Mutex<Vec<u8>> = Mutex::new(Vec::new());

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

/// The spans' collector (contents on) and the log events at trace level, set up once.
fn collector() -> &'static otlp::Collector {
    static C: OnceLock<otlp::Collector> = OnceLock::new();
    C.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_writer(|| LogWriter)
            .with_env_filter(tracing_subscriber::EnvFilter::new("switchyard=trace"))
            .with_ansi(false)
            .try_init();
        let c = otlp::Collector::http();
        let mut config = OtelConfig::new(c.url.clone(), Protocol::HttpProtobuf);
        config.contents = true;
        switchyard::trace::start(&config).expect("the export starts");
        c
    })
}

fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

#[tokio::test]
async fn a_key_echoed_by_the_provider_reaches_no_exit_of_the_library() {
    let c = collector();
    let mock = MockServer::start().await;
    let env = MapEnv::new([("MOCK_API_KEY", KEY)]);
    let registry = registry(&mock, &[], &env);
    let dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let mut calls = 0;
    for d in DIALECTS {
        for fault in ["echo-key", "echo-key-500", "echo-key-200"] {
            for stream in [false, true] {
                let case = format!("{d} {fault} stream {stream}");
                let llm = llm_with(&registry, d, fault, &env)
                    .with_retry(RetryPolicy::never())
                    .with_recorder(recorder.clone())
                    .with_role(format!("redaction-{d}-{fault}-{stream}"));
                let request = Request::user(format!("case {calls}"));
                calls += 1;
                let got = if stream {
                    match llm.stream(request).await {
                        Ok(mut s) => {
                            while let Some(e) = s.next().await {
                                e.unwrap();
                            }
                            Ok(s.reply())
                        }
                        Err(e) => Err(e),
                    }
                } else {
                    llm.complete(request).await
                };
                match got {
                    Ok(reply) => {
                        assert_eq!(fault, "echo-key-200", "{case}");
                        assert_eq!(reply.text(), format!("The key you sent is {MARKER}."));
                        let raw = &reply.raw;
                        assert!(!holds(raw, KEY), "{case}: the key in the raw bytes");
                        assert!(!format!("{reply:?}").contains(KEY), "{case}");
                    }
                    Err(e) => {
                        assert_ne!(fault, "echo-key-200", "{case}: {e}");
                        let shown = format!("{e} {e:?}");
                        assert!(
                            !shown.contains(KEY),
                            "{case}: the key in the error: {shown}"
                        );
                        assert!(shown.contains(MARKER), "{case}: no echo came back: {shown}");
                        let details = e.provider_details().expect("a provider's refusal");
                        for (name, value) in &details.headers {
                            assert!(!value.contains(KEY), "{case}: the key in {name}");
                        }
                        // The request-id header the mock puts the key in, where the
                        // dialect has one (Gemini's has none).
                        if d != switchyard::Dialect::Gemini {
                            assert!(
                                details.headers.iter().any(|(_, v)| v.contains(MARKER)),
                                "{case}: the echoing header is kept, redacted: {:?}",
                                details.headers
                            );
                        }
                    }
                }
            }
        }
    }
    assert!(mock
        .requests()
        .iter()
        .all(|r| r.headers.iter().any(|(_, v)| v.contains(KEY))));
    recorder.close().unwrap();
    let records = switchyard::record::read_records(dir.path()).unwrap();
    assert_eq!(records.len(), calls);
    let mut files = 0;
    for entry in walk(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(!holds(&bytes, KEY), "the key in {}", entry.display());
        files += 1;
    }
    assert!(files >= 2, "the log and the index");
    let segments: String = walk(&dir.path().join("llm_log"))
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(segments.contains(&format!("Incorrect API key provided: {MARKER}")));
    // Spans: the last calls' are exported in the background.
    c.wait_for(calls, |s| {
        s.attrs
            .get("switchyard.role")
            .and_then(|r| r.as_str())
            .is_some_and(|r| r.starts_with("redaction-"))
    });
    let spans = format!("{:?}", c.spans());
    assert!(!spans.contains(KEY), "the key in the spans");
    assert!(
        spans.contains(MARKER),
        "the spans say what was echoed, redacted"
    );
    let log = LOG.lock().unwrap().clone();
    assert!(!holds(&log, KEY), "the key in the log");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test]
async fn a_key_cut_between_two_network_chunks_is_found() {
    const SPLIT: &str = "sk-library-split-key-0123456789abcdef";
    let base = split_key::start(SPLIT).await;
    let env = MapEnv::new([("MOCK_BASE_URL", base), ("MOCK_API_KEY", SPLIT.to_string())]);
    let mut options = LoadOptions::new(&env);
    options.user_file = false;
    let registry = Registry::load(&options).unwrap();
    let llm = Llm::resolve(&registry, "mock/m", &env)
        .unwrap()
        .with_retry(RetryPolicy::never());
    let expected = split_key::text(MARKER);
    let reply = llm.complete(Request::user("whole")).await.unwrap();
    assert_eq!(reply.text(), expected);
    assert!(!holds(&reply.raw, SPLIT));
    let mut stream = llm.stream(Request::user("streamed")).await.unwrap();
    while let Some(e) = stream.next().await {
        assert!(!format!("{:?}", e.unwrap()).contains(SPLIT));
    }
    let reply = stream.reply();
    assert_eq!(reply.text(), expected);
    assert!(!holds(&reply.raw, SPLIT));
}
