//! The router: for one route, which members a call tries and in what order (the pick,
//! cooldowns, calls in flight), and what a member's failure does. It holds no handle and
//! makes no call: the library's `Llm` (`calls.rs`) and the gateway each run their own
//! attempts and ask the router before and after each.
//!
//! A member that fails with a kind the route falls back on is put in cooldown — for the
//! provider's `Retry-After` when it sent one, else the route's `cooldown` — and skipped
//! until it ends. When every member is cooling, the call waits for the first to come back
//! if that is within the route's `max_wait`, else fails at once with a message naming
//! each member's state.

mod calls;
mod clock;
mod pick;

pub use clock::{Clock, ManualClock, SystemClock};
pub use pick::{least_busy, WeightedPicker};

use crate::error::{fmt_duration, Error, ProviderDetails};
use crate::registry::{FallbackKind, Pick, Route};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub(crate) use calls::Routed;

/// What a call should do next.
#[derive(Debug)]
pub enum Plan {
    /// Try these members (indices into the route's members), in order.
    Try(Vec<usize>),
    /// Every member is cooling; `member` is back first, after `wait` (within the route's
    /// `max_wait`): wait, then [`Router::clear`] it and plan again.
    Wait {
        /// The member back first.
        member: usize,
        /// How long until then.
        wait: Duration,
    },
    /// Every member is cooling for longer than the route waits: the call fails with this
    /// error (`Overloaded`, naming each member's state, with a `retry-after`).
    Unavailable(Error),
}

/// One route's live state, shared by every call through it.
pub struct Router {
    route: Route,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    in_flight: Vec<AtomicUsize>,
    turn: AtomicUsize,
}

struct State {
    picker: WeightedPicker,
    /// Per member: cooling until then, and why.
    cooling: Vec<Option<(Instant, String)>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("route", &self.route.name)
            .field("members", &self.route.members.len())
            .finish()
    }
}

/// A call in flight on a member: counted for `least_busy` until dropped.
#[derive(Debug)]
pub struct Busy {
    router: Arc<Router>,
    member: usize,
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(n) = self.router.in_flight.get(self.member) {
            n.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Router {
    /// A router for `route` on the system clock.
    ///
    /// A weighted route starts at a random point of its cycle, drawn per router: many
    /// short-lived processes (one `ask` each, a pool of workers) then spread by weight
    /// across processes too, where starting each at the heaviest member sent every first
    /// call there. Within a process the spread stays exact over every cycle.
    pub fn new(route: Route) -> Self {
        let router = Router::with_clock(route, Arc::new(SystemClock));
        router.start_at(random_u64());
        router
    }

    /// Moves a weighted route's picker `seed % sum(weights)` picks into its cycle (at most
    /// [`MAX_START`] picks: weights summing past it start within its first picks).
    fn start_at(&self, seed: u64) {
        if self.route.pick != Pick::Weighted {
            return;
        }
        let total: u64 = self.route.members.iter().map(|m| u64::from(m.weight)).sum();
        if total == 0 {
            return;
        }
        let mut state = self.lock();
        for _ in 0..seed % total.min(MAX_START) {
            state.picker.pick(|_| true);
        }
    }

    /// A router measuring cooldowns on `clock` (tests pass a [`ManualClock`]).
    pub fn with_clock(route: Route, clock: Arc<dyn Clock>) -> Self {
        let n = route.members.len();
        Router {
            state: Mutex::new(State {
                picker: WeightedPicker::new(route.members.iter().map(|m| m.weight).collect()),
                cooling: vec![None; n],
            }),
            in_flight: (0..n).map(|_| AtomicUsize::new(0)).collect(),
            turn: AtomicUsize::new(0),
            clock,
            route,
        }
    }

    /// The route.
    pub fn route(&self) -> &Route {
        &self.route
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The members a call tries now, in order: the pick first, then the other members
    /// that are not cooling, in the order written (for `least_busy`, fewest in flight
    /// first).
    pub fn plan(&self) -> Plan {
        let now = self.clock.now();
        let mut state = self.lock();
        for c in state.cooling.iter_mut() {
            if c.as_ref().is_some_and(|(until, _)| *until <= now) {
                *c = None;
            }
        }
        let free: Vec<bool> = state.cooling.iter().map(Option::is_none).collect();
        let n = free.len();
        let first = match self.route.pick {
            Pick::Order => free.iter().position(|f| *f),
            Pick::Weighted => state.picker.pick(|i| free[i]),
            Pick::LeastBusy => {
                let counts: Vec<usize> = self
                    .in_flight
                    .iter()
                    .map(|c| c.load(Ordering::Relaxed))
                    .collect();
                let start = self.turn.fetch_add(1, Ordering::Relaxed) % n.max(1);
                least_busy(&counts, start, |i| free[i])
            }
        };
        let Some(first) = first else {
            return self.all_cooling(&state, now);
        };
        let mut order = vec![first];
        let mut rest: Vec<usize> = (0..n).filter(|&i| free[i] && i != first).collect();
        if self.route.pick == Pick::LeastBusy {
            rest.sort_by_key(|&i| self.in_flight[i].load(Ordering::Relaxed));
        }
        order.extend(rest);
        Plan::Try(order)
    }

    fn all_cooling(&self, state: &State, now: Instant) -> Plan {
        let soonest = state
            .cooling
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                c.as_ref()
                    .map(|(until, _)| (i, until.saturating_duration_since(now)))
            })
            .min_by_key(|(_, left)| *left);
        let Some((member, wait)) = soonest else {
            // A route has members (the registry refuses one without): unreachable in
            // practice, answered all the same.
            return Plan::Unavailable(Error::Config(format!(
                "route `{}` has no members",
                self.route.name
            )));
        };
        if wait <= self.route.max_wait {
            return Plan::Wait { member, wait };
        }
        let states: Vec<String> = self
            .route
            .members
            .iter()
            .zip(&state.cooling)
            .map(|(m, c)| match c {
                Some((until, why)) => format!(
                    "{} cooling for {} more ({why})",
                    m.reference,
                    fmt_duration(until.saturating_duration_since(now))
                ),
                None => format!("{} available", m.reference),
            })
            .collect();
        let secs = wait.as_secs_f64().ceil().max(1.0) as u64;
        Plan::Unavailable(Error::Overloaded(Box::new(ProviderDetails {
            backend: format!("route {}", self.route.name),
            // No provider answered: no status of its own (the gateway answers 503).
            status: 0,
            message: format!(
                "every member of route `{}` is cooling down, the first for {} (more than its max_wait, {}): {}",
                self.route.name,
                fmt_duration(wait),
                fmt_duration(self.route.max_wait),
                states.join("; ")
            ),
            headers: vec![("retry-after".into(), secs.to_string())],
            ..ProviderDetails::default()
        })))
    }

    /// Counts a call in flight on `member` until the guard is dropped.
    pub fn enter(self: &Arc<Self>, member: usize) -> Busy {
        if let Some(n) = self.in_flight.get(member) {
            n.fetch_add(1, Ordering::Relaxed);
        }
        Busy {
            router: self.clone(),
            member,
        }
    }

    /// A member's call failed with `error`: true when the route falls back on its kind,
    /// and then the member cools down (for the provider's `Retry-After`, else the
    /// route's `cooldown`).
    pub fn failed(&self, member: usize, error: &Error) -> bool {
        let Some(kind) = FallbackKind::of(error) else {
            return false;
        };
        if !self.route.falls_back_on(kind) {
            return false;
        }
        // A prompt too long for one member says nothing of the member's health.
        if kind != FallbackKind::ContextLength {
            let wait = crate::retry::retry_hint(error).unwrap_or(self.route.cooldown);
            self.cool(member, wait, kind.as_str());
        }
        true
    }

    /// Puts `member` in cooldown for `wait`.
    pub fn cool(&self, member: usize, wait: Duration, why: &str) {
        let until = self.clock.now() + wait;
        let mut state = self.lock();
        if let Some(slot) = state.cooling.get_mut(member) {
            // A longer cooldown already running is kept.
            if slot.as_ref().is_none_or(|(u, _)| *u < until) {
                *slot = Some((until, why.to_string()));
            }
        }
    }

    /// Ends `member`'s cooldown (after a wait for it).
    pub fn clear(&self, member: usize) {
        if let Some(slot) = self.lock().cooling.get_mut(member) {
            *slot = None;
        }
    }

    /// How long `member` still cools, if it does.
    pub fn cooling(&self, member: usize) -> Option<Duration> {
        let now = self.clock.now();
        self.lock()
            .cooling
            .get(member)
            .and_then(|c| c.as_ref())
            .map(|(until, _)| until.saturating_duration_since(now))
            .filter(|d| !d.is_zero())
    }

    /// Calls in flight on `member` through this router.
    pub fn in_flight(&self, member: usize) -> usize {
        self.in_flight
            .get(member)
            .map_or(0, |n| n.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests;

/// The most picks a weighted route's random start moves its picker by.
const MAX_START: u64 = 1 << 16;

/// A number drawn afresh for each router: std's per-process random hash keys (no
/// dependency is needed for a starting point that only has to differ between processes).
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    h.finish()
}
