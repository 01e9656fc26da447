//! Every stream encoder names one item (output item, content block, tool call) by one id
//! from its announcement to its end, and in the terminal summary: clients such as the AI
//! SDK look items up by the id they were announced with (issue 36, point 1).

use serde_json::{json, Value};
use std::collections::BTreeMap;
use switchyard_wire::sse::SseParser;
use switchyard_wire::{
    codec, Dialect, EncodeOptions, Event, FinishReason, Opaque, Part, ServerContext, ToolKind,
    Usage,
};

fn encode(dialect: Dialect, events: &[Event]) -> Vec<(Option<String>, Value)> {
    let context = ServerContext {
        created: 1,
        fallback_id: "resp_x".into(),
    };
    let mut enc = codec(dialect).stream_encoder(&context);
    let mut out = Vec::new();
    for e in events {
        enc.event(e, &mut out);
    }
    enc.finish(&mut out);
    SseParser::new()
        .push(&out)
        .into_iter()
        .filter(|e| e.data != "[DONE]")
        .map(|e| (e.event, serde_json::from_str(&e.data).unwrap()))
        .collect()
}

fn think(part: usize, text: &str) -> Event {
    Event::ThinkingDelta {
        part,
        text: text.into(),
    }
}

fn state(part: usize, dialect: Dialect, value: &str, id: Option<&str>) -> Event {
    Event::ThinkingState {
        part,
        state: Opaque::new(dialect, value),
        redacted: false,
        id: id.map(str::to_string),
    }
}

fn text(part: usize, text: &str) -> Event {
    Event::TextDelta {
        part,
        text: text.into(),
    }
}

fn call(part: usize, id: &str, args: &[&str]) -> Vec<Event> {
    let mut v = vec![Event::ToolCallStart {
        part,
        id: id.into(),
        name: "f".into(),
        kind: ToolKind::Function,
        namespace: None,
        state: None,
    }];
    for a in args {
        v.push(Event::ToolCallDelta {
            part,
            arguments: (*a).into(),
        });
    }
    v.push(Event::ToolCallEnd { part });
    v
}

fn end(reason: FinishReason) -> Vec<Event> {
    vec![
        Event::Finish { reason, raw: None },
        Event::Usage(Usage {
            input: 3,
            output: 2,
            ..Usage::default()
        }),
    ]
}

/// Canonical streams with reasoning: with and without an id and encrypted state, with the
/// id arriving at the start or only at the end, first and after text, several parts.
fn scenarios() -> Vec<(&'static str, Vec<Event>)> {
    let start = || Event::Start {
        id: Some("resp_abc".into()),
        model: Some("m".into()),
    };
    let r = Dialect::Responses;
    let mut out = Vec::new();

    // Summary first, the real id and encrypted content only at the end (a Responses
    // backend decoded), then text and a call.
    let mut v = vec![start(), think(0, "plan "), think(0, "more")];
    v.push(state(0, r, "ENC0", Some("rs_real0")));
    v.push(text(1, "answer"));
    v.extend(call(2, "call_1", &["{\"a\"", ":1}"]));
    v.extend(end(FinishReason::ToolCalls));
    out.push(("reasoning first, id late", v));

    // Encrypted-only reasoning: the state (and id) opens the item.
    let mut v = vec![
        start(),
        state(0, r, "ENC0", Some("rs_real0")),
        text(1, "hi"),
    ];
    v.extend(end(FinishReason::Stop));
    out.push(("encrypted only, id at start", v));

    // Text first, then two reasoning parts (one with state and no id, one with nothing),
    // then two calls.
    let mut v = vec![start(), text(0, "let me think"), think(1, "a")];
    v.push(state(1, r, "ENC1", None));
    v.push(think(2, "b"));
    v.push(text(3, "so"));
    v.extend(call(4, "call_a", &["{}"]));
    v.extend(call(5, "call_b", &["{\"x\":", "2}"]));
    v.extend(end(FinishReason::ToolCalls));
    out.push(("after text, several parts", v));

    // Another dialect's state (a Messages signature) and no start event.
    let mut v = vec![think(0, "hm"), state(0, Dialect::Messages, "sig", None)];
    v.push(think(1, "again"));
    v.push(state(1, r, "ENC1", Some("rs_late")));
    v.push(text(2, "done"));
    v.extend(end(FinishReason::Stop));
    out.push(("foreign state, no start", v));

    // Reasoning only, cut at the length limit.
    let mut v = vec![start(), think(0, "x"), state(0, r, "E", Some("rs_z"))];
    v.extend(end(FinishReason::Length));
    out.push(("reasoning only, incomplete", v));
    out
}

/// The id every event names per output index, checked one and the same; returns the
/// terminal response's output.
fn responses_ids(
    name: &str,
    events: &[(Option<String>, Value)],
) -> (BTreeMap<u64, String>, Vec<Value>) {
    let mut ids: BTreeMap<u64, String> = BTreeMap::new();
    let mut note = |oi: u64, id: &str, what: &str| {
        let known = ids.entry(oi).or_insert_with(|| id.to_string());
        assert_eq!(known, id, "{name}: item {oi} renamed in {what}");
    };
    let mut output = Vec::new();
    for (kind, v) in events {
        let kind = kind.as_deref().unwrap();
        if let Some(oi) = v["output_index"].as_u64() {
            if let Some(id) = v["item_id"].as_str() {
                note(oi, id, kind);
            }
            if let Some(id) = v["item"]["id"].as_str() {
                note(oi, id, kind);
            }
            if kind.starts_with("response.output_item.") {
                assert!(v["item"]["id"].is_string(), "{name}: {kind} without an id");
            }
        }
        if matches!(kind, "response.completed" | "response.incomplete") {
            output = v["response"]["output"].as_array().unwrap().clone();
        }
    }
    assert!(!output.is_empty(), "{name}: no terminal output");
    let announced = output.len();
    for (i, item) in output.iter().enumerate() {
        note(
            i as u64,
            item["id"].as_str().unwrap(),
            "the terminal output",
        );
    }
    assert_eq!(announced, ids.len(), "{name}");
    let distinct: std::collections::BTreeSet<_> = ids.values().collect();
    assert_eq!(distinct.len(), ids.len(), "{name}: two items share an id");
    (ids, output)
}

#[test]
fn responses_items_keep_one_id_from_added_to_completed() {
    for (name, events) in scenarios() {
        let out = encode(Dialect::Responses, &events);
        let (ids, output) = responses_ids(name, &out);
        let added: Vec<(u64, &str)> = out
            .iter()
            .filter(|(k, _)| k.as_deref() == Some("response.output_item.added"))
            .map(|(_, v)| {
                (
                    v["output_index"].as_u64().unwrap(),
                    v["item"]["id"].as_str().unwrap(),
                )
            })
            .collect();
        // Every item is announced before anything else names it.
        assert_eq!(added.len(), ids.len(), "{name}");
        match name {
            // The provider's id came after the item was announced: the announced one stays.
            "reasoning first, id late" => {
                assert_eq!(output[0]["id"], "rs_abc_0");
                assert_eq!(output[0]["encrypted_content"], "ENC0");
                assert_eq!(output[0]["summary"][0]["text"], "plan more");
            }
            // Known when the item opens: the provider's own.
            "encrypted only, id at start" => {
                assert_eq!(output[0]["id"], "rs_real0");
                assert_eq!(output[0]["encrypted_content"], "ENC0");
            }
            "after text, several parts" => {
                assert_eq!(output[1]["id"], "rs_abc_1");
                assert_eq!(output[1]["encrypted_content"], "ENC1");
                assert_eq!(output[2]["id"], "rs_abc_2");
                assert!(output[2].get("encrypted_content").is_none());
                assert_eq!(output[4]["call_id"], "call_a");
                assert_eq!(output[5]["call_id"], "call_b");
            }
            "foreign state, no start" => {
                assert!(output[0].get("encrypted_content").is_none());
                assert_eq!(output[1]["encrypted_content"], "ENC1");
                assert_eq!(output[1]["id"], ids[&1]);
            }
            _ => {}
        }
    }
}

/// What the stream wrote comes back as the next turn's input: the decoder takes the
/// reasoning by the id the stream named it with, with its encrypted content, and a request
/// encoded for a Responses backend carries both again.
#[test]
fn responses_stream_items_round_trip_as_next_turn_input() {
    for (name, events) in scenarios() {
        let out = encode(Dialect::Responses, &events);
        let (ids, output) = responses_ids(name, &out);
        let mut input = vec![json!({"role": "user", "content": "go"})];
        input.extend(output.iter().cloned());
        for item in &output {
            if item["type"] == "function_call" {
                input.push(json!({"type": "function_call_output",
                    "call_id": item["call_id"], "output": "ok"}));
            }
        }
        let body = json!({"model": "m", "input": input}).to_string();
        let decoded = codec(Dialect::Responses)
            .decode_request(body.as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let thinking: Vec<_> = decoded
            .request
            .messages
            .iter()
            .flat_map(|m| &m.content)
            .filter_map(|p| match p {
                Part::Thinking(t) => Some(t),
                _ => None,
            })
            .collect();
        let reasoning: Vec<&Value> = output.iter().filter(|i| i["type"] == "reasoning").collect();
        assert_eq!(thinking.len(), reasoning.len(), "{name}");
        for (t, item) in thinking.iter().zip(&reasoning) {
            assert_eq!(t.id.as_deref(), item["id"].as_str(), "{name}");
            assert!(ids.values().any(|id| Some(id.as_str()) == t.id.as_deref()));
            assert_eq!(
                Opaque::for_dialect(&t.state, Dialect::Responses),
                item["encrypted_content"].as_str(),
                "{name}"
            );
        }
        let options = EncodeOptions {
            model: "m",
            stream: true,
        };
        let again = codec(Dialect::Responses)
            .encode_request(&decoded.request, &options)
            .unwrap();
        for item in again["input"].as_array().unwrap() {
            if item["type"] == "reasoning" {
                let sent = reasoning.iter().find(|r| r["id"] == item["id"]);
                let sent = sent.unwrap_or_else(|| panic!("{name}: {item} not as written"));
                assert_eq!(sent["encrypted_content"], item["encrypted_content"]);
            }
        }
    }
}

/// Chat: one chunk id for the whole stream, and each tool call index one call id (the
/// canonical one).
#[test]
fn chat_tool_call_indices_keep_one_id() {
    for (name, events) in scenarios() {
        let out = encode(Dialect::Chat, &events);
        let chunk_ids: std::collections::BTreeSet<_> = out
            .iter()
            .map(|(_, v)| v["id"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(chunk_ids.len(), 1, "{name}: {chunk_ids:?}");
        let mut calls: BTreeMap<u64, String> = BTreeMap::new();
        for (_, v) in &out {
            for c in v["choices"][0]["delta"]["tool_calls"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let index = c["index"].as_u64().unwrap();
                if let Some(id) = c["id"].as_str() {
                    let known = calls.entry(index).or_insert_with(|| id.to_string());
                    assert_eq!(known, id, "{name}: call {index} renamed");
                } else {
                    assert!(
                        calls.contains_key(&index),
                        "{name}: call {index} unannounced"
                    );
                }
            }
        }
        let expected = canonical_calls(&events);
        assert_eq!(calls.into_values().collect::<Vec<_>>(), expected, "{name}");
    }
}

fn canonical_calls(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolCallStart { id, .. } => Some(id.clone()),
            _ => None,
        })
        .collect()
}

/// Messages: each content block index started once, named only between its start and
/// its stop, stopped once; tool_use blocks carry the canonical call id; one message id.
#[test]
fn messages_blocks_keep_one_index_and_id() {
    for (name, events) in scenarios() {
        let out = encode(Dialect::Messages, &events);
        let mut open: Option<u64> = None;
        let mut seen = std::collections::BTreeSet::new();
        let mut tool_ids = Vec::new();
        for (kind, v) in &out {
            match kind.as_deref().unwrap() {
                "content_block_start" => {
                    let i = v["index"].as_u64().unwrap();
                    assert!(open.is_none(), "{name}: block {i} opened inside another");
                    assert!(seen.insert(i), "{name}: block {i} opened twice");
                    open = Some(i);
                    if v["content_block"]["type"] == "tool_use" {
                        tool_ids.push(v["content_block"]["id"].as_str().unwrap().to_string());
                    }
                }
                "content_block_delta" => {
                    assert_eq!(open, v["index"].as_u64(), "{name}: delta outside its block")
                }
                "content_block_stop" => {
                    assert_eq!(open, v["index"].as_u64(), "{name}: stop of another block");
                    open = None;
                }
                _ => {}
            }
        }
        assert!(open.is_none(), "{name}: block left open");
        assert_eq!(tool_ids, canonical_calls(&events), "{name}");
        let message_ids: Vec<_> = out
            .iter()
            .filter_map(|(_, v)| v["message"]["id"].as_str())
            .collect();
        assert_eq!(message_ids.len(), 1, "{name}");
    }
}

/// Gemini: calls come whole (one part each, so there is no start and end to disagree),
/// each canonical call exactly once with full arguments, named by the canonical id if by
/// any (the encoder writes none: Gemini matches results by name); one response id.
#[test]
fn gemini_calls_keep_one_id() {
    for (name, events) in scenarios() {
        let out = encode(Dialect::Gemini, &events);
        let response_ids: std::collections::BTreeSet<_> = out
            .iter()
            .filter_map(|(_, v)| v["responseId"].as_str())
            .collect();
        assert!(response_ids.len() <= 1, "{name}: {response_ids:?}");
        let mut calls = Vec::new();
        for (_, v) in &out {
            for c in v["candidates"].as_array().into_iter().flatten() {
                for p in c["content"]["parts"].as_array().into_iter().flatten() {
                    if let Some(fc) = p.get("functionCall") {
                        calls.push(fc["id"].as_str().map(str::to_string));
                        assert!(fc["args"].is_object(), "{name}: {fc}");
                    }
                }
            }
        }
        let expected = canonical_calls(&events);
        assert_eq!(calls.len(), expected.len(), "{name}");
        for (got, want) in calls.iter().zip(&expected) {
            if let Some(got) = got {
                assert_eq!(got, want, "{name}");
            }
        }
    }
}
