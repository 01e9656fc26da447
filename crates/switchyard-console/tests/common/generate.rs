//! A store of `n` recorded calls written fast, in the recorder's on-disk format: every
//! record a real format-2 line in `llm_log/segment-NNNNNN.jsonl` (read back by the
//! library's reader), every row in `calls.sqlite` of the library's schema pointing at it.
//! Shared by the console's tests and `examples/generate_store.rs` (the million-call
//! benchmark, docs/performance.md).
//!
//! The calls are varied the way a gateway's are: six references (one unpriced, so its
//! cost is unknown), four roles, three keys, a call in 20 failing with one of four
//! kinds, one in 50 retried, over `n` minutes ending at 2026-12-01T00:00Z.

#![allow(dead_code)]

use rusqlite::params;
use std::io::Write;
use std::path::Path;
use switchyard::record::{
    segment_path, INDEX_FILE, INDEX_KEYS_SCHEMA, INDEX_SCHEMA, INDEX_VERSION, LOG_DIR,
};

/// A reference, its dialect, and its price per million tokens in and out (`None`: unpriced).
type Priced = (&'static str, &'static str, Option<(f64, f64)>);

pub(crate) const REFERENCES: &[Priced] = &[
    ("mock/echo", "chat", Some((1.0, 2.0))),
    ("openai/gpt-5.4", "responses", Some((1.25, 10.0))),
    ("anthropic/claude-sonnet-4-5", "messages", Some((3.0, 15.0))),
    ("google/gemini-3-pro", "gemini", Some((2.0, 12.0))),
    ("deepseek/deepseek-chat", "chat", Some((0.27, 1.1))),
    ("vllm/qwen3-32b", "chat", None),
];
pub(crate) const ROLES: &[&str] = &["planner", "coder", "reviewer", ""];
pub(crate) const KEYS: &[&str] = &["alice", "bob", "ci"];
pub(crate) const KINDS: &[&str] = &["RateLimited", "Timeout", "ContextOverflow", "ServerError"];

/// Minutes before 2026-12-01T00:00Z that call 1 starts (call i starts i-1 minutes later).
fn time_of(i: u64, n: u64) -> String {
    // Days from 1970-01-01 to 2026-12-01.
    const END_DAYS: i64 = 20_788;
    let minutes = END_DAYS * 1440 - (n as i64) + (i as i64 - 1);
    let (days, m) = (minutes.div_euclid(1440), minutes.rem_euclid(1440));
    let (y, mo, d) = civil(days);
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:06}Z",
        m / 60,
        m % 60,
        i % 60,
        (i * 7919) % 1_000_000
    )
}

/// Days since 1970-01-01 → (year, month, day) (Howard Hinnant's algorithm).
fn civil(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// One call in four is streamed.
fn streamed(i: u64) -> bool {
    i.is_multiple_of(4)
}

/// One call's fields, derived from its number.
pub(crate) struct Call {
    pub number: u64,
    pub time: String,
    pub reference: &'static str,
    pub dialect: &'static str,
    pub role: &'static str,
    pub key: &'static str,
    pub kind: Option<&'static str>,
    pub input: u64,
    pub output: u64,
    pub cost: Option<f64>,
    pub latency_ms: f64,
    pub attempts: u32,
}

pub(crate) fn call(i: u64, n: u64) -> Call {
    let (reference, dialect, price) = REFERENCES[(i % 6) as usize];
    let kind = (i % 20 == 7).then(|| KINDS[((i / 20) % 4) as usize]);
    let (input, output) = if kind.is_some() {
        (0, 0)
    } else {
        (20 + (i * 37) % 3000, 5 + (i * 13) % 800)
    };
    let cost = price
        .filter(|_| kind.is_none())
        .map(|(pi, po)| (input as f64 * pi + output as f64 * po) / 1e6);
    Call {
        number: i,
        time: time_of(i, n),
        reference,
        dialect,
        role: ROLES[((i / 3) % 4) as usize],
        key: KEYS[((i / 7) % 3) as usize],
        kind,
        input,
        output,
        cost,
        latency_ms: 80.0 + ((i * 7717) % 9000) as f64 / 3.0,
        attempts: if i % 50 == 3 { 2 } else { 1 },
    }
}

/// The record line of a call: a format-2 record as the gateway writes one.
pub(crate) fn line(c: &Call) -> String {
    let (backend, model) = c.reference.split_once('/').unwrap_or(("mock", c.reference));
    let prompt = format!(
        "Question {} about the {} plan: what comes next?",
        c.number, c.role
    );
    let answer = format!("Answer {} — the next step.", c.number);
    let usage = (c.kind.is_none()).then(|| {
        serde_json::json!({"input": c.input, "cached_input": 0, "cache_write": 0, "output": c.output, "reasoning": 0})
    });
    let mut attempts = Vec::new();
    for a in 1..=c.attempts {
        let last = a == c.attempts;
        attempts.push(serde_json::json!({
            "number": a, "wait_before_ms": if a == 1 { 0.0 } else { 1000.0 },
            "started_at": c.time, "duration_ms": c.latency_ms / c.attempts as f64,
            "status": if last { if c.kind.is_some() { 429 } else { 200 } } else { 429 },
            "error_kind": if last { c.kind } else { Some("RateLimited") },
            "error": if last && c.kind.is_none() { None } else { Some("rate limited") },
        }));
    }
    let record = serde_json::json!({
        "format": 2, "number": c.number,
        "role": (!c.role.is_empty()).then_some(c.role),
        "reference": c.reference, "backend": backend, "model": model,
        "dialect": c.dialect, "stream": streamed(c.number),
        "prompt_digest": format!("{:032x}", c.number),
        "request": {"messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}]},
        "parameters": {},
        "body": {"model": model, "messages": [{"role": "user", "content": prompt}]},
        "reply": c.kind.is_none().then(|| serde_json::json!({
            "content": [{"type": "text", "text": answer}], "finish": "stop", "usage": usage,
            "model": model, "id": format!("r-{}", c.number)})),
        "raw": {"encoding": "utf8", "data": format!("{{\"id\":\"r-{}\",\"text\":\"{answer}\"}}", c.number)},
        "usage": usage, "usage_reported": null,
        "attempts": attempts,
        "timings": {"started_at": c.time, "ended_at": c.time, "first_byte_ms": null, "duration_ms": c.latency_ms},
        "cost_usd": c.cost, "provider_cost_usd": null,
        "error": c.kind.map(|k| serde_json::json!({"kind": k, "message": format!("{k} from {backend}"), "provider": null, "fields": {}})),
        "client_key": c.key, "client_dialect": c.dialect,
    });
    record.to_string()
}

/// Writes `n` calls into `dir` (which must not hold a store yet).
pub(crate) fn generate(dir: &Path, n: u64) {
    generate_with(dir, n, line)
}

/// [`generate`], each call's record line made by `make` (a test's own records).
pub(crate) fn generate_with(dir: &Path, n: u64, make: impl Fn(&Call) -> String) {
    let log = dir.join(LOG_DIR);
    std::fs::create_dir_all(&log).unwrap();
    let conn = rusqlite::Connection::open(dir.join(INDEX_FILE)).unwrap();
    conn.execute_batch(&format!(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF; {INDEX_SCHEMA};
         {INDEX_KEYS_SCHEMA}
         PRAGMA user_version = {INDEX_VERSION};"
    ))
    .unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    let mut stmt = tx
        .prepare(
            "INSERT INTO llm_calls (number, time, role, reference, backend, model, dialect, stream,
                 status, error_kind, input_tokens, cached_input_tokens, cache_write_tokens,
                 output_tokens, reasoning_tokens, cost_usd, provider_cost_usd, latency_ms,
                 ttfb_ms, attempts, prompt_digest, segment, line_offset, line_length, client_key,
                 client_dialect, cache_key, cache_hit)
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,0,0,?12,0,?13,NULL,?14,NULL,?15,?16,?17,?18,?19,?20,?7,NULL,NULL)",
        )
        .unwrap();
    let (mut segment, mut offset) = (1u32, 0u64);
    let mut out = std::io::BufWriter::new(std::fs::File::create(segment_path(&log, 1)).unwrap());
    for i in 1..=n {
        if offset >= switchyard::record::SEGMENT_BYTES {
            out.flush().unwrap();
            segment += 1;
            offset = 0;
            out = std::io::BufWriter::new(
                std::fs::File::create(segment_path(&log, segment)).unwrap(),
            );
        }
        let c = call(i, n);
        let text = make(&c);
        out.write_all(text.as_bytes()).unwrap();
        out.write_all(b"\n").unwrap();
        let (backend, model) = c.reference.split_once('/').unwrap();
        let usage = c.kind.is_none();
        stmt.execute(params![
            i as i64,
            c.time,
            c.role,
            c.reference,
            backend,
            model,
            c.dialect,
            streamed(i),
            if c.kind.is_some() { "error" } else { "ok" },
            c.kind,
            usage.then_some(c.input as i64),
            usage.then_some(c.output as i64),
            c.cost,
            c.latency_ms,
            c.attempts,
            format!("{i:032x}"),
            segment,
            offset as i64,
            text.len() as i64,
            c.key,
        ])
        .unwrap();
        offset += text.len() as u64 + 1;
    }
    out.flush().unwrap();
    drop(stmt);
    tx.commit().unwrap();
}
