//! `conversations:` in the gateway's config: whether the gateway keeps the stateful
//! APIs' state, and for how long.
//!
//! ```yaml
//! conversations: {ttl: 30d}    # the default; `off` keeps none
//! ```

use serde_json::Value;
use std::time::Duration;

/// How long a kept turn lives unless the config says otherwise: OpenAI's own 30 days
/// for stored responses.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(30 * 24 * 3600);

const FIELDS: &str = "ttl";

/// What the gateway keeps of clients' conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConversationsConfig {
    /// Kept at all (with a store: a data directory or PostgreSQL).
    pub on: bool,
    /// How long a turn is kept after it was made.
    pub ttl: Duration,
}

impl Default for ConversationsConfig {
    fn default() -> Self {
        ConversationsConfig {
            on: true,
            ttl: DEFAULT_TTL,
        }
    }
}

impl ConversationsConfig {
    /// Reads `conversations: off | on | {ttl}`; `ttl` is seconds as a number, or a text
    /// with a unit s, m, h or d ([`switchyard::cache::parse_ttl`]). Every problem is named.
    pub fn read(v: &Value) -> Result<Self, Vec<String>> {
        let mut config = ConversationsConfig::default();
        match v {
            Value::Null => {}
            Value::Bool(on) => config.on = *on,
            Value::String(s) if s == "off" => config.on = false,
            Value::String(s) if s == "on" => {}
            Value::Object(map) => {
                let mut errors = Vec::new();
                for (k, v) in map {
                    match k.as_str() {
                        "ttl" => match switchyard::cache::parse_ttl(v) {
                            Some(d) if !d.is_zero() => config.ttl = d,
                            _ => errors.push(format!(
                                "conversations.ttl: {v} is not a duration: write seconds (2592000) or a number with a unit s, m, h or d (30d), above zero"
                            )),
                        },
                        other => errors.push(format!(
                            "conversations.{other}: not a field of conversations; accepted: {FIELDS}"
                        )),
                    }
                }
                if !errors.is_empty() {
                    return Err(errors);
                }
            }
            other => {
                return Err(vec![format!(
                    "conversations: {other} is not accepted: write off, on, or {{ttl: 30d}}"
                )])
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_every_form_and_names_every_problem() {
        assert_eq!(
            ConversationsConfig::read(&Value::Null).unwrap(),
            ConversationsConfig::default()
        );
        assert!(!ConversationsConfig::read(&json!("off")).unwrap().on);
        assert!(!ConversationsConfig::read(&json!(false)).unwrap().on);
        let c = ConversationsConfig::read(&json!({"ttl": "2h"})).unwrap();
        assert_eq!(c.ttl, Duration::from_secs(7200));
        assert_eq!(
            ConversationsConfig::read(&json!({"ttl": 90})).unwrap().ttl,
            Duration::from_secs(90)
        );
        let e = ConversationsConfig::read(&json!({"ttl": "soon", "size": 1})).unwrap_err();
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(
            e[0].contains("30d") && e[1].contains("accepted: ttl"),
            "{e:?}"
        );
        assert!(ConversationsConfig::read(&json!({"ttl": 0})).is_err());
        assert!(ConversationsConfig::read(&json!({"ttl": "99999999999d"})).is_err());
        assert!(ConversationsConfig::read(&json!(3)).is_err());
    }
}
