//! Budgets per client key: `budget_usd` per `budget_period` (a UTC day, week, calendar
//! month, or the store's whole life), counted with the calls' cost from the backends'
//! prices.
//!
//! Each key's spend is a library [`BudgetTracker`]: a call reserves its place before it
//! is sent and settles its cost when it ends, and a call is let through only while the
//! settled spend is under the budget — so concurrent calls overshoot by at most what
//! the calls already in flight spend. At start the spend of the current period is read
//! back from the store's `calls.sqlite` (`client_key`, `cost_usd`, `time`), so a
//! restarted gateway keeps counting. A call of unknown cost (a model without a price)
//! counts nothing: the operator gives such models a price or keeps them off budgeted
//! keys (`models:` of the key).

use crate::config::BudgetPeriod;
use crate::errors::{ApiError, Category};
use chrono::{DateTime, Datelike, Duration as Days, NaiveDate, Utc};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use switchyard::budget::{Budget, BudgetTracker, Reservation, Spend};

/// One key's budget.
#[derive(Debug)]
pub struct KeyBudget {
    usd: f64,
    period: BudgetPeriod,
    /// The start of the period being counted and its tracker.
    current: Mutex<(Option<DateTime<Utc>>, Arc<BudgetTracker>)>,
}

impl KeyBudget {
    /// A budget with nothing spent in the current period.
    pub fn new(usd: f64, period: BudgetPeriod) -> Self {
        let start = period_start(period, Utc::now());
        KeyBudget {
            usd,
            period,
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

    /// Reserves a call's place, or refuses it (429, `insufficient_quota` /
    /// `billing_error` / `RESOURCE_EXHAUSTED`, marked not to be retried) saying which
    /// budget and how much is spent.
    pub fn reserve(&self, key: &str) -> Result<Reservation, ApiError> {
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
        tracker.reserve("").map_err(|_| {
            let spend = tracker.spend();
            let next = period_end(self.period, now);
            let mut message = format!(
                "budget exceeded for key `{key}`: its budget is ${} {}, and ${:.6} is spent{}; the call was not made.",
                trim(self.usd),
                period_words(self.period),
                spend.usd,
                if spend.in_flight > 0 {
                    format!(" ({} calls still in flight)", spend.in_flight)
                } else {
                    String::new()
                }
            );
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
        })
    }
}

fn budget(usd: f64) -> Budget {
    Budget {
        max_usd: Some(usd),
        ..Budget::default()
    }
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
pub fn period_start(p: BudgetPeriod, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
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
pub fn period_end(p: BudgetPeriod, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
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
        let b = KeyBudget::new(0.01, BudgetPeriod::Day);
        b.resume(0.004);
        b.reserve("alice").unwrap().settle(None, Some(0.007));
        let e = b.reserve("alice").unwrap_err();
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
