//! Embeddings codecs, both directions: OpenAI's `/v1/embeddings` (float and base64, exact
//! bytes) and Gemini's `embedContent` / `batchEmbedContents`, and a Gemini reply written
//! for an OpenAI client.

use serde_json::{json, Value};
use switchyard_wire::embed::{
    gemini, openai, vector_from_base64, vector_to_base64, EmbedInput, EmbedRequest, Embeddings,
    EncodingFormat,
};
use switchyard_wire::DecodeError;

fn malformed(e: DecodeError) -> String {
    match e {
        DecodeError::Malformed(m) => m,
        other => panic!("expected a malformed error, got {other:?}"),
    }
}

// Python: base64.b64encode(struct.pack('<3f', 1.0, -2.0, 0.5))
const ONE_MINUS_TWO_HALF: &str = "AACAPwAAAMAAAAA/";

#[test]
fn base64_is_little_endian_f32_as_openai_writes_it() {
    assert_eq!(vector_to_base64(&[1.0, -2.0, 0.5]), ONE_MINUS_TWO_HALF);
    assert_eq!(
        vector_from_base64(ONE_MINUS_TWO_HALF, "v").unwrap(),
        vec![1.0, -2.0, 0.5]
    );
    // Python: base64.b64encode(struct.pack('<2f', 0.1, -0.25))
    assert_eq!(vector_to_base64(&[0.1, -0.25]), "zczMPQAAgL4=");
}

#[test]
fn bad_base64_says_what_was_expected() {
    let m = malformed(vector_from_base64("not base64!", "data[0].embedding").unwrap_err());
    assert!(
        m.contains("data[0].embedding") && m.contains("little-endian f32"),
        "{m}"
    );
    // Six bytes: not a whole number of f32s.
    let m = malformed(vector_from_base64("AAAAAAAA", "v").unwrap_err());
    assert!(m.contains("6 bytes"), "{m}");
}

#[test]
fn openai_request_encodes_as_a_list_with_what_was_said() {
    let r = EmbedRequest::texts(["a", "b"])
        .with_dimensions(8)
        .with_encoding(EncodingFormat::Base64);
    assert_eq!(
        Value::Object(openai::encode_request(&r, "text-embedding-3-small")),
        json!({"model": "text-embedding-3-small", "input": ["a", "b"], "dimensions": 8, "encoding_format": "base64"})
    );
    // Nothing said: no encoding_format, the provider's default stays its own.
    let plain = openai::encode_request(&EmbedRequest::tokens(vec![vec![1, 2], vec![3]]), "m");
    assert_eq!(
        Value::Object(plain),
        json!({"model": "m", "input": [[1, 2], [3]]})
    );
}

#[test]
fn openai_request_decodes_every_input_form() {
    let cases = [
        (json!("one"), EmbedInput::Texts(vec!["one".into()])),
        (
            json!(["a", "b"]),
            EmbedInput::Texts(vec!["a".into(), "b".into()]),
        ),
        (json!([5, 6, 7]), EmbedInput::Tokens(vec![vec![5, 6, 7]])),
        (
            json!([[1], [2, 3]]),
            EmbedInput::Tokens(vec![vec![1], vec![2, 3]]),
        ),
    ];
    for (input, want) in cases {
        let body = json!({"model": "m", "input": input, "encoding_format": "float"});
        let d = openai::decode_request(body.to_string().as_bytes()).unwrap();
        assert_eq!(d.model, "m");
        assert_eq!(d.request.input, want);
        assert_eq!(d.request.encoding_format, Some(EncodingFormat::Float));
    }
    let d = openai::decode_request(br#"{"model":"m","input":"x","dimensions":256,"user":"u"}"#)
        .unwrap();
    assert_eq!(d.request.dimensions, Some(256));
    assert_eq!(d.request.encoding_format, None);
    assert_eq!(d.request.user.as_deref(), Some("u"));
}

#[test]
fn openai_request_errors_name_the_field_and_what_is_accepted() {
    let cases: [(&str, &[&str]); 6] = [
        (r#"{"input":"x"}"#, &["model"]),
        (r#"{"model":"m"}"#, &["input"]),
        (r#"{"model":"m","input":[]}"#, &["empty", "accepted"]),
        (
            r#"{"model":"m","input":["a",1]}"#,
            &["input[1]", "list of strings"],
        ),
        (
            r#"{"model":"m","input":"a","encoding_format":"int8"}"#,
            &["encoding_format", "\"base64\""],
        ),
        (
            r#"{"model":"m","input":"a","dimensions":-3}"#,
            &["dimensions", "positive"],
        ),
    ];
    for (body, words) in cases {
        let m = malformed(openai::decode_request(body.as_bytes()).unwrap_err());
        for w in words {
            assert!(m.contains(w), "{body}: {m} lacks {w}");
        }
    }
}

#[test]
fn openai_reply_decodes_float_and_base64_in_index_order() {
    let float = br#"{"object":"list","data":[{"object":"embedding","index":1,"embedding":[0.5]},{"object":"embedding","index":0,"embedding":[1.0,-2.0]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":7,"total_tokens":7}}"#;
    let e = openai::decode_reply(float).unwrap();
    assert_eq!(e.vectors, vec![vec![1.0, -2.0], vec![0.5]]);
    assert_eq!(e.input_tokens, Some(7));
    assert_eq!(e.model.as_deref(), Some("text-embedding-3-small"));
    assert_eq!(&e.raw[..], &float[..]);

    let b64 = format!(
        r#"{{"object":"list","data":[{{"object":"embedding","index":0,"embedding":"{ONE_MINUS_TWO_HALF}"}}],"model":"m","usage":{{"prompt_tokens":2,"total_tokens":2}}}}"#
    );
    let e = openai::decode_reply(b64.as_bytes()).unwrap();
    assert_eq!(e.vectors, vec![vec![1.0, -2.0, 0.5]]);
}

#[test]
fn openai_reply_error_object_is_the_providers_error() {
    let body = br#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#;
    match openai::decode_reply(body) {
        Err(DecodeError::Provider(e)) => {
            assert_eq!(e.code.as_deref(), Some("rate_limit_exceeded"));
            assert_eq!(e.message, "Rate limit reached");
        }
        other => panic!("{other:?}"),
    }
    let m = malformed(
        openai::decode_reply(br#"{"data":[{"index":0,"embedding":[1,"x"]}]}"#).unwrap_err(),
    );
    assert!(m.contains("data[0].embedding[1]"), "{m}");
}

fn sample() -> Embeddings {
    Embeddings {
        vectors: vec![vec![0.1, -0.25], vec![1.0, -2.0, 0.5]],
        input_tokens: Some(3),
        model: None,
        raw: Default::default(),
    }
}

#[test]
fn openai_reply_encodes_exact_bytes_as_float_and_as_base64() {
    let float = openai::encode_reply(&sample(), EncodingFormat::Float, "m");
    assert_eq!(
        std::str::from_utf8(&float).unwrap(),
        r#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.25]},{"object":"embedding","index":1,"embedding":[1.0,-2.0,0.5]}],"model":"m","usage":{"prompt_tokens":3,"total_tokens":3}}"#
    );
    let b64 = openai::encode_reply(&sample(), EncodingFormat::Base64, "m");
    assert_eq!(
        std::str::from_utf8(&b64).unwrap(),
        format!(
            r#"{{"object":"list","data":[{{"object":"embedding","index":0,"embedding":"zczMPQAAgL4="}},{{"object":"embedding","index":1,"embedding":"{ONE_MINUS_TWO_HALF}"}}],"model":"m","usage":{{"prompt_tokens":3,"total_tokens":3}}}}"#
        )
    );
    // And back: both forms decode to the same f32s.
    for body in [float, b64] {
        assert_eq!(
            openai::decode_reply(&body).unwrap().vectors,
            sample().vectors
        );
    }
    // Unknown usage is left out, never written as zero.
    let none = Embeddings {
        input_tokens: None,
        ..sample()
    };
    let body: Value =
        serde_json::from_slice(&openai::encode_reply(&none, EncodingFormat::Float, "m")).unwrap();
    assert!(body.get("usage").is_none());
}

#[test]
fn gemini_batch_request_both_ways() {
    let r = EmbedRequest::texts(["a", "b"])
        .with_dimensions(4)
        .with_task_type("RETRIEVAL_QUERY");
    let body = Value::Object(gemini::encode_batch_request(&r, "gemini-embedding-001").unwrap());
    assert_eq!(
        body,
        json!({"requests": [
            {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "a"}]}, "taskType": "RETRIEVAL_QUERY", "outputDimensionality": 4},
            {"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "b"}]}, "taskType": "RETRIEVAL_QUERY", "outputDimensionality": 4}
        ]})
    );
    let back = gemini::decode_batch_request(body.to_string().as_bytes()).unwrap();
    assert_eq!(back, r);
    // snake_case names, as Google also parses them.
    let snake = br#"{"requests":[{"content":{"parts":[{"text":"x"},{"text":"y"}]},"task_type":"CLUSTERING","output_dimensionality":2}]}"#;
    let d = gemini::decode_batch_request(snake).unwrap();
    assert_eq!(d.input, EmbedInput::Texts(vec!["xy".into()]));
    assert_eq!(
        (d.task_type.as_deref(), d.dimensions),
        (Some("CLUSTERING"), Some(2))
    );
}

#[test]
fn gemini_refuses_what_it_cannot_carry() {
    let e = gemini::encode_batch_request(&EmbedRequest::tokens(vec![vec![1]]), "m").unwrap_err();
    assert!(e.0.contains("text only"), "{e}");
    let mixed = br#"{"requests":[{"content":{"parts":[{"text":"a"}]},"taskType":"A"},{"content":{"parts":[{"text":"b"}]},"taskType":"B"}]}"#;
    let m = malformed(gemini::decode_batch_request(mixed).unwrap_err());
    assert!(m.contains("requests[1]") && m.contains("taskType"), "{m}");
    let m = malformed(
        gemini::decode_single_request(br#"{"content":{"parts":[{"inlineData":{}}]}}"#).unwrap_err(),
    );
    assert!(m.contains("parts[0]") && m.contains("text"), "{m}");
}

#[test]
fn gemini_single_request_and_replies() {
    let r = gemini::decode_single_request(
        br#"{"model":"models/m","content":{"parts":[{"text":"hi"}]},"outputDimensionality":3}"#,
    )
    .unwrap();
    assert_eq!(r.input, EmbedInput::Texts(vec!["hi".into()]));
    assert_eq!(r.dimensions, Some(3));

    let batch = gemini::encode_batch_reply(&sample());
    assert_eq!(
        std::str::from_utf8(&batch).unwrap(),
        r#"{"embeddings":[{"values":[0.1,-0.25]},{"values":[1.0,-2.0,0.5]}],"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3}}"#
    );
    let single = gemini::encode_single_reply(&sample());
    assert_eq!(
        std::str::from_utf8(&single).unwrap(),
        r#"{"embedding":{"values":[0.1,-0.25]},"usageMetadata":{"promptTokenCount":3,"totalTokenCount":3}}"#
    );
    let decoded = gemini::decode_reply(&batch).unwrap();
    assert_eq!(decoded.vectors, sample().vectors);
    assert_eq!(decoded.input_tokens, Some(3));
    assert_eq!(
        gemini::decode_reply(&single).unwrap().vectors,
        vec![vec![0.1, -0.25]]
    );
    // The developer API's own reply: no usage, which stays unknown.
    let bare = gemini::decode_reply(br#"{"embeddings":[{"values":[0.5]}]}"#).unwrap();
    assert_eq!(bare.input_tokens, None);
}

#[test]
fn gemini_reply_error_object_is_the_providers_error() {
    let body = br#"{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}"#;
    match gemini::decode_reply(body) {
        Err(DecodeError::Provider(e)) => {
            assert_eq!(e.kind.as_deref(), Some("RESOURCE_EXHAUSTED"));
            assert_eq!(e.status, Some(429));
        }
        other => panic!("{other:?}"),
    }
    let m = malformed(gemini::decode_reply(br#"{"predictions":[]}"#).unwrap_err());
    assert!(m.contains("embeddings") && m.contains("embedding"), "{m}");
}

#[test]
fn a_gemini_reply_written_for_an_openai_client_asking_base64() {
    let upstream = br#"{"embeddings":[{"values":[1.0,-2.0,0.5]}]}"#;
    let e = gemini::decode_reply(upstream).unwrap();
    let out = openai::encode_reply(&e, EncodingFormat::Base64, "gemini/gemini-embedding-001");
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["data"][0]["embedding"], ONE_MINUS_TWO_HALF);
    assert_eq!(v["model"], "gemini/gemini-embedding-001");
}
