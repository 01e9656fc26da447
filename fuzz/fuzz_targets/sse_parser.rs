//! The SSE parser: no panic, the events do not depend on where the bytes were cut, and
//! events written by `write_event` parse back as written.
#![no_main]

use switchyard_fuzz::{chunks, cuts};
use switchyard_wire::sse::{write_event, SseEvent, SseParser};

fn parse<'a>(pieces: impl Iterator<Item = &'a [u8]>) -> Vec<SseEvent> {
    let mut parser = SseParser::new();
    let mut events = Vec::new();
    for piece in pieces {
        events.extend(parser.push(piece));
    }
    events.extend(parser.finish());
    events
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let (lengths, body) = cuts(data);
    let whole = parse(std::iter::once(body));
    assert_eq!(
        whole,
        parse(chunks(body, lengths)),
        "chunking changed the events"
    );

    // Write the events back out and parse them again: the same events, but for what the
    // writer cannot say (an `id`, and a name or data with a line end in it).
    let mut out = Vec::new();
    let mut expected = Vec::new();
    for event in &whole {
        let name = event.event.as_deref();
        if name.is_some_and(|n| n.contains(['\r', '\n'])) || event.data.contains('\r') {
            continue;
        }
        write_event(&mut out, name, &event.data);
        expected.push(SseEvent {
            id: None,
            ..event.clone()
        });
    }
    assert_eq!(
        parse(chunks(&out, lengths)),
        expected,
        "written events parse back"
    );
});
