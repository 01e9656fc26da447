//! The request guard, run by the listener on every request before routing.
//!
//! A gateway without client keys spends its backends' keys for whoever reaches it, and a
//! loopback address does not keep web pages out: a page the operator opens can send
//! "simple" cross-site requests (a POST with `Content-Type: text/plain` needs no CORS
//! preflight; the browser sends it and only hides the answer), and by DNS rebinding a
//! page on `attacker.example` can make its own name resolve to 127.0.0.1 and then read
//! answers as a same-origin page. So, without keys:
//!
//! - the `Host` must be a loopback name (`localhost`, `127.0.0.1`, `[::1]`, any loopback
//!   address, any port) or one in `listen.allowed_hosts`: a rebinding page sends its own
//!   name. When the gateway listens beyond loopback without keys (the operator passed
//!   `--allow-public-without-keys`), IP-address Hosts are accepted too, so clients can
//!   reach it by address; a rebinding page can never send an address, only its name;
//! - an `Origin`, when sent (browsers send one on every cross-site POST), must be
//!   loopback, have its host in `listen.allowed_hosts`, or be in `listen.cors_origins`;
//! - a model call's body must be declared `application/json`, a type no page can send
//!   across sites without a preflight (a missing type is refused too: a page can send a
//!   body without one).
//!
//! With keys the key is what protects: a page cannot send one it does not know, so Host,
//! Origin and content type are not judged. Either way CORS is off unless configured: a
//! preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) is answered
//! only for an origin in `listen.cors_origins`, and only those origins' requests get
//! `Access-Control-Allow-Origin`.

use crate::transport::host::{is_ip_literal, is_loopback, origin_host, split_host_port};
use crate::transport::path_dialect::{dialect_of, is_model_call};
use crate::transport::refusals::{self as refusals, Reason, Refusals};
use axum::http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_MAX_AGE, ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD,
    CONTENT_TYPE, HOST, ORIGIN, VARY,
};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};

/// What the guard knows: whether keys protect the gateway, and the operator's lists.
pub(crate) struct Guard {
    keyless: bool,
    /// Listening beyond loopback without keys: IP-address Hosts are accepted too.
    public: bool,
    /// Lowercase, IPv6 without brackets.
    allowed_hosts: Vec<String>,
    /// Lowercase origins, `scheme://host[:port]`.
    cors_origins: Vec<String>,
}

/// The guard's decision on one request.
pub(crate) enum Verdict {
    /// Route it; `cors` is the origin to allow in the response, when configured.
    Pass { cors: Option<HeaderValue> },
    /// Answer this instead (a refusal, or a preflight's answer).
    Answer(Response),
}

impl Guard {
    /// A guard for a gateway with (`keyless: false`) or without client keys.
    pub(crate) fn new(
        keyless: bool,
        public: bool,
        allowed_hosts: &[String],
        cors: &[String],
    ) -> Guard {
        let unbracket = |h: &String| {
            let h = h.to_ascii_lowercase();
            match h.strip_prefix('[').and_then(|r| r.strip_suffix(']')) {
                Some(inner) => inner.to_string(),
                None => h,
            }
        };
        Guard {
            keyless,
            public,
            allowed_hosts: allowed_hosts.iter().map(unbracket).collect(),
            cors_origins: cors.iter().map(|o| o.to_ascii_lowercase()).collect(),
        }
    }

    /// Judges a request by its method, target and headers.
    pub(crate) fn check(
        &self,
        method: &Method,
        uri: &Uri,
        headers: &HeaderMap,
        refusals: &Refusals,
    ) -> Verdict {
        let origin = headers.get(ORIGIN);
        let cors = origin.filter(|o| self.cors_allows(o)).cloned();
        let refuse = |reason: Reason, status: StatusCode, message: String| {
            refusals.count(reason);
            let dialect = dialect_of(uri.path(), headers);
            Verdict::Answer(refusals::error(dialect, status, message).into_response_for(dialect))
        };
        if let Some(origin) = origin.filter(|_| method == Method::OPTIONS) {
            if headers.contains_key(ACCESS_CONTROL_REQUEST_METHOD) {
                return match cors {
                    Some(origin) => Verdict::Answer(preflight(origin, headers)),
                    None => refuse(
                        Reason::Preflight,
                        StatusCode::FORBIDDEN,
                        format!(
                            "CORS preflight from the origin `{}` refused: the gateway answers preflights only for the origins in listen.cors_origins ({})",
                            shown(origin),
                            listed(&self.cors_origins, "none configured")
                        ),
                    ),
                };
            }
        }
        if self.keyless {
            if let Some(bad) = self.foreign_host(uri, headers) {
                return refuse(
                    Reason::Host,
                    StatusCode::FORBIDDEN,
                    format!(
                        "the Host header `{bad}` is not a loopback name; a gateway without client keys answers only loopback names (localhost, 127.0.0.1, [::1]){} and those in listen.allowed_hosts ({}), so that no web page can reach it by DNS rebinding",
                        if self.public { ", IP addresses" } else { "" },
                        listed(&self.allowed_hosts, "none listed")
                    ),
                );
            }
            if let Some(o) = origin.filter(|o| cors.is_none() && !self.origin_allowed(o)) {
                return refuse(
                    Reason::Origin,
                    StatusCode::FORBIDDEN,
                    format!(
                        "requests from the web origin `{}` are refused: a gateway without client keys answers browsers only from loopback origins, origins whose host is in listen.allowed_hosts ({}) and those in listen.cors_origins ({}), so that a page you visit cannot spend your backends' keys",
                        shown(o),
                        listed(&self.allowed_hosts, "none listed"),
                        listed(&self.cors_origins, "none listed")
                    ),
                );
            }
            if is_model_call(method, uri.path()) && !is_json(headers.get(CONTENT_TYPE)) {
                let found = match headers.get(CONTENT_TYPE) {
                    Some(t) => format!("`{}`", shown(t)),
                    None => "no Content-Type".to_string(),
                };
                return refuse(
                    Reason::ContentType,
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!(
                        "a model call's body must be sent with `Content-Type: application/json` (found {found}); a gateway without client keys refuses other types, which a web page could send across sites without asking"
                    ),
                );
            }
        }
        Verdict::Pass { cors }
    }

    /// The first of the `Host` header and the request target's authority (HTTP/2's
    /// `:authority`, or an absolute-form target) that is not allowed.
    fn foreign_host(&self, uri: &Uri, headers: &HeaderMap) -> Option<String> {
        let header = headers.get(HOST).map(|h| h.to_str().map_err(|_| shown(h)));
        let authority = uri.authority().map(|a| Ok(a.as_str()));
        for given in [header, authority].into_iter().flatten() {
            match given {
                Ok(text) if self.host_allowed(text) => {}
                Ok(text) => return Some(text.to_string()),
                Err(shown) => return Some(shown),
            }
        }
        None
    }

    fn host_allowed(&self, host_port: &str) -> bool {
        let Some(host) = split_host_port(host_port) else {
            return false;
        };
        is_loopback(host) || (self.public && is_ip_literal(host)) || self.listed(host)
    }

    fn listed(&self, host: &str) -> bool {
        let host = host.strip_suffix('.').unwrap_or(host);
        self.allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
    }

    fn origin_allowed(&self, origin: &HeaderValue) -> bool {
        let host = origin.to_str().ok().and_then(origin_host);
        host.is_some_and(|h| is_loopback(h) || self.listed(h))
    }

    fn cors_allows(&self, origin: &HeaderValue) -> bool {
        !self.cors_origins.is_empty()
            && origin.to_str().is_ok_and(|o| {
                let o = o.strip_suffix('/').unwrap_or(o);
                self.cors_origins.iter().any(|c| c.eq_ignore_ascii_case(o))
            })
    }
}

/// Adds `Access-Control-Allow-Origin` for a configured origin to a response.
pub(crate) fn allow_origin(response: &mut Response, origin: HeaderValue) {
    let headers = response.headers_mut();
    headers.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    headers.append(VARY, HeaderValue::from_static("origin"));
}

/// The answer to a preflight from a configured origin: every method the gateway serves,
/// and the headers asked for (the origin is trusted; SDKs send their own).
fn preflight(origin: HeaderValue, headers: &HeaderMap) -> Response {
    let mut r = StatusCode::NO_CONTENT.into_response();
    let h = r.headers_mut();
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    h.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, HEAD, POST"),
    );
    if let Some(asked) = headers.get(ACCESS_CONTROL_REQUEST_HEADERS) {
        h.insert(ACCESS_CONTROL_ALLOW_HEADERS, asked.clone());
    }
    h.insert(ACCESS_CONTROL_MAX_AGE, HeaderValue::from_static("600"));
    h.insert(
        VARY,
        HeaderValue::from_static(
            "origin, access-control-request-method, access-control-request-headers",
        ),
    );
    r
}

/// `application/json`, with or without parameters (`; charset=utf-8`).
fn is_json(content_type: Option<&HeaderValue>) -> bool {
    content_type
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// A header value for a message: its text, or its bytes escaped.
fn shown(v: &HeaderValue) -> String {
    match v.to_str() {
        Ok(s) => s.chars().take(200).collect(),
        Err(_) => v.as_bytes().escape_ascii().to_string(),
    }
}

fn listed(items: &[String], none: &str) -> String {
    if items.is_empty() {
        none.to_string()
    } else {
        items.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    fn passes(g: &Guard, method: Method, path: &str, pairs: &[(&'static str, &str)]) -> bool {
        let uri: Uri = path.parse().unwrap();
        matches!(
            g.check(&method, &uri, &headers(pairs), &Refusals::default()),
            Verdict::Pass { .. }
        )
    }

    const JSON: (&str, &str) = ("content-type", "application/json; charset=utf-8");

    #[test]
    fn without_keys_only_loopback_and_listed_hosts_pass() {
        let g = Guard::new(
            true,
            false,
            &["GW.internal".into(), "[fd00::1]".into()],
            &[],
        );
        for host in [
            "localhost:8080",
            "127.0.0.1",
            "[::1]:9",
            "127.9.9.9:1",
            "gw.internal:80",
            "gw.internal.",
            "[fd00::1]:8080",
        ] {
            assert!(
                passes(&g, Method::POST, "/v1/messages", &[("host", host), JSON]),
                "{host}"
            );
        }
        for host in [
            "attacker.example",
            "10.0.0.1:8080",
            "localhost.attacker.example",
            "",
            "a:b:c",
        ] {
            assert!(
                !passes(&g, Method::GET, "/healthz", &[("host", host)]),
                "{host}"
            );
        }
        // An absolute-form target or HTTP/2 authority is judged too.
        assert!(!passes(
            &g,
            Method::GET,
            "http://attacker.example/healthz",
            &[("host", "localhost")]
        ));
        // Listening publicly without keys: any address, still no foreign names.
        let public = Guard::new(true, true, &[], &[]);
        assert!(passes(
            &public,
            Method::GET,
            "/healthz",
            &[("host", "192.168.1.5:8080")]
        ));
        assert!(!passes(
            &public,
            Method::GET,
            "/healthz",
            &[("host", "attacker.example")]
        ));
    }

    #[test]
    fn without_keys_foreign_origins_and_other_types_are_refused() {
        let g = Guard::new(true, false, &["gw.internal".into()], &[]);
        let host = ("host", "127.0.0.1:8080");
        assert!(!passes(
            &g,
            Method::POST,
            "/v1/chat/completions",
            &[host, JSON, ("origin", "https://evil.example")]
        ));
        assert!(!passes(
            &g,
            Method::POST,
            "/v1/chat/completions",
            &[host, JSON, ("origin", "null")]
        ));
        assert!(passes(
            &g,
            Method::POST,
            "/v1/chat/completions",
            &[host, JSON, ("origin", "http://localhost:5173")]
        ));
        assert!(passes(
            &g,
            Method::POST,
            "/v1/chat/completions",
            &[host, JSON, ("origin", "http://gw.internal:3000")]
        ));
        assert!(!passes(
            &g,
            Method::POST,
            "/v1/chat/completions",
            &[host, ("content-type", "text/plain")]
        ));
        assert!(!passes(
            &g,
            Method::POST,
            "/v1beta/models/m:generateContent",
            &[host]
        ));
        assert!(passes(
            &g,
            Method::POST,
            "/v1/chat/completions",
            &[host, ("content-type", "Application/JSON")]
        ));
        // Only model calls need the type.
        assert!(passes(&g, Method::GET, "/v1/models", &[host]));
    }

    #[test]
    fn with_keys_the_key_protects_but_cors_stays_off() {
        let g = Guard::new(false, false, &[], &[]);
        assert!(passes(
            &g,
            Method::POST,
            "/v1/messages",
            &[
                ("host", "gw.example.com"),
                ("origin", "https://x.example"),
                ("content-type", "text/plain")
            ]
        ));
        assert!(!passes(
            &g,
            Method::OPTIONS,
            "/v1/messages",
            &[
                ("origin", "https://x.example"),
                ("access-control-request-method", "POST")
            ]
        ));
    }

    #[test]
    fn a_configured_origin_gets_its_preflight_answered() {
        let g = Guard::new(true, false, &[], &["https://app.example.com".into()]);
        let uri: Uri = "/v1/messages".parse().unwrap();
        let asked = headers(&[
            ("host", "localhost:8080"),
            ("origin", "https://app.example.com"),
            ("access-control-request-method", "POST"),
            ("access-control-request-headers", "content-type, x-api-key"),
        ]);
        let Verdict::Answer(r) = g.check(&Method::OPTIONS, &uri, &asked, &Refusals::default())
        else {
            panic!("the preflight was not answered");
        };
        assert_eq!(r.status(), 204);
        assert_eq!(
            r.headers()["access-control-allow-origin"],
            "https://app.example.com"
        );
        assert_eq!(
            r.headers()["access-control-allow-headers"],
            "content-type, x-api-key"
        );
        let call = headers(&[
            ("host", "localhost:8080"),
            ("origin", "https://app.example.com"),
            JSON,
        ]);
        let Verdict::Pass { cors } = g.check(&Method::POST, &uri, &call, &Refusals::default())
        else {
            panic!("a configured origin's call was refused");
        };
        assert_eq!(cors.unwrap(), "https://app.example.com");
        let other = headers(&[
            ("origin", "https://other.example"),
            ("access-control-request-method", "POST"),
        ]);
        assert!(
            matches!(g.check(&Method::OPTIONS, &uri, &other, &Refusals::default()), Verdict::Answer(r) if r.status() == 403)
        );
    }
}
