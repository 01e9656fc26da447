//! A server that ignores `stream: true` and answers one whole JSON body (LiteLLM's proxy
//! on a mocked model does): the reply is taken as a whole reply and delivered as its
//! events, not as a stream cut off mid-way and asked again.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchyard::env::MapEnv;
use switchyard::record::{read_records, RecorderOptions};
use switchyard::registry::{Config, LoadOptions};
use switchyard::{Llm, Recorder, Request, RunInfo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const WHOLE: &str = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a whole hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":3,"total_tokens":6}}"#;
const ERROR: &str =
    r#"{"error":{"message":"model m is overloaded","type":"server_error","code":null}}"#;

/// A server answering every request with `body` as `application/json`, counting them.
async fn whole_json_server(body: &'static str) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let seen = Arc::new(AtomicUsize::new(0));
    let count = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let count = count.clone();
            tokio::spawn(async move {
                let mut got = Vec::new();
                let mut buf = [0u8; 4096];
                // The head, then as many body bytes as it announces.
                loop {
                    let n = socket.read(&mut buf).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    got.extend_from_slice(&buf[..n]);
                    let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if got.len() >= end + 4 + len {
                            break;
                        }
                    }
                }
                count.fetch_add(1, Ordering::SeqCst);
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
            });
        }
    });
    (url, seen)
}

fn llm(base_url: &str) -> Llm {
    let env = MapEnv::new::<&str, &str>([]);
    let mut opts = LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![
        format!("backends.stub.base_url={base_url}"),
        "backends.stub.apis=[chat]".to_string(),
        "backends.stub.key_required=false".to_string(),
    ];
    let config = Config::load(&opts).expect("config loads");
    let backend = config.registry.backend("stub").unwrap();
    let http = switchyard::connect::http_backend(backend, "m", None, &env).expect("http backend");
    Llm::new("stub/m", Arc::new(http), "m")
}

#[tokio::test]
async fn a_whole_json_answer_to_a_stream_is_the_reply_and_is_not_asked_again() {
    let (url, seen) = whole_json_server(WHOLE).await;
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let llm = llm(&url).with_recorder(recorder.clone());
    let started = Instant::now();
    let stream = llm.stream(Request::user("hi")).await.expect("a reply");
    let reply = stream.into_reply().await.expect("the whole reply");
    assert_eq!(reply.text(), "a whole hello");
    assert_eq!(reply.usage.map(|u| u.output), Some(3));
    assert_eq!(seen.load(Ordering::SeqCst), 1, "asked once, not again");
    // Before: taken as a stream cut off mid-way, asked again twice (35 s).
    assert!(started.elapsed() < Duration::from_secs(5));
    recorder.close().unwrap();

    // Recorded as the streamed call it was, and replayed the same.
    let records = read_records(tmp.path()).unwrap();
    assert_eq!(records.len(), 1);
    assert!(records[0].stream && records[0].error.is_none());
    let replayed = Llm::replaying(tmp.path(), None).unwrap();
    let again = replayed
        .stream(Request::user("hi"))
        .await
        .unwrap()
        .into_reply()
        .await
        .unwrap();
    assert_eq!(again.text(), "a whole hello");
}

#[tokio::test]
async fn a_whole_json_error_answer_to_a_stream_is_still_the_providers_error() {
    let (url, _) = whole_json_server(ERROR).await;
    let llm = llm(&url).with_retry(switchyard::RetryPolicy::never());
    let err = match llm.stream(Request::user("hi")).await {
        Ok(s) => s.into_reply().await.unwrap_err(),
        Err(e) => e,
    };
    assert!(err.to_string().contains("overloaded"), "{err}");
}
