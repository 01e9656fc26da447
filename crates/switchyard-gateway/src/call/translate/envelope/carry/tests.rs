//! A backend's state sealed for each client dialect, taken through that client's own
//! wire format (encoded as the gateway answers, decoded as an SDK reads it, sent back as
//! the next turn's history), comes back as exactly what the backend issued.

use super::*;
use switchyard_wire::{
    assemble, codec, reply_events, ByteStreamDecoder, EncodeOptions, FinishReason, Message, Role,
    ServerContext, ToolCall, ToolKind,
};

const CLIENTS: [Dialect; 4] = [
    Dialect::Chat,
    Dialect::Responses,
    Dialect::Messages,
    Dialect::Gemini,
];

fn key() -> StateKey {
    StateKey::from_bytes(b"a test key of thirty-two bytes!!".to_vec())
}

fn state(dialect: Dialect, value: &str) -> Option<Opaque> {
    Some(Opaque::new(dialect, value).from_backend("up"))
}

fn call(id: &str, state: Option<Opaque>) -> Part {
    Part::ToolCall(ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: r#"{"city":"Paris"}"#.into(),
        kind: ToolKind::Function,
        namespace: None,
        state,
    })
}

fn thinking(text: &str, state: Option<Opaque>, redacted: bool, id: Option<&str>) -> Part {
    Part::Thinking(Thinking {
        text: text.into(),
        state,
        redacted,
        id: id.map(str::to_string),
    })
}

/// What each backend dialect issues in one agent turn.
fn issued(origin: Dialect) -> Vec<Part> {
    match origin {
        Dialect::Messages => vec![
            thinking(
                "I should look.",
                state(origin, "RXFRQkNrWUlCeGdD"),
                false,
                None,
            ),
            thinking("", state(origin, "cmVkYWN0ZWQ="), true, None),
            call("toolu_01", None),
            call("toolu_02", None),
        ],
        Dialect::Responses => vec![
            thinking(
                "**Looking**",
                state(origin, "gAAAAABo_enc"),
                false,
                Some("rs_1"),
            ),
            call("call_1", None),
            call("call_2", None),
        ],
        Dialect::Gemini => vec![
            thinking("Thinking about it", None, false, None),
            call("c1", state(origin, "Q2lRQlZLaEc=")),
            call("c2", None),
        ],
        Dialect::Chat => vec![call("call_1", None)],
    }
}

fn reply(origin: Dialect) -> Reply {
    Reply {
        content: issued(origin),
        finish: FinishReason::ToolCalls,
        finish_raw: None,
        usage: None,
        model: Some("m".into()),
        id: Some("r1".into()),
        raw: Default::default(),
    }
}

/// The state in parts, each with what it rides on.
fn states(parts: &[Part]) -> Vec<(String, Opaque)> {
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Thinking(t) => t.state.clone().map(|s| {
                (
                    format!(
                        "thinking {:?} redacted={} id={:?}",
                        t.text, t.redacted, t.id
                    ),
                    s,
                )
            }),
            Part::ToolCall(c) => c.state.clone().map(|s| (format!("call {}", c.id), s)),
            Part::Text { text, state } => state.clone().map(|s| (format!("text {text}"), s)),
            _ => None,
        })
        .collect()
}

/// What comes back: everything `origin` issued, but nothing through a chat client.
fn expected_states(origin: Dialect, client: Dialect) -> Vec<(String, Opaque)> {
    if client == Dialect::Chat {
        Vec::new()
    } else {
        states(&issued(origin))
    }
}

/// The next turn's history as the client sends it, opened by the gateway.
fn next_turn(client: Dialect, content: Vec<Part>) -> Vec<Part> {
    let mut request = Request::user("weather?");
    request.messages.push(Message {
        role: Role::Assistant,
        content,
    });
    let c = codec(client);
    let options = EncodeOptions {
        model: "m",
        stream: false,
    };
    let body = serde_json::to_vec(&c.encode_request(&request, &options).unwrap()).unwrap();
    let mut decoded = c.decode_request(&body).unwrap().request;
    open_request(&mut decoded, client, &key());
    decoded.messages.pop().unwrap().content
}

fn context() -> ServerContext {
    ServerContext {
        created: 1,
        fallback_id: "x".into(),
    }
}

/// A whole reply sealed for `client`, answered as the gateway does and read back as the
/// client's SDK reads it.
fn whole_as_read(mut reply: Reply, client: Dialect) -> Vec<Part> {
    seal_reply(&mut reply, client, &key());
    let c = codec(client);
    c.decode_reply(&c.encode_reply(&reply, &context()))
        .unwrap()
        .content
}

#[test]
fn whole_replies_carry_state_to_every_client_and_back() {
    for origin in [Dialect::Messages, Dialect::Responses, Dialect::Gemini] {
        for client in CLIENTS.into_iter().filter(|c| *c != origin) {
            let back = next_turn(client, whole_as_read(reply(origin), client));
            let expected = expected_states(origin, client);
            assert_eq!(states(&back), expected, "{origin} to a {client} client");
        }
    }
}

#[test]
fn streams_carry_state_to_every_client_and_back() {
    for origin in [Dialect::Messages, Dialect::Responses, Dialect::Gemini] {
        for client in CLIENTS.into_iter().filter(|c| *c != origin) {
            let c = codec(client);
            let mut encoder = c.stream_encoder(&context());
            let mut sealer = StreamSealer::new(client, &key());
            let mut bytes = Vec::new();
            for event in reply_events(&reply(origin), 3) {
                match &mut sealer {
                    Some(s) => s.event(event, |e| encoder.event(&e, &mut bytes)),
                    None => encoder.event(&event, &mut bytes),
                }
            }
            if let Some(s) = &mut sealer {
                s.finish(|e| encoder.event(&e, &mut bytes));
            }
            encoder.finish(&mut bytes);
            let mut decoder = ByteStreamDecoder::new(c);
            let mut events = decoder.push(&bytes).unwrap();
            events.extend(decoder.finish().unwrap());
            let as_read = assemble(&events).unwrap();
            let back = next_turn(client, as_read.content);
            let expected = expected_states(origin, client);
            assert_eq!(
                states(&back),
                expected,
                "{origin} streamed to a {client} client"
            );
        }
    }
}

#[test]
fn a_text_parts_state_rides_after_it() {
    let mut reply = reply(Dialect::Gemini);
    reply.content = vec![Part::Text {
        text: "It is sunny.".into(),
        state: state(Dialect::Gemini, "dGV4dA=="),
    }];
    for client in [Dialect::Messages, Dialect::Responses] {
        let back = next_turn(client, whole_as_read(reply.clone(), client));
        assert_eq!(states(&back), states(&reply.content), "{client}");
    }
}

#[test]
fn forged_and_foreign_envelopes_are_dropped_not_refused() {
    let mut sealed = reply(Dialect::Messages);
    seal_reply(
        &mut sealed,
        Dialect::Gemini,
        &StateKey::from_bytes(b"another gateway's key, not ours!".to_vec()),
    );
    let mut request = Request::user("q");
    request.messages.push(Message {
        role: Role::Assistant,
        content: sealed.content,
    });
    let opened = open_request(&mut request, Dialect::Gemini, &key());
    assert_eq!(
        opened,
        Opened {
            restored: 0,
            dropped: 2
        }
    );
    let parts = &request.messages[1].content;
    // The readable thinking stays (unsigned); the redacted block, only state, goes.
    assert_eq!(states(parts), Vec::new());
    assert!(matches!(&parts[0], Part::Thinking(t) if t.text == "I should look."));
    assert_eq!(parts.len(), 3, "{parts:?}");
}

#[test]
fn only_bodies_with_envelopes_leave_pass_through() {
    let mut sealed = reply(Dialect::Gemini);
    seal_reply(&mut sealed, Dialect::Messages, &key());
    let body = codec(Dialect::Messages).encode_reply(&sealed, &context());
    assert!(may_carry(&body));
    assert!(!may_carry(br#"{"signature":"EqQBCkYIBxgC"}"#));
}
