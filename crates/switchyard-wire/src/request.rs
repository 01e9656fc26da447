//! The canonical request.

use crate::part::{Part, ToolKind};
use crate::Dialect;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions from the program.
    System,
    /// Instructions from the program, OpenAI's newer name; renamed to `system` for
    /// backends with `developer_role: system`.
    Developer,
    /// The user.
    User,
    /// The model.
    Assistant,
    /// Tool results (OpenAI chat's `tool` role; other dialects carry them in user turns).
    Tool,
}

/// One turn of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The speaker.
    pub role: Role,
    /// The content in order.
    pub content: Vec<Part>,
}

impl Message {
    /// A message of one text part.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: vec![Part::text(text)],
        }
    }

    /// The text parts, joined.
    pub fn joined_text(&self) -> String {
        self.content.iter().filter_map(Part::as_text).collect()
    }
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The name.
    pub name: String,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON schema of the arguments (for a custom tool, its `format` object, if any).
    #[serde(default)]
    pub parameters: Value,
    /// Function or custom.
    #[serde(default)]
    pub kind: ToolKind,
    /// OpenAI's `strict` flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strict: Option<bool>,
    /// The Responses `namespace` this tool was declared in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl Tool {
    /// The name on a wire without namespaces: see [`crate::ToolCall::flat_name`].
    pub fn flat_name(&self) -> String {
        crate::part::flat_name(&self.name, self.namespace.as_deref())
    }
}

/// Which tool the model must use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    Auto,
    /// No tool.
    None,
    /// Some tool.
    Required,
    /// This tool.
    Tool(String),
}

/// How much the model should think.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// An effort level (`minimal`, `low`, `medium`, `high`, `xhigh`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    /// A thinking budget in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
    /// Responses `reasoning.summary` (`auto`, `concise`, `detailed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

/// The shape the reply must take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseFormat {
    /// Any JSON object.
    JsonObject,
    /// JSON matching a schema.
    JsonSchema {
        /// The schema's name.
        name: String,
        /// The schema.
        schema: Value,
        /// Strict adherence.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        strict: Option<bool>,
    },
}

/// Fields a dialect has that the hub does not, kept from a decoded request so that
/// re-encoding in the same dialect forwards them; other dialects drop them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Passthrough {
    /// The dialect the fields belong to.
    pub dialect: Option<Dialect>,
    /// The fields, as found at the top level of the body.
    pub fields: Map<String, Value>,
}

impl Passthrough {
    /// The fields when they belong to `dialect`.
    pub fn fields_for(&self, dialect: Dialect) -> Option<&Map<String, Value>> {
        (self.dialect == Some(dialect) && !self.fields.is_empty()).then_some(&self.fields)
    }
}

/// A request to a model, independent of dialect.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The conversation, system and developer messages included.
    pub messages: Vec<Message>,
    /// Tools on offer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<Tool>,
    /// Tool choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
    /// Whether several tool calls may come in one turn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel_tool_calls: Option<bool>,
    /// The most output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Stop sequences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stop: Vec<String>,
    /// Reasoning effort or budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// Structured output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_format: Option<ResponseFormat>,
    /// Dialect-specific fields kept from a decoded request.
    #[serde(default, skip_serializing_if = "passthrough_is_empty")]
    pub passthrough: Passthrough,
}

fn passthrough_is_empty(p: &Passthrough) -> bool {
    p.fields.is_empty()
}

impl Request {
    /// A request of one user message.
    pub fn user(text: impl Into<String>) -> Self {
        Request {
            messages: vec![Message::text(Role::User, text)],
            ..Request::default()
        }
    }

    /// Adds a system message in front.
    pub fn with_system(mut self, text: impl Into<String>) -> Self {
        self.messages.insert(0, Message::text(Role::System, text));
        self
    }

    /// Sets the output token limit.
    pub fn with_max_tokens(mut self, max_tokens: u64) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }
}
