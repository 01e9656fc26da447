//! The responses dialect's request decoder (server side): no panic, and what it accepts
//! re-encodes to a fixed point (see `switchyard_fuzz::check_request`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    switchyard_fuzz::check_request(switchyard_wire::Dialect::Responses, data);
});
