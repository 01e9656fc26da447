//! What the fuzz targets share: cutting an input into network chunks, and the checks
//! each dialect's decoders get (one target per dialect and decoder calls these).
//!
//! Every check asserts a property, not only "no panic": a stream decodes the same
//! whatever its chunking, and what a decoder accepted survives being encoded and decoded
//! again unchanged (the first decode may normalise; after that the canonical value is a
//! fixed point).

use switchyard_wire::{
    assemble, codec, reply_events, ByteStreamDecoder, DecodeError, DecodedRequest, Dialect,
    EncodeOptions, Event, Reply, ServerContext,
};

/// The model name given to encoders when a decoded request named none (Gemini's model is
/// in the URL, not the body).
const MODEL: &str = "fuzz-model";

/// Splits `data` into the chunk lengths it starts with and the bytes to cut.
///
/// The first byte's low three bits say how many length bytes follow (0 to 7); chunk
/// lengths cycle through them (a 0 counts as 1). No length bytes means a single chunk.
/// This keeps the cut points under the fuzzer's control while a seed from a fixture only
/// needs one zero byte in front.
pub fn cuts(data: &[u8]) -> (&[u8], &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return (&[], &[]);
    };
    let n = usize::from(head & 7).min(rest.len());
    rest.split_at(n)
}

/// `body` cut into chunks whose lengths cycle through `lengths`.
pub fn chunks<'a>(body: &'a [u8], lengths: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut at = 0;
    let mut i = 0;
    std::iter::from_fn(move || {
        if at >= body.len() {
            return None;
        }
        let len = match lengths {
            [] => body.len(),
            _ => usize::from(lengths[i % lengths.len()].max(1)),
        };
        i += 1;
        let end = (at + len).min(body.len());
        let chunk = &body[at..end];
        at = end;
        Some(chunk)
    })
}

/// What decoding a byte stream gave: its events, or the error that stopped it (events
/// returned before an error are dropped: a caller stops at the error).
pub fn decode_stream<'a>(
    dialect: Dialect,
    pieces: impl Iterator<Item = &'a [u8]>,
) -> Result<Vec<Event>, DecodeError> {
    let mut decoder = ByteStreamDecoder::new(codec(dialect));
    let mut events = Vec::new();
    for piece in pieces {
        events.extend(decoder.push(piece)?);
    }
    events.extend(decoder.finish()?);
    Ok(events)
}

/// Stream decoder check: the fuzzer's chunking decodes as the whole input in one chunk
/// does; a stream that assembles into a reply survives the dialect's stream encoder.
pub fn check_stream(dialect: Dialect, data: &[u8]) {
    let (lengths, body) = cuts(data);
    let whole = decode_stream(dialect, std::iter::once(body));
    if !lengths.is_empty() {
        let cut = decode_stream(dialect, chunks(body, lengths));
        assert_eq!(whole, cut, "chunking changed the decode");
    }
    let Ok(events) = whole else { return };
    let Ok(reply) = assemble(&events) else { return };
    let again = stream_round_trip(dialect, &reply);
    let Some(again) = again else { return };
    assert_eq!(
        stream_round_trip(dialect, &again).as_ref(),
        Some(&again),
        "a re-encoded stream is not stable"
    );
}

/// `reply` streamed by the dialect's encoder and decoded back (`None` when the decoder
/// refuses what the encoder wrote, which the caller asserts about where it must hold).
fn stream_round_trip(dialect: Dialect, reply: &Reply) -> Option<Reply> {
    let mut encoder = codec(dialect).stream_encoder(&ServerContext::default());
    let mut bytes = Vec::new();
    for event in reply_events(reply, 7) {
        encoder.event(&event, &mut bytes);
    }
    encoder.finish(&mut bytes);
    let events = decode_stream(dialect, std::iter::once(&bytes[..]));
    let events = events.expect("the decoder refused the encoder's stream");
    Some(assemble(&events).ok()?.without_raw())
}

/// Request decoder check: a decoded request encodes (when the dialect can carry it), and
/// after that one normalising round, encoding and decoding again changes nothing.
pub fn check_request(dialect: Dialect, data: &[u8]) {
    let c = codec(dialect);
    let Ok(first) = c.decode_request(data) else {
        return;
    };
    let Ok(body) = c.encode_request(&first.request, &options(&first)) else {
        return;
    };
    let bytes = serde_json::to_vec(&body).expect("a JSON map serialises");
    let second = c
        .decode_request(&bytes)
        .expect("the decoder refused the encoder's request");
    let body2 = c
        .encode_request(&second.request, &options(&second))
        .expect("a re-decoded request no longer encodes");
    assert_eq!(body, body2, "encode → decode → encode is not stable");
}

/// How to encode a decoded request again: as it was asked for.
fn options(decoded: &DecodedRequest) -> EncodeOptions<'_> {
    EncodeOptions {
        model: decoded.model.as_deref().unwrap_or(MODEL),
        stream: decoded.stream,
    }
}

/// Reply decoder check: a decoded reply's encoding decodes, and encodes the same again.
pub fn check_reply(dialect: Dialect, data: &[u8]) {
    let c = codec(dialect);
    let Ok(first) = c.decode_reply(data) else {
        return;
    };
    let context = ServerContext::default();
    let bytes = c.encode_reply(&first, &context);
    let second = c
        .decode_reply(&bytes)
        .expect("the decoder refused the encoder's reply");
    assert_eq!(
        c.encode_reply(&second, &context),
        bytes,
        "encode → decode → encode is not stable"
    );
}

/// The dialect a target picks with one byte.
pub fn dialect_of(byte: u8) -> Dialect {
    Dialect::ALL[usize::from(byte) % Dialect::ALL.len()]
}
