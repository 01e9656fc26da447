//! Durations in configuration: a number of seconds (`30`, `1.5`) or a text with a unit
//! (`"500ms"`, `"30s"`, `"2m"`, `"1h"`). Written back as seconds.

use serde::de::{self, Deserializer, Visitor};
use serde::Serializer;
use std::fmt;
use std::time::Duration;

/// What a duration may be written as, for error messages.
pub(crate) const ACCEPTED: &str =
    "a number of seconds (30, 1.5) or a text with a unit (\"500ms\", \"30s\", \"2m\", \"1h\")";

/// Reads `"500ms"`, `"1.5s"`, `"2m"`, `"1h"` or a bare number of seconds.
pub(crate) fn parse(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return None,
    };
    from_secs(number * scale)
}

/// A non-negative, finite number of seconds as a duration.
pub(crate) fn from_secs(secs: f64) -> Option<Duration> {
    if secs.is_finite() && (0.0..1e12).contains(&secs) {
        Some(Duration::from_secs_f64(secs))
    } else {
        None
    }
}

struct DurationVisitor;

impl<'de> Visitor<'de> for DurationVisitor {
    type Value = Duration;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(ACCEPTED)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Duration, E> {
        Ok(Duration::from_secs(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Duration, E> {
        u64::try_from(v)
            .map(Duration::from_secs)
            .map_err(|_| E::custom(format!("a wait cannot be negative ({v}); write {ACCEPTED}")))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Duration, E> {
        from_secs(v).ok_or_else(|| E::custom(format!("`{v}` is not a wait; write {ACCEPTED}")))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Duration, E> {
        parse(v).ok_or_else(|| E::custom(format!("`{v}` is not a wait; write {ACCEPTED}")))
    }
}

/// A duration, for `#[serde(deserialize_with = "…")]`.
pub(crate) mod one {
    use super::*;

    /// Reads seconds or a text with a unit.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(DurationVisitor)
    }
}

/// An optional duration (`null` is none).
pub(crate) mod option {
    use super::*;
    use serde::Deserialize;

    #[derive(serde::Deserialize)]
    struct Wrap(#[serde(deserialize_with = "super::one::deserialize")] Duration);

    /// Writes seconds or null.
    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_some(&d.as_secs_f64()),
            None => s.serialize_none(),
        }
    }

    /// Reads seconds, a text with a unit, or null.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        Ok(Option::<Wrap>::deserialize(d)?.map(|w| w.0))
    }
}

/// A list of durations.
pub(crate) mod list {
    use super::*;
    use serde::ser::SerializeSeq;
    use serde::Deserialize;

    #[derive(serde::Deserialize)]
    struct Wrap(#[serde(deserialize_with = "super::one::deserialize")] Duration);

    /// Writes a list of seconds.
    pub(crate) fn serialize<S: Serializer>(list: &[Duration], s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(list.len()))?;
        for d in list {
            seq.serialize_element(&d.as_secs_f64())?;
        }
        seq.end()
    }

    /// Reads a list of seconds or texts with a unit.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Duration>, D::Error> {
        Ok(Vec::<Wrap>::deserialize(d)?
            .into_iter()
            .map(|w| w.0)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_with_units() {
        assert_eq!(parse("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse("30"), Some(Duration::from_secs(30)));
        assert_eq!(parse("soon"), None);
        assert_eq!(parse("-1s"), None);
    }
}
