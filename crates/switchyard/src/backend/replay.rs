//! The replay backend: answers requests from a recorded run, calling no provider.
//!
//! A request is matched by its role and the digest of its prompt (system, messages,
//! tools); identical requests are answered in their recorded order. The answer is the
//! recorded raw bytes decoded with the recorded dialect's codec — for a stream, fed
//! through the same stream decoder as a live call — so the caller decodes exactly what it
//! decoded the first time; a recorded failure comes back as the same error. A CLI agent's
//! call names no dialect: its output is read by the agent's own reader (`cli/recorded.rs`),
//! chosen by the kind of its backend in the recorded run's `run.yaml`.

use super::{Backend, Call};
use crate::error::{Error, Result};
use crate::record::{self, CallRecord, Location};
use crate::registry::{Kind, Price};
use crate::reply_stream::ReplyStream;
use async_trait::async_trait;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use switchyard_wire::{codec, Dialect, Reply};

/// What a role called in the recorded run.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRole {
    /// The reference as written.
    pub reference: String,
    /// The backend's name.
    pub backend: String,
    /// The model id.
    pub model: String,
    /// The dialect.
    pub dialect: Option<Dialect>,
}

struct Queue {
    numbers: Vec<u64>,
    next: usize,
}

/// A recorded run's replay index: for each role and prompt digest, the numbers of its
/// records in order. Loaded from `calls.sqlite` when it is complete, else from the
/// records themselves. Shared by the replay backends of every role.
pub struct ReplayLog {
    dir: PathBuf,
    roles: Vec<(String, RecordedRole)>,
    queues: Mutex<HashMap<(u32, u128), Queue>>,
    /// Where each record lies, by number (sorted).
    locations: Vec<(u64, Location)>,
    run: Value,
}

impl std::fmt::Debug for ReplayLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayLog").field("dir", &self.dir).finish()
    }
}

struct Row {
    number: u64,
    role: String,
    reference: String,
    backend: String,
    model: String,
    dialect: Option<String>,
    digest: String,
    location: Location,
}

fn parse_digest(hex: &str) -> u128 {
    u128::from_str_radix(hex, 16).unwrap_or(0)
}

impl ReplayLog {
    /// Opens a recorded run directory (the folder holding `run.yaml` and `llm_log/`; the
    /// `llm_log/` folder itself is accepted too).
    pub fn open(run_dir: &Path) -> Result<Arc<ReplayLog>> {
        let dir = record::run_dir_of(run_dir);
        let rows = match rows_from_index(&dir) {
            Some(rows) => rows,
            None => rows_from_records(&dir)?,
        };
        if rows.is_empty() {
            return Err(Error::Config(format!(
                "{} holds no recorded calls to replay (expected {}/{})",
                dir.display(),
                record::LOG_DIR,
                record::segment_name(1)
            )));
        }
        let run = record::read_run_file(&dir).unwrap_or(Value::Null);
        let mut roles: Vec<(String, RecordedRole)> = Vec::new();
        let mut role_ids: HashMap<String, u32> = HashMap::new();
        let mut queues: HashMap<(u32, u128), Queue> = HashMap::new();
        let mut locations: Vec<(u64, Location)> = Vec::with_capacity(rows.len());
        for row in rows {
            locations.push((row.number, row.location));
            let id = match role_ids.get(&row.role) {
                Some(id) => *id,
                None => {
                    let id = roles.len() as u32;
                    role_ids.insert(row.role.clone(), id);
                    roles.push((
                        row.role,
                        RecordedRole {
                            reference: row.reference,
                            backend: row.backend,
                            model: row.model,
                            dialect: row.dialect.as_deref().and_then(Dialect::parse),
                        },
                    ));
                    id
                }
            };
            queues
                .entry((id, parse_digest(&row.digest)))
                .or_insert_with(|| Queue {
                    numbers: Vec::new(),
                    next: 0,
                })
                .numbers
                .push(row.number);
        }
        for q in queues.values_mut() {
            q.numbers.shrink_to_fit();
        }
        locations.sort_unstable_by_key(|(n, _)| *n);
        Ok(Arc::new(ReplayLog {
            dir,
            roles,
            queues: Mutex::new(queues),
            locations,
            run,
        }))
    }

    /// The recorded run's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The roles of the recorded run (`""` for calls made without one) and what each
    /// called.
    pub fn roles(&self) -> impl Iterator<Item = (&str, &RecordedRole)> {
        self.roles.iter().map(|(n, r)| (n.as_str(), r))
    }

    /// What `role` called in the recorded run.
    pub fn role(&self, role: &str) -> Option<&RecordedRole> {
        self.roles.iter().find(|(n, _)| n == role).map(|(_, r)| r)
    }

    /// The recorded role whose calls answer `role`: itself when the run has it; in a run
    /// recorded with no roles at all (`ask`), the calls made without one, matched on their
    /// prompt alone.
    pub fn answering_role<'a>(&'a self, role: &'a str) -> Option<&'a str> {
        if self.role(role).is_some() {
            return Some(role);
        }
        match self.roles.as_slice() {
            [(only, _)] if only.is_empty() => Some(""),
            _ => None,
        }
    }

    /// The price the recorded run used for `model` on `backend` (from its `run.yaml`).
    /// Aliases and `model_options` apply as they did in the run (`Backend::price`).
    pub fn price(&self, backend: &str, model: &str) -> Option<Price> {
        let backend = self.run.get("backends")?.get(backend)?;
        let value = |field: &str, key: &str| backend.get(field)?.get(key)?.get("value");
        let alias = |m: &str| value("models", m)?.as_str().map(str::to_string);
        let options = backend
            .get("model_options")
            .and_then(|o| o.get("value"))
            .and_then(Value::as_str);
        let p = crate::registry::backend::price_of(model, options, alias, |m| value("prices", m))?;
        Some(Price {
            input: p.get("input")?.as_f64()?,
            cached_input: p.get("cached_input").and_then(Value::as_f64),
            cache_write: p.get("cache_write").and_then(Value::as_f64),
            output: p.get("output")?.as_f64()?,
        })
    }

    /// The recorded run's `run.yaml`, as JSON.
    pub fn run_file(&self) -> &Value {
        &self.run
    }

    /// The kind of `backend` as the recorded run's `run.yaml` describes it (`None` when
    /// it does not).
    pub fn backend_kind(&self, backend: &str) -> Option<Kind> {
        let kind = self.run.get("backends")?.get(backend)?.get("kind")?;
        Kind::parse(kind.get("value").unwrap_or(kind).as_str()?)
    }

    /// Bytes the index holds (keys, record numbers and role names), for measuring.
    pub fn index_bytes(&self) -> usize {
        let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        let per_entry = std::mem::size_of::<(u32, u128)>() + std::mem::size_of::<Queue>() + 8;
        queues
            .values()
            .map(|q| per_entry + q.numbers.capacity() * 8)
            .sum::<usize>()
            + self.locations.capacity() * std::mem::size_of::<(u64, Location)>()
            + self
                .roles
                .iter()
                .map(|(n, r)| n.len() + r.reference.len() + r.backend.len() + r.model.len() + 64)
                .sum::<usize>()
    }

    /// Reads recorded call `n` from where the index says it lies.
    fn read(&self, n: u64) -> Result<CallRecord> {
        let i = self
            .locations
            .binary_search_by_key(&n, |(k, _)| *k)
            .map_err(|_| Error::Config(format!("{} has no call {n}", self.dir.display())))?;
        record::read_record_at(&self.dir, self.locations[i].1)
    }

    fn role_id(&self, role: &str) -> Option<u32> {
        self.roles
            .iter()
            .position(|(n, _)| n == role)
            .map(|i| i as u32)
    }

    fn next_number(&self, role: &str, digest: &str, take: bool) -> Result<u64> {
        let id = self.role_id(role);
        let key = id.map(|id| (id, parse_digest(digest)));
        {
            let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(q) = key.and_then(|k| queues.get_mut(&k)) {
                if let Some(&n) = q.numbers.get(q.next) {
                    if take {
                        q.next += 1;
                    }
                    return Ok(n);
                }
                let used = q.numbers.len();
                let last = q.numbers.last().copied().unwrap_or(0);
                return Err(Error::ReplayExhausted {
                    role: role.to_string(),
                    digest: digest.to_string(),
                    nearest: Some(format!(
                        "call {last} has this very prompt, and all {used} recorded replies to it were already given"
                    )),
                });
            }
        }
        Err(Error::ReplayExhausted {
            role: role.to_string(),
            digest: digest.to_string(),
            nearest: None,
        })
    }

    /// The recorded prompt of role `id` nearest to `now`, as `call N: <diff>`.
    fn nearest(&self, id: u32, now: Option<&[String]>) -> Option<String> {
        let now = now?;
        let firsts: Vec<u64> = {
            let queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
            let mut v: Vec<u64> = queues
                .iter()
                .filter(|((r, _), _)| *r == id)
                .filter_map(|(_, q)| q.numbers.first().copied())
                .collect();
            v.sort_unstable();
            // Bounded, so that a miss in a huge log still answers in well under a second.
            v.truncate(2000);
            v
        };
        let mut best: Option<((usize, usize), u64, Vec<String>)> = None;
        for n in firsts {
            let Ok(r) = self.read(n) else {
                continue;
            };
            let lines = record::prompt_lines(&r.request);
            let score = record::digest_likeness(&lines, now);
            if best.as_ref().is_none_or(|(s, _, _)| score > *s) {
                best = Some((score, n, lines));
            }
        }
        best.map(|(_, n, lines)| format!("call {n}: {}", record::short_diff(&lines, now)))
    }

    fn exhausted(&self, role: &str, call: &Call, e: Error) -> Error {
        match e {
            Error::ReplayExhausted {
                role: r,
                digest,
                nearest: None,
            } => {
                let now = record::prompt_lines(&call.request);
                let nearest = self
                    .role_id(role)
                    .and_then(|id| self.nearest(id, Some(&now)));
                Error::ReplayExhausted {
                    role: r,
                    digest,
                    nearest,
                }
            }
            other => other,
        }
    }

    /// Takes the record answering `call` for `role`, or says why there is none.
    fn take(&self, role: &str, call: &Call) -> Result<CallRecord> {
        let digest = record::prompt_digest(&call.request);
        let n = self
            .next_number(role, &digest, true)
            .map_err(|e| self.exhausted(role, call, e))?;
        self.answer(n, &call.notes)
    }

    /// Takes the record answering an embeddings call for `role` (matched on its inputs,
    /// `record::embed_digest`), or says why there is none.
    fn take_embedding(&self, role: &str, call: &crate::embed::EmbedCall) -> Result<CallRecord> {
        let digest = record::embed_digest(&call.request);
        let n = self.next_number(role, &digest, true).map_err(|e| match e {
            Error::ReplayExhausted {
                role,
                digest,
                nearest: None,
            } => Error::ReplayExhausted {
                role,
                digest,
                nearest: Some("no recorded embeddings call of that role has these inputs".into()),
            },
            other => other,
        })?;
        let record = self.answer(n, &call.notes)?;
        let Some(e) = &record.embedding else {
            return Err(Error::Unsupported(format!(
                "recorded call {n} matched an embeddings request but is not an embeddings call"
            )));
        };
        call.notes.replayed_embed_shape(e.shape);
        Ok(record)
    }

    /// Record `n`, its body and story noted as this replay's.
    fn answer(&self, n: u64, notes: &super::CallNotes) -> Result<CallRecord> {
        let record = self.read(n)?;
        let call = notes;
        // The body the recorded run sent is the body this replay "sends", so that the
        // replayed run's records hold the same bytes.
        if let Some(body) = &record.body {
            call.sent_body(bytes::Bytes::copy_from_slice(body.get().as_bytes()));
        }
        // Each replayed call's record is its recorded call's: one role may have called
        // several models through several dialects.
        call.replayed(
            record.attempts.clone(),
            record.error.as_ref().map(|e| e.to_error()),
            super::ReplayedCall {
                reference: record.reference.clone(),
                backend: record.backend.clone(),
                model: record.model.clone(),
                dialect: record.dialect,
                cost_usd: record.cost_usd,
            },
        );
        Ok(record)
    }
}

#[cfg(not(feature = "sqlite"))]
fn rows_from_index(_dir: &Path) -> Option<Vec<Row>> {
    None
}

#[cfg(feature = "sqlite")]
fn rows_from_index(dir: &Path) -> Option<Vec<Row>> {
    let path = dir.join(record::INDEX_FILE);
    if !path.exists() {
        return None;
    }
    let conn =
        rusqlite::Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .ok()?;
    let mut stmt = conn
        .prepare(
            "SELECT number, role, reference, backend, model, dialect, prompt_digest, segment, line_offset, line_length FROM llm_calls ORDER BY number",
        )
        .ok()?;
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            Ok(Row {
                number: r.get::<_, i64>(0)? as u64,
                role: r.get(1)?,
                reference: r.get(2)?,
                backend: r.get(3)?,
                model: r.get(4)?,
                dialect: r.get(5)?,
                digest: r.get(6)?,
                location: Location {
                    segment: r.get(7)?,
                    offset: r.get::<_, i64>(8)? as u64,
                    len: r.get(9)?,
                },
            })
        })
        .ok()?
        .collect::<rusqlite::Result<_>>()
        .ok()?;
    // An index that missed rows (a killed run) is not trusted: the records are the truth.
    // It is whole when it numbers its rows from 1 without a gap and its last row ends
    // the log (the last segment, at its last byte).
    let last = rows.last()?;
    let log = record::log_dir(dir);
    let last_segment = record::segment_ids(&log).ok()?.last().copied()?;
    let log_len = std::fs::metadata(record::segment_path(&log, last_segment))
        .ok()?
        .len();
    let whole = rows.len() as u64 == last.number
        && last.location.segment == last_segment
        && last.location.end() == log_len;
    if !whole {
        return None;
    }
    let mut rows = rows;
    for row in rows.iter_mut().filter(|r| r.digest.is_empty()) {
        // A record of format 3 (the gateway's) has its digest derived when read: its row
        // holds none (docs/recording.md, *The calls index*).
        row.digest = record::read_record_at(dir, row.location)
            .ok()?
            .prompt_digest;
    }
    Some(rows)
}

#[derive(serde::Deserialize)]
struct RowFields {
    number: u64,
    role: Option<String>,
    reference: String,
    backend: String,
    model: String,
    dialect: Option<String>,
    /// Left out of a line of format 3: derived from the whole record.
    #[serde(default)]
    prompt_digest: String,
}

fn rows_from_records(dir: &Path) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    record::for_each_record_line(dir, |at, line| {
        // A line that does not read is passed over (and said): the others replay.
        let f: RowFields = match record::from_slice_bounded(
            record::line_of(line),
            record::MAX_RECORD_DEPTH,
        ) {
            Ok(f) => f,
            Err(e) => {
                tracing::warn!(
                    "replay: {} at offset {} is not a call record ({e}); it is set aside, the other calls replay",
                    record::segment_path(&record::log_dir(dir), at.segment).display(),
                    at.offset
                );
                return Ok(());
            }
        };
        let digest = match f.prompt_digest.is_empty() {
            true => record::parse_record_line(line)
                .map(|r| r.prompt_digest)
                .unwrap_or_default(),
            false => f.prompt_digest,
        };
        rows.push(Row {
            number: f.number,
            role: f.role.unwrap_or_default(),
            reference: f.reference,
            backend: f.backend,
            model: f.model,
            dialect: f.dialect,
            digest,
            location: at,
        });
        Ok(())
    })?;
    Ok(rows)
}

/// A backend answering one role's requests from a recorded run.
pub struct ReplayBackend {
    log: Arc<ReplayLog>,
    role: String,
    /// Answers for the role of the handle making each call (`role` when it has none).
    from_handle: bool,
    name: String,
    dialect: Option<Dialect>,
}

impl ReplayBackend {
    /// Replays the calls `role` made (`None`: the calls made without a role). Named after
    /// the backend the role called, so that records of a replayed run read like the
    /// original's.
    pub fn new(log: Arc<ReplayLog>, role: Option<&str>) -> Result<ReplayBackend> {
        let asked = role.unwrap_or("").to_string();
        let recorded = log
            .answering_role(&asked)
            .and_then(|r| log.role(r))
            .cloned();
        let recorded = recorded.ok_or_else(|| {
            let role = &asked;
            let known: Vec<String> = log
                .roles()
                .map(|(n, _)| {
                    if n.is_empty() {
                        "(none)".to_string()
                    } else {
                        n.to_string()
                    }
                })
                .collect();
            Error::Config(format!(
                "the run in {} has no calls of role `{role}`; its roles: {}",
                log.dir().display(),
                known.join(", ")
            ))
        })?;
        let role = log.answering_role(&asked).unwrap_or("").to_string();
        if role != asked {
            tracing::info!(
                "the run in {} was recorded with no roles: role `{asked}` replays its calls matched on their prompt alone",
                log.dir().display()
            );
        }
        Ok(ReplayBackend {
            name: recorded.backend,
            dialect: recorded.dialect,
            log,
            role,
            from_handle: false,
        })
    }

    /// Replays, for each call, the calls of the role of the handle making it (a backend
    /// of kind `replay` in the registry, shared by handles); `default_role` for a handle
    /// without a role (`None`: the calls made without one). Named `name`.
    pub fn for_handles(
        log: Arc<ReplayLog>,
        name: &str,
        default_role: Option<&str>,
    ) -> ReplayBackend {
        ReplayBackend {
            log,
            role: default_role.unwrap_or("").to_string(),
            from_handle: true,
            name: name.to_string(),
            dialect: None,
        }
    }

    /// The recorded role this call is answered from.
    fn role_for_call(&self, call: &Call) -> String {
        self.role_for(call.role.as_ref())
    }

    /// The recorded role a call by the handle of `role` is answered from.
    fn role_for(&self, role: Option<&Arc<str>>) -> String {
        if self.from_handle {
            if let Some(role) = role {
                return match self.log.answering_role(role) {
                    Some(answering) => answering.to_string(),
                    None => role.to_string(),
                };
            }
        }
        self.role.clone()
    }

    /// The replay log.
    pub fn log(&self) -> &Arc<ReplayLog> {
        &self.log
    }
}

/// How a record's bytes are read again: by its dialect's codec, or — for a call that names
/// none — by the reader of the CLI agent that made it, known from the kind of its backend
/// in the recorded run's `run.yaml`.
#[derive(Debug, Clone, Copy)]
enum Decoding {
    Dialect(Dialect),
    Agent(Kind),
}

fn decoding(log: &ReplayLog, record: &CallRecord) -> Result<Decoding> {
    if let Some(dialect) = record.dialect {
        return Ok(Decoding::Dialect(dialect));
    }
    match log.backend_kind(&record.backend) {
        Some(kind @ (Kind::ClaudeCode | Kind::Codex)) => Ok(Decoding::Agent(kind)),
        Some(kind) => Err(Error::Unsupported(format!(
            "recorded call {} names no dialect, and its backend `{}` is of kind `{kind}`, not a CLI agent (claude-code, codex) whose output replay can read, so its bytes cannot be decoded",
            record.number, record.backend
        ))),
        None => Err(Error::Unsupported(format!(
            "recorded call {} names no dialect, so its bytes cannot be decoded: its backend `{}` is not described in {} (replay reads the output of a CLI agent, claude-code or codex, by the kind of backend the recorded run's run.yaml gives)",
            record.number,
            record.backend,
            log.dir().join(record::RUN_FILE).display()
        ))),
    }
}

/// The recorded stream, fed through the dialect's stream decoder; a recorded failure
/// that the bytes themselves do not carry (a broken connection, a timeout) comes last.
fn replay_stream(name: &str, how: Decoding, record: &CallRecord) -> Result<ReplyStream> {
    kept_whole(record)?;
    let dialect = match how {
        Decoding::Dialect(d) => d,
        Decoding::Agent(kind) => return agent_stream(kind, record),
    };
    let raw = record.raw_bytes()?;
    // A streamed call a server answered with one whole JSON body was taken as that reply.
    if raw.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        return Ok(ReplyStream::from_reply(replay_reply(how, record)?));
    }
    let mut items: Vec<Result<bytes::Bytes>> = vec![Ok(raw)];
    if let Some(e) = &record.error {
        if e.kind != "Dropped" {
            items.push(Err(e.to_error()));
        }
    }
    use futures::StreamExt;
    Ok(crate::backend::http::decode_stream(
        name,
        dialect,
        Vec::new(),
        futures::stream::iter(items).boxed(),
    ))
}

fn replay_reply(how: Decoding, record: &CallRecord) -> Result<Reply> {
    kept_whole(record)?;
    let dialect = match how {
        Decoding::Dialect(d) => d,
        Decoding::Agent(kind) => return agent_reply(kind, record),
    };
    if let Some(e) = &record.error {
        return Err(e.to_error());
    }
    let raw = record.raw_bytes()?;
    let mut reply = codec(dialect).decode_reply(&raw).map_err(|e| {
        Error::Unsupported(format!(
            "recorded call {} no longer decodes: {e:?}",
            record.number
        ))
    })?;
    // As the backend tagged it when the call was made.
    reply.tag_state(&record.backend);
    Ok(reply)
}

/// A recorded call's reply whole, as replay gives it (the response cache answers with
/// it): a streamed record's stream assembled, a whole one decoded.
pub(crate) async fn recorded_reply(name: &str, record: &CallRecord) -> Result<Reply> {
    let how = recorded_decoding(record)?;
    if record.stream && record.reply.is_some() {
        return replay_stream(name, how, record)?.into_reply().await;
    }
    replay_reply(how, record)
}

/// A recorded call's reply streamed, as replay gives it: a streamed record's bytes
/// through the stream decoder, a whole one as events.
pub(crate) fn recorded_stream(name: &str, record: &CallRecord) -> Result<ReplyStream> {
    let how = recorded_decoding(record)?;
    if record.stream && record.reply.is_some() {
        return replay_stream(name, how, record);
    }
    Ok(ReplyStream::from_reply(replay_reply(how, record)?))
}

/// A successful call whose record kept only the first bytes of its reply
/// (`raw_truncated`) is not replayed as if they were all of it: replay says so. A failed
/// one replays as it went, its bytes and then its error.
fn kept_whole(record: &CallRecord) -> Result<()> {
    let Some(cut) = record
        .raw_truncated
        .as_ref()
        .filter(|_| record.error.is_none())
    else {
        return Ok(());
    };
    let received = cut
        .received
        .map(|n| format!("of its {n}"))
        .unwrap_or_else(|| "of more".to_string());
    Err(Error::Unsupported(format!(
        "recorded call {} kept only the first {} {received} reply bytes (`{}`), so its reply cannot be replayed whole; record the call again with the setting raised",
        record.number, cut.kept, cut.setting
    )))
}

fn recorded_decoding(record: &CallRecord) -> Result<Decoding> {
    record.dialect.map(Decoding::Dialect).ok_or_else(|| {
        Error::Unsupported(format!(
            "recorded call {} names no dialect: only calls in a wire dialect answer from the cache",
            record.number
        ))
    })
}

#[cfg(feature = "cli-agents")]
fn agent_reply(kind: Kind, record: &CallRecord) -> Result<Reply> {
    super::cli::recorded::reply(kind, record)
}

#[cfg(feature = "cli-agents")]
fn agent_stream(kind: Kind, record: &CallRecord) -> Result<ReplyStream> {
    super::cli::recorded::stream(kind, record)
}

#[cfg(not(feature = "cli-agents"))]
fn agent_reply(kind: Kind, record: &CallRecord) -> Result<Reply> {
    Err(without_cli_agents(kind, record))
}

#[cfg(not(feature = "cli-agents"))]
fn agent_stream(kind: Kind, record: &CallRecord) -> Result<ReplyStream> {
    Err(without_cli_agents(kind, record))
}

#[cfg(not(feature = "cli-agents"))]
fn without_cli_agents(kind: Kind, record: &CallRecord) -> Error {
    Error::Unsupported(format!(
        "recorded call {} was made by a `{kind}` backend, whose output this build cannot read: it was built without the `cli-agents` feature",
        record.number
    ))
}

#[async_trait]
impl Backend for ReplayBackend {
    fn name(&self) -> &str {
        &self.name
    }

    fn dialect(&self) -> Option<Dialect> {
        self.dialect
    }

    /// A recorded CLI agent's output (no dialect) carries its own cost as the original
    /// call's did, so the replayed record keeps the same `provider_cost_usd` (read by the
    /// CLI agents' own parser: a build without `cli-agents` leaves it unknown).
    fn reported_cost(&self, raw: &[u8]) -> Option<f64> {
        if self.dialect.is_some() {
            return None;
        }
        #[cfg(feature = "cli-agents")]
        return super::cli::claude_code::reported_cost(raw);
        #[cfg(not(feature = "cli-agents"))]
        {
            let _ = raw;
            None
        }
    }

    /// A recorded reply passed the check when it was made; one recorded without usage
    /// came from a backend that could not know it, and replays as it was.
    fn reports_usage(&self) -> bool {
        false
    }

    async fn complete(&self, call: &Call) -> Result<Reply> {
        let record = self.log.take(&self.role_for_call(call), call)?;
        let how = decoding(&self.log, &record)?;
        if record.stream && record.reply.is_some() {
            return replay_stream(&self.name, how, &record)?.into_reply().await;
        }
        replay_reply(how, &record)
    }

    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        let record = self.log.take(&self.role_for_call(call), call)?;
        let how = decoding(&self.log, &record)?;
        if record.stream && record.reply.is_some() {
            return replay_stream(&self.name, how, &record);
        }
        // Recorded whole (or failed before its stream began): the reply as events.
        Ok(ReplyStream::from_reply(replay_reply(how, &record)?))
    }
}

/// Embeddings replayed: the recorded reply's bytes decoded in the recorded shape, or the
/// recorded error.
#[async_trait]
impl crate::embed::Embedder for ReplayBackend {
    fn name(&self) -> &str {
        &self.name
    }

    /// The recorded call's own shape is what its replay's record keeps (noted per call);
    /// this is only the default.
    fn shape(&self) -> switchyard_wire::embed::EmbedShape {
        switchyard_wire::embed::EmbedShape::Openai
    }

    async fn embed(
        &self,
        call: &crate::embed::EmbedCall,
    ) -> Result<switchyard_wire::embed::Embeddings> {
        let record = self
            .log
            .take_embedding(&self.role_for(call.role.as_ref()), call)?;
        if let Some(e) = &record.error {
            return Err(e.to_error());
        }
        let shape = record
            .embedding
            .as_ref()
            .map(|e| e.shape)
            .unwrap_or(switchyard_wire::embed::EmbedShape::Openai);
        crate::embed::decode_reply(
            &self.name,
            shape,
            &[],
            record.raw_bytes()?,
            call.request.input.len(),
        )
    }
}
