//! Small text helpers for messages people read.

/// The first `max` characters of a body as text, with `…` when cut.
pub(crate) fn preview(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    let mut out: String = text.chars().take(max).collect();
    if text.chars().count() > max {
        out.push('…');
    }
    out
}
