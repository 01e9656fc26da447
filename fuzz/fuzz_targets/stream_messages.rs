//! The messages dialect's stream decoder behind the SSE parser: the input is SSE bytes cut at
//! fuzzer-chosen points (see `switchyard_fuzz::cuts`); the decode must not depend on the
//! cuts, and a decoded reply must survive the stream encoder.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    switchyard_fuzz::check_stream(switchyard_wire::Dialect::Messages, data);
});
