//! The gateway config's `store:`, `timeouts:` and `limits:` sections.

use super::GatewayConfig;
use crate::store::StoreDurability;
use serde_json::{Map, Value};
use std::path::PathBuf;
use std::time::Duration;
use switchyard::backend::http::Timeouts;
use switchyard::CallPolicy;

/// The waits of an upstream call unless `timeouts:` says otherwise: the library's
/// (30 s to connect, 5 minutes of silence inside a reply), and 10 minutes for the answer's
/// head — the time a non-streamed reply may take to generate, and what the OpenAI and
/// Anthropic SDKs themselves wait — so an upstream that accepts and never answers cannot
/// hold a client for ever.
pub const GATEWAY_TIMEOUTS: Timeouts = Timeouts {
    connect: Some(Duration::from_secs(30)),
    first_byte: Some(Duration::from_secs(600)),
    idle: Some(Duration::from_secs(300)),
    total: None,
};

const STORE_FIELDS: &str = "path, durability, max_backlog, postgres";
const LIMIT_FIELDS: &str = "max_targets, max_metric_series, max_metrics_bytes, max_reply_bytes, \
     max_stream_bytes, max_event_bytes, max_error_body_bytes, max_recorded_reply_bytes";

/// `store: DIR` or `store: {path, durability, max_backlog, postgres}`.
pub(super) fn read_store(value: &Value, config: &mut GatewayConfig, errors: &mut Vec<String>) {
    match value {
        Value::String(s) => config.store = Some(PathBuf::from(s)),
        Value::Object(map) => {
            for (k, v) in map {
                match k.as_str() {
                    "path" => match v.as_str() {
                        Some(p) if !p.is_empty() => config.store = Some(PathBuf::from(p)),
                        _ => errors.push(format!("store.path: expected a directory, found {v}")),
                    },
                    "durability" => match v.as_str().and_then(StoreDurability::parse) {
                        Some(d) => config.store_options.durability = d,
                        None => errors.push(format!(
                            "store.durability: expected one of {} (see docs/reliability.md), found {v}",
                            StoreDurability::NAMES
                        )),
                    },
                    "max_backlog" => match v.as_u64() {
                        Some(n) if n > 0 => config.store_options.max_backlog = n as usize,
                        _ => errors.push(format!(
                            "store.max_backlog: expected a whole number of calls > 0, found {v}"
                        )),
                    },
                    "postgres" => match crate::store::pg::read_config(v) {
                        Ok(pg) => config.postgres = Some(pg),
                        Err(e) => errors.push(e),
                    },
                    other => errors.push(format!(
                        "store.{other}: unknown field; accepted: {STORE_FIELDS}"
                    )),
                }
            }
            // The directory may still come from `--data-dir`; `Gateway::new` refuses a
            // store with none.
            config.store_without_path = config.store.is_none() && !map.contains_key("path");
        }
        other => errors.push(format!(
            "store: expected a directory, or {{{STORE_FIELDS}}}, found {other}"
        )),
    }
}

/// `timeouts:`, the call policy's timeout fields as everywhere (`docs/errors.md`), over
/// the gateway's defaults ([`GATEWAY_TIMEOUTS`]).
pub(super) fn read_timeouts(value: &Value, config: &mut GatewayConfig, errors: &mut Vec<String>) {
    let given = match value {
        Value::Null => return,
        Value::Object(map) => map,
        other => {
            errors.push(format!(
                "timeouts: expected a mapping of timeout_seconds, connect_timeout_seconds, first_byte_timeout_seconds, idle_timeout_seconds, found {other}"
            ));
            return;
        }
    };
    let defaults = CallPolicy {
        total_timeout: GATEWAY_TIMEOUTS.total,
        connect_timeout: GATEWAY_TIMEOUTS.connect,
        first_byte_timeout: GATEWAY_TIMEOUTS.first_byte,
        idle_timeout: GATEWAY_TIMEOUTS.idle,
        ..CallPolicy::default()
    };
    let mut merged: Map<String, Value> = match serde_json::to_value(&defaults) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    for (k, v) in given {
        if k == "retry" {
            errors.push("timeouts.retry: retries have their own section, `retry:`".into());
            continue;
        }
        merged.insert(k.clone(), v.clone());
    }
    match serde_json::from_value::<CallPolicy>(Value::Object(merged)) {
        Ok(policy) => config.timeouts = policy.timeouts(),
        Err(e) => errors.push(format!("timeouts: {e}")),
    }
}

/// `limits:` the bounds on what distinct model names can make the gateway keep
/// (targets, metric series, the `/metrics` text) and on how much of an upstream's answer is read and recorded.
pub(super) fn read_limits(value: &Value, config: &mut GatewayConfig, errors: &mut Vec<String>) {
    let Value::Object(map) = value else {
        errors.push(format!(
            "limits: expected a mapping of {LIMIT_FIELDS}, found {value}"
        ));
        return;
    };
    for (k, v) in map {
        let bytes = k.ends_with("_bytes");
        let n = match v.as_u64() {
            Some(n) if n > 0 => n,
            _ => {
                errors.push(match bytes {
                    true => format!("limits.{k}: expected a positive number of bytes, found {v}"),
                    false => format!("limits.{k}: expected a whole number > 0, found {v}"),
                });
                continue;
            }
        };
        let reply = &mut config.reply_limits;
        match k.as_str() {
            "max_targets" => config.max_targets = usize::try_from(n).unwrap_or(usize::MAX),
            "max_metric_series" => {
                config.max_metric_series = usize::try_from(n).unwrap_or(usize::MAX)
            }
            "max_metrics_bytes" if n < crate::meter::metrics::MIN_MAX_BYTES as u64 => errors.push(format!(
                "limits.max_metrics_bytes: expected at least {} bytes (64 KiB of the text is kept for the gateway's unlabelled metrics), found {n}",
                crate::meter::metrics::MIN_MAX_BYTES
            )),
            "max_metrics_bytes" => config.max_metrics_bytes = usize::try_from(n).unwrap_or(usize::MAX),
            "max_reply_bytes" => reply.max_reply_bytes = n,
            "max_stream_bytes" => reply.max_stream_bytes = n,
            "max_event_bytes" => reply.max_event_bytes = n,
            "max_error_body_bytes" => reply.max_error_body_bytes = n,
            "max_recorded_reply_bytes" => {
                config.max_recorded_reply_bytes = usize::try_from(n).unwrap_or(usize::MAX)
            }
            other => errors.push(format!(
                "limits.{other}: unknown field; accepted: {LIMIT_FIELDS}"
            )),
        }
    }
}
