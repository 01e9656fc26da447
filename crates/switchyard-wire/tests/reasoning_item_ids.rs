//! A Responses stream names each reasoning item by one id, from
//! `response.output_item.added` through its summary events to `response.output_item.done`
//! and the terminal response (the AI SDK tracks items by id and fails on a
//! second one), whatever dialect the reasoning came from: a stream decoded from a recorded
//! upstream stream (a translated stream), and the events of a whole recorded reply (a
//! cache replay, a whole reply sent as a stream). Where the upstream names the item (a
//! Responses backend), that name is the one; its encrypted state still reaches the client.

use serde_json::Value;
use std::collections::BTreeMap;
use switchyard_wire::sse::SseParser;
use switchyard_wire::{
    assemble, codec, reply_events, ByteStreamDecoder, Dialect, Event, Part, ServerContext,
};

/// A recorded stream and a recorded whole reply with reasoning, per source dialect.
const SOURCES: [(Dialect, &str, &str); 4] = [
    (
        Dialect::Responses,
        "responses/stream_reasoning.sse",
        "responses/reply_reasoning.json",
    ),
    (
        Dialect::Messages,
        "messages/stream_thinking.sse",
        "messages/reply_thinking_cache.json",
    ),
    (
        Dialect::Gemini,
        "gemini/stream_thinking_tool.sse",
        "gemini/thinking_reply.json",
    ),
    (
        Dialect::Chat,
        "chat/deepseek_reasoning_stream.sse",
        "chat/deepseek_reasoning_reply.json",
    ),
];

/// The reasoning item's id in the recorded Responses stream, and its encrypted state.
const STREAM_RS_ID: &str = "rs_68f1d3d5f6a78190b8c9d0e1f2a3b4c5";
const REPLY_RS_ID: &str = "rs_68f1c2a0b3d48190a1e5f6c7d8e9f0a1";
const ENC: &str =
    "gAAAAABo9X2kQ8m1Zc3Tq0Vb7XrL9y0wq1sN6pM4lKd2YtU8fHcR5eJ3aG7iB0oW9vS1xZ4nE6uC2mF8hT5jP3rA==";

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn decode_stream(dialect: Dialect, bytes: &[u8]) -> Vec<Event> {
    let mut decoder = ByteStreamDecoder::new(codec(dialect));
    let mut events = Vec::new();
    for chunk in bytes.chunks(61) {
        events.extend(decoder.push(chunk).expect("the recorded stream decodes"));
    }
    events.extend(decoder.finish().expect("the recorded stream ends"));
    events
}

fn encode_responses(events: &[Event]) -> Vec<u8> {
    let mut encoder = codec(Dialect::Responses).stream_encoder(&ServerContext {
        created: 1,
        fallback_id: "resp_gateway".into(),
    });
    let mut out = Vec::new();
    for event in events {
        encoder.event(event, &mut out);
    }
    encoder.finish(&mut out);
    out
}

/// A reasoning item as the client saw it: its one id and its final form.
struct Seen {
    id: String,
    done: Value,
}

/// Every reasoning item of a Responses stream, in order; panics (naming `label`) when any
/// event names an item by another id than its `added` did, or the terminal response does.
fn reasoning_items(label: &str, bytes: &[u8]) -> Vec<Seen> {
    let mut ids: BTreeMap<u64, (String, String)> = BTreeMap::new();
    let mut done: BTreeMap<u64, Value> = BTreeMap::new();
    let mut completed = None;
    for event in SseParser::new().push(bytes) {
        let data: Value = serde_json::from_str(&event.data).unwrap();
        let kind = data["type"].as_str().unwrap_or_default().to_string();
        if kind == "response.completed" || kind == "response.incomplete" {
            completed = Some(data["response"].clone());
            continue;
        }
        let Some(oi) = data["output_index"].as_u64() else {
            continue;
        };
        let named = data["item"]["id"].as_str().or(data["item_id"].as_str());
        let named = named.unwrap_or_else(|| panic!("{label}: {kind} names no item: {data}"));
        if kind == "response.output_item.added" {
            let item_type = data["item"]["type"].as_str().unwrap_or_default();
            ids.insert(oi, (item_type.to_string(), named.to_string()));
            continue;
        }
        let (_, id) = ids
            .get(&oi)
            .unwrap_or_else(|| panic!("{label}: {kind} before the item at {oi} was added"));
        assert_eq!(named, id, "{label}: {kind} names item {oi} by another id");
        if kind == "response.output_item.done" {
            done.insert(oi, data["item"].clone());
        }
    }
    let completed = completed.unwrap_or_else(|| panic!("{label}: no terminal response"));
    let mut items = Vec::new();
    for (oi, (item_type, id)) in ids {
        let index = usize::try_from(oi).unwrap();
        assert_eq!(
            completed["output"][index]["id"].as_str(),
            Some(id.as_str()),
            "{label}: the completed response names item {oi} otherwise"
        );
        if item_type == "reasoning" {
            let done = done
                .remove(&oi)
                .unwrap_or_else(|| panic!("{label}: reasoning item {oi} never done"));
            items.push(Seen { id, done });
        }
    }
    let distinct: std::collections::BTreeSet<_> = items.iter().map(|s| &s.id).collect();
    assert_eq!(
        distinct.len(),
        items.len(),
        "{label}: two items share an id"
    );
    items
}

fn thinking_parts(events: &[Event]) -> usize {
    let reply = assemble(events).expect("the events assemble");
    reply
        .content
        .iter()
        .filter(|p| matches!(p, Part::Thinking(_)))
        .count()
}

/// What the items must say for a source: a Responses source's own id and state.
fn check_source(label: &str, dialect: Dialect, items: &[Seen], upstream_id: &str) {
    assert!(!items.is_empty(), "{label}: no reasoning item");
    for item in items {
        assert!(item.id.starts_with("rs_"), "{label}: {}", item.id);
    }
    if dialect == Dialect::Responses {
        assert_eq!(items.len(), 1, "{label}");
        assert_eq!(items[0].id, upstream_id, "{label}: the upstream's own id");
        assert_eq!(items[0].done["encrypted_content"], ENC, "{label}: state");
    }
}

#[test]
fn a_translated_stream_names_each_reasoning_item_by_one_id() {
    for (dialect, stream, _) in SOURCES {
        let label = format!("{dialect} stream {stream}");
        let events = decode_stream(dialect, &fixture(stream));
        let items = reasoning_items(&label, &encode_responses(&events));
        check_source(&label, dialect, &items, STREAM_RS_ID);
        assert_eq!(items.len(), thinking_parts(&events), "{label}");
    }
}

#[test]
fn a_whole_reply_streamed_names_each_reasoning_item_by_one_id() {
    for (dialect, _, body) in SOURCES {
        let reply = codec(dialect)
            .decode_reply(&fixture(body))
            .unwrap_or_else(|e| panic!("{body}: {e}"));
        for chunk_chars in [0, 7] {
            let label = format!("{dialect} reply {body} in deltas of {chunk_chars}");
            let events = reply_events(&reply, chunk_chars);
            let items = reasoning_items(&label, &encode_responses(&events));
            check_source(&label, dialect, &items, REPLY_RS_ID);
            assert_eq!(items.len(), thinking_parts(&events), "{label}");
        }
    }
}

#[test]
fn a_stream_in_each_dialect_relayed_to_responses_names_each_item_by_one_id() {
    // The recorded replies through each dialect's own stream encoder and decoder first:
    // what a backend of that dialect streams, relayed to a Responses client.
    for (dialect, _, body) in SOURCES {
        let label = format!("{dialect} reply {body} streamed in {dialect}");
        let source = codec(dialect);
        let reply = source.decode_reply(&fixture(body)).unwrap();
        let mut encoder = source.stream_encoder(&ServerContext {
            created: 1,
            fallback_id: "upstream".into(),
        });
        let mut upstream = Vec::new();
        for event in reply_events(&reply, 5) {
            encoder.event(&event, &mut upstream);
        }
        encoder.finish(&mut upstream);
        let events = decode_stream(dialect, &upstream);
        let items = reasoning_items(&label, &encode_responses(&events));
        check_source(&label, dialect, &items, REPLY_RS_ID);
        assert_eq!(items.len(), thinking_parts(&events), "{label}");
    }
}

#[test]
fn a_reasoning_item_without_state_keeps_the_id_it_was_added_with() {
    // A summary-only item (no `encrypted_content`): the reply keeps no id for it (an id
    // alone would name stored reasoning), but the relayed stream still names the item
    // by the upstream's id from `added` to `done`.
    let upstream = [
        r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[]}}"#,
        r#"{"type":"response.reasoning_summary_text.delta","item_id":"rs_up","output_index":0,"summary_index":0,"delta":"hm"}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"rs_up","type":"reasoning","summary":[{"type":"summary_text","text":"hm"}]}}"#,
        r#"{"type":"response.completed","response":{"id":"resp_1","status":"completed","output":[]}}"#,
    ]
    .iter()
    .map(|d| format!("data: {d}\n\n"))
    .collect::<String>();
    let events = decode_stream(Dialect::Responses, upstream.as_bytes());
    let items = reasoning_items("summary only", &encode_responses(&events));
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].id, "rs_up");
    assert!(items[0].done.get("encrypted_content").is_none());
    let reply = assemble(&events).unwrap();
    let Part::Thinking(thinking) = &reply.content[0] else {
        panic!("{reply:?}")
    };
    assert_eq!(
        (thinking.text.as_str(), thinking.id.as_deref()),
        ("hm", None)
    );
}
