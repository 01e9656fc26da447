//! Upstream replies are bounded where their bytes enter: a hostile upstream
//! (`common/hostile.rs`) sends an endless whole body (with and without a `Content-Length`),
//! an endless stream, one endless SSE line and an endless error body, to the gateway
//! (every client dialect, passed through and translated, whole and streamed) and to the
//! library's `Llm` directly. Each call ends within its bound with the error its client
//! understands (a whole reply's error in its dialect, a stream's error event and never
//! its clean end), is asked once (`ReplyTooLarge` is not retried), its upstream
//! connection closed rather than drained, its record naming the bound, and the process's
//! peak memory grows by a bounded amount.

mod common;

use common::hostile::{reset_peak, rss, Hostile, HostileServer};
use common::{client_body, gateway_waiting, path, DIALECTS};
use std::sync::Arc;
use std::time::Duration;
use switchyard::backend::auth::Credential;
use switchyard::backend::http::{Endpoint, HttpBackend, HttpConfig, ReplyLimits, Timeouts};
use switchyard::record::CallRecord;
use switchyard::{Error, ErrorKind, Llm, RecordingSleeper, ReplyBound, Request};
use switchyard_gateway::{start, GatewayConfig};
use switchyard_wire::{codec, ByteStreamDecoder, DecodeError, Dialect, Event};

/// Small bounds, so that each case is quick.
const LIMITS: ReplyLimits = ReplyLimits {
    max_reply_bytes: 1 << 20,
    max_stream_bytes: 4 << 20,
    max_event_bytes: 256 << 10,
    max_error_body_bytes: 16 << 10,
};

/// What a record keeps of a reply here.
const RECORDED: usize = 512 << 10;

/// How much the process's peak may grow while one kind of hostile answer is served to
/// every case (a few bounds' worth; unbounded, it grows until the call is cut by the test).
const PEAK_GROWTH: u64 = 96 << 20;

/// How long one call may take (bounded reads on loopback take milliseconds).
const CALL_TIME: Duration = Duration::from_secs(20);

/// Held by each test for its whole run: the peak resident set is the process's, so the
/// tests of this file run one at a time for each to measure its own.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A call's shape: the client's dialect, the upstream's, and whether it streams.
#[derive(Debug, Clone, Copy)]
struct Case {
    client: Dialect,
    upstream: Dialect,
    stream: bool,
}

/// Every client dialect passed through and translated (to the next dialect), for each
/// of `streams`.
fn cases(streams: &[bool]) -> Vec<Case> {
    let mut out = Vec::new();
    for (i, &client) in DIALECTS.iter().enumerate() {
        for upstream in [client, DIALECTS[(i + 1) % DIALECTS.len()]] {
            for &stream in streams {
                out.push(Case {
                    client,
                    upstream,
                    stream,
                });
            }
        }
    }
    out
}

/// What a client got: the status and body.
struct Got {
    case: Case,
    status: u16,
    /// The `x-should-retry` header, when sent.
    should_retry: Option<String>,
    body: Vec<u8>,
}

impl Got {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The message of the error a whole answer carries in the client's dialect (every
    /// dialect's error object has `error.message`).
    fn whole_error(&self) -> String {
        let v: serde_json::Value = serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{:?}: not JSON ({e}): {}", self.case, self.text()));
        v["error"]["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{:?}: no error.message: {v}", self.case))
            .to_string()
    }

    /// The message of the error event that ends a stream, read by the client dialect's
    /// own decoder.
    fn stream_error(&self) -> String {
        let mut decoder = ByteStreamDecoder::new(codec(self.case.client));
        let events = match decoder.push(&self.body) {
            Ok(events) => events,
            Err(DecodeError::Provider(e)) => return e.message,
            Err(e) => panic!("{:?}: {e}: {}", self.case, self.text()),
        };
        events
            .iter()
            .find_map(|e| match e {
                Event::Error(e) => Some(e.message.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{:?}: no error event: {}", self.case, self.text()))
    }

    /// The stream's clean end is not in it.
    fn assert_no_clean_end(&self) {
        let end = match self.case.client {
            Dialect::Chat => "[DONE]",
            Dialect::Responses => "response.completed",
            Dialect::Messages => "message_stop",
            Dialect::Gemini => "finishReason",
        };
        assert!(
            !self.text().contains(end),
            "{:?}: the stream ended cleanly",
            self.case
        );
    }
}

/// Serves `how` to every case through one gateway with the small bounds, recording into
/// a fresh directory; gives what each client got, the records, the server and the
/// process's peak growth.
async fn through_gateway(
    how: Hostile,
    streams: &[bool],
) -> (Vec<Got>, Vec<CallRecord>, HostileServer, u64) {
    let server = HostileServer::start(how).await;
    let dir = tempfile::tempdir().unwrap();
    let config = GatewayConfig {
        store: Some(dir.path().to_path_buf()),
        reply_limits: LIMITS,
        max_recorded_reply_bytes: RECORDED,
        // The default retries, with waits that are not real: a bound passed is not retried.
        ..GatewayConfig::default()
    };
    let gateway = gateway_waiting(
        &format!("{}/v1", server.origin),
        config,
        Default::default(),
        &[],
        Arc::new(RecordingSleeper::new()),
    );
    let running = start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let send = |case: Case| {
        let model = format!("up-{}/m", case.upstream);
        http.post(format!(
            "{}{}",
            running.url(),
            path(case.client, &model, case.stream)
        ))
        .header("content-type", "application/json")
        .body(client_body(
            case.client,
            &model,
            &Request::user("hi"),
            case.stream,
        ))
        .send()
    };
    // First every case with a client that keeps nothing, measuring the process's peak
    // (the gateway's share: the client's own copy of what it got would count too)…
    reset_peak();
    let (before, _) = rss();
    for case in cases(streams) {
        let call = async {
            let mut r = send(case).await.unwrap();
            while r.chunk().await.unwrap().is_some() {}
        };
        tokio::time::timeout(CALL_TIME, call)
            .await
            .unwrap_or_else(|_| panic!("{how:?} {case:?}: did not end within {CALL_TIME:?}"));
    }
    let (_, peak) = rss();
    // …then again, keeping what each client got.
    let mut got = Vec::new();
    for case in cases(streams) {
        let call = async {
            let r = send(case).await.unwrap();
            let status = r.status().as_u16();
            let should_retry = r
                .headers()
                .get("x-should-retry")
                .map(|v| v.to_str().unwrap().to_string());
            (status, should_retry, r.bytes().await.unwrap().to_vec())
        };
        let (status, should_retry, body) = tokio::time::timeout(CALL_TIME, call)
            .await
            .unwrap_or_else(|_| panic!("{how:?} {case:?}: did not end within {CALL_TIME:?}"));
        got.push(Got {
            case,
            status,
            should_retry,
            body,
        });
    }
    let records = common::recording::records(dir.path(), 2 * got.len())
        .await
        .0;
    (got, records, server, peak.saturating_sub(before))
}

/// Every record failed with `ReplyTooLarge` naming `bound` and its value, was asked
/// once, and keeps at most what a record may.
fn assert_records_name(records: &[CallRecord], bound: ReplyBound) {
    for r in records {
        let e = r
            .error
            .as_ref()
            .unwrap_or_else(|| panic!("call {} has no error", r.number));
        assert_eq!(e.kind, "ReplyTooLarge", "call {}: {e:?}", r.number);
        assert_eq!(e.fields["bound"], bound.setting(), "call {}", r.number);
        assert_eq!(e.fields["limit"], LIMITS.of(bound), "call {}", r.number);
        assert!(e.message.contains(bound.setting()), "{}", e.message);
        assert_eq!(r.attempts.len(), 1, "call {}: asked again", r.number);
        let raw = r.raw_bytes().unwrap();
        assert!(
            raw.len() <= RECORDED,
            "call {} kept {} bytes",
            r.number,
            raw.len()
        );
    }
}

fn assert_peak(how: Hostile, growth: u64) {
    eprintln!(
        "{how:?}: the peak resident set grew by {} KiB",
        growth >> 10
    );
    assert!(
        growth < PEAK_GROWTH,
        "{how:?}: the peak resident set grew by {} MiB",
        growth >> 20
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_bodies_past_max_reply_bytes_end_with_an_error_in_the_clients_dialect() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for how in [Hostile::EndlessBody, Hostile::AnnouncedBody] {
        // Streamed requests too: a JSON answer to one is read as a whole body.
        let (got, records, server, growth) = through_gateway(how, &[false, true]).await;
        for g in &got {
            assert_eq!(g.status, 502, "{how:?} {:?}: {}", g.case, g.text());
            // A client's SDK is told not to ask again.
            assert_eq!(
                g.should_retry.as_deref(),
                Some("false"),
                "{how:?} {:?}",
                g.case
            );
            let message = g.whole_error();
            assert!(
                message.contains("a reply body past its bound of 1 MiB (`max_reply_bytes`)"),
                "{how:?} {:?}: {message}",
                g.case
            );
        }
        assert_records_name(&records, ReplyBound::Reply);
        let asked = 2 * got.len();
        assert_eq!(
            server.requests.load(std::sync::atomic::Ordering::SeqCst),
            asked
        );
        assert_eq!(server.closed_at_least(asked).await, asked, "{how:?}");
        if how == Hostile::AnnouncedBody {
            // Refused on its `Content-Length`: nothing read, and the raw keeps nothing.
            assert!(records.iter().all(|r| r.raw.is_none()), "{how:?}");
            // What fits in the sockets' buffers at most, of the 1 GiB announced.
            let sent = server.sent.load(std::sync::atomic::Ordering::SeqCst);
            assert!(
                sent < asked as u64 * (8 << 20),
                "{how:?}: the upstream sent {sent} bytes to {asked} calls"
            );
        } else {
            // The head of what came is kept, and said to be only that.
            for r in &records {
                let cut = r.raw_truncated.as_ref().expect("the head is marked");
                assert_eq!(cut.received, None);
                assert!(r.raw_bytes().unwrap().starts_with(b"{\"id\":\"x\""));
            }
        }
        assert_peak(how, growth);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_streams_end_at_max_stream_bytes_with_an_error_event() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let how = Hostile::EndlessStream;
    let (got, records, server, growth) = through_gateway(how, &[true]).await;
    for g in &got {
        assert_eq!(g.status, 200, "{:?}: {}", g.case, g.text());
        g.assert_no_clean_end();
        let message = g.stream_error();
        assert!(
            message.contains("a stream past its bound of 4 MiB (`max_stream_bytes`)"),
            "{:?}: {message}",
            g.case
        );
        // Cut at the bound: passed through, the client got at most the upstream's bytes;
        // translated, their events re-framed (a Responses client's stream closes each
        // item with its whole text, up to four times over).
        let most = match g.case.client == g.case.upstream {
            true => LIMITS.max_stream_bytes + (1 << 20),
            false => 5 * LIMITS.max_stream_bytes,
        };
        assert!(
            (g.body.len() as u64) < most,
            "{:?}: {} bytes",
            g.case,
            g.body.len()
        );
    }
    assert_records_name(&records, ReplyBound::Stream);
    for r in &records {
        assert!(
            r.cut,
            "call {}: a stream cut after its output began",
            r.number
        );
        let kept = r
            .raw_truncated
            .as_ref()
            .expect("more came than a record keeps");
        assert_eq!(kept.kept, RECORDED as u64, "call {}", r.number);
        assert!(kept.received.unwrap() > RECORDED as u64);
        assert_eq!(kept.setting, "limits.max_recorded_reply_bytes");
        // The reply the record keeps is what its bytes carry: the text streamed.
        let text = r.reply.as_ref().map(|r| r.text()).unwrap_or_default();
        assert!(text.starts_with("hello"), "call {}: {text:.40}", r.number);
        assert!(text.len() > 1000, "call {}: {text}", r.number);
    }
    assert_eq!(server.closed_at_least(2 * got.len()).await, 2 * got.len());
    assert_peak(how, growth);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_endless_sse_line_ends_at_max_event_bytes_with_an_error_event() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let how = Hostile::EndlessLine;
    let (got, records, server, growth) = through_gateway(how, &[true]).await;
    let expected = "one stream event past its bound of 256 KiB (`max_event_bytes`)";
    for g in &got {
        // The line never goes out.
        assert!(!g.text().contains("padding"), "{:?}", g.case);
        if g.status == 502 {
            // Gemini's decoder holds its first text back until the next chunk: nothing was
            // output yet, so the client gets the whole error in its dialect.
            assert_eq!(
                g.case.upstream,
                Dialect::Gemini,
                "{:?}: the text went out",
                g.case
            );
            assert!(g.whole_error().contains(expected), "{:?}", g.case);
            continue;
        }
        assert_eq!(g.status, 200, "{:?}: {}", g.case, g.text());
        g.assert_no_clean_end();
        let message = g.stream_error();
        assert!(message.contains(expected), "{:?}: {message}", g.case);
        assert!(g.text().contains("hello"), "{:?}", g.case);
    }
    assert_records_name(&records, ReplyBound::Event);
    assert_eq!(server.closed_at_least(2 * got.len()).await, 2 * got.len());
    assert_peak(how, growth);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_error_body_is_read_to_max_error_body_bytes_and_answered() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let how = Hostile::EndlessError;
    let (got, records, server, growth) = through_gateway(how, &[false, true]).await;
    for g in &got {
        assert_eq!(g.status, 500, "{:?}: {}", g.case, g.text());
        if g.case.client == g.case.upstream {
            // Passed through as the provider wrote it: its head.
            assert!(
                g.body.len() <= 16 << 10,
                "{:?}: {} bytes",
                g.case,
                g.body.len()
            );
            assert!(g.text().starts_with("{\"error\":{\"message\":\"eee"));
        } else {
            let message = g.whole_error();
            assert!(message.contains("eeee"), "{:?}: {message:.200}", g.case);
            assert!(message.len() < 20 << 10, "{:?}", g.case);
        }
    }
    for r in &records {
        let e = r.error.as_ref().unwrap();
        assert_eq!(e.kind, "Provider", "{e:?}");
        assert!(
            e.message
                .contains("`max_error_body_bytes`, 16 KiB: only its head was read"),
            "{:.300}",
            e.message
        );
        assert!(r.raw_bytes().unwrap().len() <= 16 << 10);
    }
    // Every attempt's connection closed after the head (a 500 is asked again).
    let asked = server.requests.load(std::sync::atomic::Ordering::SeqCst);
    assert!(asked >= 2 * got.len());
    assert_eq!(server.closed_at_least(asked).await, asked);
    assert_peak(how, growth);
}

/// An `Llm` on the hostile upstream in `dialect`, with `limits`, retrying as by default
/// (with waits that are not real).
fn llm(server: &HostileServer, dialect: Dialect, limits: ReplyLimits) -> Llm {
    let path = match dialect {
        Dialect::Chat => "/v1/chat/completions",
        Dialect::Responses => "/v1/responses",
        Dialect::Messages => "/v1/messages",
        Dialect::Gemini => "/v1beta/models/m:generateContent",
    };
    let url = url::Url::parse(&format!("{}{path}", server.origin)).unwrap();
    let backend = HttpBackend::new(HttpConfig {
        name: "hostile".into(),
        dialect,
        endpoint: Endpoint::fixed(url),
        auth: Credential::None,
        unsent_key: None,
        extra_body: Default::default(),
        developer_as_system: false,
        legacy_max_tokens: false,
        timeouts: Timeouts::DEFAULT,
        limits: ReplyLimits::DEFAULT,
    })
    .unwrap()
    .with_limits(limits);
    Llm::new("hostile/m", Arc::new(backend), "m").with_sleeper(Arc::new(RecordingSleeper::new()))
}

/// The error a library call on `how` ends with (whole or streamed), and its attempts.
async fn library_call(llm: &Llm, stream: bool) -> (Error, usize) {
    let call = async {
        if !stream {
            let outcome = llm.complete_detailed(Request::user("hi")).await;
            return (
                outcome.result.expect_err("an error"),
                outcome.attempts.len(),
            );
        }
        let outcome = llm.stream_detailed(Request::user("hi")).await;
        let attempts = outcome.attempts.len();
        let mut events = match outcome.result {
            Err(e) => return (e, attempts),
            Ok(s) => s,
        };
        use futures::StreamExt;
        while let Some(item) = events.next().await {
            if let Err(e) = item {
                return (e, attempts);
            }
        }
        panic!("the stream ended without an error")
    };
    tokio::time::timeout(CALL_TIME, call)
        .await
        .expect("the call ended within its bound")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_ends_every_oversized_answer_with_reply_too_large() {
    let _alone = ONE_AT_A_TIME.lock().await;
    for (how, stream, bound) in [
        (Hostile::EndlessBody, false, ReplyBound::Reply),
        (Hostile::AnnouncedBody, false, ReplyBound::Reply),
        (Hostile::EndlessBody, true, ReplyBound::Reply),
        (Hostile::EndlessStream, true, ReplyBound::Stream),
        (Hostile::EndlessLine, true, ReplyBound::Event),
    ] {
        let server = HostileServer::start(how).await;
        reset_peak();
        let (before, _) = rss();
        for dialect in DIALECTS {
            let (e, attempts) = library_call(&llm(&server, dialect, LIMITS), stream).await;
            let case = format!("{how:?} {dialect} stream {stream}");
            assert_eq!(e.kind(), ErrorKind::ReplyTooLarge, "{case}: {e}");
            let Error::ReplyTooLarge {
                bound: got, limit, ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!((*got, *limit), (bound, LIMITS.of(bound)), "{case}");
            assert!(e.to_string().contains(bound.setting()), "{case}: {e}");
            assert_eq!(attempts, 1, "{case}: asked again");
        }
        assert_eq!(server.closed_at_least(4).await, 4, "{how:?}");
        let (_, peak) = rss();
        assert_peak(how, peak.saturating_sub(before));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_error_body_keeps_its_head_in_the_library() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let server = HostileServer::start(Hostile::EndlessError).await;
    let mut calls = 0;
    for dialect in DIALECTS {
        for stream in [false, true] {
            let llm = llm(&server, dialect, LIMITS).with_retry(switchyard::RetryPolicy::never());
            let (e, _) = library_call(&llm, stream).await;
            calls += 1;
            let case = format!("{dialect} stream {stream}");
            let details = e.provider_details().expect("the provider's error");
            assert_eq!(details.status, 500, "{case}");
            assert_eq!(details.body.len(), 16 << 10, "{case}");
            assert!(
                details.body.starts_with(b"{\"error\":{\"message\":\"eee"),
                "{case}"
            );
            assert!(
                e.to_string().contains("`max_error_body_bytes`"),
                "{case}: {e}"
            );
        }
    }
    assert_eq!(server.closed_at_least(calls).await, calls);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_bounds_hold_too() {
    let _alone = ONE_AT_A_TIME.lock().await;
    // The cheap ones: 1 GiB announced (refused unread), one endless line (16 MiB).
    for (how, stream, bound) in [
        (Hostile::AnnouncedBody, false, ReplyBound::Reply),
        (Hostile::EndlessLine, true, ReplyBound::Event),
    ] {
        let server = HostileServer::start(how).await;
        let (e, _) = library_call(&llm(&server, Dialect::Chat, ReplyLimits::DEFAULT), stream).await;
        assert!(
            matches!(e, Error::ReplyTooLarge { bound: b, limit, .. } if b == bound && limit == ReplyLimits::DEFAULT.of(bound)),
            "{how:?}: {e}"
        );
        assert_eq!(server.closed_at_least(1).await, 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_longer_than_its_record_keeps_is_marked_and_not_replayed_as_whole() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let mock = switchyard_mock::MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let kept = 16 << 10;
    let config = GatewayConfig {
        store: Some(dir.path().to_path_buf()),
        retry: switchyard::RetryPolicy::never(),
        max_recorded_reply_bytes: kept,
        ..GatewayConfig::default()
    };
    let gateway = common::gateway_for(&mock.base_url(), config, Default::default(), &[]);
    let running = start(gateway, "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let text = "word ".repeat(8_000);
    let model = "up-chat/echo";
    // Passed through and translated, streamed: the client gets all of it.
    for client in [Dialect::Chat, Dialect::Messages] {
        let r = reqwest::Client::new()
            .post(format!("{}{}", running.url(), path(client, model, true)))
            .header("content-type", "application/json")
            .body(client_body(client, model, &Request::user(&text), true))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let reply = common::decode(client, &r.bytes().await.unwrap(), true);
        assert_eq!(reply.text(), text, "{client}");
    }
    let records = common::recording::records(dir.path(), 2).await.0;
    for r in &records {
        assert!(r.error.is_none(), "call {}: {:?}", r.number, r.error);
        let cut = r
            .raw_truncated
            .as_ref()
            .expect("the record kept part of it");
        assert_eq!(cut.kept, kept as u64);
        assert!(cut.received.unwrap() > text.len() as u64, "{cut:?}");
        assert_eq!(r.raw_bytes().unwrap().len(), kept);
        // The reply the record keeps is the part its bytes carry.
        let recorded = r.reply.as_ref().map(|r| r.text()).unwrap_or_default();
        assert!(
            !recorded.is_empty() && recorded.len() < kept && text.starts_with(&recorded),
            "call {}: {} bytes of reply",
            r.number,
            recorded.len()
        );
        assert!(r.cache_key.is_none());
    }
    // Replay says it cannot answer with a part, rather than answering with one.
    drop(running);
    let replay = Llm::replaying(dir.path(), None).unwrap();
    let e = replay
        .complete(Request::user(&text))
        .await
        .expect_err("a partial record is not replayed");
    assert!(
        e.to_string().contains(&format!(
            "kept only the first {kept} of its {} reply bytes (`limits.max_recorded_reply_bytes`)",
            records[0].raw_truncated.as_ref().unwrap().received.unwrap()
        )),
        "{e}"
    );
}
