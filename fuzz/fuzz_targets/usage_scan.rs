//! The usage scan: no panic on any body, and on any body a dialect's decoder accepts, the
//! usage read by the scan is the decoded reply's usage. The first byte picks the dialect.
#![no_main]

use switchyard_wire::codec;
use switchyard_wire::usage_scan::{find_usage_object, reply_usage};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let dialect = switchyard_fuzz::dialect_of(pick);
    let c = codec(dialect);
    let found = find_usage_object(dialect, body);
    let Ok(reply) = c.decode_reply(body) else {
        return;
    };
    assert_eq!(
        reply_usage(c, body),
        reply.usage,
        "the scan disagrees with the decode"
    );
    // The object found is the top-level one a full parse sees.
    if let Some(found) = found {
        let full: serde_json::Value =
            serde_json::from_slice(body).expect("a decoded reply is JSON");
        let key = switchyard_wire::usage_scan::usage_key(dialect);
        assert_eq!(full.get(key), Some(&serde_json::Value::Object(found)));
    }
});
