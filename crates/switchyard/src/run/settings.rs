//! Role settings, declared as data: what each setting holds, which backend kinds and
//! dialects take it, and how it becomes a default of every request the role sends.

use serde::Serialize;
use serde_json::{Map, Value};
use switchyard_wire::{Reasoning, Request};

use crate::config_error::ConfigProblem;
use crate::registry::{Backend, Dialect, Kind};

/// The shape of a setting's value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueShape {
    /// A whole number of tokens, at least 1.
    Tokens,
    /// A number between the two bounds (inclusive).
    Number(f64, f64),
    /// A string or a list of strings.
    Strings,
    /// One of [`EFFORTS`].
    Effort,
    /// One of `auto`, `concise`, `detailed`.
    Summary,
    /// A positive number of seconds.
    Seconds,
    /// A mapping of body fields.
    Body,
    /// A field of the call policy (retry schedules, timeouts, the context check), read
    /// as [`CallPolicy`](crate::CallPolicy) reads it.
    Policy,
}

impl ValueShape {
    /// What is accepted, in words.
    pub fn describe(self) -> String {
        match self {
            ValueShape::Tokens => "a whole number of tokens (at least 1)".into(),
            ValueShape::Number(lo, hi) => format!("a number from {lo} to {hi}"),
            ValueShape::Strings => "a string or a list of strings".into(),
            ValueShape::Effort => format!("one of {}", EFFORTS.join(", ")),
            ValueShape::Summary => format!("one of {}", SUMMARIES.join(", ")),
            ValueShape::Seconds => "a positive number of seconds".into(),
            ValueShape::Body => "a mapping of request body fields".into(),
            ValueShape::Policy => "a call policy field (see docs/errors.md)".into(),
        }
    }
}

/// Effort levels accepted by `reasoning_effort` and `effort` (the union of what OpenAI,
/// Anthropic, Gemini, Claude Code and Codex name).
pub const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh", "max"];

/// Reasoning summary levels (Responses).
pub const SUMMARIES: &[&str] = &["auto", "concise", "detailed"];

/// One setting a role can carry.
#[derive(Debug, Clone, Copy)]
pub struct SettingSpec {
    /// The name written in the config.
    pub name: &'static str,
    /// Its value.
    pub shape: ValueShape,
    /// What it does (for docs and messages).
    pub doc: &'static str,
}

/// Every setting, in the order they are listed in messages.
pub const SETTINGS: &[SettingSpec] = &[
    SettingSpec {
        name: "max_tokens",
        shape: ValueShape::Tokens,
        doc: "the most output tokens (sent as each dialect names it)",
    },
    SettingSpec {
        name: "max_completion_tokens",
        shape: ValueShape::Tokens,
        doc: "chat's name for max_tokens",
    },
    SettingSpec {
        name: "max_output_tokens",
        shape: ValueShape::Tokens,
        doc: "responses' name for max_tokens",
    },
    SettingSpec {
        name: "temperature",
        shape: ValueShape::Number(0.0, 2.0),
        doc: "sampling temperature",
    },
    SettingSpec {
        name: "top_p",
        shape: ValueShape::Number(0.0, 1.0),
        doc: "nucleus sampling",
    },
    SettingSpec {
        name: "stop",
        shape: ValueShape::Strings,
        doc: "stop sequences",
    },
    SettingSpec {
        name: "reasoning_effort",
        shape: ValueShape::Effort,
        doc: "how hard the model thinks (a thinking budget for messages and gemini)",
    },
    SettingSpec {
        name: "reasoning_summary",
        shape: ValueShape::Summary,
        doc: "the Responses reasoning summary",
    },
    SettingSpec {
        name: "thinking_budget",
        shape: ValueShape::Tokens,
        doc: "thinking tokens (Anthropic budget_tokens, Gemini thinkingBudget)",
    },
    SettingSpec {
        name: "effort",
        shape: ValueShape::Effort,
        doc: "the CLI agent's effort level",
    },
    SettingSpec {
        name: "timeout_seconds",
        shape: ValueShape::Policy,
        doc: "the longest one attempt may take, sending to last byte (30, 1.5, \"2m\")",
    },
    SettingSpec {
        name: "connect_timeout_seconds",
        shape: ValueShape::Policy,
        doc: "the longest opening a connection may take",
    },
    SettingSpec {
        name: "first_byte_timeout_seconds",
        shape: ValueShape::Policy,
        doc: "the longest from sending to the reply's headers",
    },
    SettingSpec {
        name: "idle_timeout_seconds",
        shape: ValueShape::Policy,
        doc: "the longest between two chunks of a reply or stream",
    },
    SettingSpec {
        name: "retry",
        shape: ValueShape::Policy,
        doc: "retry schedules by reason, over the run's `retry:` (docs/errors.md)",
    },
    SettingSpec {
        name: "context_check",
        shape: ValueShape::Policy,
        doc: "refuse before sending what cannot fit the context window",
    },
    SettingSpec {
        name: "extra_body",
        shape: ValueShape::Body,
        doc: "fields added to every request body (they win over the request's own)",
    },
];

/// Whether `name` is one edit from a setting's name (`max_token`): a typo of that
/// setting, whatever else its name looks like.
pub(crate) fn one_edit_from_a_setting(name: &str) -> bool {
    SETTINGS
        .iter()
        .any(|s| crate::internal::suggest::edit_distance(name, s.name) == 1)
}

/// The spec of `name`, if it is a setting.
pub fn spec(name: &str) -> Option<&'static SettingSpec> {
    SETTINGS.iter().find(|s| s.name == name)
}

const CHAT: &[&str] = &[
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "stop",
    "reasoning_effort",
    "extra_body",
    "timeout_seconds",
    "connect_timeout_seconds",
    "first_byte_timeout_seconds",
    "idle_timeout_seconds",
    "retry",
    "context_check",
];
const RESPONSES: &[&str] = &[
    "max_tokens",
    "max_output_tokens",
    "temperature",
    "top_p",
    "reasoning_effort",
    "reasoning_summary",
    "extra_body",
    "timeout_seconds",
    "connect_timeout_seconds",
    "first_byte_timeout_seconds",
    "idle_timeout_seconds",
    "retry",
    "context_check",
];
const MESSAGES: &[&str] = &[
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "reasoning_effort",
    "thinking_budget",
    "extra_body",
    "timeout_seconds",
    "connect_timeout_seconds",
    "first_byte_timeout_seconds",
    "idle_timeout_seconds",
    "retry",
    "context_check",
];
const GEMINI: &[&str] = MESSAGES;
const CLI_AGENT: &[&str] = &["effort", "timeout_seconds", "retry", "context_check"];
/// A replay answers with what was recorded, whatever the settings say; it takes every
/// setting so that the config of the recorded run replays unchanged.
const REPLAY: &[&str] = &[
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "temperature",
    "top_p",
    "stop",
    "reasoning_effort",
    "reasoning_summary",
    "thinking_budget",
    "effort",
    "extra_body",
    "timeout_seconds",
    "connect_timeout_seconds",
    "first_byte_timeout_seconds",
    "idle_timeout_seconds",
    "retry",
    "context_check",
];

/// The settings a backend of `kind` called in `dialect` takes. An HTTP backend with no
/// dialect takes only `timeout_seconds`.
pub fn accepted(kind: Kind, dialect: Option<Dialect>) -> &'static [&'static str] {
    match (kind, dialect) {
        (Kind::Http, Some(Dialect::Chat)) => CHAT,
        (Kind::Http, Some(Dialect::Responses)) => RESPONSES,
        (Kind::Http, Some(Dialect::Messages)) => MESSAGES,
        (Kind::Http, Some(Dialect::Gemini)) => GEMINI,
        (Kind::Http, None) => &["timeout_seconds", "retry", "context_check"],
        (Kind::ClaudeCode | Kind::Codex, _) => CLI_AGENT,
        (Kind::Replay, _) => REPLAY,
    }
}

/// Why `backend`, called in `dialect`, does not take `setting` (written for `role`), or
/// `None` when it takes it: the one rule for a role's settings and for the settings a
/// door is given beside a model (`switchyard.llm(ref, thinking_budget=…)`).
pub fn not_taken(
    role: &str,
    setting: &str,
    backend: &Backend,
    dialect: Option<Dialect>,
) -> Option<ConfigProblem> {
    let accepted = accepted(backend.kind.value, dialect);
    if accepted.contains(&setting) {
        return None;
    }
    Some(ConfigProblem::SettingNotTaken {
        role: role.to_string(),
        setting: setting.to_string(),
        backend: backend.name.clone(),
        called: match dialect {
            Some(d) => format!("kind {}, dialect {d}", backend.kind.value),
            None => format!("kind {}", backend.kind.value),
        },
        accepted: accepted.iter().map(|s| s.to_string()).collect(),
        nearest: nearest_setting(setting, accepted),
    })
}

/// The accepted setting nearest to `setting`: a token limit under another dialect's name
/// points at the one this backend takes.
fn nearest_setting(setting: &str, accepted: &[&str]) -> Option<String> {
    const LIMITS: &[&str] = &["max_tokens", "max_completion_tokens", "max_output_tokens"];
    if LIMITS.contains(&setting) {
        if let Some(l) = LIMITS.iter().find(|l| accepted.contains(l)) {
            return Some(l.to_string());
        }
    }
    crate::internal::suggest::nearest(setting, accepted.iter().copied())
}

/// Checks a setting's value against its shape; `Err` says what is accepted.
pub fn check_value(spec: &SettingSpec, v: &Value) -> Result<(), String> {
    let ok = match spec.shape {
        ValueShape::Tokens => v.as_u64().is_some_and(|n| n >= 1),
        ValueShape::Number(lo, hi) => v.as_f64().is_some_and(|n| n >= lo && n <= hi),
        ValueShape::Strings => match v {
            Value::String(_) => true,
            Value::Array(items) => items.iter().all(Value::is_string),
            _ => false,
        },
        ValueShape::Effort => v.as_str().is_some_and(|s| EFFORTS.contains(&s)),
        ValueShape::Summary => v.as_str().is_some_and(|s| SUMMARIES.contains(&s)),
        ValueShape::Seconds => v.as_f64().is_some_and(|n| n > 0.0 && n.is_finite()),
        ValueShape::Body => v.is_object(),
        ValueShape::Policy => {
            let mut one = Map::new();
            one.insert(spec.name.to_string(), v.clone());
            return serde_json::from_value::<crate::policy::CallPolicy>(Value::Object(one))
                .map(|_| ())
                .map_err(|e| e.to_string());
        }
    };
    if ok {
        Ok(())
    } else {
        Err(spec.shape.describe())
    }
}

/// A role's settings, resolved: what every request of the role gets unless it sets its own.
///
/// As JSON (what `switchyard check --json` prints) each setting is under the name it was
/// written with: `reasoning_effort: medium` stays `reasoning_effort`, `max_completion_tokens`
/// stays `max_completion_tokens`, and the call policy fields are at the top like the others.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    /// The most output tokens (from `max_tokens`, `max_completion_tokens` or
    /// `max_output_tokens`).
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Stop sequences.
    pub stop: Vec<String>,
    /// Effort level (`reasoning_effort`, or `effort` for the CLI agents).
    pub effort: Option<String>,
    /// Thinking budget in tokens.
    pub thinking_budget: Option<u64>,
    /// Responses reasoning summary.
    pub reasoning_summary: Option<String>,
    /// Call policy fields (`retry`, `timeout_seconds`, … `context_check`), as written;
    /// laid over the run's `retry:` and `timeouts:`.
    pub policy: Map<String, Value>,
    /// Fields added to every request body.
    pub extra_body: Map<String, Value>,
    /// The names the fields were set under, where several names set one field.
    written: WrittenNames,
}

/// The setting each shared field was last set by (`None`: its own name).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct WrittenNames {
    max_tokens: Option<&'static str>,
    effort: Option<&'static str>,
}

impl Serialize for Settings {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        if let Some(v) = self.max_tokens {
            map.serialize_entry(self.written.max_tokens.unwrap_or("max_tokens"), &v)?;
        }
        if let Some(v) = self.temperature {
            map.serialize_entry("temperature", &v)?;
        }
        if let Some(v) = self.top_p {
            map.serialize_entry("top_p", &v)?;
        }
        if !self.stop.is_empty() {
            map.serialize_entry("stop", &self.stop)?;
        }
        if let Some(v) = &self.effort {
            map.serialize_entry(self.written.effort.unwrap_or("effort"), v)?;
        }
        if let Some(v) = self.thinking_budget {
            map.serialize_entry("thinking_budget", &v)?;
        }
        if let Some(v) = &self.reasoning_summary {
            map.serialize_entry("reasoning_summary", v)?;
        }
        for (k, v) in &self.policy {
            map.serialize_entry(k, v)?;
        }
        if !self.extra_body.is_empty() {
            map.serialize_entry("extra_body", &self.extra_body)?;
        }
        map.end()
    }
}

impl Settings {
    /// Sets one setting from a value already checked with [`check_value`].
    pub fn set(&mut self, name: &str, v: &Value) {
        let own_name = spec(name).map(|s| s.name);
        match name {
            "max_tokens" | "max_completion_tokens" | "max_output_tokens" => {
                self.max_tokens = v.as_u64();
                self.written.max_tokens = own_name;
            }
            "temperature" => self.temperature = v.as_f64(),
            "top_p" => self.top_p = v.as_f64(),
            "stop" => {
                self.stop = match v {
                    Value::String(s) => vec![s.clone()],
                    Value::Array(items) => items
                        .iter()
                        .filter_map(|i| i.as_str().map(str::to_string))
                        .collect(),
                    _ => Vec::new(),
                }
            }
            "reasoning_effort" | "effort" => {
                self.effort = v.as_str().map(str::to_string);
                self.written.effort = own_name;
            }
            "reasoning_summary" => self.reasoning_summary = v.as_str().map(str::to_string),
            "thinking_budget" => self.thinking_budget = v.as_u64(),
            "retry" => {
                // A role's schedules are laid over those written before, reason by reason.
                let slot = self
                    .policy
                    .entry("retry")
                    .or_insert_with(|| Value::Object(Map::new()));
                match (slot, v) {
                    (Value::Object(have), Value::Object(add)) => {
                        for (k, v) in add {
                            have.insert(k.clone(), v.clone());
                        }
                    }
                    (slot, v) => *slot = v.clone(),
                }
            }
            "timeout_seconds"
            | "connect_timeout_seconds"
            | "first_byte_timeout_seconds"
            | "idle_timeout_seconds"
            | "context_check" => {
                self.policy.insert(name.to_string(), v.clone());
            }
            "extra_body" => {
                if let Value::Object(m) = v {
                    for (k, v) in m {
                        self.extra_body.insert(k.clone(), v.clone());
                    }
                }
            }
            _ => {}
        }
    }

    /// Fills what `request` leaves unset; a value the request sets wins.
    pub fn apply(&self, request: &mut Request) {
        if request.max_tokens.is_none() {
            request.max_tokens = self.max_tokens;
        }
        if request.temperature.is_none() {
            request.temperature = self.temperature;
        }
        if request.top_p.is_none() {
            request.top_p = self.top_p;
        }
        if request.stop.is_empty() {
            request.stop = self.stop.clone();
        }
        if self.effort.is_none()
            && self.thinking_budget.is_none()
            && self.reasoning_summary.is_none()
        {
            return;
        }
        let r = request.reasoning.get_or_insert_with(Reasoning::default);
        // One reasoning request: a request that says how to think keeps its own.
        if r.effort.is_none() && r.budget_tokens.is_none() {
            r.effort = self.effort.clone();
            r.budget_tokens = self.thinking_budget;
        }
        if r.summary.is_none() {
            r.summary = self.reasoning_summary.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_setting_has_a_spec() {
        for kind in [Kind::Http, Kind::ClaudeCode, Kind::Codex, Kind::Replay] {
            for d in [None, Some(Dialect::Chat), Some(Dialect::Responses)] {
                for name in accepted(kind, d) {
                    assert!(spec(name).is_some(), "{name}");
                }
            }
        }
        for d in [Dialect::Messages, Dialect::Gemini] {
            for name in accepted(Kind::Http, Some(d)) {
                assert!(spec(name).is_some(), "{name}");
            }
        }
    }

    #[test]
    fn request_values_win() {
        let mut s = Settings::default();
        s.set("max_completion_tokens", &serde_json::json!(100));
        s.set("temperature", &serde_json::json!(0.5));
        s.set("reasoning_effort", &serde_json::json!("high"));
        s.set("stop", &serde_json::json!("END"));
        let mut r = Request::user("x").with_max_tokens(7);
        s.apply(&mut r);
        assert_eq!(r.max_tokens, Some(7));
        assert_eq!(r.temperature, Some(0.5));
        assert_eq!(r.stop, ["END"]);
        assert_eq!(
            r.reasoning.as_ref().unwrap().effort.as_deref(),
            Some("high")
        );
        let mut r = Request::user("x");
        r.reasoning = Some(Reasoning {
            budget_tokens: Some(1024),
            ..Reasoning::default()
        });
        s.apply(&mut r);
        let reasoning = r.reasoning.unwrap();
        assert_eq!(reasoning.budget_tokens, Some(1024));
        assert_eq!(reasoning.effort, None);
    }

    #[test]
    fn values_are_checked() {
        let t = spec("temperature").unwrap();
        assert!(check_value(t, &serde_json::json!(0.7)).is_ok());
        assert_eq!(
            check_value(t, &serde_json::json!(3)).unwrap_err(),
            "a number from 0 to 2"
        );
        let e = spec("reasoning_effort").unwrap();
        assert!(check_value(e, &serde_json::json!("hgh"))
            .unwrap_err()
            .contains("high"));
        assert!(check_value(spec("max_tokens").unwrap(), &serde_json::json!(0)).is_err());
    }
}
