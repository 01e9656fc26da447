//! Floats survive a codec exactly: found by the fuzz targets (`request_*`, `reply_*`),
//! where serde_json's default float parsing, one unit in the last place off for some
//! numbers, changed a tool call's argument or a sampling parameter each time a body was
//! decoded and encoded again. The workspace enables serde_json's `float_roundtrip`.

use serde_json::Value;
use switchyard_wire::{codec, Dialect, EncodeOptions, ServerContext};

#[test]
fn a_tool_call_argument_keeps_its_float() {
    let body = br#"{"id":"m","type":"message","role":"assistant","model":"c","content":[{"type":"tool_use","id":"t","name":"f","input":{"x":2.2222222222222218e+44}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}"#;
    let messages = codec(Dialect::Messages);
    let reply = messages.decode_reply(body).unwrap();
    let args: Value = serde_json::from_str(&reply.tool_calls().next().unwrap().arguments).unwrap();
    assert_eq!(args["x"].as_f64(), Some(2.2222222222222218e44));
    let again = messages.encode_reply(&reply, &ServerContext::default());
    assert_eq!(
        messages.decode_reply(&again).unwrap().without_raw(),
        reply.without_raw()
    );
}

#[test]
fn a_sampling_parameter_keeps_its_float() {
    let body = br#"{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"topP":2.2222222222222227e+85}}"#;
    let gemini = codec(Dialect::Gemini);
    let decoded = gemini.decode_request(body).unwrap();
    let options = EncodeOptions {
        model: "m",
        stream: false,
    };
    let encoded = gemini.encode_request(&decoded.request, &options).unwrap();
    let top_p = encoded["generationConfig"]["topP"].as_f64();
    assert_eq!(top_p, Some(2.2222222222222227e85));
}
