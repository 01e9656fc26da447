//! Scenario files: named behaviours scripted as a list of steps served in order.
//!
//! ```yaml
//! scenarios:
//!   weather-agent:            # clients send model "weather-agent" (or "mock/weather-agent")
//!     per: conversation       # conversation (default) | prompt | model
//!     steps:
//!       - behaviour: fault-429-retry-1     # any model-name grammar
//!       - thinking: "The user wants the weather."
//!         tool_calls:
//!           - name: get_weather
//!             arguments: {city: Paris}
//!       - text: "It is sunny in Paris."
//!         usage: {input: 120, output: 9, cached_input: 100}
//!         behaviour: delay-5ms            # modifiers apply to scripted replies too
//! ```
//!
//! Steps are served in order, the last repeating. `per` says what the step counter is
//! kept for: `conversation` (the model name and the conversation's first user message,
//! so each turn of one agent run takes the next step), `prompt` (the whole prompt, so
//! only re-sending the same request advances), or `model` (one counter per name).

use crate::behaviour::{self, Behaviour};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use switchyard_wire::{FinishReason, Usage};

/// The `created` time stamped on every reply unless configured: fixed, so replies are
/// reproducible byte for byte.
pub const DEFAULT_CREATED: u64 = 1_700_000_000;

/// The mock's configuration.
#[derive(Debug, Clone)]
pub struct MockConfig {
    /// Named scripted behaviours; a model name equal to a key picks one (before the
    /// model-name grammar is tried).
    pub scenarios: BTreeMap<String, Scenario>,
    /// Unix seconds stamped as `created` on replies.
    pub created: u64,
    /// How many of the latest requests [`crate::MockServer::requests`] keeps (the
    /// count of all of them is [`crate::MockServer::received`]).
    pub keep_requests: usize,
    /// How many stored Responses responses, and how many Anthropic message-thread
    /// replies, the server keeps (each kind counted on its own; the oldest is forgotten
    /// first, so a long run stays bounded). 1,000 unless configured; 0 keeps none.
    pub keep_state: usize,
    /// Refuse histories that break the providers' multi-turn rules (forged signatures,
    /// tool results without their calls, missing thinking or thought signatures) with the
    /// providers' 400 bodies. On by default; the model-name component `lenient` turns it
    /// off for one call, `enforce_history: false` in a scenario file for the server.
    pub enforce_history: bool,
}

impl Default for MockConfig {
    fn default() -> Self {
        MockConfig {
            scenarios: BTreeMap::new(),
            created: DEFAULT_CREATED,
            keep_requests: crate::recorder::DEFAULT_KEEP_REQUESTS,
            keep_state: crate::stateful::DEFAULT_KEEP_STATE,
            enforce_history: true,
        }
    }
}

/// What a scenario's step counter is kept for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// The model name and the conversation's first user message (and system prompt).
    #[default]
    Conversation,
    /// The model name and the whole prompt.
    Prompt,
    /// The model name alone.
    Model,
}

/// A scripted behaviour.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// What the step counter is kept for.
    pub per: Per,
    /// The steps, served in order, the last repeating; never empty.
    pub steps: Vec<Step>,
}

impl Scenario {
    /// The step for the `n`th call (0-based), the last repeating.
    pub fn step(&self, n: u64) -> &Step {
        let i = usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(self.steps.len().saturating_sub(1));
        &self.steps[i]
    }
}

/// One step: a behaviour, and optionally a scripted reply that replaces its content.
#[derive(Debug, Clone)]
pub struct Step {
    /// Timing, faults, and the generated reply when `reply` is `None`.
    pub behaviour: Behaviour,
    /// The reply to send instead of the generated one.
    pub reply: Option<ScriptedReply>,
}

/// A reply written out in a scenario.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScriptedReply {
    /// Text, after any thinking.
    pub text: Option<String>,
    /// Thinking text (first part).
    pub thinking: Option<String>,
    /// Tool calls, after the text.
    pub tool_calls: Vec<ScriptedCall>,
    /// Usage to report instead of the estimate.
    pub usage: Option<Usage>,
    /// Finish reason instead of `stop` / `tool_calls`.
    pub finish: Option<FinishReason>,
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    /// The tool.
    pub name: String,
    /// Arguments: a JSON value, or a string sent as is.
    #[serde(default = "empty_object")]
    pub arguments: Value,
    /// The call id (derived from the prompt when absent).
    #[serde(default)]
    pub id: Option<String>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// A scenario file that cannot be used; the message says where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError(pub String);

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScenarioError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDef {
    #[serde(default)]
    scenarios: BTreeMap<String, ScenarioDef>,
    #[serde(default)]
    created: Option<u64>,
    #[serde(default)]
    enforce_history: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioDef {
    #[serde(default)]
    per: Per,
    steps: Vec<StepDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StepDef {
    #[serde(default)]
    behaviour: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ScriptedCall>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    finish: Option<FinishReason>,
}

impl MockConfig {
    /// Reads a scenario file (YAML, or JSON, which YAML reads too).
    pub fn from_file(path: impl AsRef<Path>) -> Result<MockConfig, ScenarioError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| ScenarioError(format!("{}: cannot read: {e}", path.display())))?;
        Self::from_yaml(&text).map_err(|e| ScenarioError(format!("{}:{}", path.display(), e.0)))
    }

    /// Parses scenario text (YAML or JSON). Errors start with `line:column: `.
    pub fn from_yaml(text: &str) -> Result<MockConfig, ScenarioError> {
        let file: FileDef = serde_yaml_ng::from_str(text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!("{}:{}", l.line(), l.column()))
                .unwrap_or_else(|| "1:1".into());
            ScenarioError(format!("{at}: {e}"))
        })?;
        let mut scenarios = BTreeMap::new();
        for (name, def) in file.scenarios {
            let name = behaviour::strip_prefix(&name).to_string();
            if def.steps.is_empty() {
                return Err(ScenarioError(format!(
                    "1:1: scenario `{name}` has no steps; give at least one"
                )));
            }
            let mut steps = Vec::new();
            for (i, s) in def.steps.into_iter().enumerate() {
                let behaviour = match &s.behaviour {
                    Some(b) => behaviour::parse(b).map_err(|e| {
                        ScenarioError(format!("1:1: scenario `{name}` step {}: {e}", i + 1))
                    })?,
                    None => Behaviour::default(),
                };
                let scripted = s.text.is_some()
                    || s.thinking.is_some()
                    || !s.tool_calls.is_empty()
                    || s.usage.is_some()
                    || s.finish.is_some();
                let reply = scripted.then(|| ScriptedReply {
                    text: s.text,
                    thinking: s.thinking,
                    tool_calls: s.tool_calls,
                    usage: s.usage,
                    finish: s.finish,
                });
                steps.push(Step { behaviour, reply });
            }
            scenarios.insert(
                name,
                Scenario {
                    per: def.per,
                    steps,
                },
            );
        }
        Ok(MockConfig {
            scenarios,
            created: file.created.unwrap_or(DEFAULT_CREATED),
            enforce_history: file.enforce_history.unwrap_or(true),
            ..MockConfig::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::behaviour::Fault;

    #[test]
    fn parses_steps() {
        let c = MockConfig::from_yaml(
            r#"
scenarios:
  mock/agent:
    per: prompt
    steps:
      - behaviour: fault-429-retry-1
      - tool_calls: [{name: get_weather, arguments: {city: Paris}}]
      - text: done
        usage: {input: 5, output: 1, cached_input: 2}
"#,
        )
        .unwrap();
        let s = &c.scenarios["agent"];
        assert_eq!(s.per, Per::Prompt);
        assert_eq!(
            s.step(0).behaviour.fault.as_ref().unwrap().fault,
            Fault::Status(429)
        );
        assert_eq!(
            s.step(1).reply.as_ref().unwrap().tool_calls[0].name,
            "get_weather"
        );
        assert_eq!(
            s.step(9).reply.as_ref().unwrap().text.as_deref(),
            Some("done")
        );
        assert_eq!(
            s.step(2)
                .reply
                .as_ref()
                .unwrap()
                .usage
                .unwrap()
                .cached_input,
            2
        );
    }

    #[test]
    fn json_works_too() {
        let c = MockConfig::from_yaml(r#"{"scenarios":{"a":{"steps":[{"text":"x"}]}}}"#).unwrap();
        assert_eq!(c.scenarios["a"].per, Per::Conversation);
    }

    #[test]
    fn errors_say_where() {
        let e =
            MockConfig::from_yaml("scenarios:\n  a:\n    steps:\n      - txt: x\n").unwrap_err();
        assert!(e.0.starts_with("4:"), "{e}");
        assert!(e.0.contains("txt"), "{e}");
        let e = MockConfig::from_yaml("scenarios:\n  a:\n    steps:\n      - behaviour: nope\n")
            .unwrap_err();
        assert!(e.0.contains("step 1") && e.0.contains("nope"), "{e}");
        let e = MockConfig::from_yaml("scenarios:\n  a:\n    steps: []\n").unwrap_err();
        assert!(e.0.contains("no steps"), "{e}");
    }
}
