//! Claude Code's `--output-format stream-json` output read as it comes: one JSON object a
//! line. The text arrives in `stream_event` lines (`--include-partial-messages`: the
//! Anthropic stream events of the model's message, of which the text deltas are taken);
//! the last line is the same result object `--output-format json` prints, read by
//! [`parse_result`] for the usage, finish, session id and model, or the typed error.
//!
//! The streamed reply is then the reply `complete` gives for the same run: its text (from
//! the deltas, or from the result when no delta came), usage, finish and id. Other lines
//! (`system`, the whole `assistant` message repeating the deltas, `user`) are skipped;
//! every byte is kept as the reply's raw bytes. Replay feeds the recorded bytes through
//! the same decoder, so a replayed stream gives exactly the events the live one gave.

use super::claude_code::parse_result;
use super::output_stream::Output;
use super::process::Finished;
use super::{exited, malformed};
use crate::error::{Error, Result};
use crate::reply_stream::{Chunk, ReplyStream};
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use serde_json::Value;
use switchyard_wire::{Event, Reply};

/// The reply's one text part.
const TEXT_PART: usize = 0;

/// Reads a run's stream-json output into events.
#[derive(Debug)]
pub struct StreamJson {
    backend: String,
    model: String,
    program: String,
    /// An unterminated last line, until its newline comes.
    line: Vec<u8>,
    /// Every byte so far (an error's body).
    received: Vec<u8>,
    streamed_text: bool,
    ended: bool,
}

impl StreamJson {
    /// A decoder for a run of `program` (for messages) on `backend` asked for `model`.
    pub fn new(backend: &str, model: &str, program: &str) -> StreamJson {
        StreamJson {
            backend: backend.to_string(),
            model: model.to_string(),
            program: program.to_string(),
            line: Vec::new(),
            received: Vec::new(),
            streamed_text: false,
            ended: false,
        }
    }

    /// The events of the next bytes of output; after them, when a result line reports a
    /// failure, its typed error.
    pub fn push(&mut self, bytes: &[u8]) -> Decoded {
        self.received.extend_from_slice(bytes);
        let mut out = Decoded::default();
        let mut rest = bytes;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            self.line.extend_from_slice(&rest[..at]);
            rest = &rest[at + 1..];
            let line = std::mem::take(&mut self.line);
            self.read_line(&line, &mut out);
        }
        self.line.extend_from_slice(rest);
        out
    }

    /// The end of the output: an unterminated last line is read; with no result line, the
    /// program's failure (`exit`, when it exited non-zero) or malformed output.
    pub fn finish(&mut self, exit: Option<&Finished>) -> Decoded {
        let mut out = Decoded::default();
        let line = std::mem::take(&mut self.line);
        self.read_line(&line, &mut out);
        if !self.ended {
            self.ended = true;
            out.error = Some(match exit {
                Some(f) if !f.success() => exited(&self.backend, &self.program, f),
                _ => malformed(
                    &self.backend,
                    &self.program,
                    "the stream-json output ends without Claude Code's result line (an object with `type: \"result\"`)",
                    &self.received,
                ),
            });
        }
        out
    }

    fn read_line(&mut self, line: &[u8], out: &mut Decoded) {
        if self.ended || line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        // A line that is not JSON (a warning printed before the output) is kept in the
        // raw bytes and skipped, as the whole-output reader skips it.
        let Ok(v) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        match v.get("type").and_then(Value::as_str) {
            Some("stream_event") => {
                if let Some(text) = text_delta(&v) {
                    self.streamed_text = true;
                    out.events.push(Event::TextDelta {
                        part: TEXT_PART,
                        text: text.to_string(),
                    });
                }
            }
            Some("result") => {
                self.ended = true;
                match parse_result(&self.backend, &self.model, &v, &self.received) {
                    Ok(reply) => self.result_events(reply, &mut out.events),
                    Err(e) => out.error = Some(e),
                }
            }
            _ => {}
        }
    }

    /// The end of a successful run: its text when none was streamed, then its id and
    /// model, usage and finish.
    fn result_events(&self, reply: Reply, events: &mut Vec<Event>) {
        let text = reply.text();
        if !self.streamed_text && !text.is_empty() {
            events.push(Event::TextDelta {
                part: TEXT_PART,
                text,
            });
        }
        events.push(Event::Start {
            id: reply.id,
            model: reply.model,
        });
        events.extend(reply.usage.map(Event::Usage));
        events.push(Event::Finish {
            reason: reply.finish,
            raw: reply.finish_raw,
        });
    }
}

/// What a piece of output gave: its events, then the error that ends the stream (a result
/// line reporting a failure, or output ending without a result).
#[derive(Debug, Default)]
pub struct Decoded {
    /// The events, in order.
    pub events: Vec<Event>,
    /// The error after them.
    pub error: Option<Error>,
}

/// The text of a `stream_event` line carrying a `text_delta`, when it is one.
fn text_delta(v: &Value) -> Option<&str> {
    let event = v.get("event")?;
    if event.get("type")?.as_str()? != "content_block_delta" {
        return None;
    }
    let delta = event.get("delta")?;
    if delta.get("type")?.as_str()? != "text_delta" {
        return None;
    }
    delta.get("text")?.as_str().filter(|t| !t.is_empty())
}

/// A run's output (live, or recorded bytes replayed) decoded into a [`ReplyStream`]; an
/// error (the decoder's, a timeout, a recorded failure) ends it, after the events of the
/// bytes before it.
pub fn reply_stream(
    decoder: StreamJson,
    output: BoxStream<'static, Result<Output>>,
) -> ReplyStream {
    struct State {
        decoder: StreamJson,
        output: BoxStream<'static, Result<Output>>,
        error: Option<Error>,
        done: bool,
    }
    let state = State {
        decoder,
        output,
        error: None,
        done: false,
    };
    ReplyStream::new(futures::stream::unfold(state, |mut s| async move {
        if let Some(e) = s.error.take() {
            s.done = true;
            return Some((Err(e), s));
        }
        if s.done {
            return None;
        }
        let (raw, decoded) = match s.output.next().await {
            Some(Ok(Output::Stdout(raw))) => {
                let decoded = s.decoder.push(&raw);
                (raw, decoded)
            }
            Some(Ok(Output::Exited(finished))) => {
                s.done = true;
                (Bytes::new(), s.decoder.finish(Some(&finished)))
            }
            Some(Err(e)) => {
                s.done = true;
                return Some((Err(e), s));
            }
            None => {
                s.done = true;
                (Bytes::new(), s.decoder.finish(None))
            }
        };
        s.error = decoded.error;
        let chunk = Chunk {
            raw,
            events: decoded.events,
        };
        Some((Ok(chunk), s))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use switchyard_wire::{assemble, FinishReason};

    const STREAM: &str = concat!(
        r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-opus-4-5","tools":[]}"#,
        "\n",
        r#"{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":9,"output_tokens":1}}},"session_id":"s-1"}"#,
        "\n",
        r#"{"type":"stream_event","event":{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}},"session_id":"s-1"}"#,
        "\n",
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Paris is "}},"session_id":"s-1"}"#,
        "\n",
        r#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"the capital."}},"session_id":"s-1"}"#,
        "\n",
        r#"{"type":"assistant","message":{"content":[{"type":"text","text":"Paris is the capital."}]},"session_id":"s-1"}"#,
        "\n",
        r#"{"type":"stream_event","event":{"type":"message_stop"},"session_id":"s-1"}"#,
        "\n",
        r#"{"type":"result","subtype":"success","is_error":false,"result":"Paris is the capital.","stop_reason":"end_turn","session_id":"s-1","total_cost_usd":0.01,"usage":{"input_tokens":9,"cache_read_input_tokens":100,"output_tokens":6}}"#,
        "\n",
    );

    fn decode_in_pieces(output: &str, piece: usize) -> Result<Vec<Event>> {
        let mut d = StreamJson::new("claude-code", "opus", "claude");
        let mut events = Vec::new();
        for chunk in output.as_bytes().chunks(piece) {
            let decoded = d.push(chunk);
            events.extend(decoded.events);
            if let Some(e) = decoded.error {
                return Err(e);
            }
        }
        let end = d.finish(None);
        events.extend(end.events);
        end.error.map_or(Ok(events), Err)
    }

    #[test]
    fn deltas_then_the_result_whatever_the_chunking() {
        let whole = decode_in_pieces(STREAM, STREAM.len()).unwrap();
        for piece in [1, 7, 64] {
            assert_eq!(decode_in_pieces(STREAM, piece).unwrap(), whole);
        }
        let reply = assemble(&whole).unwrap();
        assert_eq!(reply.text(), "Paris is the capital.");
        assert_eq!(reply.id.as_deref(), Some("s-1"));
        assert_eq!(reply.finish, FinishReason::Stop);
        let usage = reply.usage.unwrap();
        assert_eq!(
            (usage.input, usage.cached_input, usage.output),
            (109, 100, 6)
        );
        let deltas = whole
            .iter()
            .filter(|e| matches!(e, Event::TextDelta { .. }))
            .count();
        assert_eq!(
            deltas, 2,
            "the assistant line repeats the deltas and is skipped"
        );
    }

    #[test]
    fn a_result_alone_gives_its_text() {
        let result = STREAM.lines().last().unwrap();
        let reply = assemble(&decode_in_pieces(result, 5).unwrap()).unwrap();
        assert_eq!(reply.text(), "Paris is the capital.");
    }

    #[test]
    fn a_failed_result_is_its_typed_error_after_the_text_before_it() {
        let text = STREAM.lines().nth(3).unwrap();
        let failed = r#"{"type":"result","subtype":"success","is_error":true,"api_error_status":529,"result":"API Error: Overloaded","session_id":"s"}"#;
        let mut d = StreamJson::new("claude-code", "opus", "claude");
        let decoded = d.push(format!("{text}\n{failed}\n").as_bytes());
        assert!(
            matches!(&decoded.events[..], [Event::TextDelta { text, .. }] if text == "Paris is ")
        );
        assert_eq!(decoded.error.unwrap().kind(), ErrorKind::Overloaded);
        // Nothing after the end.
        let after = d.finish(None);
        assert!(after.events.is_empty() && after.error.is_none());
    }

    #[test]
    fn no_result_is_malformed_or_the_exit() {
        let cut = &STREAM[..STREAM.find(r#"{"type":"result""#).unwrap()];
        let e = decode_in_pieces(cut, 50).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ProviderReplyMalformed);
        assert!(
            e.to_string().contains("without Claude Code's result line"),
            "{e}"
        );
        let mut d = StreamJson::new("claude-code", "opus", "claude");
        assert!(d.push(b"not json\n").error.is_none());
        let exit = Finished {
            code: Some(2),
            stdout: Vec::new(),
            stderr: b"no such flag".to_vec(),
        };
        let e = d.finish(Some(&exit)).error.unwrap();
        assert_eq!(e.kind(), ErrorKind::Provider);
        assert!(e.to_string().contains("exit status 2"), "{e}");
    }
}
