//! Raw HTTP/1 responses read off a socket by tests that speak to the listener byte by
//! byte (kept-alive connections, parked ones, bounds on heads).

/// How many bytes of `seen` make the first whole response (head and a body of its
/// `Content-Length`), once they have all come; `None` while it is incomplete.
pub(crate) fn whole_response_len(seen: &[u8]) -> Option<usize> {
    let end = seen.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&seen[..end]);
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(|v| v.trim().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("no content-length: {head}"));
    let whole = end + 4 + len;
    (seen.len() >= whole).then_some(whole)
}
