//! The API's query parameters read into queries. Every refusal names the parameter, what
//! it was given and what is accepted; an unknown parameter is refused too (a misspelt
//! filter that filtered nothing would show the wrong calls without saying so).

use crate::source::{
    Bucket, CallsQuery, Filter, KeptKind, KeptQuery, Sort, SpendBy, SpendQuery, Status,
};

/// The most calls a page holds.
pub const MAX_LIMIT: u32 = 500;
/// Calls per page when `limit` is not given.
pub const DEFAULT_LIMIT: u32 = 50;

/// A parameter refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadParam {
    /// The parameter's name.
    pub parameter: String,
    /// What was wrong and what is accepted.
    pub message: String,
}

fn bad(parameter: &str, message: String) -> BadParam {
    BadParam {
        parameter: parameter.to_string(),
        message,
    }
}

const FILTER_PARAMS: &[&str] = &[
    "status",
    "kind",
    "reference",
    "model",
    "role",
    "key",
    "q",
    "since",
    "until",
];

/// `limit`, `offset`, `sort`, `order` and the filters.
pub(crate) fn calls_query(pairs: &[(String, String)]) -> Result<CallsQuery, BadParam> {
    let mut q = CallsQuery {
        limit: DEFAULT_LIMIT,
        offset: 0,
        sort: Sort::Time,
        descending: true,
        filter: Filter::default(),
    };
    let mut rest = Vec::new();
    for (k, v) in once_each(pairs)? {
        match k {
            "limit" => q.limit = limit(k, v)?,
            "offset" => q.offset = offset(k, v, "calls")?,
            "sort" => {
                q.sort = Sort::parse(v).ok_or_else(|| {
                    bad(
                        k,
                        format!("`{v}` is not a sort: expected one of {}", Sort::NAMES),
                    )
                })?
            }
            "order" => {
                q.descending = match v {
                    "desc" => true,
                    "asc" => false,
                    _ => {
                        return Err(bad(
                            k,
                            format!("`{v}` is not an order: expected asc or desc"),
                        ))
                    }
                }
            }
            _ => rest.push((k, v)),
        }
    }
    q.filter = filter(&rest, "limit, offset, sort, order, ")?;
    Ok(q)
}

/// `by`, `bucket` and the filters.
pub(crate) fn spend_query(pairs: &[(String, String)]) -> Result<SpendQuery, BadParam> {
    let mut by = SpendBy::Model;
    let mut bucket = Bucket::Day;
    let mut rest = Vec::new();
    for (k, v) in once_each(pairs)? {
        match k {
            "by" => {
                by = SpendBy::parse(v).ok_or_else(|| {
                    bad(
                        k,
                        format!(
                            "`{v}` is not a grouping: expected one of {}",
                            SpendBy::NAMES
                        ),
                    )
                })?
            }
            "bucket" => {
                bucket = Bucket::parse(v).ok_or_else(|| {
                    bad(
                        k,
                        format!("`{v}` is not a bucket: expected one of {}", Bucket::NAMES),
                    )
                })?
            }
            _ => rest.push((k, v)),
        }
    }
    Ok(SpendQuery {
        by,
        bucket,
        filter: filter(&rest, "by, bucket, ")?,
    })
}

fn limit(k: &str, v: &str) -> Result<u32, BadParam> {
    match v.parse::<u32>() {
        Ok(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
        _ => Err(bad(
            k,
            format!("`{v}` is not a page size: expected a whole number from 1 to {MAX_LIMIT}"),
        )),
    }
}

fn offset(k: &str, v: &str, what: &str) -> Result<u64, BadParam> {
    v.parse::<u64>().map_err(|_| {
        bad(
            k,
            format!("`{v}` is not an offset: expected a whole number ≥ 0 ({what} skipped)"),
        )
    })
}

/// A key's name as the conversations endpoints take it: `(none)` names the turns kept
/// without keys (their owner is empty), as the calls' `role` does.
fn owner(v: &str) -> String {
    if v == "(none)" {
        String::new()
    } else {
        v.to_string()
    }
}

/// `limit`, `offset`, `key` and `kind` of the kept conversations.
pub(crate) fn kept_query(pairs: &[(String, String)]) -> Result<KeptQuery, BadParam> {
    let mut q = KeptQuery {
        limit: DEFAULT_LIMIT,
        offset: 0,
        key: None,
        kind: None,
    };
    for (k, v) in once_each(pairs)? {
        match k {
            "limit" => q.limit = limit(k, v)?,
            "offset" => q.offset = offset(k, v, "turns")?,
            "key" => q.key = Some(owner(v)),
            "kind" => q.kind = Some(kept_kind(k, v)?),
            _ => {
                return Err(bad(
                    k,
                    format!("unknown parameter `{k}`; accepted: limit, offset, key, kind"),
                ))
            }
        }
    }
    Ok(q)
}

/// A kept turn's kind, from the path or a parameter.
pub(crate) fn kept_kind(k: &str, v: &str) -> Result<KeptKind, BadParam> {
    KeptKind::parse(v).ok_or_else(|| {
        bad(
            k,
            format!(
                "`{v}` is not a kind of kept turn: expected one of {}",
                KeptKind::NAMES
            ),
        )
    })
}

/// The `key` one kept turn is read under (a turn is named by its kind, its key's name and
/// its id: two keys may keep the same id).
pub(crate) fn kept_key(pairs: &[(String, String)]) -> Result<String, BadParam> {
    let mut key = None;
    for (k, v) in once_each(pairs)? {
        match k {
            "key" => key = Some(owner(v)),
            _ => return Err(bad(k, format!("unknown parameter `{k}`; accepted: key"))),
        }
    }
    key.ok_or_else(|| {
        bad(
            "key",
            "missing: give the name of the key that kept the turn, as the conversations list shows it (`(none)` for a turn kept without keys)".to_string(),
        )
    })
}

/// Refuses any parameter at all (the endpoints that take none).
pub(crate) fn none(pairs: &[(String, String)]) -> Result<(), BadParam> {
    match pairs.first() {
        Some((k, _)) => Err(bad(
            k,
            format!("unknown parameter `{k}`: this endpoint takes none"),
        )),
        None => Ok(()),
    }
}

/// The pairs with empty values dropped (a form's blank field filters nothing), each name
/// at most once.
fn once_each(pairs: &[(String, String)]) -> Result<Vec<(&str, &str)>, BadParam> {
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for (k, v) in pairs {
        if seen.contains(&k.as_str()) {
            return Err(bad(k, format!("`{k}` is given twice: give it once")));
        }
        seen.push(k);
        if !v.is_empty() {
            out.push((k.as_str(), v.as_str()));
        }
    }
    Ok(out)
}

fn filter(pairs: &[(&str, &str)], others: &str) -> Result<Filter, BadParam> {
    let mut f = Filter::default();
    for &(k, v) in pairs {
        let text = Some(v.to_string());
        match k {
            "status" => {
                f.status = Some(match v {
                    "ok" => Status::Ok,
                    "error" => Status::Error,
                    _ => {
                        return Err(bad(
                            k,
                            format!("`{v}` is not a status: expected ok or error"),
                        ))
                    }
                })
            }
            "kind" => {
                if !v.bytes().all(|b| b.is_ascii_alphanumeric()) {
                    return Err(bad(
                        k,
                        format!("`{v}` is not an error kind: expected a kind's name such as RateLimited or ReplayExhausted (letters and digits)"),
                    ));
                }
                f.kind = text
            }
            "reference" => f.reference = text,
            "model" => f.model = text,
            // `(none)`: the calls made without a role (their role is empty).
            "role" => {
                f.role = Some(if v == "(none)" {
                    String::new()
                } else {
                    v.to_string()
                })
            }
            "key" => f.key = text,
            "q" => f.text = text,
            "since" => f.since = Some(time(k, v)?),
            "until" => f.until = Some(time(k, v)?),
            _ => {
                return Err(bad(
                    k,
                    format!(
                        "unknown parameter `{k}`; accepted: {others}{}",
                        FILTER_PARAMS.join(", ")
                    ),
                ))
            }
        }
    }
    Ok(f)
}

/// A time as the index writes them (`2026-12-03T11:40:00.123456Z`), or a prefix of one
/// down to the day: compared as text, which orders them as times.
fn time(k: &str, v: &str) -> Result<String, BadParam> {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:dd";
    let b = v.as_bytes();
    let shaped = |n: usize| {
        b.len() >= n
            && b[..n].iter().zip(SHAPE).all(|(c, s)| {
                if *s == b'd' {
                    c.is_ascii_digit()
                } else {
                    c == s
                }
            })
    };
    let fraction_ok = |rest: &[u8]| {
        let rest = rest.strip_suffix(b"Z").unwrap_or(rest);
        rest.is_empty()
            || (rest[0] == b'.' && rest.len() > 1 && rest[1..].iter().all(u8::is_ascii_digit))
    };
    let ok = match b.len() {
        10 | 13 | 16 => shaped(b.len()),
        n if n >= 19 => shaped(19) && fraction_ok(&b[19..]),
        _ => false,
    };
    if ok {
        // `…Z` sorts after every fraction of that second: compare without it.
        Ok(v.trim_end_matches('Z').to_string())
    } else {
        Err(bad(
            k,
            format!("`{v}` is not a time: expected UTC in RFC 3339 as recorded (2026-12-03T11:40:00Z, 2026-12-03T11:40:00.5Z) or a prefix of it (2026-12-03, 2026-12-03T11, 2026-12-03T11:40)"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(q: &[(&str, &str)]) -> Vec<(String, String)> {
        q.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_and_every_parameter() {
        let q = calls_query(&[]).unwrap();
        assert_eq!(
            (q.limit, q.offset, q.sort, q.descending),
            (50, 0, Sort::Time, true)
        );
        let q = calls_query(&pairs(&[
            ("limit", "10"),
            ("offset", "20"),
            ("sort", "cost"),
            ("order", "asc"),
            ("status", "error"),
            ("kind", "RateLimited"),
            ("role", "(none)"),
            ("since", "2026-12-03"),
            ("until", "2026-12-03T11:40:00.5Z"),
            ("q", ""),
        ]))
        .unwrap();
        assert_eq!(
            (q.limit, q.offset, q.sort, q.descending),
            (10, 20, Sort::Cost, false)
        );
        assert_eq!(q.filter.status, Some(Status::Error));
        assert_eq!(q.filter.role.as_deref(), Some(""));
        assert_eq!(q.filter.until.as_deref(), Some("2026-12-03T11:40:00.5"));
        assert_eq!(q.filter.text, None);
    }

    #[test]
    fn refusals_name_the_parameter_and_what_is_accepted() {
        for (q, name, says) in [
            (("limit", "0"), "limit", "from 1 to 500"),
            (("limit", "x"), "limit", "from 1 to 500"),
            (("offset", "-1"), "offset", "≥ 0"),
            (("sort", "price"), "sort", "time, cost, latency, tokens"),
            (("order", "up"), "order", "asc or desc"),
            (("status", "fine"), "status", "ok or error"),
            (("kind", "a b"), "kind", "RateLimited"),
            (("since", "yesterday"), "since", "RFC 3339"),
            (("until", "2026-1-3"), "until", "RFC 3339"),
            (("colour", "red"), "colour", "accepted: limit, offset"),
        ] {
            let e = calls_query(&pairs(&[q])).unwrap_err();
            assert_eq!(e.parameter, name);
            assert!(e.message.contains(says), "{}", e.message);
        }
        let e = spend_query(&pairs(&[("by", "colour")])).unwrap_err();
        assert!(e.message.contains("model, key, role"), "{}", e.message);
        let e = spend_query(&pairs(&[("bucket", "week")])).unwrap_err();
        assert!(e.message.contains("hour, day"), "{}", e.message);
        let e = calls_query(&pairs(&[("limit", "1"), ("limit", "2")])).unwrap_err();
        assert!(e.message.contains("twice"), "{}", e.message);
        assert!(none(&pairs(&[("x", "1")])).is_err());
    }

    #[test]
    fn kept_conversations_take_paging_a_key_and_a_kind() {
        let q = kept_query(&[]).unwrap();
        assert_eq!((q.limit, q.offset, &q.key, q.kind), (50, 0, &None, None));
        let q = kept_query(&pairs(&[
            ("limit", "5"),
            ("offset", "10"),
            ("key", "(none)"),
            ("kind", "thread"),
        ]))
        .unwrap();
        assert_eq!(
            (q.limit, q.offset, q.key.as_deref(), q.kind),
            (5, 10, Some(""), Some(KeptKind::Thread))
        );
        for (q, says) in [
            (("limit", "501"), "from 1 to 500"),
            (("offset", "x"), "turns skipped"),
            (("kind", "chat"), "response, thread"),
            (("status", "ok"), "accepted: limit, offset, key, kind"),
        ] {
            let e = kept_query(&pairs(&[q])).unwrap_err();
            assert_eq!(e.parameter, q.0);
            assert!(e.message.contains(says), "{}", e.message);
        }
        assert_eq!(kept_key(&pairs(&[("key", "alice")])).unwrap(), "alice");
        assert_eq!(kept_key(&pairs(&[("key", "(none)")])).unwrap(), "");
        let e = kept_key(&[]).unwrap_err();
        assert!(
            e.parameter == "key" && e.message.contains("(none)"),
            "{e:?}"
        );
    }
}
