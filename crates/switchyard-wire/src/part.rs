//! Content parts: what messages and replies are made of.

use crate::Dialect;
use serde::{Deserialize, Serialize};

/// State a provider attaches to a part and expects back byte for byte in a later turn
/// (Anthropic thinking `signature` or `redacted_thinking` data, Responses reasoning
/// `encrypted_content`, Gemini `thoughtSignature`). It is tagged with the dialect that
/// produced it, because only that dialect can carry it: encoders for other dialects drop it.
/// A value that came from a backend is also tagged with that backend's name, so it is
/// sent back to that backend only (see [`crate::state_owner`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opaque {
    /// The dialect that produced the value.
    pub dialect: Dialect,
    /// The value exactly as received.
    pub value: String,
    /// The backend that issued it, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
}

impl Opaque {
    /// A value produced by `dialect`.
    pub fn new(dialect: Dialect, value: impl Into<String>) -> Self {
        Opaque {
            dialect,
            value: value.into(),
            backend: None,
        }
    }

    /// The same value, tagged as issued by `backend`.
    pub fn from_backend(mut self, backend: impl Into<String>) -> Self {
        self.backend = Some(backend.into());
        self
    }

    /// The value when it was produced by `dialect`, else `None`.
    pub fn for_dialect(this: &Option<Opaque>, dialect: Dialect) -> Option<&str> {
        this.as_ref()
            .filter(|o| o.dialect == dialect)
            .map(|o| o.value.as_str())
    }
}

/// One piece of a message or reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Part {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Opaque provider state riding on a text part (Gemini may sign any part).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Opaque>,
    },
    /// An image, inline or by URL.
    Image(Image),
    /// A call of a tool by the model.
    ToolCall(ToolCall),
    /// The result of a tool call, sent back to the model.
    ToolResult(ToolResult),
    /// The model's reasoning.
    Thinking(Thinking),
}

impl Part {
    /// A text part without provider state.
    pub fn text(text: impl Into<String>) -> Self {
        Part::Text {
            text: text.into(),
            state: None,
        }
    }

    /// The text of a text part.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Part::Text { text, .. } => Some(text),
            _ => None,
        }
    }
}

/// An image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum Image {
    /// Inline bytes, base64-encoded.
    Base64 {
        /// e.g. `image/png`.
        media_type: String,
        /// Base64 text (no `data:` prefix).
        data: String,
    },
    /// An image by URL.
    Url {
        /// The URL.
        url: String,
    },
}

impl Image {
    /// The image as a URL: a `data:` URL for inline bytes.
    pub fn to_url(&self) -> String {
        match self {
            Image::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            Image::Url { url } => url.clone(),
        }
    }

    /// Reads a URL, turning a base64 `data:` URL back into inline bytes.
    pub fn from_url(url: &str) -> Image {
        if let Some(rest) = url.strip_prefix("data:") {
            if let Some((media_type, data)) = rest.split_once(";base64,") {
                return Image::Base64 {
                    media_type: media_type.to_string(),
                    data: data.to_string(),
                };
            }
        }
        Image::Url {
            url: url.to_string(),
        }
    }
}

/// The kind of tool a call or declaration is.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// A function taking JSON arguments.
    #[default]
    Function,
    /// A Responses `custom` tool taking one free-form string (Codex's `apply_patch`).
    Custom,
}

impl ToolKind {
    fn is_function(&self) -> bool {
        *self == ToolKind::Function
    }
}

/// A call of a tool by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id; results refer to it. Synthesised for dialects without ids (Gemini).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as JSON text exactly as the model wrote them (for a custom tool,
    /// the free-form input).
    pub arguments: String,
    /// Function or custom.
    #[serde(default, skip_serializing_if = "ToolKind::is_function")]
    pub kind: ToolKind,
    /// The Responses `namespace` the tool belongs to (Codex's MCP servers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Opaque provider state on the call (Gemini `thoughtSignature`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Opaque>,
}

impl ToolCall {
    /// The name on a wire without namespaces (every dialect but Responses):
    /// `<namespace><name>` (`mcp__fs__` + `read` → `mcp__fs__read`), else the name.
    pub fn flat_name(&self) -> String {
        flat_name(&self.name, self.namespace.as_deref())
    }
}

/// `<namespace><name>`, or the name alone: how a namespaced tool or call is named where
/// namespaces cannot be carried.
pub fn flat_name(name: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{ns}{name}"),
        None => name.to_string(),
    }
}

/// The result of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool's name when known (Gemini's `functionResponse` needs it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The result: text and images.
    pub content: Vec<Part>,
    /// Whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// Function or custom (Responses `custom_tool_call_output`).
    #[serde(default, skip_serializing_if = "ToolKind::is_function")]
    pub kind: ToolKind,
}

impl ToolResult {
    /// The text parts of the result, joined.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(Part::as_text).collect()
    }
}

/// The model's reasoning, with the provider's opaque state kept so it round-trips.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Thinking {
    /// The readable reasoning (or its summary); empty when redacted.
    pub text: String,
    /// Anthropic `signature`, Responses `encrypted_content`, Gemini `thoughtSignature`;
    /// for a redacted block, the Anthropic `redacted_thinking` data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Opaque>,
    /// True for Anthropic `redacted_thinking`: `state` holds its data and there is no text.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub redacted: bool,
    /// The provider's item id (Responses `rs_…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}
