//! The model-name grammar: what a client asks for by naming a model.
//!
//! A model name is a list of components joined by `+` (an optional `mock/` prefix is
//! dropped). Components, in any order:
//!
//! | component | effect |
//! |---|---|
//! | `echo` | reply with the last user message's text (the default) |
//! | `say:<text>` | reply with `<text>`; must come last (everything after `say:` is the text) |
//! | `lorem-<N>` | reply with N words of lorem ipsum |
//! | `tools` | call the first tool offered (or `get_weather {"city":"Paris"}`); after a tool result, answer with text quoting it |
//! | `think` | a thinking part first, signed with opaque state the mock can verify ([`crate::signing`]) |
//! | `agent` | a deterministic tool loop: two calls, then one, then a final answer quoting the results |
//! | `cli-agent` | a coding CLI's session: write a file with its own tool, `cat` it with its shell tool, answer quoting the output ([`crate::cli_agent`]) |
//! | `lenient` | accept any history: the providers' multi-turn rules are not checked (docs/mock.md) |
//! | `no-threads` | refuse Anthropic message threads as a server that keeps none does (400 `thread_unsupported_request`) |
//! | `gemini-<…>` | a model label (`gemini-2.5-flash`, `gemini-3-pro`); one starting `gemini-3` turns on Gemini 3's thought-signature rule |
//! | `cache` / `cache-<read>-<write>` | usage with cached and cache-write input tokens (default 1024 and 256) |
//! | `length` | finish reason "length" instead of a natural stop |
//! | `ignore-stream` | a streamed request answered with one whole JSON body |
//! | `usage-<N>` | report N as the input and the output token count (up to `18446744073709551615`, 2^64 − 1), however long the reply |
//! | `chunk-<N>` | stream text in deltas of N characters (default 4, about a token) |
//! | `delay-<dur>` / `slow` | wait `<dur>` (`5ms`, `1s`) before each streamed delta; `slow` is 25 ms |
//! | `slow-first-byte[-<dur>]` | wait before sending the status line (default 500 ms) |
//! | a fault | see below; at most one |
//!
//! Faults: `fault-<status>`, `quota[-402|-spend-limit|-credit]`,
//! `context-overflow[-max-tokens|-vllm]`, `null-body[-blank]`, `no-text`, `no-usage`,
//! `not-json`, `cut-stream[-reset]`, `error-mid-stream[-<status>]`, `hang`,
//! `echo-key[-<status>]`. Each may be
//! followed by `-retry-<seconds>` or `-retry-ms-<millis>` (the Retry-After header, or
//! Gemini's `RetryInfo`) and by `-then-ok` or `-<N>-then-ok` (fail N times, default 1,
//! then succeed, counted per model name and prompt).

use std::fmt;
use std::time::Duration;

/// The default text chunk of a streamed delta, in characters (about a token).
pub const DEFAULT_CHUNK_CHARS: usize = 4;
/// The per-delta delay of `slow`.
pub const SLOW_DELAY: Duration = Duration::from_millis(25);
/// The delay of `slow-first-byte` without a duration.
pub const DEFAULT_FIRST_BYTE_DELAY: Duration = Duration::from_millis(500);
/// Cached input tokens reported by `cache` without numbers.
pub const DEFAULT_CACHE_READ: u64 = 1024;
/// Cache-write input tokens reported by `cache` without numbers.
pub const DEFAULT_CACHE_WRITE: u64 = 256;

/// What the text of a reply is made of.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Content {
    /// The last user message's text.
    #[default]
    Echo,
    /// A fixed text.
    Say(String),
    /// N words of lorem ipsum.
    Lorem(usize),
}

/// A parsed model name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behaviour {
    /// The text.
    pub content: Content,
    /// Call a tool (or answer a tool result).
    pub tools: bool,
    /// Add a thinking part.
    pub think: bool,
    /// Run a deterministic agent loop (two tool calls, one, then a final answer).
    pub agent: bool,
    /// Play a coding agent against a CLI's own tools: write a file, `cat` it, answer
    /// ([`crate::cli_agent`]).
    pub cli_agent: bool,
    /// Do not check the history against the provider's multi-turn rules.
    pub lenient: bool,
    /// Refuse Anthropic message threads (`thread: create/continue`) with the 400 a
    /// server that holds no threads answers (`error.details.error_code:
    /// "thread_unsupported_request"`), so clients fall back to sending the whole history.
    pub no_threads: bool,
    /// A Gemini 3 model: function calls in the current turn must carry their signatures.
    pub gemini3: bool,
    /// Cache read and cache write tokens to report.
    pub cache: Option<(u64, u64)>,
    /// Finish with "length".
    pub length: bool,
    /// Characters per streamed delta.
    pub chunk_chars: usize,
    /// Delay before each streamed delta.
    pub delay: Duration,
    /// Delay before the response starts.
    pub first_byte_delay: Duration,
    /// The fault to inject, if any.
    pub fault: Option<FaultSpec>,
    /// Answer a streamed request with one whole JSON body, as a server that ignores
    /// `stream: true` does (LiteLLM's proxy on a mocked model).
    pub ignore_stream: bool,
    /// Report this as the input and the output token count (a broken provider's absurd
    /// usage: `usage-18446744073709551615`).
    pub usage: Option<u64>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            content: Content::Echo,
            tools: false,
            think: false,
            agent: false,
            cli_agent: false,
            lenient: false,
            no_threads: false,
            gemini3: false,
            cache: None,
            length: false,
            chunk_chars: DEFAULT_CHUNK_CHARS,
            delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
            fault: None,
            ignore_stream: false,
            usage: None,
        }
    }
}

/// A fault and when it applies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSpec {
    /// What goes wrong.
    pub fault: Fault,
    /// The delay the error asks the client to wait.
    pub retry: Option<RetryAfter>,
    /// `None`: always. `Some(n)`: the first n attempts of a prompt fail, later ones succeed.
    pub times: Option<u64>,
}

/// A delay asked for in an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryAfter {
    /// `Retry-After: <seconds>`.
    Seconds(u64),
    /// `retry-after-ms: <millis>`.
    Millis(u64),
}

impl RetryAfter {
    /// The delay as a duration.
    pub fn duration(self) -> Duration {
        match self {
            RetryAfter::Seconds(s) => Duration::from_secs(s),
            RetryAfter::Millis(ms) => Duration::from_millis(ms),
        }
    }
}

/// Which quota error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuotaKind {
    /// Each dialect's usual quota error (OpenAI 429 `insufficient_quota`, Anthropic 400
    /// `billing_error` credit balance too low, Gemini 429 `RESOURCE_EXHAUSTED` daily quota).
    Default,
    /// HTTP 402 (OpenRouter credits; Anthropic `billing_error`).
    PaymentRequired,
    /// Anthropic 429 `enforced_spend_limit_reached`.
    SpendLimit,
    /// Anthropic 400 `invalid_request_error` with the credit-balance message.
    Credit,
}

/// Which context-length error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContextKind {
    /// The prompt alone is too long.
    Default,
    /// Prompt plus `max_tokens` exceed the window.
    MaxTokens,
    /// vLLM's wording.
    Vllm,
}

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// An HTTP error status with the dialect's error body.
    Status(u16),
    /// A quota or billing error.
    Quota(QuotaKind),
    /// A context-length error.
    ContextOverflow(ContextKind),
    /// 200 with the body `null` (after blank lines when `blank`).
    NullBody {
        /// Blank lines first, as DeepSeek writes while a call waits.
        blank: bool,
    },
    /// A reply with neither text nor tool calls.
    NoText,
    /// A reply without usage.
    NoUsage,
    /// 200 with a body that is not JSON.
    NotJson,
    /// The body stops mid-way without its end marker.
    CutStream {
        /// Abort the connection instead of ending the body cleanly.
        reset: bool,
    },
    /// The dialect's in-stream error after some output.
    ErrorMidStream(Option<u16>),
    /// No answer (a stream stalls after its first event).
    Hang,
    /// The credential the request carried, repeated in the answer's headers and in its
    /// body: an error of the status (401 when none is given) whose message quotes it, or
    /// with 200 a reply whose text does (as a misconfigured proxy or server does).
    EchoKey(Option<u16>),
}

/// A model name that is not in the grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrammarError(pub String);

impl fmt::Display for GrammarError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}; the mock accepts components joined by `+`: echo, say:<text>, lorem-<N>, tools, \
             think, agent, cli-agent, lenient, no-threads, gemini-<…>, cache[-<read>-<write>], length, chunk-<N>, delay-<dur>, slow, \
             slow-first-byte[-<dur>], and one fault (fault-<status>, quota, context-overflow, \
             null-body, no-text, no-usage, not-json, cut-stream, error-mid-stream, hang, \
             echo-key[-<status>]) \
             optionally with -retry-<s>, -retry-ms-<ms>, -then-ok, -<N>-then-ok \
             (see docs/mock.md)",
            self.0
        )
    }
}

impl std::error::Error for GrammarError {}

/// The model name without an optional `mock/` prefix.
pub fn strip_prefix(model: &str) -> &str {
    model.strip_prefix("mock/").unwrap_or(model)
}

/// Parses a model name (with or without `mock/`).
pub fn parse(model: &str) -> Result<Behaviour, GrammarError> {
    let mut rest = strip_prefix(model);
    let mut b = Behaviour::default();
    if rest.is_empty() {
        return Ok(b);
    }
    loop {
        if let Some(text) = rest.strip_prefix("say:") {
            b.content = Content::Say(text.to_string());
            return Ok(b);
        }
        let (component, tail) = match rest.split_once('+') {
            Some((c, t)) => (c, Some(t)),
            None => (rest, None),
        };
        component_into(component, &mut b)?;
        match tail {
            Some(t) => rest = t,
            None => return Ok(b),
        }
    }
}

fn component_into(c: &str, b: &mut Behaviour) -> Result<(), GrammarError> {
    let bad = |why: &str| GrammarError(format!("`{c}`: {why}"));
    match c {
        "echo" => b.content = Content::Echo,
        // The models the built-in `mock` backend prices (`mock/small`, `mock/large`,
        // `mock/free`), so cost and budget tests have a known price: they echo.
        "mock-small" | "mock-large" | "mock-free" => b.content = Content::Echo,
        "tools" => b.tools = true,
        "think" => b.think = true,
        "agent" => b.agent = true,
        "cli-agent" => b.cli_agent = true,
        "lenient" => b.lenient = true,
        "no-threads" => b.no_threads = true,
        // A provider's model name as a label, so `gemini-3-pro` works on the Gemini
        // route; Gemini 3 models enforce thought signatures on function calls.
        _ if c.starts_with("gemini-") => b.gemini3 |= c.starts_with("gemini-3"),
        "cache" => b.cache = Some((DEFAULT_CACHE_READ, DEFAULT_CACHE_WRITE)),
        "length" => b.length = true,
        "ignore-stream" => b.ignore_stream = true,
        "slow" => b.delay = SLOW_DELAY,
        "slow-first-byte" => b.first_byte_delay = DEFAULT_FIRST_BYTE_DELAY,
        _ => {
            if let Some(n) = c.strip_prefix("lorem-") {
                b.content = Content::Lorem(number(n).ok_or_else(|| bad("not a word count"))?);
            } else if let Some(n) = c.strip_prefix("usage-") {
                b.usage = Some(n.parse().map_err(|_| {
                    bad("not a token count from 0 to 18446744073709551615 (2^64 - 1)")
                })?);
            } else if let Some(n) = c.strip_prefix("chunk-") {
                let n = number(n).filter(|n| *n > 0);
                b.chunk_chars = n.ok_or_else(|| bad("not a positive character count"))?;
            } else if let Some(d) = c.strip_prefix("delay-") {
                b.delay = duration(d).ok_or_else(|| bad("not a duration like 5ms or 1s"))?;
            } else if let Some(d) = c.strip_prefix("slow-first-byte-") {
                b.first_byte_delay =
                    duration(d).ok_or_else(|| bad("not a duration like 200ms or 1s"))?;
            } else if let Some(nums) = c.strip_prefix("cache-") {
                let (r, w) = nums
                    .split_once('-')
                    .and_then(|(r, w)| Some((r.parse().ok()?, w.parse().ok()?)))
                    .ok_or_else(|| bad("expected cache-<read tokens>-<write tokens>"))?;
                b.cache = Some((r, w));
            } else if let Some(f) = fault(c)? {
                if b.fault.is_some() {
                    return Err(bad("only one fault per model name"));
                }
                b.fault = Some(f);
            } else {
                return Err(GrammarError(format!("unknown component `{c}`")));
            }
        }
    }
    Ok(())
}

/// Fault keywords, longest first so that prefixes do not shadow longer names.
const FAULTS: &[(&str, Fault)] = &[
    ("quota-spend-limit", Fault::Quota(QuotaKind::SpendLimit)),
    ("quota-credit", Fault::Quota(QuotaKind::Credit)),
    ("quota-402", Fault::Quota(QuotaKind::PaymentRequired)),
    ("quota", Fault::Quota(QuotaKind::Default)),
    (
        "context-overflow-max-tokens",
        Fault::ContextOverflow(ContextKind::MaxTokens),
    ),
    (
        "context-overflow-vllm",
        Fault::ContextOverflow(ContextKind::Vllm),
    ),
    (
        "context-overflow",
        Fault::ContextOverflow(ContextKind::Default),
    ),
    ("null-body-blank", Fault::NullBody { blank: true }),
    ("null-body", Fault::NullBody { blank: false }),
    ("no-text", Fault::NoText),
    ("no-usage", Fault::NoUsage),
    ("not-json", Fault::NotJson),
    ("cut-stream-reset", Fault::CutStream { reset: true }),
    ("cut-stream", Fault::CutStream { reset: false }),
    ("error-mid-stream", Fault::ErrorMidStream(None)),
    ("hang", Fault::Hang),
    ("echo-key", Fault::EchoKey(None)),
    ("fault", Fault::Status(0)),
];

/// Parses a fault component, or `None` when `c` names no fault.
fn fault(c: &str) -> Result<Option<FaultSpec>, GrammarError> {
    let Some((rest, mut fault)) = FAULTS.iter().find_map(|(name, f)| {
        let rest = c.strip_prefix(name)?;
        (rest.is_empty() || rest.starts_with('-')).then_some((rest, *f))
    }) else {
        return Ok(None);
    };
    let bad = |why: String| GrammarError(format!("`{c}`: {why}"));
    let tokens: Vec<&str> = rest.split('-').skip(1).collect();
    let mut i = 0;
    let status = |t: Option<&&str>| {
        t.and_then(|t| t.parse::<u16>().ok())
            .filter(|s| (100..=599).contains(s))
    };
    match &mut fault {
        Fault::Status(s) => {
            *s = status(tokens.first())
                .ok_or_else(|| bad("expected fault-<HTTP status 100..599>".into()))?;
            i = 1;
        }
        Fault::ErrorMidStream(s) | Fault::EchoKey(s) => {
            if let Some(found) = status(tokens.first()) {
                *s = Some(found);
                i = 1;
            }
        }
        _ => {}
    }
    let mut spec = FaultSpec {
        fault,
        retry: None,
        times: None,
    };
    while i < tokens.len() {
        match tokens[i] {
            "retry" if tokens.get(i + 1) == Some(&"ms") => {
                let ms = tokens.get(i + 2).and_then(|t| t.parse().ok());
                spec.retry =
                    Some(RetryAfter::Millis(ms.ok_or_else(|| {
                        bad("expected retry-ms-<milliseconds>".into())
                    })?));
                i += 3;
            }
            "retry" => {
                let s = tokens.get(i + 1).and_then(|t| t.parse().ok());
                spec.retry = Some(RetryAfter::Seconds(
                    s.ok_or_else(|| bad("expected retry-<seconds>".into()))?,
                ));
                i += 2;
            }
            "then" if tokens.get(i + 1) == Some(&"ok") && i + 2 == tokens.len() => {
                spec.times = Some(1);
                i += 2;
            }
            t => {
                let n = t.parse::<u64>().ok().filter(|_| {
                    tokens.get(i + 1) == Some(&"then")
                        && tokens.get(i + 2) == Some(&"ok")
                        && i + 3 == tokens.len()
                });
                spec.times =
                    Some(n.ok_or_else(|| bad(format!("unexpected `{t}`; expected retry-<s>, retry-ms-<ms>, then-ok or <N>-then-ok")))?);
                i += 3;
            }
        }
    }
    Ok(Some(spec))
}

fn number(s: &str) -> Option<usize> {
    s.parse().ok()
}

/// Parses `5ms`, `1s`, `250us` or a bare number of milliseconds.
pub fn duration(s: &str) -> Option<Duration> {
    if let Some(n) = s.strip_suffix("ms") {
        n.parse().ok().map(Duration::from_millis)
    } else if let Some(n) = s.strip_suffix("us") {
        n.parse().ok().map(Duration::from_micros)
    } else if let Some(n) = s.strip_suffix('s') {
        n.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(Duration::from_secs_f64)
    } else {
        s.parse().ok().map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(model: &str) -> FaultSpec {
        parse(model).unwrap().fault.unwrap()
    }

    #[test]
    fn plain_behaviours() {
        assert_eq!(parse("echo").unwrap(), Behaviour::default());
        assert_eq!(parse("mock-small").unwrap(), Behaviour::default());
        assert_eq!(parse("mock/echo").unwrap(), Behaviour::default());
        assert_eq!(parse("").unwrap(), Behaviour::default());
        let b = parse("mock/think+tools+cache").unwrap();
        assert!(b.think && b.tools);
        assert_eq!(b.cache, Some((1024, 256)));
        assert_eq!(parse("cache-10-3").unwrap().cache, Some((10, 3)));
        assert_eq!(parse("lorem-50").unwrap().content, Content::Lorem(50));
        assert!(parse("length").unwrap().length);
    }

    #[test]
    fn agent_lenient_and_gemini_labels() {
        let b = parse("mock/agent+think+lenient").unwrap();
        assert!(b.agent && b.think && b.lenient && !b.gemini3);
        let b = parse("cli-agent+think").unwrap();
        assert!(b.cli_agent && b.think && !b.agent);
        assert!(parse("gemini-3-pro").unwrap().gemini3);
        assert!(parse("gemini-3-flash-preview+agent").unwrap().gemini3);
        assert!(parse("think+tools+gemini-3").unwrap().gemini3);
        let b = parse("gemini-2.5-flash").unwrap();
        assert!(!b.gemini3);
        assert_eq!(b.content, Content::Echo);
        assert!(parse("gemini").is_err());
    }

    #[test]
    fn say_takes_the_rest_of_the_name() {
        let b = parse("think+say:hello + world: yes").unwrap();
        assert!(b.think);
        assert_eq!(b.content, Content::Say("hello + world: yes".into()));
    }

    #[test]
    fn timing() {
        let b = parse("echo+delay-5ms+chunk-2+slow-first-byte-200ms").unwrap();
        assert_eq!(b.delay, Duration::from_millis(5));
        assert_eq!(b.chunk_chars, 2);
        assert_eq!(b.first_byte_delay, Duration::from_millis(200));
        assert_eq!(parse("slow").unwrap().delay, SLOW_DELAY);
        assert_eq!(
            parse("slow-first-byte").unwrap().first_byte_delay,
            DEFAULT_FIRST_BYTE_DELAY
        );
        assert_eq!(duration("1.5s"), Some(Duration::from_millis(1500)));
        assert!(parse("delay-soon").is_err());
        assert!(parse("chunk-0").is_err());
    }

    #[test]
    fn status_faults_with_retry_and_then_ok() {
        let s = f("fault-429");
        assert_eq!(s.fault, Fault::Status(429));
        assert_eq!((s.retry, s.times), (None, None));
        let s = f("mock/fault-429-retry-2");
        assert_eq!(s.retry, Some(RetryAfter::Seconds(2)));
        assert_eq!(s.times, None);
        let s = f("fault-429-retry-ms-1500-then-ok");
        assert_eq!(s.retry, Some(RetryAfter::Millis(1500)));
        assert_eq!(s.times, Some(1));
        let s = f("fault-503-3-then-ok");
        assert_eq!((s.fault, s.times), (Fault::Status(503), Some(3)));
        let s = f("fault-429-retry-2-3-then-ok");
        assert_eq!(s.retry, Some(RetryAfter::Seconds(2)));
        assert_eq!(s.times, Some(3));
        assert_eq!(f("fault-529").fault, Fault::Status(529));
        assert!(parse("fault-99").is_err());
        assert!(parse("fault").is_err());
        assert!(parse("fault-429-then").is_err());
        assert!(parse("fault-429-2").is_err());
    }

    #[test]
    fn named_faults() {
        assert_eq!(f("quota").fault, Fault::Quota(QuotaKind::Default));
        assert_eq!(
            f("quota-402").fault,
            Fault::Quota(QuotaKind::PaymentRequired)
        );
        assert_eq!(
            f("quota-spend-limit").fault,
            Fault::Quota(QuotaKind::SpendLimit)
        );
        assert_eq!(
            f("context-overflow-max-tokens").fault,
            Fault::ContextOverflow(ContextKind::MaxTokens)
        );
        assert_eq!(f("null-body-blank").fault, Fault::NullBody { blank: true });
        assert_eq!(f("not-json-2-then-ok").times, Some(2));
        assert_eq!(f("no-usage-then-ok").times, Some(1));
        assert_eq!(
            f("cut-stream-reset").fault,
            Fault::CutStream { reset: true }
        );
        assert_eq!(f("error-mid-stream").fault, Fault::ErrorMidStream(None));
        let s = f("error-mid-stream-529-2-then-ok");
        assert_eq!(s.fault, Fault::ErrorMidStream(Some(529)));
        assert_eq!(s.times, Some(2));
        assert_eq!(f("error-mid-stream-2-then-ok").times, Some(2));
        assert_eq!(f("echo-key").fault, Fault::EchoKey(None));
        assert_eq!(f("echo-key-200").fault, Fault::EchoKey(Some(200)));
        assert_eq!(f("echo-key-500-then-ok").times, Some(1));
        assert_eq!(f("hang").fault, Fault::Hang);
        assert_eq!(f("echo+hang-then-ok").times, Some(1));
    }

    #[test]
    fn errors_name_the_component_and_list_the_grammar() {
        let e = parse("echo+bogus").unwrap_err().to_string();
        assert!(e.contains("`bogus`") && e.contains("say:<text>"), "{e}");
        let e = parse("fault-429+quota").unwrap_err().to_string();
        assert!(e.contains("only one fault"), "{e}");
        assert!(parse("quotation").is_err());
    }
}
