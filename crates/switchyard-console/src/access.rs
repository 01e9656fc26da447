//! Who may read the console's API.
//!
//! The page and its scripts hold no data and are served to anyone who reaches them; every
//! `/console/api/` request is judged here. With keys, the page asks for an admin key once,
//! keeps it in the tab's `sessionStorage` and sends it as `Authorization: Bearer` on its
//! fetches: no cookie is ever set, so a page on another site cannot make the browser
//! send the key (no CSRF), and a DNS-rebinding page cannot read anything without it.

use axum::http::{header, HeaderMap};
use std::sync::Arc;

/// What a presented key is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyCheck {
    /// An admin key: the console opens.
    Admin,
    /// A configured key without the admin role (its name).
    NotAdmin(String),
    /// A key that matches none configured.
    Unknown,
    /// No key was sent.
    Missing,
}

/// Judges the key a request carries (the gateway's keys, as digests).
pub type KeyJudge = Arc<dyn Fn(&HeaderMap) -> KeyCheck + Send + Sync>;

/// The console's access rule.
#[derive(Clone)]
pub enum Access {
    /// No keys, and the gateway's guard already let only loopback `Host`s and origins in.
    Open,
    /// No keys and no guard in front (`switchyard log view`): the console itself admits
    /// only loopback `Host` names and origins, against DNS rebinding and other sites.
    Loopback,
    /// Keys are configured: only admin keys read the API.
    AdminKeys(KeyJudge),
    /// The console does not open at all, for this reason (a public listener without keys).
    Closed(String),
}

/// Why a request was refused: status and message.
pub(crate) struct Refusal {
    pub(crate) status: axum::http::StatusCode,
    pub(crate) message: String,
}

fn refuse(status: axum::http::StatusCode, message: impl Into<String>) -> Refusal {
    Refusal {
        status,
        message: message.into(),
    }
}

impl Access {
    /// Whether the page itself is served (everything but [`Access::Closed`], and the
    /// loopback check).
    pub(crate) fn page(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        match self {
            Access::Closed(why) => Err(refuse(axum::http::StatusCode::FORBIDDEN, why.clone())),
            Access::Loopback => loopback_only(headers),
            _ => Ok(()),
        }
    }

    /// Whether an API request is let in.
    pub(crate) fn api(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        use axum::http::StatusCode;
        self.page(headers)?;
        let Access::AdminKeys(judge) = self else {
            return Ok(());
        };
        match judge(headers) {
            KeyCheck::Admin => Ok(()),
            KeyCheck::NotAdmin(name) => Err(refuse(
                StatusCode::FORBIDDEN,
                format!("key `{name}` is not an admin key: the console opens only with a key whose entry in the gateway's `keys:` says `role: admin`"),
            )),
            KeyCheck::Unknown => Err(refuse(
                StatusCode::UNAUTHORIZED,
                "the key sent matches none of the gateway's keys: send an admin key as `Authorization: Bearer <key>`",
            )),
            KeyCheck::Missing => Err(refuse(
                StatusCode::UNAUTHORIZED,
                "the console needs an admin key: send it as `Authorization: Bearer <key>` (the page asks for it)",
            )),
        }
    }
}

/// Admits only loopback `Host` names (any port) and, when sent, loopback origins.
fn loopback_only(headers: &HeaderMap) -> Result<(), Refusal> {
    use axum::http::StatusCode;
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|h| is_loopback(strip_port(h))) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            format!(
                "the Host `{}` is not a loopback name: this console answers only localhost, 127.0.0.1 and [::1], so that no web page can reach it by DNS rebinding",
                host.unwrap_or("(none)")
            ),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = origin.to_str().ok().and_then(|o| {
            o.strip_prefix("http://")
                .or_else(|| o.strip_prefix("https://"))
        });
        if !host.is_some_and(|h| !h.contains('/') && is_loopback(strip_port(h))) {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "requests from another web origin are refused: this console answers pages of its own loopback origin only",
            ));
        }
    }
    Ok(())
}

/// `host[:port]` → host, IPv6 without brackets.
fn strip_port(s: &str) -> &str {
    if let Some(rest) = s.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => s,
    }
}

fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn loopback_hosts_and_origins_only() {
        let a = Access::Loopback;
        assert!(a.api(&headers(&[("host", "127.0.0.1:8090")])).is_ok());
        assert!(a.api(&headers(&[("host", "localhost")])).is_ok());
        assert!(a.api(&headers(&[("host", "[::1]:1")])).is_ok());
        assert!(a
            .api(&headers(&[
                ("host", "localhost:1"),
                ("origin", "http://localhost:1")
            ]))
            .is_ok());
        assert!(a
            .api(&headers(&[("host", "attacker.example:8090")]))
            .is_err());
        assert!(a.api(&headers(&[])).is_err());
        assert!(a
            .api(&headers(&[
                ("host", "localhost:1"),
                ("origin", "https://attacker.example")
            ]))
            .is_err());
    }

    #[test]
    fn only_admin_keys_read_the_api() {
        let judge: KeyJudge = Arc::new(|h: &HeaderMap| match h.get("authorization") {
            Some(v) if v == "Bearer admin" => KeyCheck::Admin,
            Some(v) if v == "Bearer alice" => KeyCheck::NotAdmin("alice".into()),
            Some(_) => KeyCheck::Unknown,
            None => KeyCheck::Missing,
        });
        let a = Access::AdminKeys(judge);
        assert!(a
            .api(&headers(&[("authorization", "Bearer admin")]))
            .is_ok());
        let e = a
            .api(&headers(&[("authorization", "Bearer alice")]))
            .err()
            .unwrap();
        assert_eq!(e.status, 403);
        assert!(e.message.contains("`alice` is not an admin key"));
        assert_eq!(a.api(&headers(&[])).err().unwrap().status, 401);
        assert!(a.page(&headers(&[])).is_ok());
        assert_eq!(
            Access::Closed("no".into())
                .page(&headers(&[]))
                .err()
                .unwrap()
                .status,
            403
        );
    }
}
