//! Record format 3 against format 2: every kind of call the store records, in each
//! dialect, reads back to the same record whichever format it was written in.

use super::*;
use crate::meter::metrics::CallSummary;
use crate::store::{Draft, Finished};
use std::time::{Duration, SystemTime};
use switchyard::record::{read_records, EmbedRecord, Recorder, RecorderOptions, RunInfo};
use switchyard_wire::embed::{EmbedRequest, EmbedShape};
use switchyard_wire::{codec, EncodeOptions, Part, ServerContext, Usage};

/// The kinds of call a record is built for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Whole,
    Streamed,
    /// A stream broken after its first events.
    Cut,
    /// A stream longer than the record keeps.
    Truncated,
    /// An upstream's refusal (429 with its error body).
    Error,
    /// A whole reply translated for a client of another dialect: the call has it.
    Translated,
}

const KINDS: [Kind; 6] = [
    Kind::Whole,
    Kind::Streamed,
    Kind::Cut,
    Kind::Truncated,
    Kind::Error,
    Kind::Translated,
];

fn usage() -> Usage {
    Usage {
        input: 7,
        output: 5,
        ..Usage::default()
    }
}

fn summary(client: Dialect, upstream: Option<Dialect>, stream: bool) -> CallSummary {
    CallSummary {
        key: "team".into(),
        backend: "mock".into(),
        model: "echo".into(),
        client_dialect: client,
        upstream_dialect: upstream,
        stream,
        passthrough: upstream == Some(client),
        status: 200,
        error: None,
        usage: Some(usage()),
        cost_usd: None,
        latency: Duration::from_millis(3),
        time_to_first_byte: stream.then(|| Duration::from_millis(1)),
        overhead: Duration::ZERO,
        requested: "mock/echo".into(),
        upstream_called: true,
        model_known: true,
    }
}

fn body(dialect: Dialect, stream: bool) -> Bytes {
    let request = switchyard::Request {
        temperature: Some(0.5),
        ..switchyard::Request::user("name three rivers").with_max_tokens(64)
    };
    let options = EncodeOptions {
        model: "echo",
        stream,
    };
    let map = codec(dialect).encode_request(&request, &options).unwrap();
    Bytes::from(serde_json::to_vec(&map).unwrap())
}

fn reply() -> Reply {
    Reply {
        content: vec![Part::text("the Nile, the Amazon and the Yangtze")],
        usage: Some(usage()),
        model: Some("echo".into()),
        id: Some("r-1".into()),
        ..Reply::default()
    }
}

/// A reply in `dialect` as an upstream sends it: a body, or a stream of events.
fn reply_bytes(dialect: Dialect, stream: bool) -> Bytes {
    let context = ServerContext {
        created: 1_700_000_000,
        fallback_id: "r-1".into(),
    };
    let codec = codec(dialect);
    if !stream {
        return Bytes::from(codec.encode_reply(&reply(), &context));
    }
    let mut out = Vec::new();
    let mut encoder = codec.stream_encoder(&context);
    for event in switchyard_wire::reply_events(&reply(), 6) {
        encoder.event(&event, &mut out);
    }
    encoder.finish(&mut out);
    Bytes::from(out)
}

/// A finished call of `kind` spoken upstream in `dialect`, as its meter hands it over.
fn call(dialect: Dialect, kind: Kind) -> Finished {
    let stream = matches!(kind, Kind::Streamed | Kind::Cut | Kind::Truncated);
    let client = match kind {
        Kind::Translated => Dialect::ALL
            .into_iter()
            .find(|d| *d != dialect)
            .unwrap_or(dialect),
        _ => dialect,
    };
    let mut s = summary(client, Some(dialect), stream);
    let mut draft = Draft {
        sent_body: Some(body(dialect, stream)),
        attempts: Vec::new(),
        ..Draft::default()
    };
    let raw = reply_bytes(dialect, stream);
    match kind {
        Kind::Whole => draft.keep(&raw),
        Kind::Streamed => {
            draft.keep(&raw);
        }
        Kind::Cut => {
            // What came before the upstream broke off: half of the events.
            let head = raw.slice(..raw.len() / 2);
            draft.keep(&head);
            draft.cut = true;
            draft.usage_estimated = Some("output bytes / 4".into());
            s.error = Some("upstream_stream_error".into());
        }
        Kind::Truncated => {
            draft = Draft {
                sent_body: draft.sent_body,
                ..Draft::keeping_at_most(raw.len() / 3)
            };
            draft.keep(&raw);
        }
        Kind::Error => {
            draft.keep(&Bytes::from_static(
                br#"{"error":{"type":"rate_limit_error","message":"slow down"}}"#,
            ));
            s.status = 429;
            s.error = Some("rate_limited".into());
            s.usage = None;
        }
        Kind::Translated => {
            draft.keep(&raw);
            draft.reply = codec(dialect).decode_reply(&raw).ok();
        }
    }
    finished(s, draft)
}

fn finished(summary: CallSummary, draft: Draft) -> Finished {
    Finished {
        summary,
        reference: "mock/echo".into(),
        client_body: None,
        started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
        price: None,
        draft,
    }
}

/// An embeddings call of `shape`.
fn embedding(shape: EmbedShape) -> Finished {
    let mut s = summary(Dialect::Chat, None, false);
    s.usage = Some(Usage {
        input: 4,
        ..Usage::default()
    });
    let mut draft = Draft {
        sent_body: Some(Bytes::from_static(
            br#"{"model":"echo","input":["a river","a sea"]}"#,
        )),
        embedding: Some(EmbedRecord {
            shape,
            request: EmbedRequest::texts(["a river", "a sea"]),
        }),
        ..Draft::default()
    };
    draft.keep(&Bytes::from_static(
        br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]},{"object":"embedding","index":1,"embedding":[0.3,0.4]}],"model":"echo","usage":{"prompt_tokens":4,"total_tokens":4}}"#,
    ));
    finished(s, draft)
}

/// A format-2 record as a format-3 writer may leave it: every derivable field out (a
/// reply kept in part stays: it is not what its bytes carry).
fn leave_out(record: &CallRecord) -> CallRecord {
    let mut r = record.clone();
    r.format = record::DERIVED_FORMAT;
    r.request = Request::default();
    r.parameters = serde_json::Map::new();
    r.prompt_digest = String::new();
    r.usage_reported = None;
    if r.raw_truncated.is_none() {
        r.reply = None;
    }
    r
}

/// Writes `records` into a run directory and reads them back, with the record lines.
fn written(records: Vec<CallRecord>) -> (Vec<CallRecord>, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    assert!(futures::executor::block_on(recorder.submit_many(records)).is_some());
    recorder.close().unwrap();
    let mut lines = Vec::new();
    record::for_each_record_line(dir.path(), |_, l| {
        lines.push(String::from_utf8(l.to_vec()).unwrap());
        Ok(())
    })
    .unwrap();
    (read_records(dir.path()).unwrap(), lines)
}

/// A record as compared: number, timings and the format aside.
fn compared(r: &CallRecord) -> serde_json::Value {
    let mut r = r.without_timings();
    r.format = 0;
    serde_json::to_value(&r).unwrap()
}

/// Builds the call both ways and checks the three lines read back alike: format 2 (as
/// before), what the store now writes, and every derivable field left out. Gives the
/// format the store chose and the record read.
fn check(what: &str, make: impl Fn() -> Finished) -> (u32, CallRecord) {
    let (before, raw) = build(make(), false);
    let before = raw_inside(before, raw);
    assert_eq!(before.format, record::FORMAT, "{what}");
    let now = build_record(make());
    let stripped = leave_out(&before);
    let chosen = now.format;
    let (back, lines) = written(vec![before, now, stripped]);
    assert_eq!(back.len(), 3, "{what}");
    assert_eq!(
        compared(&back[1]),
        compared(&back[0]),
        "{what}: as the store writes it"
    );
    assert_eq!(
        compared(&back[2]),
        compared(&back[0]),
        "{what}: every field left out"
    );
    for (line, format) in [(&lines[1], chosen), (&lines[2], record::DERIVED_FORMAT)] {
        if format == record::DERIVED_FORMAT {
            // (`embedding` holds a `request` of its own.)
            for field in [
                "\"request\":{\"messages\"",
                "\"parameters\":",
                "\"prompt_digest\":",
                "\"usage_reported\":",
                "\"reply\":null",
            ] {
                assert!(!line.contains(field), "{what}: {field} left out of {line}");
            }
        }
    }
    (chosen, back.into_iter().next().unwrap())
}

#[test]
fn every_kind_of_call_in_each_dialect_reads_the_same_in_format_3_as_in_format_2() {
    for dialect in Dialect::ALL {
        for kind in KINDS {
            let what = format!("{dialect} {kind:?}");
            let (format, read) = check(&what, || call(dialect, kind));
            // Derived from the body, not empty: the check above compares real forms.
            assert_eq!(read.request.max_tokens, Some(64), "{what}");
            assert!(!read.prompt_digest.is_empty(), "{what}");
            assert_eq!(read.parameters["max_tokens"], 64, "{what}");
            match kind {
                Kind::Error => assert!(read.reply.is_none(), "{what}"),
                Kind::Cut => assert!(read.cut && read.error.is_some(), "{what}"),
                // What the bytes kept carry (a Responses stream's first third may carry
                // no output yet).
                Kind::Truncated => assert!(read.raw_truncated.is_some(), "{what}"),
                _ => assert!(read.reply.is_some_and(|r| !r.content.is_empty()), "{what}"),
            }
            if matches!(kind, Kind::Whole | Kind::Streamed | Kind::Translated) {
                assert!(read.usage_reported.is_some(), "{what}");
            }
            // The store leaves the forms out unless they would derive otherwise: a reply
            // kept in part (its reply what those bytes carry), a failure without usage.
            let expected = match kind {
                Kind::Truncated | Kind::Error => record::FORMAT,
                _ => record::DERIVED_FORMAT,
            };
            assert_eq!(format, expected, "{what}");
        }
    }
}

#[test]
fn an_embeddings_call_reads_the_same_in_format_3_as_in_format_2() {
    for shape in [EmbedShape::Openai, EmbedShape::Gemini] {
        let what = format!("embeddings {}", shape.as_str());
        let (format, read) = check(&what, || embedding(shape));
        assert_eq!(format, record::DERIVED_FORMAT, "{what}");
        assert_eq!(
            read.prompt_digest,
            record::embed_digest(&EmbedRequest::texts(["a river", "a sea"])),
            "{what}"
        );
        assert!(
            read.reply.is_none() && read.usage_reported.is_some(),
            "{what}"
        );
    }
}
