//! Nearest-match suggestions for "did you mean" messages.

/// Edit distance between two strings, by characters: insertions, deletions,
/// substitutions and swaps of two neighbours each count one (optimal string alignment).
/// Swaps count one because they are the commonest typo (`mokc` for `mock`).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: the one before the previous is needed for swaps.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let mut d = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                d = d.min(before[j - 1] + 1);
            }
            cur[j + 1] = d;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate nearest to `word`, if it is close enough to be a likely typo
/// (distance at most a third of the longer length, clamped to 1..=3),
/// or if one starts with the other.
pub fn nearest<'a, I>(word: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a str>,
{
    let lower = word.to_ascii_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(&lower, &c.to_ascii_lowercase());
        if best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    let (d, c) = best?;
    let limit = (word.chars().count().max(c.chars().count()) / 3).clamp(1, 3);
    if d <= limit || (word.len() >= 3 && (c.starts_with(&lower) || lower.starts_with(c))) {
        Some(c.to_string())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("base_url", "base_url"), 0);
        assert_eq!(edit_distance("mokc", "mock"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
        assert_eq!(edit_distance("abc", "ca"), 3);
    }

    #[test]
    fn nearest_finds_typos_only() {
        let c = ["base_url", "api_key_env", "apis"];
        assert_eq!(nearest("base_ur", c), Some("base_url".into()));
        assert_eq!(nearest("api", c), Some("apis".into()));
        assert_eq!(nearest("zzzzzzzz", c), None);
        assert_eq!(nearest("mokc", ["mock", "openai"]), Some("mock".into()));
        assert_eq!(nearest("opneai", ["mock", "openai"]), Some("openai".into()));
    }
}
