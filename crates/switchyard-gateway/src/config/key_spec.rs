//! One entry of the gateway config's `keys:` list, every problem named.

use super::{BudgetPeriod, KeySecret, KeySpec};
use serde_json::Value;

const KEY_FIELDS: &str =
    "name, key_env, key_sha256, role, models, budget_usd, budget_period, unknown_cost, max_in_flight, rpm, tpm";

pub(super) fn read_key(i: usize, item: &Value, errors: &mut Vec<String>) -> Option<KeySpec> {
    let Value::Object(map) = item else {
        errors.push(format!(
            "keys[{i}]: expected a mapping with {KEY_FIELDS}, found {item}"
        ));
        return None;
    };
    let before = errors.len();
    for k in map.keys() {
        if !KEY_FIELDS.split(", ").any(|f| f == k) {
            errors.push(format!(
                "keys[{i}].{k}: unknown field; accepted: {KEY_FIELDS}"
            ));
        }
    }
    let name = match map.get("name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => {
            errors.push(format!("keys[{i}]: `name` is required (a string)"));
            String::new()
        }
    };
    let at = |field: &str| format!("keys[{i}] ({name}).{field}");
    let secret = match (map.get("key_env"), map.get("key_sha256")) {
        (Some(Value::String(v)), None) if !v.is_empty() => Some(KeySecret::Env(v.clone())),
        (None, Some(Value::String(h))) => match parse_sha256(h) {
            Some(d) => Some(KeySecret::Sha256(d)),
            None => {
                errors.push(format!(
                    "{}: expected 64 hexadecimal digits (the SHA-256 of the key, e.g. from `printf %s KEY | sha256sum`)",
                    at("key_sha256")
                ));
                None
            }
        },
        (Some(_), Some(_)) => {
            errors.push(format!(
                "keys[{i}] ({name}): give `key_env` or `key_sha256`, not both"
            ));
            None
        }
        _ => {
            errors.push(format!(
                "keys[{i}] ({name}): `key_env` (the variable holding the key) or `key_sha256` is required"
            ));
            None
        }
    };
    let models = match map.get("models") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|m| match m.as_str() {
                Some(s) => Some(s.to_string()),
                None => {
                    errors.push(format!("{}: expected strings, found {m}", at("models")));
                    None
                }
            })
            .collect(),
        Some(other) => {
            errors.push(format!(
                "{}: expected a list of model names, found {other}",
                at("models")
            ));
            Vec::new()
        }
    };
    let budget_usd = match map.get("budget_usd") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_f64() {
            Some(b) if b >= 0.0 && b.is_finite() => Some(b),
            _ => {
                errors.push(format!(
                    "{}: expected an amount in USD ≥ 0, found {v}",
                    at("budget_usd")
                ));
                None
            }
        },
    };
    let budget_period = match map.get("budget_period") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_str().and_then(BudgetPeriod::parse) {
            Some(p) => Some(p),
            None => {
                errors.push(format!(
                    "{}: expected one of {}, found {v}",
                    at("budget_period"),
                    BudgetPeriod::NAMES
                ));
                None
            }
        },
    };
    if budget_period.is_some() && budget_usd.is_none() {
        errors.push(format!(
            "{}: a period without `budget_usd`",
            at("budget_period")
        ));
    }
    let unknown_cost_allowed = match map.get("unknown_cost") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "allow" => true,
        Some(Value::String(s)) if s == "refuse" => false,
        Some(v) => {
            errors.push(format!(
                "{}: expected `allow` (calls of models without a price go through, counting nothing) or `refuse` (the default), found {v}",
                at("unknown_cost")
            ));
            false
        }
    };
    if unknown_cost_allowed && budget_usd.is_none() {
        errors.push(format!(
            "{}: only means something with `budget_usd`",
            at("unknown_cost")
        ));
    }
    let max_in_flight = read_count(map.get("max_in_flight"), &at("max_in_flight"), errors)
        .map(|n| n.min(u32::MAX as u64) as u32);
    let rpm = read_count(map.get("rpm"), &at("rpm"), errors).map(|n| n.min(u32::MAX as u64) as u32);
    let tpm = read_count(map.get("tpm"), &at("tpm"), errors);
    let admin = match map.get("role") {
        None | Some(Value::Null) => false,
        Some(Value::String(s)) if s == "admin" => true,
        Some(Value::String(s)) if s == "client" => false,
        Some(v) => {
            errors.push(format!(
                "{}: expected `admin` (the key also opens the web console) or `client` (the default: model calls only), found {v}",
                at("role")
            ));
            false
        }
    };
    if errors.len() > before {
        return None;
    }
    Some(KeySpec {
        name,
        secret: secret?,
        models,
        budget_usd,
        budget_period: budget_period.or(budget_usd.map(|_| BudgetPeriod::Month)),
        unknown_cost_allowed,
        max_in_flight,
        rpm,
        tpm,
        admin,
    })
}

pub(super) fn read_count(v: Option<&Value>, at: &str, errors: &mut Vec<String>) -> Option<u64> {
    match v {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(n) if n > 0 => Some(n),
            _ => {
                errors.push(format!("{at}: expected a whole number > 0, found {v}"));
                None
            }
        },
    }
}

/// Parses 64 hex digits.
pub fn parse_sha256(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim();
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}
