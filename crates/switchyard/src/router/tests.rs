//! The router's plans: order, weights, least busy, cooldowns on a manual clock.

use super::*;
use crate::registry::{Layer, Member};
use crate::Location;

fn route(pick: Pick, weights: &[u32]) -> Route {
    Route {
        name: "r".into(),
        members: weights
            .iter()
            .enumerate()
            .map(|(i, w)| Member {
                reference: format!("b{i}/m"),
                weight: *w,
            })
            .collect(),
        pick,
        on: FallbackKind::DEFAULT.to_vec(),
        retry_each: true,
        cooldown: Duration::from_secs(30),
        max_wait: Duration::from_secs(5),
        layer: Layer::Override,
        location: Location::source("test"),
    }
}

fn overloaded(retry_after: Option<&str>) -> Error {
    Error::Overloaded(Box::new(ProviderDetails {
        backend: "b".into(),
        status: 503,
        headers: retry_after
            .map(|v| vec![("retry-after".to_string(), v.to_string())])
            .unwrap_or_default(),
        ..ProviderDetails::default()
    }))
}

fn order(r: &Router) -> Vec<usize> {
    match r.plan() {
        Plan::Try(o) => o,
        other => panic!("expected members to try, got {other:?}"),
    }
}

#[test]
fn order_skips_cooling_members_until_their_cooldown_ends() {
    let clock = ManualClock::new();
    let r = Router::with_clock(route(Pick::Order, &[1, 1, 1]), Arc::new(clock.clone()));
    assert_eq!(order(&r), [0, 1, 2]);
    assert!(r.failed(0, &overloaded(Some("2"))));
    assert_eq!(order(&r), [1, 2]);
    assert_eq!(r.cooling(0), Some(Duration::from_secs(2)));
    clock.advance(Duration::from_secs(2));
    assert_eq!(order(&r), [0, 1, 2]);
    // No Retry-After: the route's default cooldown.
    assert!(r.failed(1, &overloaded(None)));
    assert_eq!(r.cooling(1), Some(Duration::from_secs(30)));
}

#[test]
fn failures_not_listed_neither_fall_back_nor_cool() {
    let r = Router::new(route(Pick::Order, &[1, 1]));
    let bad = Error::BadRequest(Box::default());
    assert!(!r.failed(0, &bad));
    assert_eq!(r.cooling(0), None);
    let mut only_quota = route(Pick::Order, &[1, 1]);
    only_quota.on = vec![FallbackKind::Quota];
    let r = Router::new(only_quota);
    assert!(!r.failed(0, &overloaded(None)));
    assert!(r.failed(0, &Error::ProviderQuotaExhausted(Box::default())));
}

#[test]
fn all_cooling_waits_for_the_first_back_within_max_wait_else_names_each_state() {
    let clock = ManualClock::new();
    let r = Router::with_clock(route(Pick::Order, &[1, 1]), Arc::new(clock.clone()));
    r.failed(0, &overloaded(Some("4")));
    r.failed(1, &overloaded(Some("3")));
    match r.plan() {
        Plan::Wait { member, wait } => {
            assert_eq!((member, wait), (1, Duration::from_secs(3)));
        }
        other => panic!("{other:?}"),
    }
    r.failed(0, &overloaded(Some("60")));
    r.failed(1, &overloaded(Some("90")));
    let Plan::Unavailable(e) = r.plan() else {
        panic!("expected the route to be unavailable")
    };
    let text = e.to_string();
    assert!(
        text.contains("b0/m cooling for 1 min more (overloaded)"),
        "{text}"
    );
    assert!(
        text.contains("b1/m cooling for 1 min 30 s more (overloaded)"),
        "{text}"
    );
    assert!(text.contains("max_wait, 5 s"), "{text}");
    assert_eq!(crate::retry::retry_hint(&e), Some(Duration::from_secs(60)));
}

#[test]
fn weighted_picks_follow_the_weights_over_ten_thousand_calls() {
    let r = Router::new(route(Pick::Weighted, &[3, 1]));
    let mut counts = [0usize; 2];
    for _ in 0..10_000 {
        counts[order(&r)[0]] += 1;
    }
    let share = counts[0] as f64 / 10_000.0;
    assert!((share - 0.75).abs() <= 0.75 * 0.05, "{counts:?}");
    assert_eq!(counts, [7_500, 2_500]);
}

#[test]
fn weighted_picks_skip_a_cooling_member_and_resume_after() {
    let clock = ManualClock::new();
    let r = Router::with_clock(route(Pick::Weighted, &[3, 1]), Arc::new(clock.clone()));
    r.failed(0, &overloaded(Some("10")));
    for _ in 0..5 {
        assert_eq!(order(&r), [1]);
    }
    clock.advance(Duration::from_secs(10));
    let firsts: Vec<usize> = (0..400).map(|_| order(&r)[0]).collect();
    let zeros = firsts.iter().filter(|i| **i == 0).count();
    assert_eq!(zeros, 300);
}

#[test]
fn least_busy_prefers_the_member_with_fewest_calls_in_flight() {
    let r = Arc::new(Router::new(route(Pick::LeastBusy, &[1, 1, 1])));
    let a = r.enter(0);
    let _b = r.enter(0);
    let _c = r.enter(1);
    assert_eq!(order(&r), [2, 1, 0]);
    drop(a);
    let _d = r.enter(2);
    let _e = r.enter(2);
    // 0 and 1 have one each, 2 has two: a tie between 0 and 1, taken in turns.
    let firsts: Vec<usize> = (0..4).map(|_| order(&r)[0]).collect();
    assert!(
        firsts.contains(&0) && firsts.contains(&1) && !firsts.contains(&2),
        "{firsts:?}"
    );
    assert_eq!(r.in_flight(0), 1);
    assert_eq!(r.in_flight(2), 2);
}

#[test]
fn each_new_weighted_router_starts_at_a_random_point_of_its_cycle() {
    // 40 processes, one call each, on a 3:1 route: before, all 40 went to the first member.
    let firsts: Vec<usize> = (0..400)
        .map(|_| order(&Router::new(route(Pick::Weighted, &[3, 1])))[0])
        .collect();
    let ones = firsts.iter().filter(|i| **i == 1).count();
    // A quarter expected (100); far outside chance on either side is a failure.
    assert!(
        (50..=160).contains(&ones),
        "{ones} of 400 first calls on the lighter member"
    );
}
