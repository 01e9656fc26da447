//! The messages dialect's reply decoder (client side): no panic, and what it accepts
//! re-encodes to a fixed point (see `switchyard_fuzz::check_reply`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    switchyard_fuzz::check_reply(switchyard_wire::Dialect::Messages, data);
});
