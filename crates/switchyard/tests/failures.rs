//! Failures a user meets, one by one: a stream cut after output, context overflow caught
//! before sending and reported by providers with their numbers, a refused connection,
//! and the announcement of each wait.

mod common;

use common::{default_timeouts, handle};
use futures::StreamExt;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use switchyard::env::MapEnv;
use switchyard::registry::{LoadOptions, Registry};
use switchyard::{CallPolicy, Dialect, Error, ErrorKind, Llm, Request, RetryPolicy};
use switchyard_mock::MockServer;

#[tokio::test]
async fn a_stream_cut_after_output_is_not_sent_again_and_keeps_its_text() {
    for dialect in common::DIALECTS {
        let mock = MockServer::start().await;
        let (llm, sleeper) = handle(&mock, dialect, "cut-stream+lorem-40", default_timeouts());
        let outcome = llm.stream_detailed(Request::user("write")).await;
        assert_eq!(outcome.attempts.len(), 1, "{dialect}");
        let mut stream = outcome.result.expect("the stream starts");
        let mut shown = String::new();
        let mut error = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(switchyard::Event::TextDelta { text, .. }) => shown.push_str(&text),
                Ok(_) => {}
                Err(e) => error = Some(e),
            }
        }
        let error = error.expect("the cut ends the stream with an error");
        assert_eq!(error.kind(), ErrorKind::ProviderReplyMalformed, "{dialect}");
        assert!(
            error.to_string().contains("cut off") || error.to_string().contains("end"),
            "{dialect}: {error}"
        );
        // Exactly one request: nothing was re-sent, no wait was asked for.
        assert_eq!(mock.requests().len(), 1, "{dialect}");
        assert!(sleeper.waits().is_empty(), "{dialect}");
        // The partial text is kept, and it is what the caller was shown.
        let partial = stream.reply().text();
        assert!(!partial.is_empty(), "{dialect}");
        assert_eq!(partial, shown, "{dialect}");
        assert!(
            partial.split_whitespace().count() < 40,
            "{dialect}: {partial}"
        );
        assert!(!stream.reply().raw.is_empty(), "{dialect}");
    }
}

#[tokio::test]
async fn provider_context_errors_carry_their_numbers() {
    type Numbers = (Option<u64>, Option<u64>, Option<u64>);
    let cases: &[(&str, Dialect, Numbers)] = &[
        (
            "context-overflow",
            Dialect::Chat,
            (Some(9000), None, Some(8192)),
        ),
        (
            "context-overflow",
            Dialect::Messages,
            (Some(219898), None, Some(200000)),
        ),
        (
            "context-overflow",
            Dialect::Gemini,
            (Some(1200000), None, Some(1048576)),
        ),
        (
            "context-overflow-max-tokens",
            Dialect::Chat,
            (Some(8000), Some(1000), Some(8192)),
        ),
        (
            "context-overflow-max-tokens",
            Dialect::Responses,
            (Some(8000), Some(1000), Some(8192)),
        ),
        (
            "context-overflow-max-tokens",
            Dialect::Messages,
            (Some(197000), Some(8192), Some(200000)),
        ),
        (
            "context-overflow-vllm",
            Dialect::Chat,
            (Some(4000), Some(1000), Some(4096)),
        ),
    ];
    for (model, dialect, want) in cases {
        let mock = MockServer::start().await;
        let (llm, _) = handle(&mock, *dialect, model, default_timeouts());
        match llm.complete(Request::user("long")).await {
            Err(Error::ContextLengthExceeded {
                prompt_tokens,
                max_tokens,
                limit,
                details,
                ..
            }) => {
                assert_eq!(
                    (prompt_tokens, max_tokens, limit),
                    *want,
                    "{model} · {dialect}"
                );
                let details = details.expect("the provider's error is kept");
                assert_eq!(details.status, 400, "{model} · {dialect}");
                assert!(!details.body.is_empty());
            }
            other => panic!("{model} · {dialect}: {other:?}"),
        }
    }
}

fn mock_registry(mock: &MockServer, window: u64) -> (Registry, MapEnv) {
    let env = MapEnv::new([("MOCK_BASE_URL", mock.base_url())]);
    let mut options = LoadOptions::new(&env);
    options.user_file = false;
    options.overrides = vec![format!("backends.mock.context_window={window}")];
    (Registry::load(&options).expect("registry"), env)
}

#[tokio::test]
async fn a_request_that_cannot_fit_is_refused_before_sending() {
    let mock = MockServer::start().await;
    let (registry, env) = mock_registry(&mock, 1000);
    let llm = Llm::resolve(&registry, "mock/echo", &env).expect("handle");
    assert_eq!(llm.context_window(), Some(1000));
    // About 900 tokens of prompt (3,600 bytes ÷ 4) and 200 of output: 1,100 > 1,000.
    let mut request = Request::user("word ".repeat(720));
    request.max_tokens = Some(200);
    let outcome = llm.complete_detailed(request.clone()).await;
    match &outcome.result {
        Err(Error::ContextLengthExceeded {
            prompt_tokens: Some(prompt),
            max_tokens: Some(200),
            limit: Some(1000),
            details: None,
            message,
        }) => {
            assert!((900..1000).contains(prompt), "{prompt}");
            assert!(message.starts_with("not sent"), "{message}");
            assert!(message.contains("context_check: false"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(outcome.attempts.is_empty());
    assert_eq!(mock.requests().len(), 0);

    // Less output fits; the check off sends anything.
    request.max_tokens = Some(50);
    assert!(llm.complete(request.clone()).await.is_ok());
    request.max_tokens = Some(200);
    let unchecked = Llm::resolve_with(
        &registry,
        "mock/echo",
        &env,
        CallPolicy {
            context_check: false,
            ..CallPolicy::default()
        },
    )
    .expect("handle");
    assert!(unchecked.complete(request).await.is_ok());
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_refused_connection_is_transport_and_retried_only_when_asked() {
    // A port nobody listens on: bind one, note it, free it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let env = MapEnv::new([("MOCK_BASE_URL", format!("http://127.0.0.1:{port}/v1"))]);
    let mut options = LoadOptions::new(&env);
    options.user_file = false;
    let registry = Registry::load(&options).expect("registry");
    let sleeper = switchyard::RecordingSleeper::new();
    let llm = Llm::resolve(&registry, "mock/echo", &env)
        .expect("handle")
        .with_sleeper(Arc::new(sleeper.clone()));
    let outcome = llm.complete_detailed(Request::user("hi")).await;
    let error = outcome.result.expect_err("nobody listens");
    assert_eq!(error.kind(), ErrorKind::Transport);
    assert!(
        error.to_string().starts_with("could not reach mock"),
        "{error}"
    );
    assert_eq!(outcome.attempts.len(), 1);

    let llm = llm.with_retry(RetryPolicy {
        transport: vec![Duration::from_secs(1), Duration::from_secs(2)],
        ..RetryPolicy::default()
    });
    let outcome = llm.complete_detailed(Request::user("hi")).await;
    assert_eq!(outcome.attempts.len(), 3);
    assert_eq!(
        sleeper.waits(),
        vec![Duration::from_secs(1), Duration::from_secs(2)]
    );
    assert_eq!(outcome.attempts[2].wait_before, Duration::from_secs(2));
    assert_eq!(outcome.attempts[2].error_kind, Some(ErrorKind::Transport));
}

/// A writer collecting what the tracing subscriber prints.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut v) = self.0.lock() {
            v.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn each_wait_is_announced_with_backend_reason_wait_and_count() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    tracing::subscriber::with_default(subscriber, || {
        runtime.block_on(async {
            let mock = MockServer::start().await;
            let (llm, _) = handle(
                &mock,
                Dialect::Messages,
                "fault-429-retry-45-2-then-ok",
                default_timeouts(),
            );
            llm.complete(Request::user("hi")).await.expect("recovers");
        })
    });
    let text = String::from_utf8_lossy(&captured.0.lock().expect("log")).into_owned();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("WARN")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains(
            "mock: rate_limited; waiting 45 s before attempt 2 (retry 1 of 3 for rate_limited)"
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("waiting 1 min before attempt 3 (retry 2 of 3"),
        "{}",
        lines[1]
    );
    assert!(lines[0].contains("HTTP 429"), "{}", lines[0]);
}
