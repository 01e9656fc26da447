//! Budgets per client key: `budget_usd` per `budget_period` (a UTC day, week, calendar
//! month, or the store's whole life), counted with the calls' cost from the backends'
//! prices.
//!
//! **A budget holds under concurrency.** Before a call is sent it reserves its most
//! possible cost ([`CallBound`]: the prompt bounded by the bytes of its body — no
//! tokenizer makes more tokens than bytes — plus its output limit, at the model's
//! prices); it is refused when the settled spend, what the calls in flight hold and its
//! own bound together would pass the budget, and it settles to its real cost when it
//! ends. So a key's spend never passes its budget while the bounds hold: always for a
//! call that states its output limit (`max_tokens`…), and otherwise with the backend's
//! `max_output_tokens` (or context window) as the limit. A call whose model has no price
//! cannot be held to a dollar budget: it is refused, saying so, unless the key says
//! `unknown_cost: allow` (then it counts nothing).
//!
//! A provider that ignores the output limit it was sent would spend past the hold: a
//! stream is stopped there, and a whole reply past it flagged (`budget_stop.rs`).
//!
//! At start the spend of the current period is read back from the store's
//! `calls.sqlite` (`client_key`, `cost_usd`, `time`), so a restarted gateway keeps
//! counting.

use crate::config::BudgetPeriod;
use crate::errors::{ApiError, Category};
use chrono::{DateTime, Datelike, Duration as Days, NaiveDate, Utc};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use switchyard::budget::{Budget, BudgetTracker, Reservation, Spend};
use switchyard::registry::Price;
use switchyard::Dialect;

/// The output a call that states no limit is reserved for when its backend declares
/// neither `max_output_tokens` nor a context window.
pub(crate) const DEFAULT_OUTPUT_BOUND: u64 = 32_768;

/// The most a call can cost, and how that was reckoned (for a refusal's message).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CallBound {
    /// Dollars.
    pub usd: f64,
    /// Prompt tokens at most (the body's bytes).
    pub prompt_tokens: u64,
    /// Output tokens at most.
    pub output_tokens: u64,
    /// Where the output limit came from.
    pub output_from: &'static str,
}

impl CallBound {
    /// The bound of a call sending `body_bytes`, stating `stated` as its output limit
    /// (else the backend's `limit`), at `price`.
    pub fn new(price: &Price, body_bytes: usize, stated: Option<u64>, limit: Option<u64>) -> Self {
        let prompt_tokens = body_bytes as u64;
        let (output_tokens, output_from) = match (stated, limit) {
            (Some(n), _) => (n, "its output limit"),
            (None, Some(n)) => (n, "the backend's output limit (the call states none)"),
            (None, None) => (
                DEFAULT_OUTPUT_BOUND,
                "the default output bound (the call and its backend state none)",
            ),
        };
        // The dearest way the prompt can be billed: a cache write costs more than input.
        let input = price.input.max(price.cache_write.unwrap_or(0.0));
        let usd = (prompt_tokens as f64 * input + output_tokens as f64 * price.output) / 1e6;
        CallBound {
            usd,
            prompt_tokens,
            output_tokens,
            output_from,
        }
    }
}

/// The output limit a client's body states, in its own dialect: `max_tokens` (Messages;
/// chat's older field), `max_completion_tokens` (chat), `max_output_tokens` (Responses),
/// `generationConfig.maxOutputTokens` (Gemini).
pub(crate) fn stated_output_limit(dialect: Dialect, raw: &crate::raw::RawBody<'_>) -> Option<u64> {
    let number = |key: &str| raw.raw(key).and_then(|v| v.trim().parse::<u64>().ok());
    match dialect {
        Dialect::Chat => number("max_completion_tokens").or_else(|| number("max_tokens")),
        Dialect::Responses => number("max_output_tokens"),
        Dialect::Messages => number("max_tokens"),
        Dialect::Gemini => {
            let config: serde_json::Value =
                serde_json::from_str(raw.raw("generationConfig")?).ok()?;
            config.get("maxOutputTokens")?.as_u64()
        }
    }
}

/// One key's budget.
#[derive(Debug)]
pub struct KeyBudget {
    usd: f64,
    period: BudgetPeriod,
    unknown_cost_allowed: bool,
    /// The start of the period being counted and its tracker.
    current: Mutex<(Option<DateTime<Utc>>, Arc<BudgetTracker>)>,
}

impl KeyBudget {
    /// A budget with nothing spent in the current period.
    pub fn new(usd: f64, period: BudgetPeriod, unknown_cost_allowed: bool) -> Self {
        let start = period_start(period, Utc::now());
        KeyBudget {
            usd,
            period,
            unknown_cost_allowed,
            current: Mutex::new((start, Arc::new(BudgetTracker::new(budget(usd))))),
        }
    }

    /// The budget in USD.
    pub fn usd(&self) -> f64 {
        self.usd
    }

    /// The period.
    pub fn period(&self) -> BudgetPeriod {
        self.period
    }

    /// Where the current period starts, as the calls index writes times (`None`: the
    /// budget covers every call).
    pub fn since(&self) -> Option<String> {
        self.lock()
            .0
            .map(|t| switchyard::record::timestamp(SystemTime::from(t)))
    }

    /// Starts the current period from `spent_usd` already spent (read from the store).
    pub fn resume(&self, spent_usd: f64) {
        let mut current = self.lock();
        current.1 = Arc::new(BudgetTracker::resumed(
            budget(self.usd),
            Spend {
                usd: spent_usd,
                ..Spend::default()
            },
        ));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (Option<DateTime<Utc>>, Arc<BudgetTracker>)> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves a call's most possible cost (`None`: the model has no price), or refuses
    /// it (429, `insufficient_quota` / `billing_error` / `RESOURCE_EXHAUSTED`, marked not
    /// to be retried) saying which budget, how much is spent and held, and what the call
    /// could cost.
    pub fn reserve(
        &self,
        key: &str,
        model: &str,
        bound: Option<CallBound>,
    ) -> Result<Reservation, ApiError> {
        let now = Utc::now();
        let tracker = {
            let mut current = self.lock();
            let start = period_start(self.period, now);
            if start != current.0 {
                // A new period: nothing spent in it yet. Calls still in flight settle
                // into the period they started in.
                *current = (start, Arc::new(BudgetTracker::new(budget(self.usd))));
            }
            current.1.clone()
        };
        let reserved = match bound {
            Some(b) => tracker.reserve_up_to("", b.usd),
            None if self.unknown_cost_allowed => tracker.reserve(""),
            None => return Err(self.no_price(key, model)),
        };
        reserved.map_err(|_| {
            let spend = tracker.spend();
            let held = (spend.in_flight > 0).then_some((spend.reserved_usd, spend.in_flight));
            self.exceeded(key, spend.usd, held, bound, now)
        })
    }

    /// Whether a call whose model has no price may pass, counting nothing.
    pub fn unknown_cost_allowed(&self) -> bool {
        self.unknown_cost_allowed
    }

    /// The ledger's name for the period holding `now`, as replicas sharing a store count
    /// it: `day:2026-12-02`, `week:2026-11-30` (its Monday), `month:2026-12`, `total`.
    pub fn period_label(&self, now: DateTime<Utc>) -> String {
        let start = period_start(self.period, now).map(|t| t.date_naive());
        match (self.period, start) {
            (BudgetPeriod::Day, Some(d)) => format!("day:{d}"),
            (BudgetPeriod::Week, Some(d)) => format!("week:{d}"),
            (BudgetPeriod::Month, Some(d)) => format!("month:{}", d.format("%Y-%m")),
            _ => "total".to_string(),
        }
    }

    /// The refusal of a call to a model without a price.
    pub(crate) fn no_price(&self, key: &str, model: &str) -> ApiError {
        ApiError::new(
            Category::Quota,
            format!(
                "model `{model}` has no price, so a call to it cannot be held to key `{key}`'s budget of ${} {}; the call was not made. Give the model a price (`prices:` of its backend), or write `unknown_cost: allow` on the key to let such calls through uncounted.",
                trim(self.usd),
                period_words(self.period)
            ),
        )
        .not_retryable()
    }

    /// The refusal of a call that would take the key past its budget: what is spent,
    /// what calls in flight hold (dollars and, when known, how many calls), what this
    /// one could cost, and when the budget starts again.
    pub(crate) fn exceeded(
        &self,
        key: &str,
        spent: f64,
        held: Option<(f64, u64)>,
        bound: Option<CallBound>,
        now: DateTime<Utc>,
    ) -> ApiError {
        let next = period_end(self.period, now);
        let mut message = format!(
            "budget exceeded for key `{key}`: its budget is ${} {}, and ${spent:.6} is spent",
            trim(self.usd),
            period_words(self.period),
        );
        match held {
            Some((usd, 0)) if usd > 0.0 => {
                message.push_str(&format!(" and ${usd:.6} held by calls in flight"))
            }
            Some((usd, calls)) if calls > 0 => {
                message.push_str(&format!(" and ${usd:.6} held by {calls} calls in flight"))
            }
            _ => {}
        }
        if let Some(b) = bound {
            message.push_str(&format!(
                "; this call could cost up to ${:.6} ({} prompt tokens at most, the bytes of its body, and {} output tokens, {}) at the model's prices",
                b.usd, b.prompt_tokens, b.output_tokens, b.output_from
            ));
        }
        message.push_str("; the call was not made.");
        match next {
            Some(t) => message.push_str(&format!(
                " The budget starts again at {}.",
                t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
            )),
            None => message.push_str(" Ask the gateway's operator to raise it."),
        }
        let mut e = ApiError::new(Category::Quota, message).not_retryable();
        if let Some(t) = next {
            let secs = (t - now).num_seconds().max(1) as u64;
            e = e.with_retry_after(Duration::from_secs(secs));
        }
        e
    }
}

/// A call's hold on its key's budget, settled with its cost when it ends (given back
/// whole when dropped unsettled): in this process's tracker, or in the ledger replicas
/// share (`pg/`).
pub(crate) enum Held {
    /// This process's tracker.
    Local(Reservation),
    /// The shared ledger.
    Shared(crate::store::pg::SharedHold),
}

impl Held {
    /// Settles the hold with the call's usage and cost.
    pub(crate) fn settle(self, usage: Option<&switchyard::Usage>, cost: Option<f64>) {
        match self {
            Held::Local(r) => r.settle(usage, cost),
            Held::Shared(h) => h.settle(cost),
        }
    }
}

/// Reserves the most a call can cost from `key`'s budget: in the shared ledger when the
/// gateway has a PostgreSQL store, else in this process.
pub(crate) async fn hold(
    pg: Option<&crate::store::pg::SharedStore>,
    key: &crate::account::keys::Key,
    budget: &KeyBudget,
    model: &str,
    bound: Option<CallBound>,
) -> Result<Held, ApiError> {
    match pg {
        // Boxed: the database's future is large, and held inline it would grow every
        // call's future (moved by value through axum and hyper) with or without a database.
        Some(pg) => Box::pin(pg.reserve(&key.name, budget, model, bound))
            .await
            .map(Held::Shared),
        None => budget.reserve(&key.name, model, bound).map(Held::Local),
    }
}

fn budget(usd: f64) -> Budget {
    Budget {
        max_usd: Some(usd),
        ..Budget::default()
    }
}

/// A budget for people: `$0.1 per day (UTC)`.
pub(crate) fn describe(b: &KeyBudget) -> String {
    format!("${} {}", trim(b.usd), period_words(b.period))
}

fn trim(usd: f64) -> String {
    let text = format!("{usd:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn period_words(p: BudgetPeriod) -> &'static str {
    match p {
        BudgetPeriod::Day => "per day (UTC)",
        BudgetPeriod::Week => "per week (Monday to Sunday, UTC)",
        BudgetPeriod::Month => "per calendar month (UTC)",
        BudgetPeriod::Total => "in total",
    }
}

fn midnight(d: NaiveDate) -> Option<DateTime<Utc>> {
    d.and_hms_opt(0, 0, 0).map(|t| t.and_utc())
}

/// Where the period holding `now` starts (`None` for `total`).
pub(crate) fn period_start(p: BudgetPeriod, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let today = now.date_naive();
    match p {
        BudgetPeriod::Day => midnight(today),
        BudgetPeriod::Week => {
            midnight(today - Days::days(i64::from(today.weekday().num_days_from_monday())))
        }
        BudgetPeriod::Month => midnight(today.with_day(1)?),
        BudgetPeriod::Total => None,
    }
}

/// Where the period holding `now` ends (`None` for `total`).
pub(crate) fn period_end(p: BudgetPeriod, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let start = period_start(p, now)?;
    match p {
        BudgetPeriod::Day => Some(start + Days::days(1)),
        BudgetPeriod::Week => Some(start + Days::days(7)),
        BudgetPeriod::Month => {
            let d = start.date_naive();
            let (y, m) = if d.month() == 12 {
                (d.year() + 1, 1)
            } else {
                (d.year(), d.month() + 1)
            };
            midnight(NaiveDate::from_ymd_opt(y, m, 1)?)
        }
        BudgetPeriod::Total => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn periods_start_and_end_on_utc_boundaries() {
        // A Wednesday.
        let now = Utc.with_ymd_and_hms(2025, 12, 31, 15, 4, 5).unwrap();
        let at = |y, m, d| Some(Utc.with_ymd_and_hms(y, m, d, 0, 0, 0).unwrap());
        assert_eq!(period_start(BudgetPeriod::Day, now), at(2025, 12, 31));
        assert_eq!(period_end(BudgetPeriod::Day, now), at(2026, 1, 1));
        assert_eq!(period_start(BudgetPeriod::Week, now), at(2025, 12, 29));
        assert_eq!(period_end(BudgetPeriod::Week, now), at(2026, 1, 5));
        assert_eq!(period_start(BudgetPeriod::Month, now), at(2025, 12, 1));
        assert_eq!(period_end(BudgetPeriod::Month, now), at(2026, 1, 1));
        assert_eq!(period_start(BudgetPeriod::Total, now), None);
    }

    #[test]
    fn a_key_past_its_budget_is_refused_with_the_spend() {
        let b = KeyBudget::new(0.01, BudgetPeriod::Day, false);
        b.resume(0.004);
        b.reserve("alice", "m", None)
            .map(|_| ())
            .expect_err("no price, no call");
        let tiny = |usd| CallBound {
            usd,
            prompt_tokens: 1,
            output_tokens: 1,
            output_from: "its output limit",
        };
        b.reserve("alice", "m", Some(tiny(0.001)))
            .unwrap()
            .settle(None, Some(0.007));
        let e = b.reserve("alice", "m", Some(tiny(0.001))).unwrap_err();
        assert_eq!(e.category, Category::Quota);
        assert!(
            e.message
                .starts_with("budget exceeded for key `alice`: its budget is $0.01 per day (UTC), and $0.011000 is spent"),
            "{}",
            e.message
        );
        assert!(e.retry_after.is_some());
    }
}
