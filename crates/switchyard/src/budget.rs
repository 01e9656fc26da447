//! A run's budget: `budget: {max_usd, max_calls, max_tokens, exclude_roles, unknown_cost}`.
//!
//! Checked before each call. A call reserves its place before it starts and settles its
//! tokens and cost when it ends, so concurrent calls cannot together overshoot:
//! - `max_calls` is exact: a call counts from the moment it is let through;
//! - `max_usd` and `max_tokens` let a call through only while the settled spend is under
//!   the limit, so the overshoot is at most what the calls already in flight spend.
//! - a stream holds what it has spent so far in `max_usd` while it streams
//!   (`RunningHold`), and is stopped once the run's settled spend and what its streams
//!   in flight hold would pass `max_usd` with its next step (as large as its largest yet):
//!   a provider that goes on past `max_tokens` cannot take the run past its budget by
//!   more than a step per stream. A whole reply arrives whole: it is billed whole.

use crate::error::{Error, Result};
use crate::registry::Price;
use serde_json::Value;
use std::collections::BTreeSet;
use std::sync::Mutex;
use switchyard_wire::Usage;

/// The limits, as read from the run config's `budget:` section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budget {
    /// Most dollars to spend (priced calls only).
    pub max_usd: Option<f64>,
    /// Most calls to make (failed ones included).
    pub max_calls: Option<u64>,
    /// Most tokens (input plus output) to use.
    pub max_tokens: Option<u64>,
    /// Roles whose calls are neither checked nor counted.
    pub exclude_roles: BTreeSet<String>,
    /// `unknown_cost: allow`: a dollar budget accepts models without a price (their
    /// calls count as calls and tokens, not dollars).
    pub allow_unknown_cost: bool,
}

/// The fields of `budget:`.
pub const FIELDS: &[&str] = &[
    "max_usd",
    "max_calls",
    "max_tokens",
    "exclude_roles",
    "unknown_cost",
];

/// One problem of a run config's budget: the key path at fault (`["budget", "max_usd"]`,
/// or `["unknown_cost"]` for the top-level key) and what is wrong and accepted.
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetProblem {
    /// The key path in the run config.
    pub path: Vec<String>,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl BudgetProblem {
    fn new(path: &[&str], message: String) -> Self {
        BudgetProblem {
            path: path.iter().map(|s| s.to_string()).collect(),
            message,
        }
    }
}

impl Budget {
    /// Reads the `budget:` section (and a top-level `unknown_cost: allow`) of a run
    /// config, as held unvalidated in [`crate::Config::sections`]. `None` when there is no
    /// budget section. The error lists every problem ([`Budget::read`]).
    pub fn from_sections(
        sections: &std::collections::BTreeMap<String, Value>,
    ) -> Result<Option<Budget>> {
        let (budget, problems) = Budget::read(sections);
        if problems.is_empty() {
            Ok(budget)
        } else {
            Err(bad(&problems))
        }
    }

    /// Reads the budget as far as it can, with every problem found: the one reading the
    /// run check and every command use, so both refuse the same files.
    pub fn read(
        sections: &std::collections::BTreeMap<String, Value>,
    ) -> (Option<Budget>, Vec<BudgetProblem>) {
        let mut problems = Vec::new();
        let allow_top = match sections.get("unknown_cost") {
            None => false,
            Some(v) => parse_unknown_cost(v, &["unknown_cost"], &mut problems),
        };
        let Some(section) = sections.get("budget") else {
            return (None, problems);
        };
        let mut budget = read_section(section, &mut problems);
        budget.allow_unknown_cost |= allow_top;
        (Some(budget), problems)
    }

    /// Reads a `budget:` mapping; the error lists every problem.
    pub fn from_value(value: &Value) -> Result<Budget> {
        let mut problems = Vec::new();
        let budget = read_section(value, &mut problems);
        if problems.is_empty() {
            Ok(budget)
        } else {
            Err(bad(&problems))
        }
    }

    /// Refuses, before the run starts, a dollar budget over a role whose model has no
    /// price (unless `unknown_cost: allow`). `roles` are (role, reference, price).
    pub fn check_prices<'a>(
        &self,
        roles: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a Price>)>,
    ) -> Result<()> {
        if self.max_usd.is_none() || self.allow_unknown_cost {
            return Ok(());
        }
        let unpriced: Vec<String> = roles
            .into_iter()
            .filter(|(role, _, price)| price.is_none() && !self.exclude_roles.contains(*role))
            .map(|(role, reference, _)| {
                if role.is_empty() {
                    format!("`{reference}`")
                } else {
                    format!("role `{role}` (`{reference}`)")
                }
            })
            .collect();
        if unpriced.is_empty() {
            return Ok(());
        }
        Err(Error::Config(format!(
            "the budget has max_usd but {} no price, so its spend cannot be counted: add `prices` for the model to its backend, or write `unknown_cost: allow` in the budget to count such calls as calls and tokens only",
            if unpriced.len() == 1 {
                format!("{} has", unpriced[0])
            } else {
                format!("{} have", unpriced.join(", "))
            }
        )))
    }
}

fn read_section(value: &Value, problems: &mut Vec<BudgetProblem>) -> Budget {
    let mut budget = Budget::default();
    let map = match value {
        Value::Object(m) => m,
        Value::Null => return budget,
        other => {
            problems.push(BudgetProblem::new(
                &["budget"],
                format!(
                    "`budget` must be a mapping of {}, not {}",
                    FIELDS.join(", "),
                    switchyard_wire::codec::json_type(other)
                ),
            ));
            return budget;
        }
    };
    for (key, v) in map {
        let path = ["budget", key.as_str()];
        match key.as_str() {
            "max_usd" => budget.max_usd = non_negative_number(v, &path, problems),
            "max_calls" => budget.max_calls = count(v, &path, problems),
            "max_tokens" => budget.max_tokens = count(v, &path, problems),
            "exclude_roles" => budget.exclude_roles = role_names(v, &path, problems),
            "unknown_cost" => budget.allow_unknown_cost = parse_unknown_cost(v, &path, problems),
            other => problems.push(BudgetProblem::new(
                &path,
                format!(
                    "`budget.{other}` is not a budget field{}; accepted: {}",
                    crate::internal::suggest::nearest(other, FIELDS.iter().copied())
                        .map(|n| format!(" (did you mean `{n}`?)"))
                        .unwrap_or_default(),
                    FIELDS.join(", ")
                ),
            )),
        }
    }
    budget
}

fn parse_unknown_cost(v: &Value, path: &[&str], problems: &mut Vec<BudgetProblem>) -> bool {
    match v.as_str() {
        Some("allow") => true,
        Some("refuse") => false,
        _ => {
            problems.push(BudgetProblem::new(
                path,
                format!("`{}` must be `allow` or `refuse`, not {v}", path.join(".")),
            ));
            false
        }
    }
}

fn non_negative_number(v: &Value, path: &[&str], problems: &mut Vec<BudgetProblem>) -> Option<f64> {
    match v.as_f64() {
        Some(n) if n >= 0.0 && n.is_finite() => Some(n),
        _ => {
            problems.push(BudgetProblem::new(
                path,
                format!(
                    "`{}` must be a number of dollars, 0 or more (e.g. 2.50), not {v}",
                    path.join(".")
                ),
            ));
            None
        }
    }
}

fn count(v: &Value, path: &[&str], problems: &mut Vec<BudgetProblem>) -> Option<u64> {
    if v.as_u64().is_none() {
        problems.push(BudgetProblem::new(
            path,
            format!(
                "`{}` must be a whole number, 0 or more, not {v}",
                path.join(".")
            ),
        ));
    }
    v.as_u64()
}

/// `1 call`, `2 calls`.
fn plural(n: u64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

fn role_names(v: &Value, path: &[&str], problems: &mut Vec<BudgetProblem>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let Value::Array(items) = v else {
        problems.push(BudgetProblem::new(
            path,
            format!("`{}` must be a list of role names", path.join(".")),
        ));
        return names;
    };
    for item in items {
        match item {
            Value::String(s) => {
                names.insert(s.clone());
            }
            other => problems.push(BudgetProblem::new(
                path,
                format!(
                    "`{}` holds a {}; it accepts role names (strings)",
                    path.join("."),
                    switchyard_wire::codec::json_type(other)
                ),
            )),
        }
    }
    names
}

fn bad(problems: &[BudgetProblem]) -> Error {
    let messages: Vec<&str> = problems.iter().map(|p| p.message.as_str()).collect();
    Error::Config(format!("run config: {}", messages.join("; ")))
}

/// What a budget has seen so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Spend {
    /// Dollars of settled, priced calls.
    pub usd: f64,
    /// Calls let through (settled and in flight).
    pub calls: u64,
    /// Tokens of settled calls.
    pub tokens: u64,
    /// Calls let through and not yet settled.
    pub in_flight: u64,
    /// Dollars reserved by the calls in flight ([`BudgetTracker::reserve_up_to`]).
    pub reserved_usd: f64,
}

/// How far past `max_usd` a reservation may reach: a billionth of a dollar, so that the
/// rounding of many small sums in `f64` does not refuse the call that exactly fits (a
/// budget of $1 admits a hundred calls of $0.01).
pub const ROUNDING_SLACK_USD: f64 = 1e-9;

/// A budget shared by every handle of a run.
#[derive(Debug)]
pub struct BudgetTracker {
    budget: Budget,
    spend: Mutex<Spend>,
}

/// A call's place in the budget, taken before the call; give it back with
/// [`Reservation::settle`]. Dropping it unsettled counts the call with no spend.
#[derive(Debug)]
pub struct Reservation {
    tracker: Option<std::sync::Arc<BudgetTracker>>,
    /// The dollars held for the call until it settles.
    reserved_usd: f64,
}

impl BudgetTracker {
    /// A tracker with nothing spent.
    pub fn new(budget: Budget) -> Self {
        BudgetTracker {
            budget,
            spend: Mutex::new(Spend::default()),
        }
    }

    /// A tracker that starts from what was already spent (a budget kept across restarts,
    /// its spend read back from a calls index).
    pub fn resumed(budget: Budget, spent: Spend) -> Self {
        BudgetTracker {
            budget,
            spend: Mutex::new(Spend {
                in_flight: 0,
                reserved_usd: 0.0,
                ..spent
            }),
        }
    }

    /// The tracker of a run: resuming the run recorded in `resumed_dir` starts from what
    /// its recorded calls spent, so a budget spans the run directory, not one process
    /// (two `ask --resume` on a run with `max_calls: 1` make one call, not two).
    pub fn for_run(budget: Budget, resumed_dir: Option<&std::path::Path>) -> Result<Self> {
        match resumed_dir {
            None => Ok(BudgetTracker::new(budget)),
            Some(dir) => {
                let spent = crate::record::run_spend(dir, &budget.exclude_roles)?;
                Ok(BudgetTracker::resumed(budget, spent))
            }
        }
    }

    /// The limits.
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// What is spent so far.
    pub fn spend(&self) -> Spend {
        *self.lock()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spend> {
        // A panic while holding the lock cannot leave the counters half-updated (each
        // update is one statement), so a poisoned lock is still good.
        self.spend.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Checks the budget for a call of `role` and reserves its place, or refuses it.
    pub fn reserve(self: &std::sync::Arc<Self>, role: &str) -> Result<Reservation> {
        self.reserve_inner(role, 0.0)
    }

    /// As [`BudgetTracker::reserve`], for a call that can cost at most `max_cost` dollars
    /// (its prompt and its output limit at the model's prices): that much is held until
    /// the call settles, and the call is refused when the settled spend, what the calls in
    /// flight hold and `max_cost` together would pass `max_usd`. So concurrent calls
    /// cannot overshoot the budget at all while each bound holds.
    pub fn reserve_up_to(
        self: &std::sync::Arc<Self>,
        role: &str,
        max_cost: f64,
    ) -> Result<Reservation> {
        self.reserve_inner(role, max_cost.max(0.0))
    }

    fn reserve_inner(self: &std::sync::Arc<Self>, role: &str, hold: f64) -> Result<Reservation> {
        if self.budget.exclude_roles.contains(role) {
            return Ok(Reservation {
                tracker: None,
                reserved_usd: 0.0,
            });
        }
        let mut spend = self.lock();
        if let Some(max) = self.budget.max_calls {
            if spend.calls >= max {
                return Err(Error::BudgetExceeded {
                    limit: "max_calls".into(),
                    max: plural(max, "call"),
                    spent: plural(spend.calls, "call"),
                    in_flight: spend.in_flight,
                });
            }
        }
        if let Some(max) = self.budget.max_usd {
            let over = if hold > 0.0 {
                spend.usd + spend.reserved_usd + hold > max + ROUNDING_SLACK_USD
            } else {
                // What streams in flight have spent counts as spent.
                spend.usd + spend.reserved_usd >= max
            };
            if over {
                return Err(Error::BudgetExceeded {
                    limit: "max_usd".into(),
                    max: crate::internal::cost::fmt_cost(Some(max)),
                    spent: crate::internal::cost::fmt_cost(Some(spend.usd)),
                    in_flight: spend.in_flight,
                });
            }
        }
        if let Some(max) = self.budget.max_tokens {
            if spend.tokens >= max {
                return Err(Error::BudgetExceeded {
                    limit: "max_tokens".into(),
                    max: format!("{max} tokens"),
                    spent: format!("{} tokens", spend.tokens),
                    in_flight: spend.in_flight,
                });
            }
        }
        spend.calls += 1;
        spend.in_flight += 1;
        spend.reserved_usd += hold;
        Ok(Reservation {
            tracker: Some(self.clone()),
            reserved_usd: hold,
        })
    }
}

impl Reservation {
    /// The hold of a stream's running cost, when the budget has `max_usd` (`None` for a
    /// role the budget leaves out).
    pub(crate) fn running_hold(&self) -> Option<RunningHold> {
        let tracker = self.tracker.as_ref()?;
        let max_usd = tracker.budget.max_usd?;
        Some(RunningHold {
            tracker: tracker.clone(),
            max_usd,
            held_usd: 0.0,
            largest_step_usd: 0.0,
        })
    }

    /// Settles the call: its tokens and cost (unknown cost adds no dollars).
    pub fn settle(mut self, usage: Option<&Usage>, cost: Option<f64>) {
        if let Some(tracker) = self.tracker.take() {
            let mut spend = tracker.lock();
            spend.in_flight = spend.in_flight.saturating_sub(1);
            spend.reserved_usd = (spend.reserved_usd - self.reserved_usd).max(0.0);
            spend.tokens = spend
                .tokens
                .saturating_add(usage.map(Usage::total).unwrap_or(0));
            spend.usd += cost.unwrap_or(0.0);
        }
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some(tracker) = self.tracker.take() {
            let mut spend = tracker.lock();
            spend.in_flight = spend.in_flight.saturating_sub(1);
            spend.reserved_usd = (spend.reserved_usd - self.reserved_usd).max(0.0);
        }
    }
}

/// What a stream has spent so far, held in its run's budget while it streams: other
/// calls see it as spent, and the stream is stopped once the run would pass `max_usd`
/// with its next step. Given back when dropped (the call then settles its real cost).
#[derive(Debug)]
pub(crate) struct RunningHold {
    tracker: std::sync::Arc<BudgetTracker>,
    max_usd: f64,
    /// What the stream holds now.
    held_usd: f64,
    /// The largest rise between two holds: what the next step may add.
    largest_step_usd: f64,
}

impl RunningHold {
    /// Holds `cost_usd`, the stream's cost so far; an error once the run's settled spend
    /// and what its streams hold, with one more step as large as this stream's largest,
    /// would pass `max_usd`.
    pub(crate) fn hold(&mut self, cost_usd: f64) -> Result<()> {
        let mut spend = self.tracker.lock();
        if self.held_usd > 0.0 {
            self.largest_step_usd = self.largest_step_usd.max(cost_usd - self.held_usd);
        }
        spend.reserved_usd = (spend.reserved_usd + cost_usd - self.held_usd).max(0.0);
        self.held_usd = cost_usd;
        let spent = spend.usd + spend.reserved_usd;
        if spent + self.largest_step_usd > self.max_usd + ROUNDING_SLACK_USD {
            return Err(Error::BudgetStopped {
                max: crate::internal::cost::fmt_cost(Some(self.max_usd)),
                spent: crate::internal::cost::fmt_cost(Some(spent)),
                stream: crate::internal::cost::fmt_cost(Some(cost_usd)),
            });
        }
        Ok(())
    }
}

impl Drop for RunningHold {
    fn drop(&mut self) {
        let mut spend = self.tracker.lock();
        spend.reserved_usd = (spend.reserved_usd - self.held_usd).max(0.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use serde_json::json;

    fn usage(total_in: u64, out: u64) -> Usage {
        Usage {
            input: total_in,
            output: out,
            ..Usage::default()
        }
    }

    #[test]
    fn parses_every_field_and_names_a_wrong_one() {
        let b = Budget::from_value(&json!({
            "max_usd": 2.5, "max_calls": 10, "max_tokens": 1000,
            "exclude_roles": ["judge"], "unknown_cost": "allow"
        }))
        .unwrap();
        assert_eq!(b.max_usd, Some(2.5));
        assert_eq!(b.max_calls, Some(10));
        assert_eq!(b.max_tokens, Some(1000));
        assert!(b.exclude_roles.contains("judge"));
        assert!(b.allow_unknown_cost);
        let e = Budget::from_value(&json!({"max_dollars": 1}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`budget.max_dollars` is not a budget field"),
            "{e}"
        );
        assert!(e.contains("max_usd, max_calls, max_tokens"), "{e}");
        let e = Budget::from_value(&json!({"max_calls": -1}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("budget.max_calls") && e.contains("whole number"),
            "{e}"
        );
        let e = Budget::from_value(&json!({"max_usd": "lots"}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("number of dollars"), "{e}");
    }

    #[test]
    fn top_level_unknown_cost_allow_is_read() {
        let mut sections = std::collections::BTreeMap::new();
        sections.insert("budget".to_string(), json!({"max_usd": 1}));
        sections.insert("unknown_cost".to_string(), json!("allow"));
        let b = Budget::from_sections(&sections).unwrap().unwrap();
        assert!(b.allow_unknown_cost);
        assert_eq!(Budget::from_sections(&Default::default()).unwrap(), None);
    }

    #[test]
    fn a_dollar_budget_refuses_an_unpriced_role_unless_allowed() {
        let price = Price {
            input: 1.0,
            cached_input: None,
            cache_write: None,
            output: 2.0,
        };
        let mut b = Budget {
            max_usd: Some(1.0),
            ..Budget::default()
        };
        let roles = [
            ("planner", "openai/gpt-5.4", Some(&price)),
            ("coder", "vllm/qwen", None),
        ];
        let e = b.check_prices(roles).unwrap_err().to_string();
        assert!(e.contains("role `coder` (`vllm/qwen`) has no price"), "{e}");
        assert!(e.contains("unknown_cost: allow"), "{e}");
        b.exclude_roles.insert("coder".into());
        b.check_prices(roles).unwrap();
        b.exclude_roles.clear();
        b.allow_unknown_cost = true;
        b.check_prices(roles).unwrap();
    }

    #[test]
    fn max_calls_is_exact_and_names_the_spend() {
        let t = std::sync::Arc::new(BudgetTracker::new(Budget {
            max_calls: Some(2),
            ..Budget::default()
        }));
        let a = t.reserve("").unwrap();
        let b = t.reserve("").unwrap();
        let e = t.reserve("").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BudgetExceeded);
        assert_eq!(
            e.to_string(),
            "budget exceeded: max_calls is 2 calls, and spent so far: 2 calls (2 calls in flight); the call was not made"
        );
        a.settle(Some(&usage(1, 1)), None);
        drop(b);
        assert_eq!(t.spend().in_flight, 0);
        assert!(t.reserve("").is_err());
    }

    #[test]
    fn dollars_and_tokens_stop_calls_once_settled_spend_reaches_them() {
        let t = std::sync::Arc::new(BudgetTracker::new(Budget {
            max_usd: Some(0.01),
            max_tokens: Some(1000),
            exclude_roles: ["judge".to_string()].into(),
            ..Budget::default()
        }));
        t.reserve("a")
            .unwrap()
            .settle(Some(&usage(10, 10)), Some(0.006));
        t.reserve("a")
            .unwrap()
            .settle(Some(&usage(10, 10)), Some(0.006));
        let e = t.reserve("a").unwrap_err().to_string();
        assert!(
            e.contains("max_usd is $0.01, and spent so far: $0.012"),
            "{e}"
        );
        // Excluded roles go through and are not counted.
        t.reserve("judge")
            .unwrap()
            .settle(Some(&usage(5000, 0)), Some(5.0));
        assert_eq!(t.spend().tokens, 40);
        let t = std::sync::Arc::new(BudgetTracker::new(Budget {
            max_tokens: Some(100),
            ..Budget::default()
        }));
        t.reserve("a").unwrap().settle(Some(&usage(90, 20)), None);
        let e = t.reserve("a").unwrap_err().to_string();
        assert!(
            e.contains("max_tokens is 100 tokens, and spent so far: 110 tokens"),
            "{e}"
        );
    }

    #[test]
    fn concurrent_calls_overshoot_by_at_most_what_is_in_flight() {
        let t = std::sync::Arc::new(BudgetTracker::new(Budget {
            max_calls: Some(50),
            max_usd: Some(1.0),
            ..Budget::default()
        }));
        let mut handles = Vec::new();
        for _ in 0..8 {
            let t = t.clone();
            handles.push(std::thread::spawn(move || {
                let mut made = 0u64;
                while let Ok(r) = t.reserve("w") {
                    made += 1;
                    std::thread::yield_now();
                    r.settle(Some(&usage(1, 1)), Some(0.03));
                }
                made
            }));
        }
        let made: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        let spend = t.spend();
        assert_eq!(spend.calls, made);
        assert!(made <= 50);
        // Each call costs $0.03; at most 8 were in flight when the limit was crossed.
        assert!(
            spend.usd >= 1.0 && spend.usd <= 1.0 + 8.0 * 0.03 + 1e-9,
            "{spend:?}"
        );
    }

    #[test]
    fn reserving_each_calls_bound_never_overshoots_under_concurrency() {
        let t = std::sync::Arc::new(BudgetTracker::new(Budget {
            max_usd: Some(1.0),
            ..Budget::default()
        }));
        let mut handles = Vec::new();
        for _ in 0..8 {
            let t = t.clone();
            handles.push(std::thread::spawn(move || {
                let mut made = 0u64;
                // Each call may cost up to $0.05 and costs $0.03.
                while let Ok(r) = t.reserve_up_to("w", 0.05) {
                    made += 1;
                    std::thread::yield_now();
                    r.settle(Some(&usage(1, 1)), Some(0.03));
                }
                made
            }));
        }
        let made: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
        let spend = t.spend();
        assert!(spend.usd <= 1.0 + 1e-9, "{spend:?}");
        // It stops only when one more bound would not fit.
        assert!(spend.usd + 0.05 > 1.0 - 1e-9, "{spend:?}");
        assert_eq!(spend.calls, made);
        assert_eq!(spend.in_flight, 0);
        assert!(spend.reserved_usd.abs() < 1e-9);
        // A call whose bound alone passes what is left is refused.
        let e = t.reserve_up_to("w", 0.5).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::BudgetExceeded);
    }

    #[test]
    fn a_stream_past_max_tokens_is_stopped_before_its_next_step_passes_the_budget() {
        let t = std::sync::Arc::new(BudgetTracker::new(Budget {
            max_usd: Some(1.0),
            ..Budget::default()
        }));
        let settled = t.reserve("").unwrap();
        settled.settle(Some(&usage(1, 1)), Some(0.5));
        let a = t.reserve("").unwrap();
        let b = t.reserve("").unwrap();
        let (mut ha, mut hb) = (a.running_hold().unwrap(), b.running_hold().unwrap());
        // Two streams of $0.05 steps, side by side: the run's $0.5 left is shared out.
        let mut stopped = None;
        for step in 1..=20 {
            let cost = 0.05 * f64::from(step);
            ha.hold(cost).unwrap();
            if let Err(e) = hb.hold(cost) {
                stopped = Some((step, e));
                break;
            }
        }
        let (step, e) = stopped.expect("stopped");
        assert_eq!(e.kind(), ErrorKind::BudgetExceeded);
        assert!(e.to_string().contains("the stream was stopped"), "{e}");
        // $0.5 settled + 2 × $0.20 held + a $0.05 step would pass $1 by $0.05... at step 5
        // (0.5 + 0.25 + 0.25 = 1.0, one more step passes).
        assert_eq!(step, 5);
        // While they hold it, a new call is refused: what streams spent counts.
        assert!(t.reserve("").is_err());
        drop((ha, hb));
        assert!(t.spend().reserved_usd.abs() < 1e-12);
        a.settle(Some(&usage(1, 1)), Some(0.25));
        b.settle(Some(&usage(1, 1)), Some(0.25));
        assert!((t.spend().usd - 1.0).abs() < 1e-9);
    }
}
