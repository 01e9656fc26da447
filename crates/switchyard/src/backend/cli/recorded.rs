//! A CLI agent's recorded call read again for replay, by the reader the live call used:
//! Claude Code's result object or its stream-json lines (through the live stream's
//! decoder), Codex's JSONL events. No program runs.

use super::claude_code::{find_result, parse_result};
use super::claude_stream::{self, StreamJson};
use super::codex::parse_events;
use super::output_stream::Output;
use super::process::Finished;
use crate::error::{Error, Result};
use crate::record::CallRecord;
use crate::registry::Kind;
use crate::reply_stream::ReplyStream;
use futures::StreamExt;
use switchyard_wire::Reply;

/// How a recorded run ended when it was recorded as a success.
fn exited_ok() -> Finished {
    Finished {
        code: Some(0),
        stdout: Vec::new(),
        stderr: Vec::new(),
    }
}

fn no_longer_decodes(record: &CallRecord, kind: Kind, why: &str) -> Error {
    Error::Unsupported(format!(
        "recorded call {} (backend `{}`, kind `{kind}`) no longer decodes: {why}",
        record.number, record.backend
    ))
}

/// The whole reply of `record`, made by a backend of `kind` (a recorded failure: its
/// error).
pub(crate) fn reply(kind: Kind, record: &CallRecord) -> Result<Reply> {
    if let Some(e) = &record.error {
        return Err(e.to_error());
    }
    let raw = record.raw_bytes()?;
    let program = super::default_program(kind).0;
    match kind {
        Kind::ClaudeCode => {
            let result = find_result(&raw).ok_or_else(|| {
                no_longer_decodes(record, kind, "its output holds no result object")
            })?;
            parse_result(&record.backend, &record.model, &result, &raw)
        }
        Kind::Codex => {
            let finished = Finished {
                stdout: raw.to_vec(),
                ..exited_ok()
            };
            parse_events(&record.backend, &record.model, program, &finished)
        }
        Kind::Http | Kind::Replay => Err(no_longer_decodes(
            record,
            kind,
            "only the output of a CLI agent (claude-code, codex) is read without a dialect",
        )),
    }
}

/// The recorded stream of `record`: Claude Code's stream-json bytes through the decoder
/// the live stream used, then the recorded failure when the bytes do not carry it. Codex
/// does not stream: its reply as events.
pub(crate) fn stream(kind: Kind, record: &CallRecord) -> Result<ReplyStream> {
    if kind != Kind::ClaudeCode {
        return Ok(ReplyStream::from_reply(reply(kind, record)?));
    }
    let raw = record.raw_bytes()?;
    let mut items: Vec<Result<Output>> = vec![Ok(Output::Stdout(raw))];
    match &record.error {
        None => items.push(Ok(Output::Exited(exited_ok()))),
        // The caller left the stream: its bytes end where it left.
        Some(e) if e.kind == "Dropped" => {}
        Some(e) => items.push(Err(e.to_error())),
    }
    let program = super::default_program(kind).0;
    let decoder = StreamJson::new(&record.backend, &record.model, program);
    Ok(claude_stream::reply_stream(
        decoder,
        futures::stream::iter(items).boxed(),
    ))
}
