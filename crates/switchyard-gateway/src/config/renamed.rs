//! Settings renamed, whose old names still read: every duration in seconds ends in
//! `_seconds`, as `timeouts:` and `retry:` always did, so the listener's `_secs` names of
//! earlier versions are kept as aliases. Each old name used gives a deprecation note (which
//! `switchyard check` prints without failing); an old name beside its new one is an error,
//! since the two would say one thing twice.

use serde_json::{Map, Value};

/// `listen:`'s renamed fields: (old name, name today).
pub(super) const LISTEN_RENAMED: &[(&str, &str)] = &[
    ("drain_timeout_secs", "drain_timeout_seconds"),
    ("header_timeout_secs", "header_timeout_seconds"),
    ("body_timeout_secs", "body_timeout_seconds"),
    ("idle_timeout_secs", "idle_timeout_seconds"),
];

/// The name `key` has today: its new name when it is an old one, else itself.
pub(super) fn current<'a>(renamed: &[(&'a str, &'a str)], key: &'a str) -> &'a str {
    renamed
        .iter()
        .find(|(old, _)| *old == key)
        .map_or(key, |(_, new)| new)
}

/// Notes each old name `map` (the section `section`) uses, and refuses an old name given
/// beside its new one.
pub(super) fn note(
    section: &str,
    renamed: &[(&str, &str)],
    map: &Map<String, Value>,
    deprecated: &mut Vec<String>,
    errors: &mut Vec<String>,
) {
    for (old, new) in renamed {
        if !map.contains_key(*old) {
            continue;
        }
        deprecated.push(format!("{section}.{old}: use {section}.{new}"));
        if map.contains_key(*new) {
            errors.push(format!(
                "{section}.{old} and {section}.{new}: both given, for one setting; \
                 keep {section}.{new} (`{old}` is its old name)"
            ));
        }
    }
}

/// True when `key` is an old name whose new name `map` also holds: only the new one is
/// read (the pair is refused by [`note`]).
pub(super) fn shadowed(renamed: &[(&str, &str)], map: &Map<String, Value>, key: &str) -> bool {
    let now = current(renamed, key);
    now != key && map.contains_key(now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn an_old_name_is_noted_and_read_as_its_new_one() {
        let given = map(json!({"body_timeout_secs": 5, "max_body_bytes": 10}));
        let (mut deprecated, mut errors) = (Vec::new(), Vec::new());
        note(
            "listen",
            LISTEN_RENAMED,
            &given,
            &mut deprecated,
            &mut errors,
        );
        assert_eq!(
            deprecated,
            ["listen.body_timeout_secs: use listen.body_timeout_seconds"]
        );
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            current(LISTEN_RENAMED, "body_timeout_secs"),
            "body_timeout_seconds"
        );
        assert_eq!(current(LISTEN_RENAMED, "max_body_bytes"), "max_body_bytes");
        assert!(!shadowed(LISTEN_RENAMED, &given, "body_timeout_secs"));
    }

    #[test]
    fn an_old_name_beside_its_new_one_is_refused_naming_both() {
        let given = map(json!({"idle_timeout_secs": 5, "idle_timeout_seconds": 6}));
        let (mut deprecated, mut errors) = (Vec::new(), Vec::new());
        note(
            "listen",
            LISTEN_RENAMED,
            &given,
            &mut deprecated,
            &mut errors,
        );
        assert_eq!(
            errors,
            [
                "listen.idle_timeout_secs and listen.idle_timeout_seconds: both given, for one \
              setting; keep listen.idle_timeout_seconds (`idle_timeout_secs` is its old name)"
            ]
        );
        assert!(shadowed(LISTEN_RENAMED, &given, "idle_timeout_secs"));
        assert!(!shadowed(LISTEN_RENAMED, &given, "idle_timeout_seconds"));
    }
}
