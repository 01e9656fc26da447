//! `switchyard log stats|show|export`: reading a recorded run. The stats and one call's
//! text are also values for another front end (`crate::data`).

use std::collections::BTreeMap;
use std::io::Write;

use switchyard::internal::cost::fmt_cost;
use switchyard::record::{self, CallRecord};

use super::table;
use crate::cli::{ExportFormat, LogExportArgs, LogShowArgs, LogStatsArgs};

/// Totals of a group of calls.
#[derive(Default)]
struct Totals {
    calls: u64,
    errors: u64,
    input: u64,
    cached: u64,
    cache_write: u64,
    output: u64,
    reasoning: u64,
    cost: f64,
    unknown_cost: u64,
}

impl Totals {
    fn add(&mut self, r: &CallRecord) {
        self.calls += 1;
        self.errors += u64::from(r.failed());
        if let Some(u) = r.usage {
            // Saturating: one provider's absurd count must not wrap the totals.
            self.input = self.input.saturating_add(u.input);
            self.cached = self.cached.saturating_add(u.cached_input);
            self.cache_write = self.cache_write.saturating_add(u.cache_write);
            self.output = self.output.saturating_add(u.output);
            self.reasoning = self.reasoning.saturating_add(u.reasoning);
        }
        match r.cost_usd {
            Some(c) => self.cost += c,
            None => self.unknown_cost += 1,
        }
    }

    /// `$0.12`, `unknown` when no call is priced, `≥ $0.12` when some are not.
    fn cost_text(&self) -> String {
        if self.unknown_cost == self.calls {
            "unknown".to_string()
        } else if self.unknown_cost > 0 {
            format!("≥ {}", fmt_cost(Some(self.cost)))
        } else {
            fmt_cost(Some(self.cost))
        }
    }

    fn row(&self, name: &str) -> Vec<String> {
        vec![
            name.to_string(),
            self.calls.to_string(),
            self.errors.to_string(),
            self.input.to_string(),
            self.cached.to_string(),
            self.cache_write.to_string(),
            self.output.to_string(),
            self.reasoning.to_string(),
            self.cost_text(),
        ]
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "calls": self.calls, "errors": self.errors,
            "input_tokens": self.input, "cached_input_tokens": self.cached,
            "cache_write_tokens": self.cache_write, "output_tokens": self.output,
            "reasoning_tokens": self.reasoning,
            "cost_usd": if self.unknown_cost == self.calls { None } else { Some(self.cost) },
            "calls_with_unknown_cost": self.unknown_cost,
            "cost_is_lower_bound": self.unknown_cost > 0 && self.unknown_cost < self.calls,
        })
    }
}

fn header(first: &str) -> Vec<String> {
    [
        first,
        "CALLS",
        "ERRORS",
        "INPUT",
        "CACHED",
        "CACHE WRITE",
        "OUTPUT",
        "REASONING",
        "COST",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The model a call is grouped under: `<backend>/<model>`, or for a call that never
/// reached a backend (a gateway's refusal in a store written before refusals were traced
/// instead of recorded) the model the client asked for, marked.
fn model_of(r: &record::CallRecord) -> String {
    if r.backend.is_empty() {
        let asked = if r.reference.is_empty() {
            "?"
        } else {
            &r.reference
        };
        format!("(refused) {asked}")
    } else {
        format!("{}/{}", r.backend, r.model)
    }
}

/// The totals of a run: in all, by role, by model, and by gateway client key.
#[derive(Default)]
struct Stats {
    total: Totals,
    by_role: BTreeMap<String, Totals>,
    by_model: BTreeMap<String, Totals>,
    // A gateway's store: calls by client key name.
    by_key: BTreeMap<String, Totals>,
    /// Calls whose record kept only the first bytes of their reply (`raw_truncated`).
    truncated: u64,
    /// Calls ended by a size bound on the upstream's answer (`ReplyTooLarge`).
    too_large: u64,
}

impl Stats {
    fn of(records: &[CallRecord]) -> Stats {
        let mut stats = Stats::default();
        for r in records {
            stats.total.add(r);
            stats.truncated += u64::from(r.raw_truncated.is_some());
            stats.too_large +=
                u64::from(r.error.as_ref().is_some_and(|e| e.kind == "ReplyTooLarge"));
            if let Some(key) = &r.client_key {
                stats.by_key.entry(key.clone()).or_default().add(r);
            }
            let role = match r.role_name() {
                "" => "(none)".to_string(),
                name => name.to_string(),
            };
            stats.by_role.entry(role).or_default().add(r);
            stats.by_model.entry(model_of(r)).or_default().add(r);
        }
        stats
    }

    fn json(&self) -> serde_json::Value {
        let groups = |g: &BTreeMap<String, Totals>| {
            g.iter()
                .map(|(k, v)| (k.clone(), v.json()))
                .collect::<serde_json::Map<_, _>>()
        };
        let mut json = serde_json::json!({
            "total": self.total.json(),
            "by_role": groups(&self.by_role),
            "by_model": groups(&self.by_model),
        });
        if !self.by_key.is_empty() {
            json["by_key"] = groups(&self.by_key).into();
        }
        json["calls_with_truncated_raw"] = self.truncated.into();
        json["calls_past_a_size_bound"] = self.too_large.into();
        json
    }

    fn text(&self) -> String {
        let total = &self.total;
        let mut out = String::new();
        for (title, groups) in [
            ("ROLE", &self.by_role),
            ("MODEL", &self.by_model),
            ("KEY", &self.by_key),
        ] {
            if groups.is_empty() {
                continue;
            }
            let mut rows = vec![header(title)];
            rows.extend(groups.iter().map(|(k, v)| v.row(k)));
            out.push_str(&table::render(&rows));
            out.push('\n');
        }
        out.push_str(&format!(
            "total: {} calls, {} errors, {} tokens in ({} cached), {} out ({} reasoning), cost {}",
            total.calls,
            total.errors,
            total.input,
            total.cached,
            total.output,
            total.reasoning,
            total.cost_text()
        ));
        if total.unknown_cost > 0 && total.unknown_cost < total.calls {
            out.push_str(&format!(
                " — a lower bound: {} call{} had no price",
                total.unknown_cost,
                if total.unknown_cost == 1 { "" } else { "s" }
            ));
        }
        let calls = |n: u64| format!("{n} call{}", if n == 1 { "" } else { "s" });
        if self.too_large > 0 {
            out.push_str(&format!(
                "\n{} ended past a size bound on the upstream's answer (ReplyTooLarge: `log show` names the bound)",
                calls(self.too_large)
            ));
        }
        if self.truncated > 0 {
            out.push_str(&format!(
                "\n{} kept only the first bytes of their reply (`raw_truncated`; `limits.max_recorded_reply_bytes`): their recorded replies are partial and are not replayed",
                calls(self.truncated)
            ));
        }
        out
    }
}

/// `log stats --json` of `records` as a value (the Python package's `Log.stats()`).
pub(crate) fn stats_json(records: &[CallRecord]) -> serde_json::Value {
    Stats::of(records).json()
}

/// Runs `log stats`.
pub(super) fn stats(args: &LogStatsArgs) -> Result<(), String> {
    let source =
        super::log_source::source(args.source.run_dir.as_ref(), args.source.store.as_deref())?;
    let stats = Stats::of(&super::log_source::records(&source)?);
    if args.json {
        println!("{}", super::to_json(&stats.json())?);
    } else {
        println!("{}", stats.text());
    }
    Ok(())
}

/// Runs `log show`.
pub(super) fn show(args: &LogShowArgs) -> Result<(), String> {
    let r = match (&args.store, &args.second) {
        (Some(store), None) => match super::log_source::source(None, Some(store))? {
            super::log_source::Source::Postgres(url) => {
                super::postgres::call(&url, &args.first)?
            }
            super::log_source::Source::Dir(_) => unreachable!("--store names a database"),
        },
        (Some(_), Some(_)) => {
            return Err("error: with --store, give the call alone (its id, `<replica>-<number>`), not a run directory".into())
        }
        (None, Some(number)) => {
            let number: u64 = number.parse().map_err(|_| {
                format!("error: `{number}` is not a call number (a whole number, as `log stats` and `log export` show them)")
            })?;
            record::read_record(std::path::Path::new(&args.first), number)
                .map_err(|e| format!("error: {e}"))?
        }
        (None, None) => {
            return Err(format!(
                "error: give the run directory and the call's number (`log show {} 3`), or --store postgres and the call's id",
                args.first
            ))
        }
    };
    if args.raw {
        let raw = r.raw_bytes().map_err(|e| format!("error: {e}"))?;
        let mut out = std::io::stdout().lock();
        out.write_all(&raw)
            .and_then(|_| out.flush())
            .map_err(|e| format!("error: cannot write: {e}"))?;
        return Ok(());
    }
    print!("{}", show_text(&r));
    Ok(())
}

/// One call as `log show` prints it: role, model, request, reply, usage, cost, attempts,
/// error (the Python package's `Log.show(n)`).
pub(crate) fn show_text(r: &CallRecord) -> String {
    let mut out = String::new();
    let line = |out: &mut String, k: &str, v: String| out.push_str(&format!("{k:<10} {v}\n"));
    line(
        &mut out,
        "call",
        format!("{} (format {})", r.number, r.format),
    );
    line(
        &mut out,
        "role",
        r.role.clone().unwrap_or_else(|| "(none)".into()),
    );
    line(&mut out, "reference", r.reference.clone());
    if let Some(route) = &r.route {
        line(
            &mut out,
            "route",
            format!("{route} (served by {})", r.reference),
        );
    }
    if r.cut {
        line(
            &mut out,
            "cut",
            "the stream broke after its output began".to_string(),
        );
    }
    if r.client_key.is_some() || r.client_dialect.is_some() {
        // A call through the gateway: who sent it, in which dialect.
        line(
            &mut out,
            "client",
            format!(
                "key {} · dialect {}",
                r.client_key
                    .as_deref()
                    .unwrap_or("(none: the gateway has no keys)"),
                r.client_dialect.map(|d| d.as_str()).unwrap_or("unknown")
            ),
        );
    }
    line(
        &mut out,
        "backend",
        format!(
            "{} · model {} · dialect {} · {}",
            r.backend,
            r.model,
            r.dialect.map(|d| d.as_str()).unwrap_or("none"),
            if r.stream { "streamed" } else { "whole" }
        ),
    );
    line(
        &mut out,
        "time",
        format!(
            "{} · {:.1} ms{}",
            r.timings.started_at,
            r.timings.duration_ms,
            r.timings
                .first_byte_ms
                .map(|t| format!(" · first byte {t:.1} ms"))
                .unwrap_or_default()
        ),
    );
    line(&mut out, "prompt", r.prompt_digest.clone());
    for l in record::prompt_lines(&r.request) {
        out.push_str(&format!("  {l}\n"));
    }
    if !r.parameters.is_empty() {
        line(
            &mut out,
            "params",
            serde_json::Value::Object(r.parameters.clone()).to_string(),
        );
    }
    if let Some(reply) = &r.reply {
        let thinking = reply.thinking();
        if !thinking.is_empty() {
            line(&mut out, "thinking", thinking);
        }
        line(&mut out, "reply", reply.text());
        for call in reply.tool_calls() {
            line(
                &mut out,
                "tool call",
                format!("{} {}({})", call.id, call.name, call.arguments),
            );
        }
        line(
            &mut out,
            "finish",
            format!("{:?}", reply.finish).to_lowercase(),
        );
    }
    match r.usage {
        Some(u) => line(
            &mut out,
            "usage",
            format!(
                "{} in ({} cached, {} cache write) · {} out ({} reasoning)",
                u.input, u.cached_input, u.cache_write, u.output, u.reasoning
            ),
        ),
        None => line(&mut out, "usage", "not reported".into()),
    }
    let mut cost = fmt_cost(r.cost_usd);
    if let Some(p) = r.provider_cost_usd {
        cost.push_str(&format!(" (provider reported {})", fmt_cost(Some(p))));
    }
    line(&mut out, "cost", cost);
    for a in &r.attempts {
        line(
            &mut out,
            "attempt",
            format!(
                "{}{} · waited {:.0} ms · {:.1} ms · {}{}",
                a.number,
                a.reference
                    .as_ref()
                    .map(|m| format!(" · {m}"))
                    .unwrap_or_default(),
                a.wait_before_ms,
                a.duration_ms,
                match (a.status, &a.error_kind) {
                    (Some(s), _) => format!("HTTP {s}"),
                    // A CLI agent's success has no HTTP status.
                    (None, None) => "ok".into(),
                    (None, Some(_)) => "no status".into(),
                },
                a.error_kind
                    .as_ref()
                    .map(|k| format!(" · {k}"))
                    .unwrap_or_default()
            ),
        );
    }
    if let Some(e) = &r.error {
        line(&mut out, "error", format!("{}: {}", e.kind, e.message));
    }
    let raw_len = r.raw_bytes().map(|b| b.len()).unwrap_or(0);
    let kept = match &r.raw_truncated {
        None => String::new(),
        Some(cut) => format!(
            ", only the first of {} (`{}`)",
            cut.received
                .map(|n| format!("{n} received"))
                .unwrap_or_else(|| "more, read no further".into()),
            cut.setting
        ),
    };
    line(
        &mut out,
        "raw",
        format!("{raw_len} bytes{kept} (see them with --raw)"),
    );
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Runs `log export`.
pub(super) fn export(args: &LogExportArgs) -> Result<(), String> {
    let source =
        super::log_source::source(args.source.run_dir.as_ref(), args.source.store.as_deref())?;
    let records = super::log_source::records_with_ids(&source)?;
    let with_ids = matches!(source, super::log_source::Source::Postgres(_));
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let io = |e: std::io::Error| format!("error: cannot write: {e}");
    match args.format {
        ExportFormat::Jsonl => {
            for (id, r) in &records {
                let line = serde_json::to_string(r).map_err(|e| format!("error: {e}"))?;
                match id {
                    // A shared store's numbers are per replica: the id says which call.
                    Some(id) => {
                        let id = serde_json::to_string(id).map_err(|e| format!("error: {e}"))?;
                        write!(out, "{{\"call_id\":{id},{}", &line[1..]).map_err(io)?
                    }
                    None => out.write_all(line.as_bytes()).map_err(io)?,
                }
                out.write_all(b"\n").map_err(io)?;
            }
        }
        ExportFormat::Csv => {
            if with_ids {
                write!(out, "call_id,").map_err(io)?;
            }
            writeln!(out, "number,time,role,reference,backend,model,dialect,stream,status,error_kind,input_tokens,cached_input_tokens,cache_write_tokens,output_tokens,reasoning_tokens,cost_usd,provider_cost_usd,latency_ms,ttfb_ms,attempts,prompt_digest").map_err(io)?;
            for (id, r) in &records {
                let u = r.usage;
                let num = |v: Option<u64>| v.map(|n| n.to_string()).unwrap_or_default();
                let fl = |v: Option<f64>| v.map(|n| n.to_string()).unwrap_or_default();
                let fields = [
                    r.number.to_string(),
                    r.timings.started_at.clone(),
                    r.role_name().to_string(),
                    r.reference.clone(),
                    r.backend.clone(),
                    r.model.clone(),
                    r.dialect
                        .map(|d| d.as_str().to_string())
                        .unwrap_or_default(),
                    u8::from(r.stream).to_string(),
                    if r.failed() { "error" } else { "ok" }.to_string(),
                    r.error.as_ref().map(|e| e.kind.clone()).unwrap_or_default(),
                    num(u.map(|u| u.input)),
                    num(u.map(|u| u.cached_input)),
                    num(u.map(|u| u.cache_write)),
                    num(u.map(|u| u.output)),
                    num(u.map(|u| u.reasoning)),
                    fl(r.cost_usd),
                    fl(r.provider_cost_usd),
                    r.timings.duration_ms.to_string(),
                    fl(r.timings.first_byte_ms),
                    r.attempts.len().to_string(),
                    r.prompt_digest.clone(),
                ];
                let line: Vec<String> = id
                    .iter()
                    .chain(fields.iter())
                    .map(|f| csv_field(f))
                    .collect();
                writeln!(out, "{}", line.join(",")).map_err(io)?;
            }
        }
    }
    out.flush().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A streamed call's record, as a store would read it back, with `extra` fields.
    fn record(number: u64, extra: serde_json::Value) -> CallRecord {
        let mut v = serde_json::json!({
            "format": record::FORMAT, "number": number, "reference": "up/m", "backend": "up",
            "model": "m", "dialect": "chat", "stream": true, "prompt_digest": "",
            "request": {"messages": []}, "parameters": {}, "attempts": [],
            "timings": {"started_at": "2026-12-06T10:00:00Z", "ended_at": "2026-12-06T10:00:01Z",
                        "duration_ms": 1000.0},
            "raw": {"encoding": "utf8", "data": "data: {\"choices\":[]}\n\n"}
        });
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn stats_and_show_say_which_calls_were_cut_by_a_size_bound_or_kept_in_part() {
        let records = [
            record(1, serde_json::json!({})),
            record(
                2,
                serde_json::json!({"raw_truncated": {"kept": 22, "received": 300000000,
                                   "setting": "limits.max_recorded_reply_bytes"}}),
            ),
            record(
                3,
                serde_json::json!({"error": {"kind": "ReplyTooLarge", "message": "up sent a stream past its bound",
                                   "fields": {"bound": "max_stream_bytes", "limit": 268435456}},
                                   "raw_truncated": {"kept": 22, "received": 268435457,
                                   "setting": "limits.max_recorded_reply_bytes"}}),
            ),
        ];
        let stats = Stats::of(&records);
        let json = stats.json();
        assert_eq!(json["calls_with_truncated_raw"], 2);
        assert_eq!(json["calls_past_a_size_bound"], 1);
        let text = stats.text();
        assert!(
            text.contains("1 call ended past a size bound on the upstream's answer"),
            "{text}"
        );
        assert!(
            text.contains("2 calls kept only the first bytes of their reply"),
            "{text}"
        );
        let shown = show_text(&records[1]);
        assert!(
            shown.contains(
                "22 bytes, only the first of 300000000 received (`limits.max_recorded_reply_bytes`)"
            ),
            "{shown}"
        );
        assert!(!show_text(&records[0]).contains("only the first"));
    }
}
