//! A record's raw bytes written into its line as a JSON string, escaped straight into the
//! line's buffer.
//!
//! Why not serde_json: its string escaper goes through the `io::Write` and `Formatter`
//! layers for every run between two escapes, and the raw bytes of a reply are dense with
//! quotes (every key of every chunk of a stream). It was the largest single cost of a
//! recorded stream (about 14 % of its instructions, docs/performance.md). The output is
//! byte for byte what serde_json writes for the same string (tested below, on any string).

use super::RawBytes;

/// What a byte becomes inside a JSON string: 0 for itself, the letter after `\` for a
/// short escape, `u` for `\u00XX`. The same choices as serde_json (`/` and DEL as they are).
const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The bytes of `word` that must be escaped, as their high bits (`0x80` in each such
/// byte): a quote, a backslash or a control character. Every such byte is marked; a
/// borrow can also mark the byte after one (a `#` after a quote, a space after a control
/// character), which [`put_byte`] then writes as it is.
fn needs_escape(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x;
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (zero_byte(quote) | zero_byte(backslash) | control) & HIGH
}

/// The escaped text is gathered in a buffer on the stack this long, then appended to the
/// line in one copy.
const ROOM: usize = 512;

/// The most one word of text becomes: eight `\u00XX` escapes.
const WORD_MOST: usize = 8 * 6;

/// Appends `text` as a JSON string literal (quotes included).
///
/// Eight bytes at a time. The raw bytes of a reply are dense with escapes (a quote every
/// few bytes of a stream's chunks), so every marked byte of a word is handled before the
/// next word is read: the run before it is written as the whole word shifted down to the
/// run's start (one eight-byte store, where a run-sized copy calls `memcpy`) and cut back
/// to the run, then the byte, escaped. The stores go to a buffer on the stack, which
/// needs no capacity check per store, and reach the line a few hundred bytes at a time.
pub(crate) fn push_json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + bytes.len() / 4 + 2);
    out.push(b'"');
    let mut buf = [0u8; ROOM];
    let mut pos = 0;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        // Room for this word, and for the last run's eight-byte store.
        if pos > ROOM - WORD_MOST - 8 {
            out.extend_from_slice(&buf[..pos]);
            pos = 0;
        }
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        let mut marked = needs_escape(word);
        // The first byte of `word` not yet written.
        let mut from = 0;
        while marked != 0 {
            // Little-endian: the lowest marked byte is the first in the text.
            let at = marked.trailing_zeros() / 8;
            buf[pos..pos + 8].copy_from_slice(&(word >> (8 * from)).to_le_bytes());
            pos += (at - from) as usize;
            pos = put_byte(&mut buf, pos, chunk[at as usize]);
            from = at + 1;
            marked &= marked - 1;
        }
        if from < 8 {
            buf[pos..pos + 8].copy_from_slice(&(word >> (8 * from)).to_le_bytes());
            pos += (8 - from) as usize;
        }
    }
    // The last bytes, fewer than a word, one at a time.
    if pos > ROOM - WORD_MOST {
        out.extend_from_slice(&buf[..pos]);
        pos = 0;
    }
    for &byte in words.remainder() {
        pos = put_byte(&mut buf, pos, byte);
    }
    out.extend_from_slice(&buf[..pos]);
    out.push(b'"');
}

/// Writes `byte` escaped (or as it is) at `pos` of `buf`; returns where the next byte goes.
#[inline]
fn put_byte(buf: &mut [u8; ROOM], pos: usize, byte: u8) -> usize {
    match ESCAPE[byte as usize] {
        0 => {
            buf[pos] = byte;
            pos + 1
        }
        b'u' => {
            buf[pos..pos + 6].copy_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[usize::from(byte >> 4)],
                HEX[usize::from(byte & 0xf)],
            ]);
            pos + 6
        }
        escape => {
            buf[pos..pos + 2].copy_from_slice(&[b'\\', escape]);
            pos + 2
        }
    }
}

/// Appends `raw` as the record's `raw` object writes it (`{"encoding":…,"data":…}`).
pub(crate) fn push_raw(out: &mut Vec<u8>, raw: &RawBytes) {
    let (encoding, data): (&[u8], &str) = match raw {
        RawBytes::Utf8(text) => (b"{\"encoding\":\"utf8\",\"data\":", text),
        RawBytes::Base64(data) => (b"{\"encoding\":\"base64\",\"data\":", data),
    };
    out.extend_from_slice(encoding);
    push_json_str(out, data);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn escaped(text: &str) -> String {
        let mut out = Vec::new();
        push_json_str(&mut out, text);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn every_kind_of_character_is_escaped_as_serde_json_escapes_it() {
        let every_ascii: String = (0u8..0x80).map(char::from).collect();
        for text in [
            "",
            "plain",
            "data: {\"a\":\"b\\\\c\"}\n\n",
            "\u{7f}/\u{1F600}é\r\t\u{8}\u{c}\u{0}\u{1f}",
            every_ascii.as_str(),
            // Every byte a `\u00XX`, for longer than the stack buffer.
            &"\u{1}".repeat(3 * ROOM + 5),
        ] {
            assert_eq!(
                escaped(text),
                serde_json::to_string(text).unwrap(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn the_raw_object_is_what_serde_writes_for_it() {
        for raw in [
            RawBytes::new(b"data: {\"x\":1}\n\n"),
            RawBytes::new(&[0xff, 0, b'"']),
        ] {
            let mut out = Vec::new();
            push_raw(&mut out, &raw);
            assert_eq!(out, serde_json::to_vec(&raw).unwrap());
        }
    }

    proptest! {
        #[test]
        fn any_string_is_escaped_as_serde_json_escapes_it(text in any::<String>()) {
            prop_assert_eq!(escaped(&text), serde_json::to_string(&text).unwrap());
        }

        /// Up to 1,200 characters: past the stack buffer, with every byte escaped.
        #[test]
        fn dense_escapes_at_every_offset_are_escaped_as_serde_json_escapes_them(
            // With the bytes a borrow can mark after an escape (`#`, `]`, a space, 0x01).
            text in "[\"\\\\\u{0}-\u{1f}\u{7f}aé/# \\]!]{0,1200}"
        ) {
            prop_assert_eq!(escaped(&text), serde_json::to_string(&text).unwrap());
        }

        #[test]
        fn any_bytes_come_back_from_the_raw_object(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut out = Vec::new();
            push_raw(&mut out, &RawBytes::new(&bytes));
            let back: RawBytes = serde_json::from_slice(&out).unwrap();
            let back = back.to_bytes().unwrap();
            prop_assert_eq!(back.as_ref(), bytes.as_slice());
        }
    }
}
