//! The library over real HTTP to the mock provider, in every dialect: plain text, a tool
//! round trip, thinking whose opaque state goes back in the next request, streaming, and
//! usage with cache tokens. Each test asserts what reached the server (path, headers, the
//! JSON fields the dialect must carry) and the reply the library decoded.

mod common;

use common::*;
use futures::StreamExt;
use serde_json::{json, Value};
use switchyard::env::MapEnv;
use switchyard::wire::{Opaque, Reasoning, ToolResult};
use switchyard::{connect, Llm};
use switchyard::{Dialect, Event, FinishReason, Message, Part, Reply, Request, Role, Usage};
use switchyard_mock::{signing, MockServer};

fn ask() -> Request {
    Request::user("hello there")
        .with_system("be brief")
        .with_max_tokens(64)
}

#[tokio::test]
async fn plain_text_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let reply = llm(&mock, d, "echo").complete(ask()).await.unwrap();
        assert_eq!(reply.text(), "hello there", "{d}");
        assert_eq!(reply.finish, FinishReason::Stop, "{d}");
        assert_eq!(reply.model.as_deref(), Some("echo"), "{d}");
        assert!(reply.id.is_some(), "{d}: the provider's response id");
        let usage = reply.usage.expect("usage");
        assert!(usage.input > 0 && usage.output > 0, "{d}: {usage:?}");
        assert!(!reply.raw.is_empty(), "{d}: raw bytes kept");

        let sent = last(&mock);
        assert_route(&sent, d, "echo", false);
        let b = body(&sent);
        match d {
            Dialect::Chat => {
                assert_eq!(
                    b["messages"],
                    json!([
                        {"role": "system", "content": "be brief"},
                        {"role": "user", "content": "hello there"}
                    ])
                );
                assert_eq!(b["max_completion_tokens"], 64);
                assert!(b.get("stream").is_none(), "{b}");
                assert!(b.get("stream_options").is_none(), "{b}");
            }
            Dialect::Responses => {
                assert_eq!(b["instructions"], "be brief");
                assert_eq!(
                    b["input"],
                    json!([{"type": "message", "role": "user",
                            "content": [{"type": "input_text", "text": "hello there"}]}])
                );
                assert_eq!(b["max_output_tokens"], 64);
                assert_eq!(b["stream"], false);
            }
            Dialect::Messages => {
                assert_eq!(b["system"], "be brief");
                assert_eq!(
                    b["messages"],
                    json!([{"role": "user", "content": "hello there"}])
                );
                assert_eq!(b["max_tokens"], 64);
                assert!(b.get("stream").is_none(), "{b}");
            }
            Dialect::Gemini => {
                assert_eq!(
                    b["systemInstruction"],
                    json!({"parts": [{"text": "be brief"}]})
                );
                assert_eq!(
                    b["contents"],
                    json!([{"role": "user", "parts": [{"text": "hello there"}]}])
                );
                assert_eq!(b["generationConfig"]["maxOutputTokens"], 64);
            }
        }
    }
}

#[tokio::test]
async fn messages_always_carries_max_tokens() {
    // Anthropic rejects a request without max_tokens; the library supplies one.
    let mock = MockServer::start().await;
    let reply = llm(&mock, Dialect::Messages, "echo")
        .complete(Request::user("hi"))
        .await
        .unwrap();
    assert_eq!(reply.text(), "hi");
    let b = body(&last(&mock));
    assert!(b["max_tokens"].as_u64().is_some_and(|n| n > 0), "{b}");
}

/// The conversation after the model asked for a tool: the assistant turn as the reply
/// gave it, then the tool's result.
fn with_tool_result(request: &Request, reply: &Reply, result: &str) -> Request {
    let call = reply.tool_calls().next().expect("a tool call");
    let mut next = request.clone();
    next.messages.push(Message {
        role: Role::Assistant,
        content: reply.content.clone(),
    });
    next.messages.push(Message {
        role: Role::Tool,
        content: vec![Part::ToolResult(ToolResult {
            call_id: call.id.clone(),
            name: Some(call.name.clone()),
            content: vec![Part::text(result)],
            is_error: false,
            kind: Default::default(),
        })],
    });
    next
}

#[tokio::test]
async fn tool_call_round_trip_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let llm = llm(&mock, d, "tools");
        let mut first = Request::user("What is the weather in Paris?");
        first.tools.push(weather_tool());

        let reply = llm.complete(first.clone()).await.unwrap();
        assert_eq!(reply.finish, FinishReason::ToolCalls, "{d}");
        let calls: Vec<_> = reply.tool_calls().cloned().collect();
        assert_eq!(calls.len(), 1, "{d}: {reply:?}");
        assert_eq!(calls[0].name, "get_weather", "{d}");
        let args: Value = serde_json::from_str(&calls[0].arguments).unwrap();
        assert_eq!(args, json!({"city": "Paris"}), "{d}");
        assert!(!calls[0].id.is_empty(), "{d}: every call has an id");

        // The tool as offered on the wire.
        let b = body(&last(&mock));
        let schema = weather_tool().parameters;
        match d {
            Dialect::Chat => {
                assert_eq!(b["tools"][0]["type"], "function");
                assert_eq!(b["tools"][0]["function"]["name"], "get_weather");
                assert_eq!(b["tools"][0]["function"]["parameters"], schema);
            }
            Dialect::Responses => {
                assert_eq!(b["tools"][0]["type"], "function");
                assert_eq!(b["tools"][0]["name"], "get_weather");
                assert_eq!(b["tools"][0]["parameters"], schema);
            }
            Dialect::Messages => {
                assert_eq!(b["tools"][0]["name"], "get_weather");
                assert_eq!(b["tools"][0]["input_schema"], schema);
            }
            Dialect::Gemini => {
                let f = &b["tools"][0]["functionDeclarations"][0];
                assert_eq!(f["name"], "get_weather");
                assert_eq!(f["parametersJsonSchema"], schema);
            }
        }

        let second = with_tool_result(&first, &reply, "18 degrees and sunny");
        let answer = llm.complete(second).await.unwrap();
        assert_eq!(
            answer.text(),
            "The tool returned: 18 degrees and sunny",
            "{d}"
        );
        assert_eq!(answer.finish, FinishReason::Stop, "{d}");

        let sent = last(&mock);
        assert_route(&sent, d, "tools", false);
        let b = body(&sent);
        let id = calls[0].id.as_str();
        match d {
            Dialect::Chat => {
                let m = b["messages"].as_array().unwrap();
                assert_eq!(m.len(), 3, "{b}");
                assert_eq!(m[1]["role"], "assistant");
                assert_eq!(
                    m[1]["tool_calls"],
                    json!([{"id": id, "type": "function",
                            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}])
                );
                assert_eq!(
                    m[2],
                    json!({"role": "tool", "tool_call_id": id, "content": "18 degrees and sunny"})
                );
            }
            Dialect::Responses => {
                let input = b["input"].as_array().unwrap();
                assert_eq!(input.len(), 3, "{b}");
                assert_eq!(
                    input[1],
                    json!({"type": "function_call", "call_id": id, "name": "get_weather",
                           "arguments": "{\"city\":\"Paris\"}"})
                );
                assert_eq!(
                    input[2],
                    json!({"type": "function_call_output", "call_id": id,
                           "output": "18 degrees and sunny"})
                );
            }
            Dialect::Messages => {
                let m = b["messages"].as_array().unwrap();
                assert_eq!(m.len(), 3, "{b}");
                assert_eq!(
                    m[1],
                    json!({"role": "assistant", "content": [
                        {"type": "tool_use", "id": id, "name": "get_weather", "input": {"city": "Paris"}}
                    ]})
                );
                assert_eq!(
                    m[2],
                    json!({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": "18 degrees and sunny"}
                    ]})
                );
            }
            Dialect::Gemini => {
                // No ids on Gemini's wire: the call and its answer are paired by name.
                // The mock signs a step's first call, as Gemini 3 does, and that
                // signature goes back on the call (only a call this backend did not sign
                // goes up with Google's placeholder, which Gemini 3 accepts).
                let c = b["contents"].as_array().unwrap();
                assert_eq!(c.len(), 3, "{b}");
                let signature = Opaque::for_dialect(&calls[0].state, d).expect("signed call");
                assert_eq!(
                    c[1],
                    json!({"role": "model", "parts": [
                        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                         "thoughtSignature": signature}
                    ]})
                );
                assert_eq!(c[2]["role"], "user");
                let response = &c[2]["parts"][0]["functionResponse"];
                assert_eq!(response["name"], "get_weather");
                assert!(
                    response["response"]
                        .to_string()
                        .contains("18 degrees and sunny"),
                    "{b}"
                );
                assert!(!b.to_string().contains(id), "no synthetic id on the wire");
            }
        }
    }
}

#[tokio::test]
async fn thinking_state_goes_back_in_the_next_request() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let llm = llm(&mock, d, "think");
        let mut first = Request::user("why is the sky blue?").with_max_tokens(4000);
        first.reasoning = Some(Reasoning {
            effort: Some("high".into()),
            ..Default::default()
        });
        let reply = llm.complete(first.clone()).await.unwrap();
        assert_eq!(reply.text(), "why is the sky blue?", "{d}");
        let Some(Part::Thinking(thinking)) = reply.content.first() else {
            panic!("{d}: the reply starts with thinking: {reply:?}")
        };
        assert!(thinking.text.starts_with("The user wrote"), "{d}");
        let usage = reply.usage.unwrap();
        // Anthropic reports no separate reasoning count; the others do.
        if d != Dialect::Messages {
            assert!(usage.reasoning > 0 && usage.reasoning < usage.output, "{d}");
        }

        // The request asked for reasoning in the dialect's words.
        let b = body(&last(&mock));
        match d {
            Dialect::Chat => assert_eq!(b["reasoning_effort"], "high"),
            Dialect::Responses => {
                assert_eq!(b["reasoning"]["effort"], "high");
                // Stateless reasoning: the encrypted state must be asked for.
                assert_eq!(b["store"], false);
                assert_eq!(b["include"], json!(["reasoning.encrypted_content"]));
            }
            Dialect::Messages => {
                // effort "high" is a 16384 budget, kept below max_tokens.
                assert_eq!(
                    b["thinking"],
                    json!({"type": "enabled", "budget_tokens": 3999})
                );
                assert_eq!(b["max_tokens"], 4000);
            }
            Dialect::Gemini => {
                assert_eq!(
                    b["generationConfig"]["thinkingConfig"],
                    json!({"thinkingLevel": "high", "includeThoughts": true})
                );
            }
        }

        let state = thinking.state.clone();
        match d {
            // Chat has no opaque state: the reasoning text is all there is.
            Dialect::Chat => assert_eq!(state, None),
            _ => {
                let state = state.unwrap_or_else(|| panic!("{d}: thinking carries state"));
                assert_eq!(state.dialect, d);
                // The mock's signatures are base64 it can verify (docs/mock.md).
                let ours = match d {
                    Dialect::Messages => signing::verify_thinking(&thinking.text, &state.value),
                    Dialect::Responses => {
                        signing::verify_unbound(signing::Kind::EncryptedContent, &state.value)
                    }
                    _ => signing::verify_unbound(signing::Kind::ThoughtSignature, &state.value),
                };
                assert!(ours, "{d}: {state:?}");
            }
        }

        let mut second = first.clone();
        second.messages.push(Message {
            role: Role::Assistant,
            content: reply.content.clone(),
        });
        second
            .messages
            .push(Message::text(Role::User, "and at sunset?"));
        let answer = llm.complete(second).await.unwrap();
        assert_eq!(answer.text(), "and at sunset?", "{d}");

        let b = body(&last(&mock));
        let signature = Opaque::for_dialect(&thinking.state, d).unwrap_or_default();
        match d {
            Dialect::Chat => {
                let m = &b["messages"][1];
                assert_eq!(m["role"], "assistant");
                assert_eq!(m["content"], "why is the sky blue?");
                assert_eq!(m["reasoning_content"], thinking.text.as_str());
            }
            Dialect::Responses => {
                let item = &b["input"][1];
                assert_eq!(item["type"], "reasoning", "{b}");
                assert_eq!(item["encrypted_content"], signature);
                assert_eq!(item["id"].as_str(), thinking.id.as_deref());
                assert_eq!(b["input"][2]["role"], "assistant");
            }
            Dialect::Messages => {
                assert_eq!(
                    b["messages"][1]["content"][0],
                    json!({"type": "thinking", "thinking": thinking.text, "signature": signature})
                );
                assert_eq!(b["messages"][1]["content"][1]["type"], "text");
            }
            Dialect::Gemini => {
                let part = &b["contents"][1]["parts"][0];
                assert_eq!(b["contents"][1]["role"], "model");
                assert_eq!(part["thoughtSignature"], signature, "{b}");
                assert_eq!(part["thought"], true);
            }
        }
    }
}

#[tokio::test]
async fn thinking_from_another_dialect_is_not_sent_as_this_ones_state() {
    // A signature is only valid where it was issued: an Anthropic signature must not
    // appear as a Gemini thoughtSignature or a Responses encrypted_content.
    let mock = MockServer::start().await;
    let mut request = Request::user("hi");
    request.messages.push(Message {
        role: Role::Assistant,
        content: vec![
            Part::Thinking(switchyard::wire::Thinking {
                text: "earlier thoughts".into(),
                state: Some(Opaque::new(Dialect::Messages, "sig-from-anthropic")),
                ..Default::default()
            }),
            Part::text("earlier answer"),
        ],
    });
    request.messages.push(Message::text(Role::User, "again"));
    for d in [Dialect::Responses, Dialect::Gemini, Dialect::Chat] {
        let reply = llm(&mock, d, "echo")
            .complete(request.clone())
            .await
            .unwrap();
        assert_eq!(reply.text(), "again", "{d}");
        let sent = last(&mock).body_text();
        assert!(!sent.contains("sig-from-anthropic"), "{d}: {sent}");
    }
}

/// Every event of a streamed call, and the reply it assembled.
async fn stream_all(llm: &switchyard::Llm, request: Request) -> (Vec<Event>, Reply) {
    let mut stream = llm.stream(request).await.unwrap();
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.unwrap());
    }
    assert!(stream.is_finished());
    (events, stream.reply())
}

/// Asserts the order a consumer relies on: parts start in order and each part's events
/// stay between its start and its end; one finish; usage present.
fn assert_event_order(d: Dialect, model: &str, events: &[Event], reply: &Reply) {
    let label = format!("{d} {model}");
    let mut highest_part: Option<usize> = None;
    let mut open_calls = std::collections::BTreeSet::new();
    let mut finishes = 0;
    let mut text = String::new();
    for e in events {
        let part = match e {
            Event::TextDelta { part, text: t } => {
                text.push_str(t);
                Some(*part)
            }
            Event::ThinkingDelta { part, .. }
            | Event::ThinkingState { part, .. }
            | Event::TextState { part, .. } => Some(*part),
            Event::ToolCallStart { part, .. } => {
                assert!(open_calls.insert(*part), "{label}: started twice");
                Some(*part)
            }
            Event::ToolCallDelta { part, .. } => {
                assert!(open_calls.contains(part), "{label}: delta before start");
                Some(*part)
            }
            Event::ToolCallEnd { part } => {
                assert!(open_calls.remove(part), "{label}: end without start");
                Some(*part)
            }
            Event::Finish { .. } => {
                finishes += 1;
                None
            }
            Event::Error(e) => panic!("{label}: error event {e:?}"),
            _ => None,
        };
        if let Some(p) = part {
            assert_eq!(finishes, 0, "{label}: content after finish");
            assert!(
                highest_part.is_none_or(|h| p >= h),
                "{label}: part {p} after part {highest_part:?}: {events:?}"
            );
            highest_part = Some(p);
        }
    }
    assert!(open_calls.is_empty(), "{label}: calls never ended");
    assert_eq!(finishes, 1, "{label}: {events:?}");
    assert!(
        events.iter().any(|e| matches!(e, Event::Usage(_))),
        "{label}: usage"
    );
    assert_eq!(
        text,
        reply.text(),
        "{label}: deltas concatenate to the text"
    );
}

#[tokio::test]
async fn streaming_assembles_the_same_reply_in_every_dialect() {
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        for model in ["echo+chunk-3", "think", "tools", "think+tools+cache"] {
            let llm = llm(&mock, d, model);
            let mut request = Request::user("Stream the weather in Paris, please.");
            request.tools.push(weather_tool());

            let whole = llm.complete(request.clone()).await.unwrap();
            let (events, streamed) = stream_all(&llm, request).await;
            assert_event_order(d, model, &events, &streamed);

            // Equal but for the response id, which the mock numbers per call.
            let same = |r: &Reply| Reply {
                id: None,
                ..r.without_raw()
            };
            assert_eq!(same(&streamed), same(&whole), "{d} {model}");
            assert!(streamed.id.is_some(), "{d} {model}: streamed id");
            let raw = String::from_utf8_lossy(&streamed.raw);
            assert!(raw.contains("data:"), "{d} {model}: raw SSE kept");

            let sent = last(&mock);
            assert_route(&sent, d, model, true);
            let b = body(&sent);
            match d {
                Dialect::Chat => {
                    assert_eq!(b["stream"], true);
                    assert_eq!(b["stream_options"], json!({"include_usage": true}));
                }
                Dialect::Responses | Dialect::Messages => assert_eq!(b["stream"], true),
                // Streaming is the URL's method; the body is the same as a whole call.
                Dialect::Gemini => assert!(b.get("stream").is_none(), "{b}"),
            }
        }
        // Text arrives in pieces, not as one block.
        let (events, _) = stream_all(
            &llm(&mock, d, "echo+chunk-3"),
            Request::user("one two three four five"),
        )
        .await;
        let deltas = events
            .iter()
            .filter(|e| matches!(e, Event::TextDelta { .. }))
            .count();
        assert!(deltas >= 5, "{d}: {deltas} text deltas");
    }
}

#[tokio::test]
async fn usage_with_cache_tokens_has_one_meaning_in_every_dialect() {
    let mock = MockServer::start().await;
    let prompt = || Request::user("How many tokens is this prompt?");
    for d in Dialect::ALL {
        let plain = llm(&mock, d, "echo")
            .complete(prompt())
            .await
            .unwrap()
            .usage
            .unwrap();
        let cache = llm(&mock, d, "cache-1000-200");
        let reply = cache.complete(prompt()).await.unwrap();
        let usage = reply.usage.unwrap();
        // `input` counts every prompt token, cached ones included, whatever the wire says.
        assert_eq!(usage.cached_input, 1000, "{d}");
        assert_eq!(usage.input, plain.input + 1000 + 200, "{d}: {usage:?}");
        assert_eq!(usage.output, plain.output, "{d}");
        assert_eq!(
            usage.uncached_input(),
            plain.input + 200 - usage.cache_write
        );

        let raw: Value = serde_json::from_slice(&reply.raw).unwrap();
        match d {
            Dialect::Messages => {
                // Anthropic counts the three kinds apart; the library adds them up.
                assert_eq!(usage.cache_write, 200);
                assert_eq!(raw["usage"]["input_tokens"], plain.input);
                assert_eq!(raw["usage"]["cache_read_input_tokens"], 1000);
                assert_eq!(raw["usage"]["cache_creation_input_tokens"], 200);
            }
            Dialect::Chat => {
                assert_eq!(usage.cache_write, 0, "chat has no cache-write count");
                assert_eq!(raw["usage"]["prompt_tokens"], usage.input);
                assert_eq!(raw["usage"]["prompt_tokens_details"]["cached_tokens"], 1000);
            }
            Dialect::Responses => {
                assert_eq!(usage.cache_write, 0);
                assert_eq!(raw["usage"]["input_tokens"], usage.input);
                assert_eq!(raw["usage"]["input_tokens_details"]["cached_tokens"], 1000);
            }
            Dialect::Gemini => {
                assert_eq!(usage.cache_write, 0);
                assert_eq!(raw["usageMetadata"]["promptTokenCount"], usage.input);
                assert_eq!(raw["usageMetadata"]["cachedContentTokenCount"], 1000);
            }
        }

        // The streamed call reports the same usage.
        let (_, streamed) = stream_all(&cache, prompt()).await;
        assert_eq!(streamed.usage, Some(usage), "{d}");
    }
}

#[tokio::test]
async fn usage_sums_across_dialects_mean_the_same() {
    // One prompt, four dialects, one canonical usage (cache writes aside, which only
    // Anthropic reports apart).
    let mock = MockServer::start().await;
    let mut seen: Vec<(Dialect, Usage)> = Vec::new();
    for d in Dialect::ALL {
        let reply = llm(&mock, d, "think+cache")
            .complete(Request::user("same prompt everywhere"))
            .await
            .unwrap();
        seen.push((d, reply.usage.unwrap()));
    }
    let (_, first) = seen[0];
    for (d, u) in &seen {
        assert_eq!(
            (u.input, u.cached_input, u.output),
            (first.input, first.cached_input, first.output),
            "{d}: {seen:?}"
        );
    }
}

#[tokio::test]
async fn thinking_before_a_tool_call_round_trips_with_the_tool_result() {
    // Anthropic and Gemini 3 reject a tool-use history whose thinking lost its state.
    let mock = MockServer::start().await;
    for d in Dialect::ALL {
        let llm = llm(&mock, d, "think+tools");
        let mut first = Request::user("What is the weather in Paris?");
        first.tools.push(weather_tool());
        let reply = llm.complete(first.clone()).await.unwrap();
        assert!(
            matches!(reply.content.first(), Some(Part::Thinking(_))),
            "{d}"
        );
        assert_eq!(reply.tool_calls().count(), 1, "{d}");
        let states: Vec<String> = reply
            .content
            .iter()
            .filter_map(|p| match p {
                Part::Thinking(t) => t.state.clone(),
                Part::ToolCall(c) => c.state.clone(),
                Part::Text { state, .. } => state.clone(),
                _ => None,
            })
            .map(|s| s.value)
            .collect();
        if d != Dialect::Chat {
            assert!(!states.is_empty(), "{d}: {reply:?}");
        }

        let answer = llm
            .complete(with_tool_result(&first, &reply, "rain"))
            .await
            .unwrap();
        assert_eq!(answer.text(), "The tool returned: rain", "{d}");
        let sent = last(&mock).body_text();
        for state in &states {
            assert!(sent.contains(state.as_str()), "{d}: {state} not in {sent}");
        }
    }
}

#[tokio::test]
async fn any_model_id_reaches_the_server_intact() {
    // Gemini names the model in the URL path: spaces, braces, `:`, `+`, `@`, `/` and
    // non-ASCII letters are escaped there (the id is one segment), and arrive as written.
    let mock = MockServer::start().await;
    let model = "say:Hello {World} a/b+c@d é";
    for d in Dialect::ALL {
        let reply = llm(&mock, d, model)
            .complete(Request::user("hi"))
            .await
            .unwrap_or_else(|e| panic!("{d}: {e}"));
        assert_eq!(reply.text(), "Hello {World} a/b+c@d é", "{d}");
        let (stream, _) = stream_all(&llm(&mock, d, model), Request::user("hi")).await;
        assert!(!stream.is_empty(), "{d}");
    }
    let gemini: Vec<_> = mock
        .requests()
        .into_iter()
        .filter(|r| r.path.starts_with("/v1beta/"))
        .map(|r| (r.path, r.query))
        .collect();
    let sent = "say%3AHello%20%7BWorld%7D%20a%2Fb%2Bc%40d%20%C3%A9";
    assert_eq!(
        gemini,
        [
            (format!("/v1beta/models/{sent}:generateContent"), None),
            (
                format!("/v1beta/models/{sent}:streamGenerateContent"),
                Some("alt=sse".to_string())
            ),
        ]
    );
}

#[tokio::test]
async fn an_id_that_is_no_model_is_refused_by_every_door_before_any_request() {
    // What would change a URL's meaning is refused in every dialect, whether the id goes
    // in the path (Gemini) or in the body: one rule, `switchyard::model_id::check`.
    let mock = MockServer::start().await;
    let env = MapEnv::default();
    let registry = registry(&mock, &[], &env);
    let backend = registry.backend("mock").unwrap();
    for id in [
        "say:free?",
        "say:#1",
        "say:50%",
        "a\\b",
        "a/../b",
        "..",
        "a\u{0}",
        "a\r\nx",
        &"x".repeat(513),
    ] {
        for d in Dialect::ALL {
            let e = connect::http_backend(backend, id, Some(d), &env)
                .err()
                .unwrap_or_else(|| panic!("{d} {id:?} accepted"));
            assert!(
                e.to_string().contains("a model id is 1 to 512 bytes"),
                "{e}"
            );
        }
        // A reference, as `ask`, a run, Python and the gateway read one.
        let e = Llm::resolve(&registry, &format!("mock/{id}"), &env)
            .err()
            .unwrap_or_else(|| panic!("{id:?} accepted"));
        assert_eq!(e.kind(), switchyard::ErrorKind::Config, "{e}");
        assert!(e.to_string().starts_with("`mock/…`: model id `"), "{e}");
        // And the embeddings URL.
        assert!(backend.embed_url(id, &env).is_err(), "{id:?}");
    }
    assert!(mock.requests().is_empty());
}
