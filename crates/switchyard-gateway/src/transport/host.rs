//! Host names as they appear in a `Host` header, a URI authority or a browser `Origin`:
//! split from their port, told loopback or not. Shared by the request guard and the
//! config's checks of `allowed_hosts` and `cors_origins`, so both read names alike.

use std::net::IpAddr;

/// `host[:port]` → the host (IPv6 without its brackets) and whether a valid port followed.
/// `None` when it is not of that shape.
pub(crate) fn split_host_port(s: &str) -> Option<&str> {
    if let Some(rest) = s.strip_prefix('[') {
        let (ip, after) = rest.split_once(']')?;
        return (after.is_empty() || valid_port(after.strip_prefix(':')?)).then_some(ip);
    }
    match s.rsplit_once(':') {
        // One colon: a name or IPv4 address and its port.
        Some((host, port)) if !host.contains(':') => valid_port(port).then_some(host),
        // Several colons without brackets: a bare IPv6 address (no port possible).
        Some(_) => s.parse::<std::net::Ipv6Addr>().is_ok().then_some(s),
        None => Some(s),
    }
}

fn valid_port(p: &str) -> bool {
    !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit())
}

/// True for a host that can only mean this machine: `localhost` and loopback addresses
/// (127.0.0.0/8, ::1, and IPv4-mapped loopback). `*.localhost` is not included: outside
/// browsers it is resolved by DNS like any other name.
pub(crate) fn is_loopback(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(v4)) => v4.is_loopback(),
        Ok(IpAddr::V6(v6)) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
    }
}

/// True for an IP address literal (a DNS-rebinding page never sends one: its `Host` is
/// its own domain name).
pub(crate) fn is_ip_literal(host: &str) -> bool {
    host.parse::<IpAddr>().is_ok()
}

/// True for a plausible host name or address, as listed in `allowed_hosts`.
pub(crate) fn is_host_name(host: &str) -> bool {
    is_ip_literal(host)
        || (!host.is_empty()
            && host.len() <= 253
            && host
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'))
}

/// The host of a browser origin `http(s)://host[:port]`; `None` for anything else
/// (including the `null` origin of sandboxed pages and files).
pub(crate) fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))?;
    let host = split_host_port(rest)?;
    is_host_name(host).then_some(host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_split_from_their_ports() {
        assert_eq!(split_host_port("localhost:8080"), Some("localhost"));
        assert_eq!(split_host_port("127.0.0.1"), Some("127.0.0.1"));
        assert_eq!(split_host_port("[::1]:80"), Some("::1"));
        assert_eq!(split_host_port("[::1]"), Some("::1"));
        assert_eq!(split_host_port("::1"), Some("::1"));
        assert_eq!(split_host_port("a:b"), None);
        assert_eq!(split_host_port("[::1]x"), None);
        assert_eq!(split_host_port("h:123456"), None);
    }

    #[test]
    fn loopback_means_this_machine_only() {
        for h in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.3.4.5",
            "::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_loopback(h), "{h}");
        }
        for h in [
            "attacker.example",
            "0.0.0.0",
            "10.0.0.1",
            "a.localhost",
            "localhost.",
            "::",
        ] {
            assert!(!is_loopback(h), "{h}");
        }
    }

    #[test]
    fn origins_read_as_browsers_send_them() {
        assert_eq!(origin_host("http://localhost:5173"), Some("localhost"));
        assert_eq!(
            origin_host("https://app.example.com"),
            Some("app.example.com")
        );
        assert_eq!(origin_host("http://[::1]:3000"), Some("::1"));
        assert_eq!(origin_host("null"), None);
        assert_eq!(origin_host("file://"), None);
        assert_eq!(origin_host("https://a.example/path"), None);
    }
}
