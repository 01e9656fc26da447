//! Sealing a backend's opaque state into the client's own fields on the way down, and
//! opening it again on the way up.
//!
//! Down: state of a dialect other than the client's goes into a thinking part of the
//! client's dialect (an Anthropic thinking block's `signature`, a Responses reasoning
//! item's `encrypted_content`, a Gemini thought part's `thoughtSignature`), sealed in an
//! envelope. State on a thinking part rides on that part; state on a tool call (Gemini's
//! signed `functionCall`) rides on a carrier part just before the call, and state on a
//! text part on a carrier just after it. A chat client has no such field: its state is
//! dropped (the encoder leaves it out).
//!
//! Up: every envelope this gateway sealed is opened and its state put back where it came
//! from, tagged with its backend (which drops it unless that backend is the target). An
//! envelope that does not open (forged, altered, another gateway's) is dropped, never an
//! error.

use super::format::{open, seal, Payload, Slot, TEXT_PREFIX};
use super::key::StateKey;
use std::collections::HashMap;
use switchyard_wire::{Dialect, Event, Opaque, Part, Reply, Request, Thinking};

/// Whether a client in `client` needs this state sealed to carry it.
fn foreign(state: &Opaque, client: Dialect) -> bool {
    state.dialect != client && client != Dialect::Chat
}

/// Whether the part's state, if any, needs sealing for `client`.
fn is_foreign(state: &Option<Opaque>, client: Dialect) -> bool {
    state.as_ref().is_some_and(|s| foreign(s, client))
}

/// The part's state when it needs sealing for `client`, taken off the part.
fn take_foreign(state: &mut Option<Opaque>, client: Dialect) -> Option<Opaque> {
    if is_foreign(state, client) {
        state.take()
    } else {
        None
    }
}

fn sealed(key: &StateKey, client: Dialect, payload: &Payload) -> Opaque {
    Opaque::new(client, seal(key, payload))
}

fn payload(state: Opaque, slot: Slot) -> Payload {
    Payload {
        dialect: state.dialect,
        backend: state.backend,
        slot,
        value: state.value,
        text: String::new(),
        id: None,
        redacted: false,
    }
}

/// A thinking part with no text whose only job is to carry `state`.
fn carrier(state: Opaque) -> Thinking {
    Thinking {
        text: String::new(),
        state: Some(state),
        redacted: false,
        id: None,
    }
}

/// Seals the foreign state of a whole reply for a client speaking `client`.
pub(crate) fn seal_reply(reply: &mut Reply, client: Dialect, key: &StateKey) {
    let needs = reply.content.iter().any(|p| match p {
        Part::Thinking(t) => is_foreign(&t.state, client),
        Part::ToolCall(c) => is_foreign(&c.state, client),
        Part::Text { state, .. } => is_foreign(state, client),
        _ => false,
    });
    if !needs {
        return;
    }
    let mut out = Vec::with_capacity(reply.content.len() + 2);
    for part in std::mem::take(&mut reply.content) {
        match part {
            Part::Thinking(mut t) => {
                if let Some(state) = take_foreign(&mut t.state, client) {
                    let mut p = payload(state, Slot::Thinking);
                    p.text = t.text.clone();
                    p.id = t.id.take();
                    p.redacted = std::mem::take(&mut t.redacted);
                    t.state = Some(sealed(key, client, &p));
                }
                out.push(Part::Thinking(t));
            }
            Part::ToolCall(mut c) => {
                if let Some(state) = take_foreign(&mut c.state, client) {
                    let p = payload(state, Slot::Call);
                    out.push(Part::Thinking(carrier(sealed(key, client, &p))));
                }
                out.push(Part::ToolCall(c));
            }
            Part::Text { text, mut state } => {
                let foreign = take_foreign(&mut state, client);
                out.push(Part::Text { text, state });
                if let Some(state) = foreign {
                    let p = payload(state, Slot::Text);
                    out.push(Part::Thinking(carrier(sealed(key, client, &p))));
                }
            }
            other => out.push(other),
        }
    }
    reply.content = out;
}

/// Seals the foreign state of a stream's events for a client speaking `client`. Carrier
/// parts are inserted, so every later part index moves up by one per carrier.
pub(crate) struct StreamSealer {
    client: Dialect,
    key: StateKey,
    /// Carriers inserted so far: added to every upstream part index.
    shift: usize,
    /// Reasoning text per upstream thinking part, which its signature covers.
    thinking: HashMap<usize, String>,
    /// A text part's state, sealed once that part is over (its carrier goes after it).
    text_state: Option<(usize, Opaque)>,
}

impl StreamSealer {
    /// A sealer for a client in `client`; `None` when there is never anything to seal
    /// (a chat client).
    pub(crate) fn new(client: Dialect, key: &StateKey) -> Option<Self> {
        (client != Dialect::Chat).then(|| StreamSealer {
            client,
            key: key.clone(),
            shift: 0,
            thinking: HashMap::new(),
            text_state: None,
        })
    }

    /// Hands `emit` the events to send for one upstream event (no allocation for the
    /// events that carry no foreign state, nearly all of them).
    pub(crate) fn event(&mut self, mut event: Event, mut emit: impl FnMut(Event)) {
        let part = event.part_mut().map(|p| *p);
        if let Some((text_part, _)) = &self.text_state {
            if part != Some(*text_part) {
                self.flush_text(&mut emit);
            }
        }
        match event {
            Event::ThinkingDelta { part, text, id } => {
                self.thinking.entry(part).or_default().push_str(&text);
                emit(Event::ThinkingDelta {
                    part: part + self.shift,
                    text,
                    id,
                });
            }
            Event::ThinkingState {
                part,
                state,
                redacted,
                id,
            } if foreign(&state, self.client) => {
                let mut p = payload(state, Slot::Thinking);
                p.text = self.thinking.remove(&part).unwrap_or_default();
                p.id = id;
                p.redacted = redacted;
                emit(Event::ThinkingState {
                    part: part + self.shift,
                    state: sealed(&self.key, self.client, &p),
                    redacted: false,
                    id: None,
                });
            }
            Event::ToolCallStart {
                part,
                id,
                name,
                kind,
                namespace,
                state: Some(state),
            } if foreign(&state, self.client) => {
                let p = payload(state, Slot::Call);
                emit(Event::ThinkingState {
                    part: part + self.shift,
                    state: sealed(&self.key, self.client, &p),
                    redacted: false,
                    id: None,
                });
                self.shift += 1;
                emit(Event::ToolCallStart {
                    part: part + self.shift,
                    id,
                    name,
                    kind,
                    namespace,
                    state: None,
                });
            }
            Event::TextState { part, state } if foreign(&state, self.client) => {
                self.text_state = Some((part, state));
            }
            mut other => {
                if let Some(part) = other.part_mut() {
                    *part += self.shift;
                }
                emit(other);
            }
        }
    }

    /// Hands `emit` the events still held back, before the stream's end.
    pub(crate) fn finish(&mut self, mut emit: impl FnMut(Event)) {
        self.flush_text(&mut emit);
    }

    fn flush_text(&mut self, emit: &mut impl FnMut(Event)) {
        if let Some((part, state)) = self.text_state.take() {
            let p = payload(state, Slot::Text);
            self.shift += 1;
            emit(Event::ThinkingState {
                part: part + self.shift,
                state: sealed(&self.key, self.client, &p),
                redacted: false,
                id: None,
            });
        }
    }
}

/// What opening a request's envelopes did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opened {
    /// Envelopes opened and their state put back.
    pub restored: usize,
    /// Envelopes that did not open, dropped.
    pub dropped: usize,
}

fn envelope_in(state: &Option<Opaque>, client: Dialect) -> Option<&str> {
    state
        .as_ref()
        .filter(|s| s.dialect == client && s.value.starts_with(TEXT_PREFIX))
        .map(|s| s.value.as_str())
}

fn restored(p: Payload) -> Opaque {
    Opaque {
        dialect: p.dialect,
        value: p.value,
        backend: p.backend,
    }
}

/// The state the envelope `sealed` on a tool call or text part holds, when it opens and
/// belongs in `slot`; counted as restored or dropped.
fn open_on_part(key: &StateKey, sealed: &str, slot: Slot, opened: &mut Opened) -> Option<Opaque> {
    match open(key, sealed) {
        Ok(p) if p.slot == slot => {
            opened.restored += 1;
            Some(restored(p))
        }
        _ => {
            opened.dropped += 1;
            None
        }
    }
}

/// Opens every envelope in a request from a client speaking `client`, putting the state
/// back where it came from; envelopes that do not open are dropped.
pub(crate) fn open_request(request: &mut Request, client: Dialect, key: &StateKey) -> Opened {
    let mut opened = Opened::default();
    for message in &mut request.messages {
        let has_any = message.content.iter().any(|p| match p {
            Part::Thinking(t) => envelope_in(&t.state, client).is_some(),
            Part::ToolCall(c) => envelope_in(&c.state, client).is_some(),
            Part::Text { state, .. } => envelope_in(state, client).is_some(),
            _ => false,
        });
        if !has_any {
            continue;
        }
        let mut out: Vec<Part> = Vec::with_capacity(message.content.len());
        let mut for_next_call: Option<Opaque> = None;
        for part in std::mem::take(&mut message.content) {
            match part {
                Part::Thinking(mut t) => {
                    let Some(text) = envelope_in(&t.state, client) else {
                        out.push(Part::Thinking(t));
                        continue;
                    };
                    match open(key, text) {
                        Ok(p) => {
                            opened.restored += 1;
                            match p.slot {
                                Slot::Thinking => out.push(Part::Thinking(Thinking {
                                    text: p.text.clone(),
                                    id: p.id.clone(),
                                    redacted: p.redacted,
                                    state: Some(restored(p)),
                                })),
                                Slot::Call => for_next_call = Some(restored(p)),
                                Slot::Text => {
                                    if let Some(Part::Text { state, .. }) = out
                                        .iter_mut()
                                        .rev()
                                        .find(|p| matches!(p, Part::Text { .. }))
                                    {
                                        *state = Some(restored(p));
                                    }
                                }
                            }
                        }
                        Err(_) => {
                            opened.dropped += 1;
                            t.state = None;
                            if !t.text.is_empty() {
                                out.push(Part::Thinking(t));
                            }
                        }
                    }
                }
                Part::ToolCall(mut c) => {
                    if let Some(sealed) = envelope_in(&c.state, client) {
                        c.state = open_on_part(key, sealed, Slot::Call, &mut opened);
                    }
                    if let Some(state) = for_next_call.take() {
                        c.state = Some(state);
                    }
                    out.push(Part::ToolCall(c));
                }
                Part::Text { text, state } => {
                    let state = match envelope_in(&state, client) {
                        None => state,
                        Some(sealed) => open_on_part(key, sealed, Slot::Text, &mut opened),
                    };
                    out.push(Part::Text { text, state });
                }
                other => out.push(other),
            }
        }
        message.content = out;
    }
    opened
}

/// Whether a request body may hold an envelope, or a thinking block the gateway wrote
/// unsigned (`"signature": ""`, a reply from a backend that signs no thinking): the
/// pass-through path, which never decodes the body, hands such a request to translation
/// instead, which opens the envelope and leaves the unsigned thinking out (a Messages
/// upstream refuses it).
pub(crate) fn may_carry(body: &[u8]) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    // Built once: `memmem::find` builds its searcher on every call, which cost more than
    // the three searches over a request.
    static NEEDLES: LazyLock<[Finder<'static>; 3]> = LazyLock::new(|| {
        // Every envelope is a JSON string starting with the prefix.
        [
            Finder::new(b"\"U1kB"),
            Finder::new(b"\"signature\":\"\""),
            Finder::new(b"\"signature\": \"\""),
        ]
    });
    NEEDLES.iter().any(|needle| needle.find(body).is_some())
}

#[cfg(test)]
mod tests;
