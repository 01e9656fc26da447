//! The library's one error type: a kind a program can match on, and what a person needs
//! to act on it.

use bytes::Bytes;
use std::fmt;
use std::time::Duration;

/// Everything the provider sent with an error: kept whole for the record and for
/// debugging. Holds no request header, so no key can leak through it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProviderDetails {
    /// The backend that answered.
    pub backend: String,
    /// HTTP status (0 for an error reported inside a 200 stream without one).
    pub status: u16,
    /// The provider's request id (`x-request-id`, `request-id`, Anthropic's `request_id`).
    pub request_id: Option<String>,
    /// The provider's error type (`rate_limit_error`, `RESOURCE_EXHAUSTED`…).
    pub kind: Option<String>,
    /// The provider's error code (`insufficient_quota`, `context_length_exceeded`…).
    pub code: Option<String>,
    /// The provider's message.
    pub message: String,
    /// Response headers that matter: retry hints, rate-limit counters, request ids.
    pub headers: Vec<(String, String)>,
    /// The body exactly as received.
    pub body: Bytes,
}

impl fmt::Display for ProviderDetails {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.backend)?;
        if self.status != 0 {
            write!(f, " answered HTTP {}", self.status)?;
        } else {
            write!(f, " reported an error")?;
        }
        match (&self.kind, &self.code) {
            (Some(k), Some(c)) if k != c => write!(f, " ({k}, {c})")?,
            (Some(k), _) => write!(f, " ({k})")?,
            (None, Some(c)) => write!(f, " ({c})")?,
            (None, None) => {}
        }
        if !self.message.is_empty() {
            write!(f, ": {}", self.message)?;
        }
        if let Some(id) = &self.request_id {
            write!(f, " [request id {id}]")?;
        }
        Ok(())
    }
}

/// Which wait ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutPhase {
    /// Opening the connection.
    Connect,
    /// Waiting for the first byte of the reply.
    FirstByte,
    /// Waiting between two stream events.
    Idle,
    /// The whole call.
    Total,
}

impl fmt::Display for TimeoutPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimeoutPhase::Connect => "connecting",
            TimeoutPhase::FirstByte => "waiting for the first byte",
            TimeoutPhase::Idle => "waiting between stream events",
            TimeoutPhase::Total => "the whole call",
        })
    }
}

/// The kind of an [`Error`], for matching without destructuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// See [`Error::UnknownBackend`].
    UnknownBackend,
    /// See [`Error::NotAReference`].
    NotAReference,
    /// See [`Error::Config`].
    Config,
    /// See [`Error::MissingKey`].
    MissingKey,
    /// See [`Error::RateLimited`].
    RateLimited,
    /// See [`Error::ProviderQuotaExhausted`].
    ProviderQuotaExhausted,
    /// See [`Error::ProviderReplyMalformed`].
    ProviderReplyMalformed,
    /// See [`Error::ContextLengthExceeded`].
    ContextLengthExceeded,
    /// See [`Error::Overloaded`].
    Overloaded,
    /// See [`Error::Timeout`].
    Timeout,
    /// See [`Error::Transport`].
    Transport,
    /// See [`Error::Auth`].
    Auth,
    /// See [`Error::BadRequest`].
    BadRequest,
    /// See [`Error::Provider`].
    Provider,
    /// See [`Error::Unsupported`].
    Unsupported,
    /// See [`Error::BudgetExceeded`].
    BudgetExceeded,
    /// See [`Error::ReplayExhausted`].
    ReplayExhausted,
    /// See [`Error::Cancelled`].
    Cancelled,
    /// See [`Error::ReplyTooLarge`].
    ReplyTooLarge,
}

impl ErrorKind {
    /// The kind's name as written in records and docs (`RateLimited`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UnknownBackend => "UnknownBackend",
            ErrorKind::NotAReference => "NotAReference",
            ErrorKind::Config => "Config",
            ErrorKind::MissingKey => "MissingKey",
            ErrorKind::RateLimited => "RateLimited",
            ErrorKind::ProviderQuotaExhausted => "ProviderQuotaExhausted",
            ErrorKind::ProviderReplyMalformed => "ProviderReplyMalformed",
            ErrorKind::ContextLengthExceeded => "ContextLengthExceeded",
            ErrorKind::Overloaded => "Overloaded",
            ErrorKind::Timeout => "Timeout",
            ErrorKind::Transport => "Transport",
            ErrorKind::Auth => "Auth",
            ErrorKind::BadRequest => "BadRequest",
            ErrorKind::Provider => "Provider",
            ErrorKind::Unsupported => "Unsupported",
            ErrorKind::BudgetExceeded => "BudgetExceeded",
            ErrorKind::ReplayExhausted => "ReplayExhausted",
            ErrorKind::Cancelled => "Cancelled",
            ErrorKind::ReplyTooLarge => "ReplyTooLarge",
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Everything that can go wrong naming, reaching or calling a model.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A reference names a backend nobody declared.
    #[error("unknown backend `{name}`{}; known backends: {}", nearest_hint(.nearest), .known.join(", "))]
    UnknownBackend {
        /// The name given.
        name: String,
        /// Every backend's name.
        known: Vec<String>,
        /// The closest known name, if one is close.
        nearest: Option<String>,
    },
    /// A string that must be a `<backend>/<model id>` reference is not one.
    #[error("`{text}` is not a model reference: write `<backend>/<model id>`, e.g. `openai/gpt-5.4` or `mock/echo`")]
    NotAReference {
        /// The string given.
        text: String,
    },
    /// A configuration problem; the message says where and what is accepted.
    #[error("{0}")]
    Config(String),
    /// The variable holding a backend's key is not set.
    #[error("backend `{backend}` needs a key: set the environment variable {variable} (for example in an env file loaded with --env-file)")]
    MissingKey {
        /// The backend.
        backend: String,
        /// The variable it reads.
        variable: String,
    },
    /// Rate limited, and the waits ran out.
    #[error("rate limited{}: {last}", rate_hint(*.attempts, *.waited))]
    RateLimited {
        /// Attempts made.
        attempts: u32,
        /// Total time spent waiting.
        waited: Duration,
        /// The last refusal.
        last: Box<ProviderDetails>,
    },
    /// The account is out of credit or over its spend limit; retrying cannot help.
    #[error("provider quota exhausted (top up or raise the limit, then run again): {0}")]
    ProviderQuotaExhausted(Box<ProviderDetails>),
    /// A success that is not a reply: `null`, not JSON, no text and no tool calls, no usage.
    #[error("{backend} sent a malformed reply{}: {reason}", attempts_hint(*.attempts))]
    ProviderReplyMalformed {
        /// The backend.
        backend: String,
        /// What was wrong.
        reason: String,
        /// Attempts made.
        attempts: u32,
        /// The last body received.
        body: Bytes,
    },
    /// The prompt and the output limit do not fit the model's context window.
    #[error("context length exceeded{}: {message}", context_numbers(*.prompt_tokens, *.max_tokens, *.limit))]
    ContextLengthExceeded {
        /// Tokens in the prompt, when known.
        prompt_tokens: Option<u64>,
        /// The output limit asked for, when known.
        max_tokens: Option<u64>,
        /// The context window, when known.
        limit: Option<u64>,
        /// The provider's message, or ours when caught before sending.
        message: String,
        /// The provider's error, when it came from one.
        details: Option<Box<ProviderDetails>>,
    },
    /// The provider is overloaded (Anthropic 529, HTTP 503).
    #[error("provider overloaded: {0}")]
    Overloaded(Box<ProviderDetails>),
    /// A wait ran out.
    #[error("{backend} timed out {phase} after {}", fmt_duration(*.after))]
    Timeout {
        /// The backend.
        backend: String,
        /// Which wait.
        phase: TimeoutPhase,
        /// How long it waited.
        after: Duration,
    },
    /// The connection failed or broke.
    #[error("could not reach {backend}: {message}")]
    Transport {
        /// The backend.
        backend: String,
        /// What happened.
        message: String,
    },
    /// The key was refused (HTTP 401 or 403).
    #[error("the key was refused: {0}")]
    Auth(Box<ProviderDetails>),
    /// The provider refused the request as malformed (HTTP 400, 404, 413, 422).
    #[error("bad request: {0}")]
    BadRequest(Box<ProviderDetails>),
    /// Any other provider error.
    #[error("{0}")]
    Provider(Box<ProviderDetails>),
    /// The backend cannot do what was asked (a dialect it does not serve…).
    #[error("{0}")]
    Unsupported(String),
    /// The run's budget is spent: the call was not made.
    #[error("budget exceeded: {limit} is {max}, and spent so far: {spent}{}; the call was not made", in_flight_hint(*.in_flight))]
    BudgetExceeded {
        /// The limit reached (`max_usd`, `max_calls`, `max_tokens`).
        limit: String,
        /// The limit's value as written for people (`$1.50`, `100 calls`).
        max: String,
        /// What is spent so far, settled calls only (`$1.52`, `100 calls`).
        spent: String,
        /// Calls still running when this one was refused.
        in_flight: u64,
    },
    /// A stream stopped because its cost, with the run's spend, reached the budget's
    /// `max_usd`: a provider that went on past `max_tokens`. What came before stays in
    /// the reply, and is billed. Its kind is [`ErrorKind::BudgetExceeded`].
    #[error("budget exceeded: max_usd is {max}, and spent so far: {spent}, this stream's {stream} included, with its next step past the limit; the stream was stopped and its request cancelled (what it generated is billed)")]
    BudgetStopped {
        /// The limit as written for people (`$1.50`).
        max: String,
        /// The run's settled spend and what its streams in flight have spent.
        spent: String,
        /// What this stream has spent.
        stream: String,
    },
    /// A replay has no recorded reply for a request.
    #[error("replay has no recorded reply for role `{role}` and prompt {digest}{}", nearest_prompt(.nearest))]
    ReplayExhausted {
        /// The role (empty for calls made without one).
        role: String,
        /// The digest of the prompt (system, messages, tools).
        digest: String,
        /// The nearest recorded prompt of that role: its call number and a short diff.
        nearest: Option<String>,
    },
    /// The caller cancelled the call (through the handle's cancellation token) during an
    /// attempt or a wait between attempts.
    #[error("the call to {backend} was cancelled {during}")]
    Cancelled {
        /// The backend.
        backend: String,
        /// When: `during attempt 1`, `while waiting 30 s before attempt 2 (rate_limited)`.
        during: String,
    },
    /// The provider's answer passed one of the size bounds on what a backend reads
    /// ([`crate::backend::http::ReplyLimits`]): the reply was read no further and its
    /// connection closed. Not retried: a provider that sent this much once would likely
    /// do it again.
    #[error(
        "{backend} sent {} past its bound of {} (`{}`): it was read no further and its connection was closed; raise `{}` if the provider really answers this much",
        .bound.what(), fmt_bytes(*.limit), .bound.setting(), .bound.setting()
    )]
    ReplyTooLarge {
        /// The backend.
        backend: String,
        /// Which bound.
        bound: ReplyBound,
        /// The bound's value, in bytes.
        limit: u64,
        /// A whole body's first bytes (at most 64 KiB), for the record and for debugging;
        /// empty for a stream, whose bytes its reader had as they came.
        head: Bytes,
    },
}

/// Which size bound an answer passed ([`Error::ReplyTooLarge`]); each is a field of
/// [`crate::backend::http::ReplyLimits`] and of the gateway's `limits:` of the same name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReplyBound {
    /// A whole (not streamed) reply body: `max_reply_bytes`.
    Reply,
    /// The bytes of a whole stream: `max_stream_bytes`.
    Stream,
    /// One server-sent event (or one of its lines): `max_event_bytes`.
    Event,
}

impl ReplyBound {
    /// The setting that raises the bound (`max_reply_bytes`).
    pub fn setting(self) -> &'static str {
        match self {
            ReplyBound::Reply => "max_reply_bytes",
            ReplyBound::Stream => "max_stream_bytes",
            ReplyBound::Event => "max_event_bytes",
        }
    }

    /// What passed the bound, for messages (`a reply body`).
    pub fn what(self) -> &'static str {
        match self {
            ReplyBound::Reply => "a reply body",
            ReplyBound::Stream => "a stream",
            ReplyBound::Event => "one stream event",
        }
    }

    /// The bound named by its setting, as a record keeps it.
    pub fn from_setting(setting: &str) -> Option<ReplyBound> {
        [ReplyBound::Reply, ReplyBound::Stream, ReplyBound::Event]
            .into_iter()
            .find(|b| b.setting() == setting)
    }
}

/// A size for people: `512 bytes`, `64 KiB`, `1.5 MiB`, `2 GiB`.
pub fn fmt_bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            return if n.is_multiple_of(size) {
                format!("{} {unit}", n / size)
            } else {
                format!("{:.1} {unit}", n as f64 / size as f64)
            };
        }
    }
    format!("{n} bytes")
}

impl Error {
    /// The error's kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::UnknownBackend { .. } => ErrorKind::UnknownBackend,
            Error::NotAReference { .. } => ErrorKind::NotAReference,
            Error::Config(_) => ErrorKind::Config,
            Error::MissingKey { .. } => ErrorKind::MissingKey,
            Error::RateLimited { .. } => ErrorKind::RateLimited,
            Error::ProviderQuotaExhausted(_) => ErrorKind::ProviderQuotaExhausted,
            Error::ProviderReplyMalformed { .. } => ErrorKind::ProviderReplyMalformed,
            Error::ContextLengthExceeded { .. } => ErrorKind::ContextLengthExceeded,
            Error::Overloaded(_) => ErrorKind::Overloaded,
            Error::Timeout { .. } => ErrorKind::Timeout,
            Error::Transport { .. } => ErrorKind::Transport,
            Error::Auth(_) => ErrorKind::Auth,
            Error::BadRequest(_) => ErrorKind::BadRequest,
            Error::Provider(_) => ErrorKind::Provider,
            Error::Unsupported(_) => ErrorKind::Unsupported,
            Error::BudgetExceeded { .. } | Error::BudgetStopped { .. } => ErrorKind::BudgetExceeded,
            Error::ReplayExhausted { .. } => ErrorKind::ReplayExhausted,
            Error::Cancelled { .. } => ErrorKind::Cancelled,
            Error::ReplyTooLarge { .. } => ErrorKind::ReplyTooLarge,
        }
    }

    /// The provider's details, for the errors that came from one.
    pub fn provider_details(&self) -> Option<&ProviderDetails> {
        match self {
            Error::RateLimited { last, .. } => Some(last),
            Error::ProviderQuotaExhausted(d)
            | Error::Overloaded(d)
            | Error::Auth(d)
            | Error::BadRequest(d)
            | Error::Provider(d) => Some(d),
            Error::ContextLengthExceeded { details, .. } => details.as_deref(),
            _ => None,
        }
    }
}

impl From<crate::reference::ReferenceError> for Error {
    /// A reference that names no backend, no model, or a model id that cannot be sent.
    fn from(e: crate::reference::ReferenceError) -> Self {
        match e {
            crate::reference::ReferenceError::UnknownBackend {
                name,
                known,
                nearest,
                ..
            } => Error::UnknownBackend {
                name,
                known,
                nearest,
            },
            crate::reference::ReferenceError::EmptyModel { text, .. } => {
                Error::NotAReference { text }
            }
            e @ crate::reference::ReferenceError::BadModelId { .. } => Error::Config(e.to_string()),
        }
    }
}

fn nearest_hint(nearest: &Option<String>) -> String {
    nearest
        .as_ref()
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default()
}

fn in_flight_hint(n: u64) -> String {
    match n {
        0 => String::new(),
        1 => " (1 call in flight)".to_string(),
        n => format!(" ({n} calls in flight)"),
    }
}

fn nearest_prompt(nearest: &Option<String>) -> String {
    match nearest {
        Some(n) => format!("; nearest recorded prompt of that role: {n}"),
        None => "; the log has no call of that role".to_string(),
    }
}

fn rate_hint(attempts: u32, waited: Duration) -> String {
    match attempts {
        0 | 1 if waited.is_zero() => String::new(),
        1 => format!(" after 1 attempt and {} waiting", fmt_duration(waited)),
        n => format!(" after {n} attempts and {} waiting", fmt_duration(waited)),
    }
}

fn attempts_hint(attempts: u32) -> String {
    if attempts > 1 {
        format!(" {attempts} times")
    } else {
        String::new()
    }
}

fn context_numbers(prompt: Option<u64>, max: Option<u64>, limit: Option<u64>) -> String {
    let mut parts = Vec::new();
    if let Some(p) = prompt {
        parts.push(format!("prompt {p} tokens"));
    }
    if let Some(m) = max {
        parts.push(format!("max output {m} tokens"));
    }
    if let Some(l) = limit {
        parts.push(format!("limit {l} tokens"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// A duration for people: `1.5 s`, `250 ms`, `2 min 30 s`.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        let s = d.as_secs_f64();
        if (s - s.round()).abs() < 0.05 {
            format!("{} s", s.round() as u64)
        } else {
            format!("{s:.1} s")
        }
    } else {
        let secs = d.as_secs();
        match secs % 60 {
            0 => format!("{} min", secs / 60),
            s => format!("{} min {s} s", secs / 60),
        }
    }
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
