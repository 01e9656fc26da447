//! Which member a call asks first: the smooth weighted round robin (nginx's), and the
//! least busy member. Both are deterministic — a counter, never a random draw — so a
//! route's spread is exact over every cycle of its weights and tests need no seed.

/// A smooth weighted round robin over a route's members: each pick adds every eligible
/// member's weight to its running score and takes the highest score, which then gives
/// back the eligible total. Over any run of `sum(weights)` picks with the same members
/// eligible, each member is picked exactly `weight` times, spread out rather than in runs.
#[derive(Debug, Clone)]
pub struct WeightedPicker {
    weights: Vec<u32>,
    scores: Vec<i64>,
}

impl WeightedPicker {
    /// A picker over members of these weights.
    pub fn new(weights: Vec<u32>) -> Self {
        let scores = vec![0; weights.len()];
        WeightedPicker { weights, scores }
    }

    /// The next member among those `eligible` says may serve, or `None` when none may.
    pub fn pick(&mut self, eligible: impl Fn(usize) -> bool) -> Option<usize> {
        let mut total: i64 = 0;
        let mut best: Option<usize> = None;
        for i in 0..self.weights.len() {
            if !eligible(i) {
                continue;
            }
            let w = i64::from(self.weights[i]);
            self.scores[i] += w;
            total += w;
            if best.is_none_or(|b| self.scores[i] > self.scores[b]) {
                best = Some(i);
            }
        }
        let b = best?;
        self.scores[b] -= total;
        Some(b)
    }
}

/// The member with the fewest calls in flight among the eligible ones; ties go to the
/// first at or after `start` (the caller turns `start` so that ties take turns).
pub fn least_busy(
    in_flight: &[usize],
    start: usize,
    eligible: impl Fn(usize) -> bool,
) -> Option<usize> {
    let n = in_flight.len();
    (0..n)
        .map(|k| (start + k) % n.max(1))
        .filter(|&i| eligible(i))
        .min_by_key(|&i| in_flight[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_exact_over_a_cycle_and_spread() {
        let mut p = WeightedPicker::new(vec![3, 1]);
        let picks: Vec<usize> = (0..8).map(|_| p.pick(|_| true).unwrap()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 0, 0, 1, 0]);
        let mut p = WeightedPicker::new(vec![5, 1, 1]);
        let first: Vec<usize> = (0..7).map(|_| p.pick(|_| true).unwrap()).collect();
        assert_eq!(first, [0, 0, 1, 0, 2, 0, 0]);
    }

    #[test]
    fn ineligible_members_are_skipped() {
        let mut p = WeightedPicker::new(vec![3, 1]);
        for _ in 0..10 {
            assert_eq!(p.pick(|i| i == 1), Some(1));
        }
        assert_eq!(p.pick(|_| false), None);
    }

    #[test]
    fn least_busy_takes_the_fewest_and_turns_ties() {
        assert_eq!(least_busy(&[2, 0, 1], 0, |_| true), Some(1));
        assert_eq!(least_busy(&[0, 0, 0], 2, |_| true), Some(2));
        assert_eq!(least_busy(&[0, 0, 0], 2, |i| i != 2), Some(0));
        assert_eq!(least_busy(&[], 0, |_| true), None);
    }
}
