//! Between replies and streams: assembling events into a reply, and taking a reply
//! apart into the events that would have streamed it.

use crate::event::{Event, StreamError};
use crate::part::{Part, Thinking, ToolCall};
use crate::reply::Reply;

/// Builds a [`Reply`] from stream events. Feeding it the events of a streamed call gives
/// exactly the reply the non-streamed call of the same script gives.
#[derive(Debug, Default, Clone)]
pub struct Assembler {
    reply: Reply,
    error: Option<StreamError>,
    finished: bool,
}

/// An event that does not fit the events before it (a decoder bug or a broken stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfOrder(pub String);

impl std::fmt::Display for OutOfOrder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "stream event out of order: {}", self.0)
    }
}

impl std::error::Error for OutOfOrder {}

impl Assembler {
    /// A new, empty assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one event.
    pub fn push(&mut self, event: &Event) -> Result<(), OutOfOrder> {
        match event {
            Event::Start { id, model } => {
                if id.is_some() {
                    self.reply.id.clone_from(id);
                }
                if model.is_some() {
                    self.reply.model.clone_from(model);
                }
            }
            Event::TextDelta { part, text } => match self.part_mut(*part, || Part::text(""))? {
                Part::Text { text: t, .. } => t.push_str(text),
                other => return Err(mismatch(*part, "text", other)),
            },
            Event::TextState { part, state } => match self.part_mut(*part, || Part::text(""))? {
                Part::Text { state: s, .. } => *s = Some(state.clone()),
                other => return Err(mismatch(*part, "text state", other)),
            },
            // A delta's id is not kept: a thinking part's id goes with its state (a
            // Responses reasoning item without `encrypted_content` names nothing a later
            // turn can send back), and the closing `ThinkingState` repeats it.
            Event::ThinkingDelta { part, text, .. } => {
                match self.part_mut(*part, || Part::Thinking(Thinking::default()))? {
                    Part::Thinking(t) => t.text.push_str(text),
                    other => return Err(mismatch(*part, "thinking", other)),
                }
            }
            Event::ThinkingState {
                part,
                state,
                redacted,
                id,
            } => match self.part_mut(*part, || Part::Thinking(Thinking::default()))? {
                Part::Thinking(t) => {
                    t.state = Some(state.clone());
                    t.redacted |= *redacted;
                    if id.is_some() {
                        t.id.clone_from(id);
                    }
                }
                other => return Err(mismatch(*part, "thinking state", other)),
            },
            Event::ToolCallStart {
                part,
                id,
                name,
                kind,
                namespace,
                state,
            } => {
                if *part != self.reply.content.len() {
                    return Err(OutOfOrder(format!(
                        "tool call started at part {part}, expected part {}",
                        self.reply.content.len()
                    )));
                }
                self.reply.content.push(Part::ToolCall(ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                    kind: *kind,
                    namespace: namespace.clone(),
                    state: state.clone(),
                }));
            }
            Event::ToolCallDelta { part, arguments } => match self.existing_part_mut(*part)? {
                Part::ToolCall(c) => c.arguments.push_str(arguments),
                other => return Err(mismatch(*part, "tool call arguments", other)),
            },
            Event::ToolCallEnd { part } => match self.existing_part_mut(*part)? {
                Part::ToolCall(_) => {}
                other => return Err(mismatch(*part, "tool call end", other)),
            },
            Event::Usage(usage) => self.reply.usage = Some(*usage),
            Event::Finish { reason, raw } => {
                self.reply.finish = *reason;
                self.reply.finish_raw.clone_from(raw);
                self.finished = true;
            }
            Event::Error(e) => self.error = Some(e.clone()),
        }
        Ok(())
    }

    /// Whether a finish event arrived.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// The error the stream reported, if any.
    pub fn error(&self) -> Option<&StreamError> {
        self.error.as_ref()
    }

    /// The reply so far (partial when the stream failed or is not finished).
    pub fn reply(&self) -> &Reply {
        &self.reply
    }

    /// The assembled reply.
    pub fn into_reply(self) -> Reply {
        self.reply
    }

    fn part_mut(
        &mut self,
        index: usize,
        new_part: impl FnOnce() -> Part,
    ) -> Result<&mut Part, OutOfOrder> {
        let len = self.reply.content.len();
        if index == len {
            self.reply.content.push(new_part());
        } else if index + 1 != len {
            return Err(OutOfOrder(format!(
                "event for part {index} while part {} is the last",
                len.wrapping_sub(1)
            )));
        }
        Ok(&mut self.reply.content[index])
    }

    fn existing_part_mut(&mut self, index: usize) -> Result<&mut Part, OutOfOrder> {
        self.reply
            .content
            .get_mut(index)
            .ok_or_else(|| OutOfOrder(format!("event for part {index}, which never started")))
    }
}

fn mismatch(index: usize, what: &str, part: &Part) -> OutOfOrder {
    let found = match part {
        Part::Text { .. } => "text",
        Part::Image(_) => "image",
        Part::ToolCall(_) => "tool call",
        Part::ToolResult(_) => "tool result",
        Part::Thinking(_) => "thinking",
    };
    OutOfOrder(format!("{what} event for part {index}, which is {found}"))
}

/// Assembles a whole list of events; the error of an error event is returned as `Err`
/// along with nothing else (use [`Assembler`] to keep the partial reply).
pub fn assemble<'a>(events: impl IntoIterator<Item = &'a Event>) -> Result<Reply, String> {
    let mut assembler = Assembler::new();
    for event in events {
        assembler.push(event).map_err(|e| e.to_string())?;
    }
    match assembler.error() {
        Some(e) => Err(e.message.clone()),
        None => Ok(assembler.into_reply()),
    }
}

/// The events that stream `reply`, text and arguments cut into deltas of at most
/// `chunk_chars` characters (`0` means one delta each). Assembling them gives `reply`
/// back (without its raw bytes). A thinking part's id rides on the part's first event and
/// again on its state, so an encoder can name the item as it opens.
pub fn reply_events(reply: &Reply, chunk_chars: usize) -> Vec<Event> {
    let mut events = vec![Event::Start {
        id: reply.id.clone(),
        model: reply.model.clone(),
    }];
    for (part, content) in reply.content.iter().enumerate() {
        match content {
            Part::Text { text, state } => {
                for piece in chunks(text, chunk_chars) {
                    events.push(Event::TextDelta {
                        part,
                        text: piece.to_string(),
                    });
                }
                if let Some(state) = state {
                    events.push(Event::TextState {
                        part,
                        state: state.clone(),
                    });
                }
            }
            Part::Thinking(t) => {
                if !t.text.is_empty() || t.state.is_none() {
                    for (i, piece) in chunks(&t.text, chunk_chars).into_iter().enumerate() {
                        events.push(Event::ThinkingDelta {
                            part,
                            text: piece.to_string(),
                            // The item is named as it opens, for encoders that name it then.
                            id: if i == 0 { t.id.clone() } else { None },
                        });
                    }
                }
                if let Some(state) = &t.state {
                    events.push(Event::ThinkingState {
                        part,
                        state: state.clone(),
                        redacted: t.redacted,
                        id: t.id.clone(),
                    });
                }
            }
            Part::ToolCall(c) => {
                events.push(Event::ToolCallStart {
                    part,
                    id: c.id.clone(),
                    name: c.name.clone(),
                    kind: c.kind,
                    namespace: c.namespace.clone(),
                    state: c.state.clone(),
                });
                for piece in chunks(&c.arguments, chunk_chars) {
                    if !piece.is_empty() {
                        events.push(Event::ToolCallDelta {
                            part,
                            arguments: piece.to_string(),
                        });
                    }
                }
                events.push(Event::ToolCallEnd { part });
            }
            // Replies do not hold images or tool results; nothing streams them.
            Part::Image(_) | Part::ToolResult(_) => {}
        }
    }
    if let Some(usage) = reply.usage {
        events.push(Event::Usage(usage));
    }
    events.push(Event::Finish {
        reason: reply.finish,
        raw: reply.finish_raw.clone(),
    });
    events
}

/// `text` cut into pieces of at most `size` characters, never splitting a character;
/// always at least one piece (possibly empty).
fn chunks(text: &str, size: usize) -> Vec<&str> {
    if size == 0 || text.is_empty() {
        return vec![text];
    }
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut count = 0;
    for (i, _) in text.char_indices() {
        if count == size {
            pieces.push(&text[start..i]);
            start = i;
            count = 0;
        }
        count += 1;
    }
    pieces.push(&text[start..]);
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::part::{Opaque, ToolKind};
    use crate::reply::{FinishReason, Usage};
    use crate::Dialect;

    fn sample() -> Reply {
        Reply {
            content: vec![
                Part::Thinking(Thinking {
                    text: "let me think".into(),
                    state: Some(Opaque::new(Dialect::Messages, "sig")),
                    redacted: false,
                    id: None,
                }),
                Part::text("héllo wörld"),
                Part::ToolCall(ToolCall {
                    id: "call_1".into(),
                    name: "get".into(),
                    arguments: r#"{"a":1}"#.into(),
                    kind: ToolKind::Function,
                    namespace: None,
                    state: None,
                }),
            ],
            finish: FinishReason::ToolCalls,
            finish_raw: Some("tool_use".into()),
            usage: Some(Usage {
                input: 10,
                output: 5,
                ..Usage::default()
            }),
            model: Some("m".into()),
            id: Some("r1".into()),
            raw: Default::default(),
        }
    }

    #[test]
    fn events_of_a_reply_assemble_back_to_it() {
        for size in [0, 1, 3, 100] {
            let events = reply_events(&sample(), size);
            assert_eq!(assemble(&events).unwrap(), sample(), "chunk size {size}");
        }
    }

    #[test]
    fn chunks_never_split_a_character() {
        assert_eq!(chunks("héllo", 2), vec!["hé", "ll", "o"]);
        assert_eq!(chunks("", 2), vec![""]);
    }

    #[test]
    fn an_event_for_an_earlier_part_is_refused() {
        let mut a = Assembler::new();
        a.push(&Event::TextDelta {
            part: 0,
            text: "a".into(),
        })
        .unwrap();
        a.push(&Event::ThinkingDelta {
            part: 1,
            text: "b".into(),
            id: None,
        })
        .unwrap();
        let err = a
            .push(&Event::TextDelta {
                part: 0,
                text: "c".into(),
            })
            .unwrap_err();
        assert!(err.0.contains("part 0"), "{err}");
    }
}
