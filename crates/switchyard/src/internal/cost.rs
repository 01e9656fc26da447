//! The cost of a call from the backend's price for the model and the canonical usage.
//!
//! Rules (see `docs/recording.md`):
//! - uncached input (`input − cached_input − cache_write`) at the `input` price;
//! - cached input at `cached_input`, or at `input` when the model has no separate cached
//!   price (the registry's documented meaning of an absent `cached_input`);
//! - cache writes at `cache_write`, or at `input` when absent;
//! - output at the `output` price. Reasoning tokens are already inside `output` in the
//!   canonical usage, so they are billed at the output price once, never added again;
//! - a call of several turns costs the sum of its turns;
//! - no price means an unknown cost (`None`), never zero; a price of 0 is a bill of zero.

use crate::registry::Price;
use switchyard_wire::Usage;

/// The cost in USD of one turn's usage, or `None` when the model has no price.
pub fn cost(price: Option<&Price>, usage: &Usage) -> Option<f64> {
    price.map(|p| cost_at(p, usage))
}

/// The cost in USD of `usage` at `price`: the formula every door and the gateway's
/// running counts (a stream's budget stop, its metrics) use.
pub fn cost_at(price: &Price, usage: &Usage) -> f64 {
    let per_token = |per_million: f64| per_million / 1_000_000.0;
    let uncached = usage.uncached_input() as f64 * per_token(price.input);
    let cached = usage.cached_input as f64 * per_token(price.cached_input.unwrap_or(price.input));
    let written = usage.cache_write as f64 * per_token(price.cache_write.unwrap_or(price.input));
    let output = usage.output as f64 * per_token(price.output);
    uncached + cached + written + output
}

/// The cost of a call of several turns: the sum of each turn's cost (`None` without a
/// price).
pub fn cost_of_turns(price: Option<&Price>, turns: &[Usage]) -> Option<f64> {
    let price = price?;
    Some(turns.iter().filter_map(|u| cost(Some(price), u)).sum())
}

/// The cost of a call at the backend's price, `None` without one ([`priced_or_reported`]
/// then takes a cost the provider reported itself; the record keeps that report in
/// `provider_cost_usd` too).
pub fn call_cost(price: Option<&Price>, usage: Option<&Usage>) -> Option<f64> {
    match usage {
        Some(u) => cost(price, u),
        // A priced call that reported no usage (a failure) cost nothing we can know of;
        // an unpriced one stays unknown.
        None => price.map(|_| 0.0),
    }
}

/// The cost of a call, the one rule every door uses (the record's `cost_usd`, the
/// budget, `ask`'s usage line, Python's `reply.cost_usd`): the price when the model has
/// one; else the cost the provider reported itself (Claude Code's `total_cost_usd`);
/// else unknown.
pub fn priced_or_reported(
    price: Option<&Price>,
    usage: Option<&Usage>,
    reported: Option<f64>,
) -> Option<f64> {
    match price {
        Some(_) => call_cost(price, usage),
        None => reported,
    }
}

/// A cost for people: `$0.0123`, or `unknown`.
pub fn fmt_cost(cost: Option<f64>) -> String {
    match cost {
        Some(c) => {
            let text = format!("{c:.6}");
            format!("${}", text.trim_end_matches('0').trim_end_matches('.'))
        }
        None => "unknown".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard_wire::{codec, Dialect};

    fn price() -> Price {
        Price {
            input: 2.0,
            cached_input: Some(0.5),
            cache_write: Some(2.5),
            output: 8.0,
        }
    }

    fn usage_of(dialect: Dialect, body: &str) -> Usage {
        codec(dialect)
            .decode_reply(body.as_bytes())
            .expect("fixture decodes")
            .usage
            .expect("fixture has usage")
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn chat_cached_tokens_are_a_subset_of_prompt_tokens() {
        let usage = usage_of(
            Dialect::Chat,
            r#"{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],
               "usage":{"prompt_tokens":1000,"completion_tokens":200,"total_tokens":1200,
               "prompt_tokens_details":{"cached_tokens":600},"completion_tokens_details":{"reasoning_tokens":150}}}"#,
        );
        // 400 uncached at 2, 600 cached at 0.5, 200 output (150 reasoning inside) at 8.
        let expected = (400.0 * 2.0 + 600.0 * 0.5 + 200.0 * 8.0) / 1e6;
        let got = cost(Some(&price()), &usage).unwrap();
        assert!(close(got, expected), "{got} != {expected}");
    }

    #[test]
    fn messages_cache_read_and_creation_are_separate_from_input_tokens() {
        let usage = usage_of(
            Dialect::Messages,
            r#"{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[{"type":"text","text":"hi"}],
               "stop_reason":"end_turn","stop_sequence":null,
               "usage":{"input_tokens":100,"cache_read_input_tokens":3000,"cache_creation_input_tokens":500,"output_tokens":40}}"#,
        );
        assert_eq!(usage.input, 3600);
        let expected = (100.0 * 2.0 + 3000.0 * 0.5 + 500.0 * 2.5 + 40.0 * 8.0) / 1e6;
        let got = cost(Some(&price()), &usage).unwrap();
        assert!(close(got, expected), "{got} != {expected}");
    }

    #[test]
    fn gemini_thoughts_are_billed_at_the_output_price_once() {
        let usage = usage_of(
            Dialect::Gemini,
            r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP","index":0}],
               "usageMetadata":{"promptTokenCount":500,"cachedContentTokenCount":100,"candidatesTokenCount":50,"thoughtsTokenCount":300,"totalTokenCount":850},
               "modelVersion":"gemini-2.5-pro"}"#,
        );
        assert_eq!(usage.output, 350);
        assert_eq!(usage.reasoning, 300);
        let expected = (400.0 * 2.0 + 100.0 * 0.5 + 350.0 * 8.0) / 1e6;
        let got = cost(Some(&price()), &usage).unwrap();
        assert!(close(got, expected), "{got} != {expected}");
    }

    #[test]
    fn responses_reasoning_is_inside_output_tokens() {
        let usage = usage_of(
            Dialect::Responses,
            r#"{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-5",
               "output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],
               "usage":{"input_tokens":800,"input_tokens_details":{"cached_tokens":200},"output_tokens":500,"output_tokens_details":{"reasoning_tokens":450},"total_tokens":1300}}"#,
        );
        assert_eq!(usage.reasoning, 450);
        let expected = (600.0 * 2.0 + 200.0 * 0.5 + 500.0 * 8.0) / 1e6;
        let got = cost(Some(&price()), &usage).unwrap();
        assert!(close(got, expected), "{got} != {expected}");
    }

    #[test]
    fn absent_cached_prices_fall_back_to_the_input_price() {
        let p = Price {
            input: 1.0,
            cached_input: None,
            cache_write: None,
            output: 4.0,
        };
        let u = Usage {
            input: 1000,
            cached_input: 300,
            cache_write: 200,
            output: 10,
            reasoning: 0,
        };
        let got = cost(Some(&p), &u).unwrap();
        assert!(close(got, (1000.0 * 1.0 + 10.0 * 4.0) / 1e6));
    }

    #[test]
    fn unknown_price_is_unknown_and_zero_price_is_zero() {
        let u = Usage {
            input: 10,
            output: 10,
            ..Usage::default()
        };
        assert_eq!(cost(None, &u), None);
        assert_eq!(call_cost(None, Some(&u)), None);
        assert_eq!(call_cost(None, None), None);
        let free = Price {
            input: 0.0,
            cached_input: None,
            cache_write: None,
            output: 0.0,
        };
        assert_eq!(cost(Some(&free), &u), Some(0.0));
        assert_eq!(fmt_cost(None), "unknown");
    }

    #[test]
    fn turns_are_summed() {
        let u = Usage {
            input: 1_000_000,
            output: 1_000_000,
            ..Usage::default()
        };
        let got = cost_of_turns(Some(&price()), &[u, u]).unwrap();
        assert!(close(got, 2.0 * (2.0 + 8.0)));
        assert_eq!(cost_of_turns(None, &[u]), None);
    }
}
