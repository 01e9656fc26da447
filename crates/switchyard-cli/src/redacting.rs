//! The console's side of redaction: a writer that passes every write through
//! `switchyard::internal::redact`, so the log (`serve`'s, `ask`'s warnings) never shows a
//! key the process holds. `tracing`'s formatter writes each event with one `write_all`, so
//! an event is redacted whole.

use std::io::{self, Write};

/// `W` with every key the process holds redacted from what is written to it.
pub(crate) struct Redacting<W>(pub(crate) W);

impl<W: Write> Write for Redacting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let clean = switchyard::internal::redact::redact_bytes(buf);
        self.0.write_all(&clean)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_written_is_redacted() {
        switchyard::internal::redact::register("sk-cli-writer-test-0123456789", "a test key");
        let mut out = Redacting(Vec::new());
        out.write_all(b"WARN refused: sk-cli-writer-test-0123456789\n")
            .unwrap();
        assert_eq!(out.0, b"WARN refused: [redacted]\n");
    }
}
