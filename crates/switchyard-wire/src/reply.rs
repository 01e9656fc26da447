//! The canonical reply and its token usage.

use crate::part::{Part, ToolCall};
use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// Token counts with one meaning whatever the dialect.
///
/// - `input` counts every prompt token, cached ones included: Anthropic's separate
///   `cache_read_input_tokens` and `cache_creation_input_tokens` are added to its
///   `input_tokens`; OpenAI's and Gemini's cached counts are already inside theirs.
/// - `cached_input` is the part of `input` read from a cache; `cache_write` the part
///   written to one (Anthropic's cache creation).
/// - `output` counts every generated token, reasoning included; `reasoning` is the part
///   of `output` spent thinking (Gemini's `thoughtsTokenCount` is added to its
///   `candidatesTokenCount` to make `output`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Every prompt token.
    pub input: u64,
    /// Prompt tokens read from a cache (a subset of `input`).
    #[serde(default)]
    pub cached_input: u64,
    /// Prompt tokens written to a cache (a subset of `input`).
    #[serde(default)]
    pub cache_write: u64,
    /// Every generated token.
    pub output: u64,
    /// Generated tokens spent reasoning (a subset of `output`).
    #[serde(default)]
    pub reasoning: u64,
}

impl Usage {
    /// Prompt tokens neither read from nor written to a cache.
    pub fn uncached_input(&self) -> u64 {
        self.input
            .saturating_sub(self.cached_input)
            .saturating_sub(self.cache_write)
    }

    /// Input plus output (at most `u64::MAX`: a provider's absurd count saturates, it
    /// does not wrap).
    pub fn total(&self) -> u64 {
        self.input.saturating_add(self.output)
    }

    /// The sum of two usages (turns of one call), each count saturating at `u64::MAX`.
    pub fn add(&self, other: &Usage) -> Usage {
        Usage {
            input: self.input.saturating_add(other.input),
            cached_input: self.cached_input.saturating_add(other.cached_input),
            cache_write: self.cache_write.saturating_add(other.cache_write),
            output: self.output.saturating_add(other.output),
            reasoning: self.reasoning.saturating_add(other.reasoning),
        }
    }

    /// Why these counts cannot be a call's real usage, when they cannot: a count past
    /// [`MOST_TOKENS_PER_CALL`] (no call reads or writes four billion tokens; a provider
    /// that reports more is broken, or `2^64 − 1` came through a bad cast). Such usage is
    /// kept and billed as reported — saturated, never wrapped — and its record flagged.
    pub fn suspect(&self) -> Option<String> {
        let counts = [
            ("input", self.input),
            ("cached_input", self.cached_input),
            ("cache_write", self.cache_write),
            ("output", self.output),
            ("reasoning", self.reasoning),
        ];
        let past: Vec<String> = counts
            .iter()
            .filter(|(_, n)| *n > MOST_TOKENS_PER_CALL)
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        (!past.is_empty()).then(|| {
            format!(
                "the provider reported {} tokens, past {MOST_TOKENS_PER_CALL} (more than any call reads or writes): billed as reported, saturated at 2^64 - 1",
                past.join(", ")
            )
        })
    }
}

/// The most tokens one count of one call's usage can plausibly hold (2^32): past it,
/// [`Usage::suspect`] flags the usage. Far above any context window or output limit.
pub const MOST_TOKENS_PER_CALL: u64 = 1 << 32;

/// Why the model stopped, normalised across dialects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end or a stop sequence.
    #[default]
    Stop,
    /// The output token limit.
    Length,
    /// The model called tools and waits for their results.
    ToolCalls,
    /// A safety filter or refusal.
    ContentFilter,
    /// Anything else (Anthropic `pause_turn`, Gemini `MALFORMED_FUNCTION_CALL`…).
    Other,
}

impl FinishReason {
    /// The reason as it is serialised (`stop`, `length`, `tool_calls`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::Other => "other",
        }
    }
}

/// A model's answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    /// Text, thinking and tool calls, in the order the model produced them.
    pub content: Vec<Part>,
    /// Why it stopped.
    pub finish: FinishReason,
    /// The provider's own finish string (`end_turn`, `STOP`, `tool_calls`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_raw: Option<String>,
    /// Token usage, when the provider reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The model as the provider reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The provider's response id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The bytes the reply was decoded from, exactly as received (for a stream, every
    /// byte of the stream). Not part of equality in tests that compare decoded content:
    /// use [`Reply::without_raw`].
    #[serde(skip)]
    pub raw: Bytes,
}

impl Reply {
    /// The text parts, joined.
    pub fn text(&self) -> String {
        self.content.iter().filter_map(Part::as_text).collect()
    }

    /// The thinking parts' text, joined.
    pub fn thinking(&self) -> String {
        self.content
            .iter()
            .filter_map(|p| match p {
                Part::Thinking(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.iter().filter_map(|p| match p {
            Part::ToolCall(c) => Some(c),
            _ => None,
        })
    }

    /// A copy without the raw bytes, for comparing decoded content.
    pub fn without_raw(&self) -> Reply {
        Reply {
            raw: Bytes::new(),
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::FinishReason;

    #[test]
    fn finish_names_are_the_serialised_ones() {
        for f in [
            FinishReason::Stop,
            FinishReason::Length,
            FinishReason::ToolCalls,
            FinishReason::ContentFilter,
            FinishReason::Other,
        ] {
            assert_eq!(serde_json::to_value(f).unwrap(), f.as_str());
        }
    }
}
