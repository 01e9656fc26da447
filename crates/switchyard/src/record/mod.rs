//! Recording a run: the call log (append-only segments, one JSON line per call), the
//! calls index (SQLite), `run.yaml`, and reading them back for `switchyard log` and
//! replay. The format is described in `docs/recording.md`.

mod depth;
mod derive;
mod digest;
mod error_record;
mod escape;
// The calls index: SQLite (the `sqlite` feature, on by default), or read from the records.
#[cfg(feature = "sqlite")]
mod index;
#[cfg(not(feature = "sqlite"))]
#[path = "index_off.rs"]
mod index;
#[cfg(feature = "sqlite")]
mod index_feed;
#[cfg(feature = "sqlite")]
mod index_insert;
mod index_row;
#[cfg(feature = "sqlite")]
mod index_statement;
mod line;
mod observe;
mod prepare;
mod quarantine;
mod raw;
mod read;
mod run_dir;
mod segment;
mod timestamp;
mod writer;

pub use depth::{
    cap_depth, first_too_deep, from_slice_bounded, MAX_BODY_DEPTH, MAX_RECORD_DEPTH,
    RECORD_WRAPPING,
};
pub use derive::{
    assemble, decode_reply, decode_request, leaves_out, reply_of, DERIVED_FORMAT, RAW_AFTER_FORMAT,
};
pub(crate) use digest::lower_hex;
pub use digest::{
    embed_digest, likeness as digest_likeness, prompt_digest, prompt_lines, short_diff,
};
pub use error_record::{ErrorRecord, ProviderRecord};
pub(crate) use index::cache_entries;
#[cfg(feature = "sqlite")]
pub use index::{client_key_spend, run_spend_in};
pub use index::{rebuild as rebuild_index, run_spend, spend_by_client_key};
pub use index_row::{
    IndexRow, INDEX_FILE, INDEX_KEYS_SCHEMA, INDEX_SCHEMA, INDEX_VERSION, ROLE_INDEXED,
};
pub(crate) use observe::{Handle, Observed, Outcome};
pub use prepare::{PreparedRecord, RawReply};
pub use quarantine::{QUARANTINE_DIR, QUARANTINE_FILE};
pub use raw::RawBytes;
pub use read::{
    for_each_record_line, log_dir, parse_record_fields, parse_record_line, position_after,
    read_lines_from, read_log, read_log_fields, read_record, read_record_at, read_records,
    record_location, record_locations, record_numbers, LogPosition, LogRead, NumberedLines,
    SetAside,
};
pub use run_dir::{read_run_file, run_dir_of, RunInfo, LOG_DIR, RUN_FILE};
pub use segment::{
    line_of, segment_ids, segment_name, segment_path, segment_records, Location, SEGMENT_BYTES,
};
pub use timestamp::timestamp;
pub use writer::{Durability, Recorder, RecorderOptions};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use switchyard_wire::{Dialect, Reply, Request, Usage};

/// The record format this library's calls are written in: every field in the line. The
/// gateway's store writes [`DERIVED_FORMAT`] (the canonical forms left out and derived
/// on read); this version reads both.
pub const FORMAT: u32 = 2;

/// One call, in full: what was asked, what was sent, what came back, what it cost.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CallRecord {
    /// The record format ([`FORMAT`]).
    pub format: u32,
    /// The call's number in the run, from 1, in the order calls finished.
    pub number: u64,
    /// The role that made the call (`null` for a handle without one).
    pub role: Option<String>,
    /// The reference or label of the handle (`mock/echo`).
    pub reference: String,
    /// The backend's name.
    pub backend: String,
    /// The model id on the backend (after aliases).
    pub model: String,
    /// The wire dialect spoken (`null` for backends that speak none).
    pub dialect: Option<Dialect>,
    /// Whether the reply was streamed.
    pub stream: bool,
    /// The digest replay matches on: role aside, the prompt (system, messages, tools).
    /// Derived on read when a line of [`DERIVED_FORMAT`] leaves it out (as the next four).
    #[serde(default, skip_serializing_if = "derive::skip_string")]
    pub prompt_digest: String,
    /// The canonical request.
    #[serde(default, skip_serializing_if = "derive::skip_request")]
    pub request: Request,
    /// The parameters of the request (everything but messages and tools).
    #[serde(default, skip_serializing_if = "derive::skip_map")]
    pub parameters: Map<String, Value>,
    /// The request body exactly as sent, byte for byte (`null` for backends that send
    /// none).
    pub body: Option<Box<serde_json::value::RawValue>>,
    /// The reply in canonical form (`null` when the call failed before one).
    #[serde(default, skip_serializing_if = "derive::skip_none")]
    pub reply: Option<Reply>,
    /// The reply's bytes exactly as received (the whole stream for a streamed call; the
    /// error body for a provider error); absent when the call got none. The recorder
    /// writes it last in the line (see `escape.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw: Option<RawBytes>,
    /// The usage in canonical form.
    pub usage: Option<Usage>,
    /// The usage object as the provider wrote it (`usage`, `usageMetadata`), when found.
    #[serde(default, skip_serializing_if = "derive::skip_none")]
    pub usage_reported: Option<Value>,
    /// Every attempt, in order.
    pub attempts: Vec<AttemptRecord>,
    /// When the call started, its first byte and its end.
    pub timings: Timings,
    /// The cost in USD from the backend's price (`null` when the model has no price).
    pub cost_usd: Option<f64>,
    /// The cost the provider reported itself (Claude Code's `total_cost_usd`), if any.
    pub provider_cost_usd: Option<f64>,
    /// The error, when the call failed.
    pub error: Option<ErrorRecord>,
    /// How `usage` was estimated when the provider never reported it (a client that left
    /// a stream before its end is billed for what was generated): absent when `usage` is
    /// the provider's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_estimated: Option<String>,
    /// The name of the gateway client key the call came with (a name from the gateway's
    /// `keys:`, never the key itself); absent for calls not made through a gateway or
    /// made without keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_key: Option<String>,
    /// The dialect the gateway's client spoke (`dialect` is the one spoken upstream);
    /// absent for calls not made through a gateway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_dialect: Option<Dialect>,
    /// An embeddings call: its shape and canonical request (`request` is then empty,
    /// `reply` `null`, and `raw` the vectors as the provider sent them); absent for
    /// every other call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<EmbedRecord>,
    /// The route the call went through (`reference` is then the member that served, or
    /// the member tried last when the call failed); absent for a plain reference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// True when a stream broke after its output began: what reached the caller is in
    /// `reply`, the error in `error`, and the call was not sent again. Absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// Present when `raw` holds only the first bytes of the reply (a reply longer than
    /// the record keeps, or the head of one that passed a size bound): how many it kept
    /// and how many came. Such a record's reply is what those bytes carry; replay refuses
    /// it rather than answer with a part. Absent when `raw` is whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_truncated: Option<RawTruncated>,
    /// The gateway's cache key of the call (`docs/routing.md`, *The cache*), on a call
    /// made with the cache in `read-write` mode; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
    /// A call answered from the cache: the number of the recorded call whose reply was
    /// served (cost 0, nothing sent upstream). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit: Option<u64>,
    /// A call answered from a store that replicas of the gateway share (its PostgreSQL
    /// store, `docs/scaling.md`) with a call another replica recorded: that call's id
    /// (`<replica>-<number>`); `cache_hit` is then its number on that replica.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_hit_call: Option<String>,
    /// For a hit answered from another run directory (a library cache of `scope:
    /// store`), that directory; absent when the call is in the same log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_run: Option<String>,
    /// True when values of the call nested deeper than a record may
    /// ([`MAX_RECORD_DEPTH`]): each value that would have opened a level past it is kept
    /// as a string holding its JSON text, so the record stays readable. Absent otherwise.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub depth_capped: bool,
    /// Why `usage` cannot be the call's real usage: a count past
    /// [`switchyard_wire::MOST_TOKENS_PER_CALL`] (a broken provider, or `2^64 − 1` from a
    /// bad cast). The usage is kept and billed as reported, saturated, never wrapped.
    /// Absent for believable usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage_suspect: Option<String>,
    /// A gateway call whose cost passed what its key's budget reserved for it (its
    /// prompt and output limit at the model's prices): a provider that went on past
    /// `max_tokens`. A stream is stopped there (`stopped`); a whole reply cannot be,
    /// and is billed whole. Absent for a call within its reservation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub over_reservation: Option<OverReservation>,
}

/// A call that cost more than its budget reservation (see
/// [`CallRecord::over_reservation`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OverReservation {
    /// Dollars the key's budget held for the call before it was sent.
    pub reserved_usd: f64,
    /// Dollars the call cost (what was generated, as `cost_usd`).
    pub cost_usd: f64,
    /// Whether the gateway stopped the stream there (true), or billed a whole reply it
    /// could not cut (false).
    pub stopped: bool,
}

/// What an embeddings call's record holds beside the fields every call has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EmbedRecord {
    /// The wire shape spoken upstream.
    pub shape: switchyard_wire::embed::EmbedShape,
    /// The canonical request.
    pub request: switchyard_wire::embed::EmbedRequest,
}

/// What a record's `raw` kept of a reply that was longer ([`CallRecord::raw_truncated`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawTruncated {
    /// Bytes kept in `raw`.
    pub kept: u64,
    /// Bytes that came, when known (absent for a reply read no further past a size bound:
    /// the record's `error` names the bound).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub received: Option<u64>,
    /// The setting that bounded what was kept (`limits.max_recorded_reply_bytes`).
    pub setting: String,
}

/// One attempt of a call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptRecord {
    /// From 1.
    pub number: u32,
    /// Milliseconds waited before it (0 for the first).
    pub wait_before_ms: f64,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// The HTTP status, when one came back.
    pub status: Option<u16>,
    /// The error's kind, when it failed.
    pub error_kind: Option<String>,
    /// The error's message, when it failed.
    pub error: Option<String>,
    /// The route member it was sent to, for a call through a route.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
}

impl AttemptRecord {
    /// An attempt as every record keeps it (the library's and the gateway's). A successful
    /// attempt over HTTP (`http`: the backend has a dialect) was answered `200 OK`, and
    /// says so rather than no status; a CLI agent's success has none.
    pub fn of(a: &crate::Attempt, http: bool) -> Self {
        let status = match a.status {
            Some(s) => Some(s),
            None if http && a.succeeded() => Some(200),
            None => None,
        };
        let ms = |d: std::time::Duration| (d.as_secs_f64() * 1_000_000.0).round() / 1000.0;
        AttemptRecord {
            number: a.number,
            wait_before_ms: ms(a.wait_before),
            started_at: timestamp(a.started_at),
            duration_ms: ms(a.duration),
            status,
            error_kind: a.error_kind.map(|k| k.as_str().to_string()),
            error: a.error.clone(),
            reference: a.reference.clone(),
        }
    }
}

/// When a call ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// When the call started (RFC 3339, UTC, microseconds).
    pub started_at: String,
    /// When it ended.
    pub ended_at: String,
    /// Milliseconds from the start to the first byte of the reply (streams; `null` when
    /// not observed).
    pub first_byte_ms: Option<f64>,
    /// Milliseconds from the start to the end.
    pub duration_ms: f64,
}

/// The fields of a record that differ between two runs of the same calls: the timings,
/// the call number (calls finish in a different order) and the attempts' times.
pub const TIMING_FIELDS: &[&str] = &[
    "number",
    "timings",
    "attempts[].started_at",
    "attempts[].duration_ms",
];

impl CallRecord {
    /// The role as written in indexes and stats (`""` for none).
    pub fn role_name(&self) -> &str {
        self.role.as_deref().unwrap_or("")
    }

    /// True when the call failed.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// The record with every field of [`TIMING_FIELDS`] cleared, for comparing runs.
    pub fn without_timings(&self) -> CallRecord {
        let mut r = self.clone();
        r.number = 0;
        r.timings = Timings {
            started_at: String::new(),
            ended_at: String::new(),
            first_byte_ms: None,
            duration_ms: 0.0,
        };
        for a in &mut r.attempts {
            a.started_at.clear();
            a.duration_ms = 0.0;
        }
        r
    }

    /// The raw bytes, decoded from the record's encoding.
    pub fn raw_bytes(&self) -> crate::Result<bytes::Bytes> {
        match &self.raw {
            Some(raw) => raw.to_bytes(),
            None => Ok(bytes::Bytes::new()),
        }
    }
}

/// The parameters of a request: its canonical form without messages and tools.
pub fn parameters(request: &Request) -> Map<String, Value> {
    // Built from the parameter fields alone: serialising the whole request to drop its
    // messages would copy the prompt once more per call.
    let only = Request {
        messages: Vec::new(),
        tools: Vec::new(),
        tool_choice: request.tool_choice.clone(),
        parallel_tool_calls: request.parallel_tool_calls,
        max_tokens: request.max_tokens,
        temperature: request.temperature,
        top_p: request.top_p,
        stop: request.stop.clone(),
        reasoning: request.reasoning.clone(),
        response_format: request.response_format.clone(),
        passthrough: request.passthrough.clone(),
    };
    match serde_json::to_value(&only) {
        Ok(Value::Object(mut map)) => {
            map.remove("messages");
            map
        }
        _ => Map::new(),
    }
}

/// The request body of a record as JSON, for reading it.
pub fn body_json(record: &CallRecord) -> Option<Value> {
    record
        .body
        .as_ref()
        .and_then(|b| from_slice_bounded(b.get().as_bytes(), MAX_RECORD_DEPTH).ok())
}

/// The usage object of a parsed reply or stream event: `usage` or `usageMetadata`, or one
/// level down (Responses stream events and Anthropic's `message_start` nest it).
fn usage_in(value: &Value) -> Option<Value> {
    let obj = value.as_object()?;
    for key in ["usage", "usageMetadata"] {
        if let Some(u) = obj.get(key).filter(|u| u.is_object()) {
            return Some(u.clone());
        }
    }
    for key in ["response", "message"] {
        if let Some(u) = obj.get(key).and_then(usage_in) {
            return Some(u);
        }
    }
    None
}

/// The usage object as the provider wrote it, found in the raw bytes of a reply or a
/// stream (the last one in a stream: providers repeat it cumulatively) in `dialect`
/// (when unknown, both usage keys are tried).
pub fn reported_usage(raw: &[u8], stream: bool, dialect: Option<Dialect>) -> Option<Value> {
    if !stream {
        // Only the usage object is parsed, found from the end (it closes the body), so a
        // large reply is not parsed a second time.
        let dialects = dialect.map_or(vec![Dialect::Chat, Dialect::Gemini], |d| vec![d]);
        if let Some(usage) = dialects
            .into_iter()
            .find_map(|d| switchyard_wire::usage_scan::find_usage_object(d, raw))
        {
            return Some(Value::Object(usage));
        }
        return serde_json::from_slice::<Value>(raw)
            .ok()
            .as_ref()
            .and_then(usage_in);
    }
    usage_in_stream(std::str::from_utf8(raw).ok()?)
}

/// [`reported_usage`] of a stream's text: the last event that carries a usage object.
pub(crate) fn usage_in_stream(text: &str) -> Option<Value> {
    text.lines()
        .rev()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter(|data| data.contains("sage"))
        .find_map(|data| {
            serde_json::from_str::<Value>(data.trim())
                .ok()
                .as_ref()
                .and_then(usage_in)
        })
}
