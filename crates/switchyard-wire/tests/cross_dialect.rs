//! Property test across dialects: a canonical request generated at random, encoded in
//! dialect A, decoded, encoded in dialect B, decoded, keeps every field both A and B
//! carry. What a dialect carries is written as a projection (`carried`): the request with
//! what the dialect cannot hold stripped or normalised as its codec documents. The
//! result of the path A → B must equal `carried(B, carried(A, request))`, both sides put
//! in one form (`same_form`) for what is representation rather than content: consecutive
//! tool messages as one, no empty messages, call ids by order of appearance when Gemini (which has none) is
//! on the path, the decoder's passthrough left out. Opaque state of dialect D survives
//! only when A == B == D: each dialect keeps only its own.
//!
//! The generator stays within what every codec reads back as one shape: an optional
//! leading system text; exchanges of a user message (one text, maybe an inline image),
//! an assistant message (maybe thinking first, maybe text, then up to two function
//! calls with JSON-object arguments) and the calls' results (one non-empty text each, in
//! order); function tools with object schemas; a tool choice only beside tools; and
//! `max_tokens` (Messages requires one), temperature, top-p and stop sequences. Left out:
//! reasoning settings, response formats, error flags on results, custom and namespaced
//! tools (tests/namespaced_calls.rs), text-part state, redacted thinking.

use proptest::prelude::*;
use serde_json::json;
use std::collections::HashMap;
use switchyard_wire::{
    codec, Dialect, EncodeOptions, Image, Message, Opaque, Part, Request, Role, Thinking, Tool,
    ToolCall, ToolChoice, ToolKind, ToolResult,
};

const DIALECTS: [Dialect; 4] = [
    Dialect::Chat,
    Dialect::Responses,
    Dialect::Messages,
    Dialect::Gemini,
];

fn text() -> impl Strategy<Value = String> {
    // Starts with a letter: never empty, never JSON (Gemini reads a result's JSON text
    // as its response object).
    "[a-zA-Z][a-zA-Z0-9 é日\"\\\\\n:,.-]{0,20}"
}

fn dialect() -> impl Strategy<Value = Dialect> {
    prop::sample::select(DIALECTS.to_vec())
}

fn opaque() -> impl Strategy<Value = Opaque> {
    (dialect(), "[A-Za-z0-9+/]{4,24}").prop_map(|(d, v)| Opaque::new(d, v))
}

fn image() -> impl Strategy<Value = Image> {
    "[A-Za-z0-9+/]{4,16}".prop_map(|data| Image::Base64 {
        media_type: "image/png".into(),
        data,
    })
}

fn arguments() -> impl Strategy<Value = String> {
    prop::collection::btree_map(
        "[a-z]{1,5}",
        prop_oneof![
            any::<i16>().prop_map(|n| json!(n)),
            text().prop_map(|t| json!(t))
        ],
        0..3,
    )
    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()).to_string())
}

/// An assistant turn's parts and its calls' results.
#[derive(Debug, Clone)]
struct Exchange {
    user: String,
    image: Option<Image>,
    thinking: Option<(String, Option<Opaque>)>,
    answer: Option<String>,
    calls: Vec<(usize, String, Option<Opaque>, String, bool)>,
}

fn exchange() -> impl Strategy<Value = Exchange> {
    (
        text(),
        prop::option::of(image()),
        prop::option::of((text(), prop::option::of(opaque()))),
        prop::option::of(text()),
        prop::collection::vec(
            (
                0..3usize,
                arguments(),
                prop::option::of(opaque()),
                text(),
                any::<bool>(),
            ),
            0..3,
        ),
    )
        .prop_map(|(user, image, thinking, answer, calls)| Exchange {
            user,
            image,
            thinking,
            answer,
            calls,
        })
}

const TOOL_NAMES: [&str; 3] = ["get_weather", "read_file", "run"];

fn request() -> impl Strategy<Value = Request> {
    (
        prop::option::of(text()),
        prop::collection::vec(exchange(), 1..4),
        prop::option::of(1..3usize),
        0..5usize,
        1u64..8192,
        prop::option::of((0u8..=20).prop_map(|t| f64::from(t) / 10.0)),
        prop::option::of((1u8..=10).prop_map(|t| f64::from(t) / 10.0)),
        prop::collection::vec("[A-Z]{1,5}", 0..3),
    )
        .prop_map(|(system, exchanges, tools, choice, max, temperature, top_p, stop)| {
            let mut r = Request::default();
            if let Some(s) = system {
                r.messages.push(Message::text(Role::System, s));
            }
            let mut n = 0;
            for x in exchanges {
                let mut user = vec![Part::text(x.user)];
                user.extend(x.image.map(Part::Image));
                r.messages.push(Message { role: Role::User, content: user });
                let mut parts = Vec::new();
                if let Some((text, state)) = x.thinking {
                    parts.push(Part::Thinking(Thinking { text, state, redacted: false, id: None }));
                }
                parts.extend(x.answer.map(Part::text));
                let mut results = Vec::new();
                for (tool, arguments, state, result, named) in x.calls {
                    n += 1;
                    let id = format!("call_{n}x");
                    let name = TOOL_NAMES[tool].to_string();
                    parts.push(Part::ToolCall(ToolCall {
                        id: id.clone(),
                        name: name.clone(),
                        arguments,
                        kind: ToolKind::Function,
                        namespace: None,
                        state,
                    }));
                    results.push(Message {
                        role: Role::Tool,
                        content: vec![Part::ToolResult(ToolResult {
                            call_id: id,
                            name: named.then_some(name),
                            content: vec![Part::text(result)],
                            is_error: false,
                            kind: ToolKind::Function,
                        })],
                    });
                }
                if parts.is_empty() {
                    parts.push(Part::text("ok"));
                }
                r.messages.push(Message { role: Role::Assistant, content: parts });
                r.messages.extend(results);
            }
            r.messages.push(Message::text(Role::User, "go on"));
            r.tools = TOOL_NAMES[..tools.unwrap_or(0)]
                .iter()
                .map(|name| Tool {
                    name: name.to_string(),
                    description: Some(format!("{name} tool")),
                    parameters: json!({"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]}),
                    kind: ToolKind::Function,
                    strict: None,
                    namespace: None,
                })
                .collect();
            if !r.tools.is_empty() {
                r.tool_choice = match choice {
                    1 => Some(ToolChoice::Auto),
                    2 => Some(ToolChoice::None),
                    3 => Some(ToolChoice::Required),
                    4 => Some(ToolChoice::Tool(r.tools[0].name.clone())),
                    _ => None,
                };
            }
            r.max_tokens = Some(max);
            r.temperature = temperature;
            r.top_p = top_p;
            r.stop = stop;
            r
        })
}

/// The request as `dialect` carries it (each codec's module doc lists these).
fn carried(dialect: Dialect, mut r: Request) -> Request {
    let names: HashMap<String, String> = r
        .messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|p| match p {
            Part::ToolCall(c) => Some((c.id.clone(), c.name.clone())),
            _ => None,
        })
        .collect();
    if dialect == Dialect::Responses {
        r.stop.clear(); // no stop sequences in the Responses API
    }
    for m in &mut r.messages {
        // Chat sends reasoning first, several parts joined, as text only.
        if dialect == Dialect::Chat && m.role == Role::Assistant {
            let thinking: Vec<String> = m
                .content
                .iter()
                .filter_map(|p| match p {
                    Part::Thinking(t) => Some(t.text.clone()),
                    _ => None,
                })
                .collect();
            m.content.retain(|p| !matches!(p, Part::Thinking(_)));
            if !thinking.is_empty() {
                m.content.insert(
                    0,
                    Part::Thinking(Thinking {
                        text: thinking.concat(),
                        state: None,
                        redacted: false,
                        id: None,
                    }),
                );
            }
        }
        m.content.retain(|p| match p {
            // The others send thinking back only with their own state.
            Part::Thinking(t) => {
                dialect == Dialect::Chat || Opaque::for_dialect(&t.state, dialect).is_some()
            }
            _ => true,
        });
        for p in &mut m.content {
            match p {
                // Only Gemini has state on calls (`thoughtSignature`), and only its own.
                Part::ToolCall(c)
                    if dialect != Dialect::Gemini
                        || Opaque::for_dialect(&c.state, dialect).is_none() =>
                {
                    c.state = None;
                }
                Part::ToolResult(res) => {
                    res.name = match dialect {
                        // Gemini names every result after its call.
                        Dialect::Gemini => res
                            .name
                            .clone()
                            .or_else(|| names.get(&res.call_id).cloned()),
                        _ => None,
                    };
                }
                _ => {}
            }
        }
    }
    r
}

/// One form for what is representation, not content.
fn same_form(mut r: Request, gemini_on_path: bool) -> Request {
    r.passthrough = Default::default();
    let mut merged: Vec<Message> = Vec::new();
    // A message left with nothing (thinking the dialect dropped) is not sent.
    for m in r.messages.into_iter().filter(|m| !m.content.is_empty()) {
        match merged.last_mut() {
            Some(last) if last.role == Role::Tool && m.role == Role::Tool => {
                last.content.extend(m.content)
            }
            _ => merged.push(m),
        }
    }
    r.messages = merged;
    if gemini_on_path {
        let mut ids: HashMap<String, String> = HashMap::new();
        for p in r.messages.iter_mut().flat_map(|m| &mut m.content) {
            let id = match p {
                Part::ToolCall(c) => &mut c.id,
                Part::ToolResult(res) => &mut res.call_id,
                _ => continue,
            };
            let n = ids.len();
            *id = ids
                .entry(id.clone())
                .or_insert_with(|| format!("id{n}"))
                .clone();
        }
    }
    r
}

fn hop(dialect: Dialect, r: &Request) -> Result<Request, String> {
    let options = EncodeOptions {
        model: "m",
        stream: false,
    };
    let body = codec(dialect)
        .encode_request(r, &options)
        .map_err(|e| format!("encode {dialect}: {e}"))?;
    let bytes = serde_json::to_vec(&body).unwrap();
    codec(dialect)
        .decode_request(&bytes)
        .map(|d| d.request)
        .map_err(|e| format!("decode {dialect}: {e}: {}", String::from_utf8_lossy(&bytes)))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_request_keeps_what_both_dialects_carry(r in request(), a in dialect(), b in dialect()) {
        let through = hop(b, &hop(a, &r).map_err(TestCaseError::fail)?).map_err(TestCaseError::fail)?;
        let gemini = a == Dialect::Gemini || b == Dialect::Gemini;
        let expected = same_form(carried(b, carried(a, r)), gemini);
        prop_assert_eq!(same_form(through, gemini), expected, "{} → {}", a, b);
    }
}
