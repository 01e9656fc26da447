//! Stream events: the one chunk type every dialect's stream decodes to.

use crate::part::{Opaque, ToolKind};
use crate::reply::{FinishReason, Usage};
use serde::{Deserialize, Serialize};

/// One event of a streamed reply.
///
/// Content events carry `part`, the index of the content part of the assembled
/// [`Reply`](crate::Reply) they belong to: consecutive deltas with the same index extend
/// one part; a new index starts a new part. Indices start at 0 and grow by one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The reply began; the provider's id and model when it says them.
    Start {
        /// Response id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Model as reported.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        model: Option<String>,
    },
    /// Text.
    TextDelta {
        /// Content part index.
        part: usize,
        /// The text.
        text: String,
    },
    /// Opaque state riding on a text part (Gemini).
    TextState {
        /// Content part index.
        part: usize,
        /// The state.
        state: Opaque,
    },
    /// Reasoning text.
    ThinkingDelta {
        /// Content part index.
        part: usize,
        /// The text.
        text: String,
        /// The provider's item id, on the first delta of a part when the provider names
        /// the item as it opens (a Responses reasoning item's `output_item.added`), so an
        /// encoder names the item by it from its first event to its last. The reply keeps
        /// a thinking part's id only with its state: the closing [`Event::ThinkingState`]
        /// repeats it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// The opaque state closing a thinking part (Anthropic signature, Responses encrypted
    /// content, Gemini thought signature), or a redacted block's data. When it is the
    /// part's first event, it opens the part too.
    ThinkingState {
        /// Content part index.
        part: usize,
        /// The state.
        state: Opaque,
        /// The block is Anthropic `redacted_thinking`.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        redacted: bool,
        /// The provider's item id (the same as on the part's first delta, if it had one).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
    },
    /// A tool call begins.
    ToolCallStart {
        /// Content part index.
        part: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Function or custom.
        #[serde(default)]
        kind: ToolKind,
        /// Responses namespace.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// Opaque state on the call (Gemini).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Opaque>,
    },
    /// A fragment of a tool call's arguments.
    ToolCallDelta {
        /// Content part index.
        part: usize,
        /// The fragment of JSON text.
        arguments: String,
    },
    /// A tool call is complete.
    ToolCallEnd {
        /// Content part index.
        part: usize,
    },
    /// Token usage so far (the latest replaces earlier ones).
    Usage(Usage),
    /// The model stopped.
    Finish {
        /// Normalised reason.
        reason: FinishReason,
        /// The provider's own string.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        raw: Option<String>,
    },
    /// The provider reported an error inside the stream.
    Error(StreamError),
}

impl Event {
    /// The index of the reply part a content event builds (`None` for the start, usage,
    /// finish and error events), to read or to renumber.
    pub fn part_mut(&mut self) -> Option<&mut usize> {
        match self {
            Event::TextDelta { part, .. }
            | Event::TextState { part, .. }
            | Event::ThinkingDelta { part, .. }
            | Event::ThinkingState { part, .. }
            | Event::ToolCallStart { part, .. }
            | Event::ToolCallDelta { part, .. }
            | Event::ToolCallEnd { part } => Some(part),
            Event::Start { .. } | Event::Usage(_) | Event::Finish { .. } | Event::Error(_) => None,
        }
    }
}

/// An error reported inside a stream (or in a 200 body).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamError {
    /// The provider's error type (`overloaded_error`, `server_error`, `RESOURCE_EXHAUSTED`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The provider's error code (`context_length_exceeded`), when separate from the type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The message.
    pub message: String,
    /// An HTTP status the provider associated with it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

impl StreamError {
    /// An error with just a message.
    pub fn message(message: impl Into<String>) -> Self {
        StreamError {
            kind: None,
            code: None,
            message: message.into(),
            status: None,
        }
    }
}
