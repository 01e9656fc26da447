//! Reading record format 3 (its canonical forms derived) beside format 2 (read as
//! written), and replaying a log of format 3.

use super::*;
use crate::record::{
    parse_record_line, read_lines_from, read_log, read_record, writer::tests::sample, Recorder,
    RecorderOptions, RunInfo,
};

const BODY: &str =
    r#"{"model":"echo","max_tokens":16,"messages":[{"role":"user","content":"name a river"}]}"#;
const REPLY: &str = r#"{"id":"c1","object":"chat.completion","created":1,"model":"echo","choices":[{"index":0,"message":{"role":"assistant","content":"the Nile"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}"#;

/// A gateway's record of a chat call in format 3: what was exchanged, nothing derived.
fn exchanged() -> CallRecord {
    let mut r = sample();
    r.format = DERIVED_FORMAT;
    r.role = None;
    r.dialect = Some(Dialect::Chat);
    r.stream = false;
    r.body = Some(serde_json::value::RawValue::from_string(BODY.to_string()).unwrap());
    r.raw = Some(super::super::RawBytes::new(REPLY.as_bytes()));
    r.request = Request::default();
    r.parameters = serde_json::Map::new();
    r.prompt_digest = String::new();
    r.reply = None;
    r.usage_reported = None;
    r
}

fn recorded(records: Vec<CallRecord>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(dir.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    assert!(futures::executor::block_on(recorder.submit_many(records)).is_some());
    recorder.close().unwrap();
    dir
}

#[test]
fn a_format_2_line_reads_as_written() {
    let segment =
        include_str!("../../../../examples/runs/mock_campaign/llm_log/segment-000001.jsonl");
    for line in segment.lines() {
        let read = parse_record_line(line.as_bytes()).unwrap();
        let as_written: CallRecord = serde_json::from_str(line).unwrap();
        assert_eq!(read.format, 2);
        assert_eq!(
            serde_json::to_value(&read).unwrap(),
            serde_json::to_value(&as_written).unwrap(),
            "nothing derived over a format 2 line"
        );
    }
}

#[test]
fn a_format_3_record_leaves_the_canonical_forms_out_its_bytes_after_its_line() {
    let dir = recorded(vec![sample(), exchanged()]);
    let text = std::fs::read_to_string(dir.path().join("llm_log/segment-000001.jsonl")).unwrap();
    let mut lines = text.lines().skip(1);
    let line = lines.next().unwrap();
    // Written in format 4: the raw bytes after the line, as they came, and their length
    // the line's last field.
    assert!(line.starts_with("{\"format\":4,\"number\":2,"), "{line}");
    assert!(
        line.ends_with(&format!(",\"raw_after\":{}}}", REPLY.len())),
        "{line}"
    );
    assert_eq!(lines.next(), Some(REPLY));
    assert_eq!(lines.next(), None);
    for field in [
        "\"request\"",
        "\"parameters\"",
        "\"prompt_digest\"",
        "\"reply\"",
        "\"usage_reported\"",
        "\"raw\"",
    ] {
        assert!(!line.contains(field), "{field} left out: {line}");
    }
    // Both formats in one log read.
    let log = read_log(dir.path()).unwrap();
    assert!(log.set_aside.is_empty());
    assert_eq!(log.records.len(), 2);
    let r = read_record(dir.path(), 2).unwrap();
    assert_eq!(r.format, RAW_AFTER_FORMAT);
    assert_eq!(r.raw_bytes().unwrap().as_ref(), REPLY.as_bytes());
    assert_eq!(r.request.max_tokens, Some(16));
    assert_eq!(r.request.messages[0].joined_text(), "name a river");
    assert_eq!(r.parameters["max_tokens"], 16);
    assert_eq!(r.prompt_digest, super::super::prompt_digest(&r.request));
    assert_eq!(r.reply.as_ref().unwrap().text(), "the Nile");
    assert!(r.reply.as_ref().unwrap().raw.is_empty());
    assert_eq!(r.usage_reported.as_ref().unwrap()["total_tokens"], 5);
    // A field the line holds is kept as it is (a record exported whole reads the same).
    let exported = serde_json::to_vec(&r).unwrap();
    let again = parse_record_line(&exported).unwrap();
    assert_eq!(
        serde_json::to_value(&again).unwrap(),
        serde_json::to_value(&r).unwrap()
    );
}

#[test]
fn a_format_3_failure_keeps_no_reply_and_an_unknown_format_is_refused() {
    let mut failed = exchanged();
    failed.raw = Some(super::super::RawBytes::new(
        br#"{"error":{"message":"slow down"}}"#,
    ));
    failed.error = Some(crate::record::ErrorRecord {
        kind: "RateLimited".into(),
        message: "slow down".into(),
        provider: None,
        fields: serde_json::Map::new(),
    });
    let dir = recorded(vec![failed]);
    let r = read_record(dir.path(), 1).unwrap();
    assert!(r.reply.is_none() && r.usage_reported.is_none());
    assert_eq!(r.request.max_tokens, Some(16));

    let mut newer = sample();
    newer.format = 5;
    let e = parse_record_line(&serde_json::to_vec(&newer).unwrap()).unwrap_err();
    assert!(
        e.contains("record format 5 is not one this version reads (it reads 2, 3 and 4)"),
        "{e}"
    );
}

/// A record of format 4 reads only whole: its line with exactly the bytes it says follow
/// it; written whole by serde (`log export`), with its bytes in the line, it reads too.
#[test]
fn a_format_4_record_reads_with_its_bytes_after_its_line_or_in_it() {
    let dir = recorded(vec![exchanged()]);
    let segment = std::fs::read(dir.path().join("llm_log/segment-000001.jsonl")).unwrap();
    let record = segment.strip_suffix(b"\n").unwrap();
    let whole = parse_record_line(record).unwrap();
    assert_eq!(whole.raw_bytes().unwrap().as_ref(), REPLY.as_bytes());
    assert_eq!(whole.reply.as_ref().unwrap().text(), "the Nile");
    let line = super::super::line_of(record);
    let n = REPLY.len();
    let cases: [(Vec<u8>, String); 4] = [
        (
            line.to_vec(),
            format!("says {n} raw bytes follow it, and none do"),
        ),
        ([record, b"!"].concat(), format!("and {} do", n + 1)),
        (
            record[..record.len() - 1].to_vec(),
            format!("and {} do", n - 1),
        ),
        (
            [&serde_json::to_vec(&sample()).unwrap()[..], b"\nabc"].concat(),
            "3 bytes follow its line, which says none do".to_string(),
        ),
    ];
    for (bytes, said) in cases {
        let e = parse_record_line(&bytes).unwrap_err();
        assert!(e.contains(&said), "{said}: {e}");
    }
    let exported = serde_json::to_vec(&whole).unwrap();
    let again = parse_record_line(&exported).unwrap();
    assert_eq!(again.format, RAW_AFTER_FORMAT);
    assert_eq!(again.raw_bytes().unwrap().as_ref(), REPLY.as_bytes());
}

/// A write cut short anywhere in a record's raw bytes (newlines among them) leaves no
/// record: readers pass over it, and a recorder resuming the log drops it and numbers the
/// next call after the last whole one.
#[test]
fn a_format_4_record_cut_short_in_its_bytes_is_dropped_on_resume() {
    let mut streamed = exchanged();
    streamed.raw = Some(super::super::RawBytes::new(
        b"data: {\"a\":1}\n\ndata: {\"b\":2}\n\ndata: [DONE]\n\n",
    ));
    let dir = recorded(vec![exchanged(), streamed]);
    let path = dir.path().join("llm_log/segment-000001.jsonl");
    let whole = std::fs::read(&path).unwrap();
    let first_end = whole.windows(2).position(|w| w == b"}\n").unwrap() + 2;
    let first_end = first_end + REPLY.len() + 1;
    let second_line_end = first_end + whole[first_end..].iter().position(|&b| b == b'\n').unwrap();
    // Cut after the second record's line and 20 of its bytes (past their first newline).
    std::fs::write(&path, &whole[..second_line_end + 1 + 20]).unwrap();
    let read = read_log(dir.path()).unwrap();
    assert_eq!(read.records.len(), 1);
    assert!(read.set_aside.is_empty());
    let options = RecorderOptions {
        resume: true,
        ..RecorderOptions::default()
    };
    let recorder = Recorder::create(dir.path(), &RunInfo::new(), options).unwrap();
    assert!(futures::executor::block_on(recorder.submit_many(vec![exchanged()])).is_some());
    recorder.close().unwrap();
    let read = read_log(dir.path()).unwrap();
    assert!(read.set_aside.is_empty(), "{:?}", read.set_aside);
    let numbers: Vec<u64> = read.records.iter().map(|r| r.number).collect();
    assert_eq!(numbers, [1, 2]);
    assert!(read
        .records
        .iter()
        .all(|r| r.raw_bytes().unwrap() == REPLY.as_bytes()));
    assert_eq!(
        std::fs::read(&path).unwrap()[..first_end],
        whole[..first_end]
    );
}

/// A reader that tails a log being written (the shipping to PostgreSQL) never takes a
/// record whose bytes are still being written for a damaged one, whatever they hold: it
/// reads it whole once it is.
#[test]
fn a_record_being_written_is_read_whole_the_next_time() {
    let dir = recorded(vec![exchanged()]);
    let path = dir.path().join("llm_log/segment-000001.jsonl");
    let done = std::fs::read(&path).unwrap();
    let mut forged = exchanged();
    forged.raw = Some(super::super::RawBytes::new(
        b"data: {\"a\":1}\n{\"format\":2,\"number\":7}\n\ndata: [DONE]\n\n",
    ));
    let more = recorded(vec![exchanged(), forged]);
    let both = std::fs::read(more.path().join("llm_log/segment-000001.jsonl")).unwrap();
    let second = &both[done.len()..];
    // Its line and the bytes up to past the forged record's beginning, not yet the rest.
    let written = second.len() - 12;
    std::fs::write(&path, [&done[..], &second[..written]].concat()).unwrap();
    let (lines, at) = read_lines_from(dir.path(), (0, 0), 10).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(at, (1, done.len() as u64));
    std::fs::write(&path, [&done[..], second].concat()).unwrap();
    let (lines, at) = read_lines_from(dir.path(), at, 10).unwrap();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0].0, 2);
    let record = parse_record_line(&lines[0].1).unwrap();
    assert!(record
        .raw_bytes()
        .unwrap()
        .starts_with(b"data: {\"a\":1}\n{\"format\""));
    assert_eq!(at, (1, (done.len() + second.len()) as u64));
}

#[test]
fn a_log_of_format_3_replays_with_and_without_its_index() {
    let dir = recorded(vec![exchanged()]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ask = || {
        rt.block_on(async {
            let llm = crate::Llm::replaying(dir.path(), None).unwrap();
            llm.complete(Request::user("name a river").with_max_tokens(16))
                .await
                .unwrap()
                .text()
        })
    };
    // The index's row holds no digest: it is derived from the record when replay opens.
    assert_eq!(ask(), "the Nile");
    std::fs::remove_file(dir.path().join(super::super::INDEX_FILE)).unwrap();
    assert_eq!(ask(), "the Nile");
}

#[test]
fn a_format_3_record_past_the_depth_bound_is_written_in_format_2_with_its_forms() {
    // A body field nesting 159 levels: the line would open level 161.
    let deep = format!("{}7{}", "[".repeat(159), "]".repeat(159));
    let body = BODY.replacen('{', &format!("{{\"x\":{deep},"), 1);
    let mut r = exchanged();
    r.body = Some(serde_json::value::RawValue::from_string(body).unwrap());
    let dir = recorded(vec![r]);
    let text = std::fs::read_to_string(dir.path().join("llm_log/segment-000001.jsonl")).unwrap();
    assert!(text.starts_with("{\"format\":2,"), "{text}");
    assert!(text.contains("\"depth_capped\":true"));
    let back = read_record(dir.path(), 1).unwrap();
    assert_eq!(back.format, super::super::FORMAT);
    assert!(back.depth_capped);
    // Derived before the line was capped, from the bytes as they came.
    assert_eq!(back.reply.unwrap().text(), "the Nile");
    assert!(!back.prompt_digest.is_empty());
    assert_eq!(back.usage_reported.unwrap()["total_tokens"], 5);
}

/// The empty request is the default one, and any one field set makes a request not empty.
#[test]
fn a_request_is_empty_only_as_the_default_one() {
    assert!(is_empty(&Request::default()));
    let decoded = decode_request(Dialect::Chat, BODY.as_bytes());
    assert!(!is_empty(&decoded));
    let mut one_field: Vec<Request> = (0..12).map(|_| Request::default()).collect();
    one_field[0].messages = decoded.messages.clone();
    one_field[1].tools = vec![serde_json::from_value(serde_json::json!({"name": "t"})).unwrap()];
    one_field[2].tool_choice = Some(switchyard_wire::ToolChoice::Auto);
    one_field[3].parallel_tool_calls = Some(false);
    one_field[4].max_tokens = Some(0);
    one_field[5].temperature = Some(0.0);
    one_field[6].top_p = Some(1.0);
    one_field[7].stop = vec![String::new()];
    one_field[8].reasoning = Some(Default::default());
    one_field[9].passthrough.dialect = Some(Dialect::Chat);
    one_field[10]
        .passthrough
        .fields
        .insert("x".into(), serde_json::Value::Null);
    one_field[11].response_format = Some(switchyard_wire::ResponseFormat::JsonObject);
    for r in &one_field {
        assert_ne!(*r, Request::default());
        assert!(!is_empty(r), "{r:?}");
    }
}
