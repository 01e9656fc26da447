//! The client-side stream decoder: Anthropic SSE events → canonical events.

use super::blocks::signature_state;
use super::common::{error_from_object, finish_from_wire, WireUsage};
use crate::codec::{parse_object, DecodeError, StreamDecoder};
use crate::event::Event;
use crate::json::{obj_at, require_obj, require_str, str_at, u64_at, Object};
use crate::part::{Opaque, ToolKind};
use crate::sse::SseEvent;
use crate::Dialect;
use std::collections::HashMap;

/// What a wire block index maps to.
#[derive(Debug, Clone)]
enum Block {
    Text {
        part: usize,
    },
    Thinking {
        part: usize,
        signature: String,
    },
    Tool {
        part: usize,
        fragments: bool,
        start_input: Option<String>,
    },
    /// `redacted_thinking`: whole in its start, no deltas.
    Redacted,
    /// A block type the hub does not model (`server_tool_use`…): its events are skipped.
    Ignored,
}

/// Decodes one Messages stream. Wire block indices are mapped to part indices in the
/// order blocks start (never trusted to be dense or to start at 0); ignored block types
/// take no part index.
#[derive(Debug, Default)]
pub(super) struct MessagesStreamDecoder {
    blocks: HashMap<u64, Block>,
    next_part: usize,
    usage: WireUsage,
    finished: bool,
    stopped: bool,
    errored: bool,
}

impl StreamDecoder for MessagesStreamDecoder {
    fn ended(&self) -> bool {
        self.stopped || self.errored
    }

    fn event(&mut self, sse: &SseEvent) -> Result<Vec<Event>, DecodeError> {
        if self.stopped || self.errored {
            return Ok(Vec::new());
        }
        if sse.data.trim().is_empty() {
            // `event: ping` without data, keep-alives.
            return Ok(Vec::new());
        }
        let data = parse_object(sse.data.as_bytes(), "messages stream event data")?;
        let name = sse
            .event
            .as_deref()
            .or_else(|| str_at(&data, "type"))
            .unwrap_or_default()
            .to_string();
        let mut out = Vec::new();
        match name.as_str() {
            "message_start" => self.message_start(&data, &mut out)?,
            "content_block_start" => self.block_start(&data, &mut out)?,
            "content_block_delta" => self.block_delta(&data, &mut out)?,
            "content_block_stop" => self.block_stop(&data, &mut out)?,
            "message_delta" => self.message_delta(&data, &mut out),
            "message_stop" => {
                if !self.finished {
                    out.push(Event::Finish {
                        reason: crate::reply::FinishReason::Stop,
                        raw: None,
                    });
                    self.finished = true;
                }
                self.stopped = true;
            }
            "error" => {
                out.push(Event::Error(error_from_object(&data)));
                self.errored = true;
            }
            // `ping` and event types added later.
            _ => {}
        }
        Ok(out)
    }

    fn finish(&mut self) -> Result<Vec<Event>, DecodeError> {
        if self.stopped || self.errored {
            Ok(Vec::new())
        } else {
            Err(DecodeError::Malformed(
                "messages stream ended before `message_stop` (cut off mid-way)".into(),
            ))
        }
    }
}

impl MessagesStreamDecoder {
    fn message_start(&mut self, data: &Object, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let message = require_obj(data, "message", "`message_start` event")?;
        out.push(Event::Start {
            id: str_at(message, "id").map(str::to_string),
            model: str_at(message, "model").map(str::to_string),
        });
        if let Some(usage) = obj_at(message, "usage") {
            self.usage.merge(usage);
            out.push(Event::Usage(self.usage.canonical()));
        }
        Ok(())
    }

    fn index(data: &Object, what: &str) -> Result<u64, DecodeError> {
        u64_at(data, "index")
            .ok_or_else(|| DecodeError::Malformed(format!("`{what}` event has no numeric `index`")))
    }

    fn block_start(&mut self, data: &Object, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let index = Self::index(data, "content_block_start")?;
        let where_ = format!("`content_block_start` event (index {index})");
        let block = require_obj(data, "content_block", &where_)?;
        let part = self.next_part;
        let state = match require_str(block, "type", &where_)? {
            "text" => {
                // Always one delta, so an empty block still makes its part.
                out.push(Event::TextDelta {
                    part,
                    text: str_at(block, "text").unwrap_or_default().to_string(),
                });
                Block::Text { part }
            }
            "thinking" => {
                out.push(Event::ThinkingDelta {
                    part,
                    text: str_at(block, "thinking").unwrap_or_default().to_string(),
                    // Anthropic thinking blocks have no id.
                    id: None,
                });
                let signature = str_at(block, "signature").unwrap_or_default().to_string();
                if let Some(state) = signature_state(Some(&signature)) {
                    out.push(thinking_state(part, state, false));
                }
                Block::Thinking { part, signature }
            }
            "redacted_thinking" => {
                let data = require_str(block, "data", &where_)?;
                out.push(thinking_state(
                    part,
                    Opaque::new(Dialect::Messages, data),
                    true,
                ));
                Block::Redacted
            }
            "tool_use" => {
                out.push(Event::ToolCallStart {
                    part,
                    id: require_str(block, "id", &where_)?.to_string(),
                    name: require_str(block, "name", &where_)?.to_string(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: None,
                });
                // Some servers send the whole input here and no deltas.
                let start_input = block
                    .get("input")
                    .filter(|v| v.as_object().is_some_and(|o| !o.is_empty()))
                    .map(|v| v.to_string());
                Block::Tool {
                    part,
                    fragments: false,
                    start_input,
                }
            }
            _ => Block::Ignored,
        };
        if !matches!(state, Block::Ignored) {
            self.next_part += 1;
        }
        self.blocks.insert(index, state);
        Ok(())
    }

    fn block_delta(&mut self, data: &Object, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let index = Self::index(data, "content_block_delta")?;
        let where_ = format!("`content_block_delta` event (index {index})");
        let delta = require_obj(data, "delta", &where_)?;
        let kind = require_str(delta, "type", &where_)?;
        let block = self.blocks.get_mut(&index).ok_or_else(|| {
            DecodeError::Malformed(format!("{where_} for a block that never started"))
        })?;
        match (kind, block) {
            (_, Block::Ignored) => {}
            ("text_delta", Block::Text { part }) => out.push(Event::TextDelta {
                part: *part,
                text: require_str(delta, "text", &where_)?.to_string(),
            }),
            ("thinking_delta", Block::Thinking { part, .. }) => out.push(Event::ThinkingDelta {
                part: *part,
                text: require_str(delta, "thinking", &where_)?.to_string(),
                id: None,
            }),
            ("signature_delta", Block::Thinking { part, signature }) => {
                // Normally one delta; should a server split it, the pieces join.
                signature.push_str(require_str(delta, "signature", &where_)?);
                if let Some(state) = signature_state(Some(signature)) {
                    out.push(thinking_state(*part, state, false));
                }
            }
            (
                "input_json_delta",
                Block::Tool {
                    part, fragments, ..
                },
            ) => {
                let fragment = require_str(delta, "partial_json", &where_)?;
                if !fragment.is_empty() {
                    *fragments = true;
                    out.push(Event::ToolCallDelta {
                        part: *part,
                        arguments: fragment.to_string(),
                    });
                }
            }
            // Citations and delta types added later carry nothing the hub models.
            ("citations_delta", _) => {}
            (kind, block)
                if matches!(
                    kind,
                    "text_delta" | "thinking_delta" | "signature_delta" | "input_json_delta"
                ) =>
            {
                return Err(DecodeError::Malformed(format!(
                    "{where_}: a `{kind}` for a {} block",
                    block_name(block)
                )))
            }
            _ => {}
        }
        Ok(())
    }

    fn block_stop(&mut self, data: &Object, out: &mut Vec<Event>) -> Result<(), DecodeError> {
        let index = Self::index(data, "content_block_stop")?;
        if let Some(Block::Tool {
            part,
            fragments,
            start_input,
        }) = self.blocks.get_mut(&index)
        {
            if !*fragments {
                // No input fragments: the input is the start's, or empty (`{}`).
                out.push(Event::ToolCallDelta {
                    part: *part,
                    arguments: start_input.take().unwrap_or_else(|| "{}".into()),
                });
                *fragments = true;
            }
            out.push(Event::ToolCallEnd { part: *part });
        }
        Ok(())
    }

    fn message_delta(&mut self, data: &Object, out: &mut Vec<Event>) {
        if let Some(usage) = obj_at(data, "usage") {
            self.usage.merge(usage);
        }
        if self.usage.seen() {
            out.push(Event::Usage(self.usage.canonical()));
        }
        if let Some(reason) = obj_at(data, "delta").and_then(|d| str_at(d, "stop_reason")) {
            out.push(Event::Finish {
                reason: finish_from_wire(reason),
                raw: Some(reason.to_string()),
            });
            self.finished = true;
        }
    }
}

fn thinking_state(part: usize, state: Opaque, redacted: bool) -> Event {
    Event::ThinkingState {
        part,
        state,
        redacted,
        id: None,
    }
}

fn block_name(block: &Block) -> &'static str {
    match block {
        Block::Text { .. } => "text",
        Block::Thinking { .. } => "thinking",
        Block::Tool { .. } => "tool_use",
        Block::Redacted => "redacted_thinking",
        Block::Ignored => "ignored",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(decoder: &mut MessagesStreamDecoder, data: &str) -> Result<Vec<Event>, DecodeError> {
        decoder.event(&SseEvent {
            event: None,
            data: data.to_string(),
            id: None,
        })
    }

    #[test]
    fn a_split_signature_is_joined_and_each_state_replaces_the_last() {
        let mut d = MessagesStreamDecoder::default();
        feed(&mut d, r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#).unwrap();
        feed(&mut d, r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"ab"}}"#).unwrap();
        let events = feed(&mut d, r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"cd"}}"#).unwrap();
        assert_eq!(
            events,
            vec![thinking_state(
                0,
                Opaque::new(Dialect::Messages, "abcd"),
                false
            )]
        );
    }

    #[test]
    fn ignored_blocks_take_no_part_and_wrong_deltas_are_errors() {
        let mut d = MessagesStreamDecoder::default();
        feed(&mut d, r#"{"type":"content_block_start","index":0,"content_block":{"type":"web_search_tool_result","tool_use_id":"s","content":[]}}"#).unwrap();
        let events = feed(
            &mut d,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
        )
        .unwrap();
        assert_eq!(
            events,
            vec![Event::TextDelta {
                part: 0,
                text: String::new()
            }]
        );
        let err = feed(
            &mut d,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{"}}"#,
        );
        assert!(matches!(err, Err(DecodeError::Malformed(m)) if m.contains("text block")));
        // Unknown delta types are skipped, not errors.
        assert_eq!(
            feed(
                &mut d,
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"future_delta"}}"#
            ),
            Ok(vec![])
        );
    }

    #[test]
    fn message_stop_without_a_stop_reason_still_finishes_and_nothing_follows() {
        let mut d = MessagesStreamDecoder::default();
        assert_eq!(
            feed(&mut d, r#"{"type":"message_stop"}"#).unwrap(),
            vec![Event::Finish {
                reason: crate::reply::FinishReason::Stop,
                raw: None
            }]
        );
        assert_eq!(
            feed(
                &mut d,
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"late"}}"#
            ),
            Ok(vec![])
        );
        assert_eq!(d.finish(), Ok(vec![]));
    }

    #[test]
    fn non_json_data_is_malformed_and_an_empty_ping_is_not() {
        let mut d = MessagesStreamDecoder::default();
        let ping = SseEvent {
            event: Some("ping".into()),
            data: String::new(),
            id: None,
        };
        assert_eq!(d.event(&ping), Ok(vec![]));
        assert!(matches!(
            feed(&mut d, "not json"),
            Err(DecodeError::Malformed(_))
        ));
    }
}
