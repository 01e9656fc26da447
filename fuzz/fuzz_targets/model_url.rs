//! The model-id-to-URL step: no panic on any id; the check (`switchyard::model_id::check`),
//! a reference's parse and every URL builder agree on which ids are accepted; and for an
//! accepted id, the URL each builder makes (Gemini's and Vertex's generate and stream
//! URLs, Gemini's embeddings URL), parsed by the `url` crate, has exactly the expected
//! segments: nothing resolved away, no `#` (no fragment), a query only where the
//! builder puts one, and the model's segment decoding back to the id. Whatever the
//! check says, the escape alone keeps any id in one segment. The first byte picks
//! streaming (its low bit); the rest is the id (lossily UTF-8).
#![no_main]

use std::sync::OnceLock;
use switchyard::env::MapEnv;
use switchyard::model_id::{check, escape_segment};
use switchyard::registry::{Dialect, EndpointError, Registry};
use switchyard::Parsed;

fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::builtin().expect("the built-in backends load"))
}

fn env() -> &'static MapEnv {
    static ENV: OnceLock<MapEnv> = OnceLock::new();
    ENV.get_or_init(|| {
        MapEnv::new([
            ("GOOGLE_CLOUD_PROJECT", "p1"),
            ("GOOGLE_CLOUD_LOCATION", "us-east5"),
        ])
    })
}

/// `%XX` escapes decoded (the `url` crate leaves a path as sent).
fn percent_decode(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (b[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(v)) => {
                out.push(v);
                i += 3;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// `url`'s path is `root` then `/models/`, one segment `<escaped id><method>`, and
/// nothing else; the segment decodes back to `id`.
fn assert_one_segment(url: &url::Url, root: &str, method: &str, id: &str) {
    assert_eq!(url.fragment(), None, "{url}");
    let path = url.path();
    let rest = path
        .strip_prefix(root)
        .and_then(|p| p.strip_prefix("/models/"))
        .unwrap_or_else(|| panic!("{url}: not under {root}/models/"));
    let segment = rest
        .strip_suffix(method)
        .unwrap_or_else(|| panic!("{url}: does not end in {method}"));
    assert!(!segment.contains('/'), "{url}: the id spans segments");
    assert_eq!(percent_decode(segment), id.as_bytes(), "{url}");
    let expected: Vec<&str> = root.split('/').skip(1).chain(["models", rest]).collect();
    let segments: Vec<&str> = url.path_segments().expect("a base URL").collect();
    assert_eq!(segments, expected, "{url}");
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let stream = flags & 1 == 1;
    let id = String::from_utf8_lossy(rest);
    let id = id.as_ref();
    let verdict = check(id);
    if let Err(e) = &verdict {
        // The message is bounded whatever the id: at most 64 of its characters, escaped.
        assert!(e.to_string().len() < 1024, "{e}");
    }
    let accepted = verdict.is_ok();

    // The escape alone: only unreserved bytes and escapes, one segment, the id back.
    let segment = escape_segment(id);
    assert!(segment
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-._~%".contains(&b)));
    let url = url::Url::parse(&format!("http://h/models/{segment}:m")).expect("parses");
    assert_one_segment(&url, "", ":m", id);
    assert_eq!(url.query(), None);

    let (method, query) = match stream {
        true => (":streamGenerateContent", Some("alt=sse")),
        false => (":generateContent", None),
    };
    let builders = [
        ("gemini", "/v1beta"),
        ("vertex", "/v1/projects/p1/locations/us-east5/publishers/google"),
    ];
    for (name, root) in builders {
        let backend = registry().backend(name).expect("a built-in backend");
        match backend.endpoint(Dialect::Gemini, id, stream, env()) {
            Ok(url) => {
                assert!(accepted, "{name} built a URL for a refused id: {url}");
                assert_one_segment(&url, root, method, id);
                assert_eq!(url.query(), query, "{url}");
            }
            Err(e) => {
                assert!(!accepted, "{name}: {e}");
                assert!(matches!(e, EndpointError::BadModelId { .. }), "{e}");
            }
        }
    }
    let gemini = registry().backend("gemini").expect("built in");
    match gemini.embed_url(id, env()) {
        Ok(url) => {
            assert!(accepted, "{url}");
            assert_one_segment(&url, "/v1beta", ":batchEmbedContents", id);
            assert_eq!(url.query(), None, "{url}");
        }
        Err(e) => assert!(!accepted, "{e}"),
    }

    // A reference: refused exactly when its id (after aliases) is; what it gives passes.
    match registry().parse_reference(&format!("gemini/{id}")) {
        Ok(Parsed::Reference(r)) => assert!(check(&r.model).is_ok(), "{}", r.model),
        Ok(Parsed::NotAReference(t)) => panic!("`gemini` is a backend: {t}"),
        Err(e) => assert!(!accepted, "{e}"),
    }
});
