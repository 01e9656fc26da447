//! The retry policy and the loop that applies it.
//!
//! Each retryable failure has its own schedule of waits: the n-th failure of that kind is
//! followed by the n-th wait, then the call is sent again; when the schedule runs out the
//! last error is returned, counted (`RateLimited { attempts, waited, .. }`,
//! `ProviderReplyMalformed { attempts, .. }`). A provider that asks for a longer wait
//! (`Retry-After`, `retry-after-ms`, Gemini `RetryInfo.retryDelay`, OpenAI's "Please try
//! again in 1.5s") is honoured, up to `max_wait_seconds`. Quota, context length, auth and
//! bad request are never retried.
//!
//! In a run config, per run or per role:
//!
//! ```yaml
//! retry:
//!   rate_limited: [30, 60, 120]   # seconds, or "500ms", "2m"
//!   malformed: [5, 30]
//!   overloaded: []                # 503, Anthropic 529
//!   server_error: []              # other 5xx
//!   transport: []                 # connection refused, reset…
//!   timeout: []                   # a timeout before any output
//!   max_wait_seconds: 600         # longest single wait; a provider asking more stops the call
//! ```

use crate::attempt::{Attempt, CallOutcome};
use crate::error::{fmt_duration, Error, Result};
use crate::internal::classify;
use crate::seconds;
use crate::sleep::Sleeper;
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::time::{Duration, Instant, SystemTime};
use tokio_util::sync::CancellationToken;

/// Why a failed attempt may be tried again; each reason has its own schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryReason {
    /// HTTP 429, Gemini `RESOURCE_EXHAUSTED` (not a quota).
    RateLimited,
    /// A success that is not a reply.
    Malformed,
    /// HTTP 503, Anthropic 529.
    Overloaded,
    /// Any other 5xx.
    ServerError,
    /// The connection failed or broke.
    Transport,
    /// A timeout before any output.
    Timeout,
}

impl RetryReason {
    /// The reason an error may be retried for, or `None` when it never is (quota, context
    /// length, auth, bad request, configuration…).
    pub fn of(error: &Error) -> Option<RetryReason> {
        match error {
            Error::RateLimited { .. } => Some(RetryReason::RateLimited),
            Error::ProviderReplyMalformed { .. } => Some(RetryReason::Malformed),
            Error::Overloaded(_) => Some(RetryReason::Overloaded),
            Error::Provider(d) if is_server_error(d) => Some(RetryReason::ServerError),
            Error::Transport { .. } => Some(RetryReason::Transport),
            Error::Timeout { .. } => Some(RetryReason::Timeout),
            _ => None,
        }
    }

    /// The name used in the config and in messages (`rate_limited`).
    pub fn as_str(self) -> &'static str {
        match self {
            RetryReason::RateLimited => "rate_limited",
            RetryReason::Malformed => "malformed",
            RetryReason::Overloaded => "overloaded",
            RetryReason::ServerError => "server_error",
            RetryReason::Transport => "transport",
            RetryReason::Timeout => "timeout",
        }
    }
}

fn is_server_error(d: &crate::error::ProviderDetails) -> bool {
    d.status >= 500
        || (d.status == 0
            && matches!(
                d.kind.as_deref(),
                Some("server_error" | "api_error" | "INTERNAL")
            ))
}

/// How long to wait before trying again, per reason. See the module docs for the YAML.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetryPolicy {
    /// After a rate limit. Default 30 s, 60 s, 120 s.
    #[serde(with = "seconds::list")]
    pub rate_limited: Vec<Duration>,
    /// After a malformed reply. Default 5 s, 30 s.
    #[serde(with = "seconds::list")]
    pub malformed: Vec<Duration>,
    /// After an overload (503, 529). Default none.
    #[serde(with = "seconds::list")]
    pub overloaded: Vec<Duration>,
    /// After another 5xx. Default none.
    #[serde(with = "seconds::list")]
    pub server_error: Vec<Duration>,
    /// After a failed or broken connection. Default none.
    #[serde(with = "seconds::list")]
    pub transport: Vec<Duration>,
    /// After a timeout before any output. Default none.
    #[serde(with = "seconds::list")]
    pub timeout: Vec<Duration>,
    /// The longest single wait. A provider asking for longer (a per-day limit's
    /// `Retry-After` of hours) ends the call at once instead of stalling it; `null` waits
    /// as long as asked. Default 600 s.
    #[serde(rename = "max_wait_seconds", with = "seconds::option")]
    pub max_wait: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        let secs = |list: &[u64]| list.iter().map(|s| Duration::from_secs(*s)).collect();
        RetryPolicy {
            rate_limited: secs(&[30, 60, 120]),
            malformed: secs(&[5, 30]),
            overloaded: Vec::new(),
            server_error: Vec::new(),
            transport: Vec::new(),
            timeout: Vec::new(),
            max_wait: Some(Duration::from_secs(600)),
        }
    }
}

impl RetryPolicy {
    /// A policy that never retries.
    pub fn never() -> Self {
        RetryPolicy {
            rate_limited: Vec::new(),
            malformed: Vec::new(),
            ..RetryPolicy::default()
        }
    }

    /// The waits for `reason`.
    pub fn schedule(&self, reason: RetryReason) -> &[Duration] {
        match reason {
            RetryReason::RateLimited => &self.rate_limited,
            RetryReason::Malformed => &self.malformed,
            RetryReason::Overloaded => &self.overloaded,
            RetryReason::ServerError => &self.server_error,
            RetryReason::Transport => &self.transport,
            RetryReason::Timeout => &self.timeout,
        }
    }

    /// Every wait scaled by `factor` (0.001 turns seconds into milliseconds), for
    /// simulations and demos; tests prefer a [`crate::RecordingSleeper`].
    pub fn scaled(&self, factor: f64) -> Self {
        let scale = |list: &[Duration]| -> Vec<Duration> {
            list.iter()
                .map(|d| seconds::from_secs(d.as_secs_f64() * factor).unwrap_or_default())
                .collect()
        };
        RetryPolicy {
            rate_limited: scale(&self.rate_limited),
            malformed: scale(&self.malformed),
            overloaded: scale(&self.overloaded),
            server_error: scale(&self.server_error),
            transport: scale(&self.transport),
            timeout: scale(&self.timeout),
            max_wait: self
                .max_wait
                .map(|d| seconds::from_secs(d.as_secs_f64() * factor).unwrap_or_default()),
        }
    }
}

/// The wait a provider asked for with its error: `retry-after-ms`, `retry-after`
/// (seconds, or an HTTP date: the time until then, zero when it has passed), Gemini's
/// `RetryInfo.retryDelay`, or OpenAI's "Please try again in 1.5s" in the message, in that
/// order.
pub fn retry_hint(error: &Error) -> Option<Duration> {
    let details = error.provider_details()?;
    let header = |name: &str| {
        details
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim())
    };
    if let Some(ms) = header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()) {
        return seconds::from_secs(ms / 1000.0);
    }
    if let Some(value) = header("retry-after") {
        if let Ok(s) = value.parse::<f64>() {
            return seconds::from_secs(s);
        }
        if let Some(wait) = until_http_date(value, std::time::SystemTime::now()) {
            return Some(wait);
        }
    }
    if let Some(s) = classify::read_error_body(&details.body).retry_delay_secs {
        return seconds::from_secs(s);
    }
    try_again_in(&details.message)
}

/// The time from `now` until an HTTP date (`Wed, 21 Oct 2015 07:28:00 GMT` and the two
/// obsolete forms HTTP still accepts); zero for a date already past.
fn until_http_date(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// OpenAI's "Please try again in 20s" / "in 1.898s" / "in 336ms" / "in 6m12.48s".
fn try_again_in(message: &str) -> Option<Duration> {
    let lower = message.to_ascii_lowercase();
    let start = lower.find("try again in ")? + "try again in ".len();
    let text = &lower[start..];
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
        .unwrap_or(text.len());
    let mut total = 0.0;
    let mut rest = text[..end].trim_end_matches('.');
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..unit_len] {
            "ms" => 0.001,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += number * scale;
        rest = &rest[unit_len..];
    }
    seconds::from_secs(total)
}

/// What the loop needs besides the attempt itself.
pub(crate) struct RetryLoop<'a> {
    pub backend: &'a str,
    pub policy: &'a RetryPolicy,
    pub sleeper: &'a dyn Sleeper,
    pub cancel: &'a CancellationToken,
}

/// What one attempt gives: its result and, for a stream, when its first output came.
pub(crate) type AttemptResult<T> = (Result<T>, Option<Duration>);

impl RetryLoop<'_> {
    /// Runs `attempt` until it succeeds, fails for good, or the schedule runs out.
    pub(crate) async fn run<T, F, Fut>(&self, mut attempt: F) -> CallOutcome<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = AttemptResult<T>>,
    {
        let mut attempts: Vec<Attempt> = Vec::new();
        let mut used = std::collections::HashMap::<RetryReason, usize>::new();
        let mut waited = Duration::ZERO;
        let mut wait_before = Duration::ZERO;
        loop {
            let number = attempts.len() as u32 + 1;
            if self.cancel.is_cancelled() {
                let during = format!("before attempt {number}");
                return self.cancelled(attempts, during);
            }
            let started_at = SystemTime::now();
            let clock = Instant::now();
            let (result, first_output) = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => (Err(self.cancel_error(format!("during attempt {number}"))), None),
                r = attempt() => r,
            };
            attempts.push(Attempt {
                number,
                wait_before,
                started_at,
                duration: clock.elapsed(),
                first_output,
                status: result
                    .as_ref()
                    .err()
                    .and_then(Error::provider_details)
                    .map(|d| d.status)
                    .filter(|s| *s != 0),
                error_kind: result.as_ref().err().map(Error::kind),
                error: result.as_ref().err().map(Error::to_string),
                reference: None,
            });
            let error = match result {
                Ok(value) => {
                    return CallOutcome {
                        result: Ok(value),
                        attempts,
                        sent_body: None,
                        member: None,
                    }
                }
                Err(e) => e,
            };
            let Some(reason) = RetryReason::of(&error) else {
                return self.give_up(error, attempts, waited);
            };
            let schedule = self.policy.schedule(reason);
            let n = used.entry(reason).or_insert(0);
            let Some(planned) = schedule.get(*n).copied() else {
                return self.give_up(error, attempts, waited);
            };
            let asked = retry_hint(&error);
            let wait = planned.max(asked.unwrap_or_default());
            if let (Some(max), Some(asked)) = (self.policy.max_wait, asked) {
                if asked > max {
                    tracing::warn!(
                        backend = self.backend,
                        reason = reason.as_str(),
                        asked = %fmt_duration(asked),
                        "{}: the provider asks to wait {}, more than max_wait_seconds ({}); giving up: {error}",
                        self.backend,
                        fmt_duration(asked),
                        fmt_duration(max),
                    );
                    return self.give_up(error, attempts, waited);
                }
            }
            *n += 1;
            tracing::warn!(
                backend = self.backend,
                reason = reason.as_str(),
                wait = %fmt_duration(wait),
                retry = *n,
                of = schedule.len(),
                "{}: {}; waiting {} before attempt {} (retry {} of {} for {}): {error}",
                self.backend,
                reason.as_str(),
                fmt_duration(wait),
                number + 1,
                *n,
                schedule.len(),
                reason.as_str(),
            );
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
                    let during = format!(
                        "while waiting {} before attempt {} ({})",
                        fmt_duration(wait),
                        number + 1,
                        reason.as_str()
                    );
                    return self.cancelled(attempts, during);
                }
                _ = self.sleeper.sleep(wait) => {}
            }
            waited += wait;
            wait_before = wait;
        }
    }

    fn cancel_error(&self, during: String) -> Error {
        Error::Cancelled {
            backend: self.backend.to_string(),
            during,
        }
    }

    fn cancelled<T>(&self, attempts: Vec<Attempt>, during: String) -> CallOutcome<T> {
        CallOutcome {
            result: Err(self.cancel_error(during)),
            attempts,
            sent_body: None,
            member: None,
        }
    }

    /// The final error, with the attempts and waits counted in.
    fn give_up<T>(&self, error: Error, attempts: Vec<Attempt>, waited: Duration) -> CallOutcome<T> {
        let count = attempts.len() as u32;
        let error = match error {
            Error::RateLimited { last, .. } => Error::RateLimited {
                attempts: count,
                waited,
                last,
            },
            Error::ProviderReplyMalformed {
                backend,
                reason,
                body,
                ..
            } => Error::ProviderReplyMalformed {
                backend,
                reason,
                attempts: count,
                body,
            },
            other => other,
        };
        CallOutcome {
            result: Err(error),
            attempts,
            sent_body: None,
            member: None,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_http_date_retry_after_is_the_time_until_then() {
        let now = httpdate::parse_http_date("Sun, 29 Nov 2026 21:00:00 GMT").unwrap();
        let wait = |v: &str| until_http_date(v, now);
        assert_eq!(
            wait("Sun, 29 Nov 2026 21:01:30 GMT"),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            wait("Sunday, 29-Nov-26 21:00:10 GMT"),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            wait("Sun Nov 29 21:00:05 2026"),
            Some(Duration::from_secs(5))
        );
        assert_eq!(wait("Sun, 29 Nov 2026 20:59:00 GMT"), Some(Duration::ZERO));
        assert_eq!(wait("soon"), None);
    }

    use super::*;

    #[test]
    fn openai_try_again_messages() {
        let cases = [
            (
                "Rate limit reached. Please try again in 20s. Visit…",
                20_000,
            ),
            ("Please try again in 1.898s.", 1_898),
            ("Please try again in 336ms.", 336),
            ("Please try again in 6m12.48s.", 372_480),
        ];
        for (message, ms) in cases {
            assert_eq!(
                try_again_in(message),
                Some(Duration::from_millis(ms)),
                "{message}"
            );
        }
        assert_eq!(try_again_in("try again later"), None);
    }

    #[test]
    fn policy_yaml_with_units_and_defaults() {
        let policy: RetryPolicy =
            serde_yaml_ng::from_str("rate_limited: [1, \"500ms\", 2.5]\noverloaded: [\"2m\"]\n")
                .unwrap();
        assert_eq!(
            policy.rate_limited,
            vec![
                Duration::from_secs(1),
                Duration::from_millis(500),
                Duration::from_millis(2500)
            ]
        );
        assert_eq!(policy.overloaded, vec![Duration::from_secs(120)]);
        assert_eq!(policy.malformed, RetryPolicy::default().malformed);
        assert_eq!(policy.max_wait, Some(Duration::from_secs(600)));
    }

    #[test]
    fn policy_yaml_errors_say_what_is_accepted() {
        let e = serde_yaml_ng::from_str::<RetryPolicy>("rate_limited: [soon]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`soon` is not a wait"), "{e}");
        assert!(e.contains("\"500ms\""), "{e}");
        let e = serde_yaml_ng::from_str::<RetryPolicy>("rate_limit: [1]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `rate_limit`"), "{e}");
        assert!(e.contains("rate_limited"), "{e}");
    }
}
