//! The `cache:` section of a run config or a gateway config: `off | read | read-write`,
//! or `{mode, ttl, scope, temperature_above_zero}`.

use serde_json::Value;
use std::time::Duration;

const FIELDS: &str = "mode, ttl, scope, temperature_above_zero";
const SCOPES: &str = "run, store";
const MODES: &str = "off, read, read-write";
const TTL: &str =
    "a number of seconds (3600) or a text with a unit (\"90s\", \"10m\", \"1h\", \"7d\")";

/// Whether calls are answered from the call log, and whether they are entered in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheMode {
    /// No lookups, no entries (the default).
    #[default]
    Off,
    /// Calls are answered from entries already in the log; new calls add none.
    Read,
    /// Calls are answered from the log, and every cacheable call adds an entry.
    ReadWrite,
}

impl CacheMode {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "off" => CacheMode::Off,
            "read" => CacheMode::Read,
            "read-write" | "read_write" => CacheMode::ReadWrite,
            _ => return None,
        })
    }
}

/// Which recorded calls may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// The calls of this run: a library run's own log (a resumed run's earlier calls
    /// included); for a gateway, the calls made since it started.
    Run,
    /// Every call in the store: a library run's log and the logs of the run directories
    /// beside it (the other folders of `log:`'s parent); for a gateway, its whole data
    /// directory, across restarts.
    Store,
}

impl CacheScope {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "run" => CacheScope::Run,
            "store" => CacheScope::Store,
            _ => return None,
        })
    }
}

/// The `cache:` section.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CacheConfig {
    /// `off`, `read` or `read-write`.
    pub mode: CacheMode,
    /// How long an entry serves (`None`: for as long as the log is kept). An entry as
    /// old as `ttl` or older is a miss; `0` makes every lookup a miss.
    pub ttl: Option<Duration>,
    /// Whether requests with `temperature > 0` are cached (by default they are not: such
    /// a caller asks for a fresh sample each time).
    pub temperature_above_zero: bool,
    /// Which recorded calls may answer (`None`: the default, `run` for a library run,
    /// `store` for a gateway).
    pub scope: Option<CacheScope>,
}

impl CacheConfig {
    /// Whether lookups are made.
    pub fn reads(&self) -> bool {
        self.mode != CacheMode::Off
    }

    /// Whether new calls are entered.
    pub fn writes(&self) -> bool {
        self.mode == CacheMode::ReadWrite
    }
}

/// Reads a time to live: seconds as a number, or a text with a unit s, m, h or d
/// (`"90s"`, `"10m"`, `"1h"`, `"7d"`); `None` for anything else or past 10¹² seconds.
pub fn parse_ttl(v: &Value) -> Option<Duration> {
    if let Some(n) = v.as_f64() {
        return (0.0..1e12).contains(&n).then(|| Duration::from_secs_f64(n));
    }
    let text = v.as_str()?.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return None,
    };
    let secs = number * scale;
    (0.0..1e12)
        .contains(&secs)
        .then(|| Duration::from_secs_f64(secs))
}

/// `cache: MODE` or `cache: {mode, ttl, scope, temperature_above_zero}`; every problem
/// is named.
pub fn read_cache(value: &Value, errors: &mut Vec<String>) -> CacheConfig {
    let mut config = CacheConfig::default();
    let mode = |v: &Value, errors: &mut Vec<String>, field: &str| {
        match v.as_str().and_then(CacheMode::parse) {
            Some(m) => Some(m),
            // YAML reads a bare `off` as false.
            None if v == &Value::Bool(false) => Some(CacheMode::Off),
            None => {
                errors.push(format!("{field}: expected one of {MODES}, found {v}"));
                None
            }
        }
    };
    match value {
        Value::Null => {}
        Value::String(_) | Value::Bool(_) => {
            if let Some(m) = mode(value, errors, "cache") {
                config.mode = m;
            }
        }
        Value::Object(map) => {
            for (k, v) in map {
                match k.as_str() {
                    "mode" => {
                        if let Some(m) = mode(v, errors, "cache.mode") {
                            config.mode = m;
                        }
                    }
                    "ttl" => match parse_ttl(v) {
                        Some(d) => config.ttl = Some(d),
                        None if v.is_null() => config.ttl = None,
                        None => errors.push(format!("cache.ttl: expected {TTL}, found {v}")),
                    },
                    "scope" => match v.as_str().and_then(CacheScope::parse) {
                        Some(scope) => config.scope = Some(scope),
                        None => {
                            errors.push(format!("cache.scope: expected one of {SCOPES}, found {v}"))
                        }
                    },
                    "temperature_above_zero" => match v.as_bool() {
                        Some(b) => config.temperature_above_zero = b,
                        None => errors.push(format!(
                            "cache.temperature_above_zero: expected true or false, found {v}"
                        )),
                    },
                    other => {
                        errors.push(format!("cache.{other}: unknown field; accepted: {FIELDS}"))
                    }
                }
            }
        }
        other => errors.push(format!(
            "cache: expected one of {MODES}, or {{{FIELDS}}}, found {other}"
        )),
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(v: Value) -> (CacheConfig, Vec<String>) {
        let mut errors = Vec::new();
        (read_cache(&v, &mut errors), errors)
    }

    #[test]
    fn modes_ttls_and_errors() {
        assert_eq!(read(json!("read-write")).0.mode, CacheMode::ReadWrite);
        assert_eq!(read(json!(false)).0.mode, CacheMode::Off);
        let (c, e) = read(json!({"mode": "read", "ttl": "1h", "temperature_above_zero": true}));
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(c.mode, CacheMode::Read);
        assert_eq!(c.scope, None);
        assert_eq!(
            read(json!({"scope": "store"})).0.scope,
            Some(CacheScope::Store)
        );
        assert!(read(json!({"scope": "disk"})).1[0]
            .starts_with("cache.scope: expected one of run, store"));
        assert_eq!(c.ttl, Some(Duration::from_secs(3600)));
        assert!(c.temperature_above_zero);
        assert_eq!(read(json!({"ttl": 0})).0.ttl, Some(Duration::ZERO));
        let (_, e) = read(
            json!({"mode": "sometimes", "ttl": "soon", "size": 3, "temperature_above_zero": "yes"}),
        );
        assert_eq!(e.len(), 4, "{e:?}");
        assert!(
            e[0].contains("cache.mode: expected one of off, read, read-write"),
            "{e:?}"
        );
        assert!(e
            .iter()
            .any(|m| m.starts_with("cache.ttl: expected a number of seconds")));
        assert!(e.iter().any(|m| m
            == "cache.size: unknown field; accepted: mode, ttl, scope, temperature_above_zero"));
        assert!(read(json!([1])).1[0].starts_with("cache: expected one of off, read, read-write"));
        assert!(read(json!({"ttl": -1})).1[0].starts_with("cache.ttl"));
    }
}
