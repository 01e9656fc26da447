//! The reservation is the promise. A call of a key with a budget holds its most possible
//! cost before it is sent (`budgets.rs`: its prompt bounded by its body's bytes, plus its
//! output limit, at the model's prices); a provider that goes on past `max_tokens` would
//! spend past that hold, and a thousand such calls past the budget itself.
//!
//! So a stream's running cost is checked against its hold as it passes — the prompt as
//! reported (else the bytes sent ÷ 4) and the output as reported so far, or the bytes of
//! output relayed ÷ 4 when that is more: the rule a client that leaves is billed by
//! ([`crate::meter::unfinished::bill_unfinished`]). Once it passes the hold, or would pass it with one
//! more step as large as the largest so far (a thousand streams each passing by one delta
//! would together pass the budget by a thousand deltas), nothing more is relayed:
//! the upstream connection is dropped (which ends the generation at real providers), the
//! client gets its dialect's error event naming the key, its budget, the hold and what
//! was generated, and the record bills what was generated (`over_reservation`,
//! `stopped: true`). A whole reply arrives whole and cannot be cut: it is billed as it
//! is, its record flagged (`stopped: false`) and counted in `/metrics`.

use crate::account::budgets::CallBound;
use crate::errors::{ApiError, Category};
use crate::meter::unfinished::{unfinished_usage, SeenSoFar};
use switchyard::registry::Price;
use switchyard::Usage;

/// A stream whose running cost reached its hold.
#[derive(Debug, Clone)]
pub(crate) struct Passed {
    /// The hold.
    pub held: CallBound,
    /// The usage billed: what was generated.
    pub usage: Usage,
    /// Its cost.
    pub cost_usd: f64,
}

/// A budgeted stream's running cost, checked on every chunk (no allocation).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Running {
    /// The cost at the last check.
    last_usd: f64,
    /// The largest rise between two checks: what the next chunk may add.
    largest_step_usd: f64,
}

impl Running {
    /// Whether a stream that has shown `seen`, after sending `sent_bytes` upstream, at
    /// `price`, passed its hold `held` or would pass it with one more step as large as
    /// its largest yet (past the rounding slack of the budget's sums).
    pub(crate) fn passed(
        &mut self,
        held: &CallBound,
        price: &Price,
        sent_bytes: usize,
        seen: SeenSoFar,
    ) -> Option<Passed> {
        let usage = unfinished_usage(seen.usage, sent_bytes, seen.output_bytes);
        let cost_usd = switchyard::internal::cost::cost_at(price, &usage);
        // The first check has no step before it: the prompt is not a step of output.
        if self.last_usd > 0.0 {
            self.largest_step_usd = self.largest_step_usd.max(cost_usd - self.last_usd);
        }
        self.last_usd = cost_usd;
        over(held, cost_usd + self.largest_step_usd).then_some(Passed {
            held: *held,
            usage,
            cost_usd,
        })
    }
}

/// Whether a call that cost `cost_usd` cost more than its hold `held`.
pub(crate) fn over(held: &CallBound, cost_usd: f64) -> bool {
    cost_usd > held.usd + switchyard::budget::ROUNDING_SLACK_USD
}

/// The error a stream stopped at its hold ends with (its dialect's error event), and the
/// record's: which key and budget, what was held and how it was reckoned, what was
/// generated, and what to do.
pub(crate) fn stopped(key: Option<&crate::account::keys::Key>, passed: &Passed) -> ApiError {
    let budget = key
        .and_then(|k| k.budget.as_ref())
        .map(|b| format!("its budget of {}", crate::account::budgets::describe(b)))
        .unwrap_or_else(|| "its budget".into());
    let b = &passed.held;
    ApiError::new(
        Category::Quota,
        format!(
            "stopped at the budget's reservation: key `{key}` held ${held:.6} of {budget} for this call ({prompt} prompt tokens at most and {output} output tokens, {from}, at the model's prices), and the stream reached that: {generated} output tokens generated, ${cost:.6} with the prompt, its next delta past it (the provider went on past the output limit). The stream was stopped and the upstream request cancelled; what was generated is billed. Ask for less output (`max_tokens`), or use a model that keeps to it.",
            key = key.map_or("-", |k| k.name.as_str()),
            held = b.usd,
            prompt = b.prompt_tokens,
            output = b.output_tokens,
            from = b.output_from,
            generated = passed.usage.output,
            cost = passed.cost_usd,
        ),
    )
    .not_retryable()
}

/// The record's error kind of a stream stopped at its hold.
pub(crate) const STOPPED_KIND: &str = "gateway:OverReservation";

#[cfg(test)]
mod tests {
    use super::*;

    fn price() -> Price {
        Price {
            input: 1.0,
            cached_input: None,
            cache_write: None,
            output: 2.0,
        }
    }

    #[test]
    fn a_stream_passes_its_hold_once_its_output_outgrows_the_output_limit() {
        // A 400-byte body stating 100 output tokens: held 400 × $1 + 100 × $2 per million.
        let held = CallBound::new(&price(), 400, Some(100), None);
        let seen = |usage, output_bytes| SeenSoFar {
            usage,
            output_bytes,
        };
        // The prompt estimated as 100 tokens (400 bytes ÷ 4): $100 + output × $2 ≤ $600
        // holds up to 250 output tokens (1,000 bytes relayed).
        let mut running = Running::default();
        assert!(running
            .passed(&held, &price(), 400, seen(None, 1000))
            .is_none());
        let past = running
            .passed(&held, &price(), 400, seen(None, 1004))
            .expect("past");
        assert_eq!(past.usage.output, 251);
        assert!((past.cost_usd - 602e-6).abs() < 1e-12, "{past:?}");
        // Steps of 10 tokens: stopped at 250, the hold, where the next step would pass it.
        let mut running = Running::default();
        let stopped = (0..30)
            .find_map(|i| running.passed(&held, &price(), 400, seen(None, 40 * i)))
            .expect("stopped");
        assert_eq!(stopped.usage.output, 250);
        // A running count the provider reports counts when it is more than the bytes.
        let reported = Usage {
            input: 100,
            output: 300,
            ..Usage::default()
        };
        let mut running = Running::default();
        assert!(running
            .passed(&held, &price(), 400, seen(Some(reported), 8))
            .is_some());
        // An absurd count saturates rather than wraps, and is past any hold.
        let absurd = Usage {
            input: u64::MAX,
            output: u64::MAX,
            ..Usage::default()
        };
        let past = Running::default()
            .passed(&held, &price(), 400, seen(Some(absurd), 8))
            .unwrap();
        assert!(past.cost_usd.is_finite() && past.cost_usd > 1e13);
    }
}
