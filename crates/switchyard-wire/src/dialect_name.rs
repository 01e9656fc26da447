//! The four wire dialects Switchyard speaks.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A wire API. Every backend serves one or more; every gateway endpoint speaks one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dialect {
    /// OpenAI chat completions (`POST /v1/chat/completions`).
    Chat,
    /// OpenAI Responses (`POST /v1/responses`).
    Responses,
    /// Anthropic Messages (`POST /v1/messages`).
    Messages,
    /// Google Gemini `generateContent` / `streamGenerateContent`.
    Gemini,
}

impl Dialect {
    /// Every dialect, in a stable order.
    pub const ALL: [Dialect; 4] = [
        Dialect::Chat,
        Dialect::Responses,
        Dialect::Messages,
        Dialect::Gemini,
    ];

    /// Every dialect's name, in the order of [`Dialect::ALL`].
    pub const NAMES: &'static [&'static str] = &["chat", "responses", "messages", "gemini"];

    /// The dialect of a name, if it is one.
    pub fn parse(name: &str) -> Option<Dialect> {
        Dialect::ALL.into_iter().find(|d| d.as_str() == name)
    }

    /// The name used in configs and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Dialect::Chat => "chat",
            Dialect::Responses => "responses",
            Dialect::Messages => "messages",
            Dialect::Gemini => "gemini",
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a string that names no dialect; its message lists the accepted ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownDialect(pub String);

impl fmt::Display for UnknownDialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown dialect `{}`; accepted: chat, responses, messages, gemini",
            self.0
        )
    }
}

impl std::error::Error for UnknownDialect {}

impl FromStr for Dialect {
    type Err = UnknownDialect;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Dialect::ALL
            .into_iter()
            .find(|d| d.as_str() == s)
            .ok_or_else(|| UnknownDialect(s.to_string()))
    }
}
