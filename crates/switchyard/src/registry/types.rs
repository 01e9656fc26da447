//! The closed vocabularies of a backend (kind, dialect, auth, developer role), prices,
//! and layer provenance.

use std::fmt;
use std::path::PathBuf;

use serde::{Serialize, Serializer};

macro_rules! closed_set {
    ($(#[$m:meta])* $name:ident { $($(#[$vm:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vm])* $variant),+
        }

        impl $name {
            /// Every accepted spelling, in order.
            pub const ALL: &'static [&'static str] = &[$($text),+];

            /// The configuration spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }

            /// Parses the configuration spelling.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

closed_set! {
    /// How a backend is reached.
    Kind {
        /// Speaks one or more HTTP dialects.
        Http = "http",
        /// The Claude Code CLI, run as a subprocess.
        ClaudeCode = "claude-code",
        /// The Codex CLI, run as a subprocess.
        Codex = "codex",
        /// A recorded call log, replayed.
        Replay = "replay",
    }
}

/// A wire API (the wire crate's, so the registry and the codecs name dialects alike).
pub use switchyard_wire::Dialect;

closed_set! {
    /// How the key is sent.
    Auth {
        /// `Authorization: Bearer <key>`.
        Bearer = "bearer",
        /// `x-api-key: <key>` (Anthropic).
        XApiKey = "x-api-key",
        /// `x-goog-api-key: <key>` (Google AI Studio).
        XGoogApiKey = "x-goog-api-key",
        /// Google Application Default Credentials: an OAuth bearer token, no key variable.
        GoogleAdc = "google-adc",
        /// Nothing is sent.
        None = "none",
    }
}

closed_set! {
    /// What to do with the `developer` role.
    DeveloperRole {
        /// Send it as is.
        Keep = "keep",
        /// Rename it to `system` (for endpoints that refuse `developer`).
        System = "system",
    }
}

closed_set! {
    /// The field a chat request carries its output limit in: `max_tokens` unless the
    /// backend declares `max_completion_tokens` (OpenAI's own API, whose reasoning models
    /// refuse `max_tokens`: the built-in `openai` declares it).
    MaxTokensField {
        /// OpenAI's field for its reasoning models (they refuse `max_tokens`).
        MaxCompletionTokens = "max_completion_tokens",
        /// The field every OpenAI-compatible server knows (the default).
        MaxTokens = "max_tokens",
    }
}

/// A model's price in USD per million tokens. A model without a `Price` has an unknown
/// cost, never zero; a price of 0 is a bill of zero.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Price {
    /// Uncached input tokens.
    pub input: f64,
    /// Input tokens read from the cache; `None`: not priced separately (billed as `input`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cached_input: Option<f64>,
    /// Input tokens written to the cache; `None`: not priced separately (billed as `input`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_write: Option<f64>,
    /// Output tokens (reasoning included).
    pub output: f64,
}

/// The configuration layer a value came from.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layer {
    /// A default (no layer set the field).
    Default,
    /// The built-in backends compiled into the binary.
    Builtin,
    /// The user's backends file.
    UserFile(PathBuf),
    /// The `backends:` section of a run config (`--config`).
    RunConfig(PathBuf),
    /// `<NAME>_BASE_URL` in the environment (the variable's name).
    Env(String),
    /// A command-line override `backends.<name>.<field>=<value>`.
    Override,
    /// Copied by `from: <backend>` from that backend, where it came from `layer`.
    Copied {
        /// The backend copied.
        from: String,
        /// Where the value came from there.
        layer: Box<Layer>,
    },
}

impl Layer {
    /// The layer a copied value first came from (itself for any other).
    pub fn origin(&self) -> &Layer {
        match self {
            Layer::Copied { layer, .. } => layer.origin(),
            other => other,
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Layer::Default => f.write_str("default"),
            Layer::Builtin => f.write_str("builtin"),
            Layer::UserFile(p) => write!(f, "user file {}", p.display()),
            Layer::RunConfig(p) => write!(f, "run config {}", p.display()),
            Layer::Env(name) => write!(f, "env {name}"),
            Layer::Override => f.write_str("override"),
            Layer::Copied { from, layer } => write!(f, "from {from} ({layer})"),
        }
    }
}

impl Serialize for Layer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A resolved value and the layer it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resolved<T> {
    /// The value.
    pub value: T,
    /// Where it came from.
    pub layer: Layer,
}

impl<T> Resolved<T> {
    /// A value from `layer`.
    pub fn new(value: T, layer: Layer) -> Self {
        Resolved { value, layer }
    }

    /// A default value.
    pub fn default_value(value: T) -> Self {
        Resolved {
            value,
            layer: Layer::Default,
        }
    }
}
