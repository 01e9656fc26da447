//! A model id is data, never path (issue 33, point 2): ids with `..`, `%2F`, `%2E`, `#`,
//! `?`, backslashes, control characters and overlong segments, sent through the model
//! field of every dialect and through Gemini's paths, `models/{backend}/{model}` and
//! `{backend}/{model}` alike (sent byte for byte over a socket, so
//! no client library normalises them first), are refused in the client's dialect before
//! anything goes upstream; ids that are fine reach the upstream as exactly one path
//! segment (the mock records the raw path), and keys, prices and records follow the id
//! that was sent.

mod common;

use common::gateway_for;
use serde_json::{json, Value};
use std::net::SocketAddr;
use std::path::Path;
use switchyard::env::MapEnv;
use switchyard::record::{read_records, CallRecord};
use switchyard_gateway::{start, GatewayConfig, KeySecret, KeySpec, RunningGateway};
use switchyard_mock::MockServer;
use switchyard_wire::Dialect;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const KIM: &str = "sk-kim-small-only";
const ALL: &str = "sk-all-models";

struct Setup {
    mock: MockServer,
    gateway: RunningGateway,
    dir: tempfile::TempDir,
}

/// A gateway recording into a directory, with `mgem` (the mock as a Gemini backend that
/// also serves embeddings in Gemini's shape) beside the common `up-<dialect>` backends,
/// and two keys: `kim`, held to `mgem/mock-small*`, and `all`.
async fn setup() -> Setup {
    let mock = MockServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let key = |name: &str, var: &str, models: &[&str]| KeySpec {
        models: models.iter().map(|m| m.to_string()).collect(),
        ..KeySpec::new(name, KeySecret::Env(var.into()))
    };
    let config = GatewayConfig {
        retry: switchyard::RetryPolicy::never(),
        keys: vec![
            key("kim", "KIM_KEY", &["mgem/mock-small*"]),
            key("all", "ALL_KEY", &[]),
        ],
        store: Some(dir.path().to_path_buf()),
        ..GatewayConfig::default()
    };
    let extra = [
        "backends.mgem.from=mock".to_string(),
        "backends.mgem.apis=[gemini, embeddings]".to_string(),
    ];
    let env = MapEnv::new([("KIM_KEY", KIM), ("ALL_KEY", ALL)]);
    let g = gateway_for(&mock.base_url(), config, env, &extra);
    let gateway = start(g, "127.0.0.1:0".parse().unwrap()).await.unwrap();
    Setup { mock, gateway, dir }
}

/// One HTTP/1.1 request written byte for byte (the path exactly as given: a client
/// library would resolve its `..` or re-escape it), the reply's status and body.
async fn raw_post(addr: SocketAddr, path: &str, key: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(head.as_bytes()).await.unwrap();
    socket.write_all(body.as_bytes()).await.unwrap();
    let mut reply = Vec::new();
    socket.read_to_end(&mut reply).await.unwrap();
    let text = String::from_utf8_lossy(&reply).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status: u16 = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    let chunked = head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked");
    let body = if chunked {
        unchunk(rest)
    } else {
        rest.to_string()
    };
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (status, value)
}

fn unchunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || tail.len() < n {
            break;
        }
        out.push_str(&tail[..n]);
        rest = tail[n..].trim_start_matches("\r\n");
    }
    out
}

fn addr(s: &Setup) -> SocketAddr {
    s.gateway
        .url()
        .trim_start_matches("http://")
        .parse()
        .unwrap()
}

fn body_for(dialect: Dialect, model: &str, stream: bool) -> Value {
    let user = "hi";
    match dialect {
        Dialect::Chat => {
            json!({"model": model, "stream": stream, "messages": [{"role": "user", "content": user}]})
        }
        Dialect::Responses => json!({"model": model, "stream": stream, "input": user}),
        Dialect::Messages => json!({"model": model, "stream": stream, "max_tokens": 32,
            "messages": [{"role": "user", "content": user}]}),
        Dialect::Gemini => json!({"contents": [{"role": "user", "parts": [{"text": user}]}]}),
    }
}

fn body_path(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Chat => "/v1/chat/completions",
        Dialect::Responses => "/v1/responses",
        Dialect::Messages => "/v1/messages",
        Dialect::Gemini => unreachable!("Gemini names the model in the path"),
    }
}

/// Every byte percent-encoded but the unreserved ones (and `/` too when `slash`), `.`
/// as `%2E` when `dots`: the ways a Gemini client may write a model in the path.
fn encode(id: &str, slash: bool, dots: bool) -> String {
    let mut out = String::new();
    for b in id.bytes() {
        let keep = b.is_ascii_alphanumeric()
            || b"-_~".contains(&b)
            || (b == b'.' && !dots)
            || (b == b'/' && !slash);
        if keep {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The error message of a refusal in `dialect`'s shape, asserting the shape of a 400.
fn refusal_message(dialect: Dialect, status: u16, body: &Value) -> String {
    assert_eq!(status, 400, "{dialect}: {body}");
    match dialect {
        Dialect::Chat | Dialect::Responses => {
            assert_eq!(body["error"]["type"], "invalid_request_error", "{body}")
        }
        Dialect::Messages => {
            assert_eq!(body["type"], "error", "{body}");
            assert_eq!(body["error"]["type"], "invalid_request_error", "{body}");
        }
        Dialect::Gemini => assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{body}"),
    }
    body["error"]["message"].as_str().unwrap().to_string()
}

/// Model ids no door accepts, each with the words its refusal must hold.
fn hostile() -> Vec<(String, &'static str)> {
    vec![
        ("mock-small+x/../mock-large".into(), "a `..` segment"),
        ("../../v1/fine_tuning/jobs#".into(), "a `..` segment"),
        ("..".into(), "a `..` segment"),
        ("mock-small/.".into(), "a `.` segment"),
        ("a//mock-small".into(), "an empty segment"),
        ("mock-small#frag".into(), "holds `#` at byte 10"),
        ("mock-small?alt=json".into(), "holds `?` at byte 10"),
        (
            "mock-small%2F..%2Fmock-large".into(),
            "holds `%` at byte 10",
        ),
        ("mock-small\\..\\mock-large".into(), "holds `\\` at byte 10"),
        ("mock-small\u{0}".into(), "control character U+0000"),
        ("mock-small\n:x".into(), "control character U+000A"),
        ("mock-small\u{7f}".into(), "control character U+007F"),
        ("mock-small\u{9b}".into(), "control character U+009B"),
        ("x".repeat(513), "is 513 bytes long (at most 512)"),
        (format!("{}/mock-small", "y".repeat(600)), "bytes long"),
    ]
}

fn assert_names_the_rule(message: &str, why: &str, context: &str) {
    assert!(message.contains(why), "{context}: {message}");
    assert!(
        message.contains("a model id is 1 to 512 bytes with no control character"),
        "{context}: {message}"
    );
    assert!(message.len() < 600, "{context}: the message is bounded");
}

#[tokio::test]
async fn the_reported_walks_out_of_the_path_segment_are_refused_and_nothing_goes_upstream() {
    let s = setup().await;
    // The Gemini client of the report: a key held to `mgem/mock-small*` asking for
    // `mock-large` through `..`.
    let (status, body) = raw_post(
        addr(&s),
        "/v1beta/models/mgem%2Fmock-small%2Bx%2F..%2Fmock-large:generateContent",
        KIM,
        &body_for(Dialect::Gemini, "", false),
    )
    .await;
    let message = refusal_message(Dialect::Gemini, status, &body);
    assert_names_the_rule(
        &message,
        "`mock-small+x/../mock-large` has a `..` segment",
        "gemini",
    );
    // The same walk with the backend first, as the AI SDK's Google provider writes it.
    for path in [
        "/v1beta/mgem%2Fmock-small%2Bx%2F..%2Fmock-large:generateContent",
        "/v1beta/mgem/mock-small+x/../mock-large:generateContent",
        "/v1/mgem/mock-small+x/%2E%2E/mock-large:generateContent",
    ] {
        let (status, body) =
            raw_post(addr(&s), path, KIM, &body_for(Dialect::Gemini, "", false)).await;
        let message = refusal_message(Dialect::Gemini, status, &body);
        assert_names_the_rule(
            &message,
            "`mock-small+x/../mock-large` has a `..` segment",
            path,
        );
    }
    // The chat body of the report, aimed at another endpoint with the backend's key.
    let (status, body) = raw_post(
        addr(&s),
        "/v1/chat/completions",
        ALL,
        &body_for(Dialect::Chat, "mgem/../../v1/fine_tuning/jobs#", false),
    )
    .await;
    let message = refusal_message(Dialect::Chat, status, &body);
    assert_names_the_rule(&message, "has a `..` segment", "chat");
    assert!(s.mock.requests().is_empty(), "{:?}", s.mock.requests());
}

#[tokio::test]
async fn hostile_ids_in_every_dialects_model_field_are_refused_before_upstream() {
    let s = setup().await;
    for (id, why) in hostile() {
        for backend in ["mgem", "up-chat", "up-messages"] {
            let model = format!("{backend}/{id}");
            for dialect in [Dialect::Chat, Dialect::Responses, Dialect::Messages] {
                for stream in [false, true] {
                    let body = body_for(dialect, &model, stream);
                    let (status, reply) = raw_post(addr(&s), body_path(dialect), ALL, &body).await;
                    let message = refusal_message(dialect, status, &reply);
                    assert_names_the_rule(&message, why, &format!("{dialect} {model:?}"));
                }
            }
            // OpenAI's embeddings route names the model in the body too.
            let (status, reply) = raw_post(
                addr(&s),
                "/v1/embeddings",
                ALL,
                &json!({"model": model, "input": "hi"}),
            )
            .await;
            let message = refusal_message(Dialect::Chat, status, &reply);
            assert_names_the_rule(&message, why, &format!("embeddings {model:?}"));
        }
    }
    assert!(s.mock.requests().is_empty(), "{:?}", s.mock.requests());
}

#[tokio::test]
async fn hostile_ids_in_gemini_paths_are_refused_however_they_are_written() {
    let s = setup().await;
    let methods = [
        ":generateContent",
        ":streamGenerateContent?alt=sse",
        ":countTokens",
        ":embedContent",
        ":batchEmbedContents",
    ];
    for (id, why) in hostile() {
        let model = format!("mgem/{id}");
        // `/` and `.` as written, `/` as `%2F`, and `.` as `%2E` as well: one decoding
        // gives the same id each time.
        let writings = [
            encode(&model, false, false),
            encode(&model, true, false),
            encode(&model, true, true),
            encode(&model, false, true),
        ];
        for written in writings {
            // The `models/` form and the backend first: refused alike.
            for root in ["/v1beta/models/", "/v1/models/", "/v1beta/", "/v1/"] {
                for method in methods {
                    let path = format!("{root}{written}{method}");
                    let body = if method.contains("mbed") {
                        json!({"content": {"parts": [{"text": "hi"}]},
                            "requests": [{"content": {"parts": [{"text": "hi"}]}}]})
                    } else {
                        body_for(Dialect::Gemini, "", false)
                    };
                    let (status, reply) = raw_post(addr(&s), &path, ALL, &body).await;
                    let message = refusal_message(Dialect::Gemini, status, &reply);
                    assert_names_the_rule(&message, why, &path);
                }
            }
        }
    }
    // Escapes that do not decode to UTF-8: the dialect's 400 too.
    for path in [
        "/v1beta/models/mgem%2Fmock-small%FF:generateContent",
        "/v1/models/mgem/%C3:streamGenerateContent?alt=sse",
        "/v1beta/mgem%2Fmock-small%FF:generateContent",
        "/v1/mgem/%C3:streamGenerateContent?alt=sse",
        "/v1beta/mgem/mock-small%FF:countTokens",
    ] {
        let (status, reply) =
            raw_post(addr(&s), path, ALL, &body_for(Dialect::Gemini, "", false)).await;
        let message = refusal_message(Dialect::Gemini, status, &reply);
        assert!(
            message.contains("a model id is UTF-8 text"),
            "{path}: {message}"
        );
    }
    assert!(s.mock.requests().is_empty(), "{:?}", s.mock.requests());
}

#[tokio::test]
async fn a_name_that_routes_nowhere_is_echoed_cut_short_and_escaped() {
    let s = setup().await;
    let name = format!("no-such-model\n{}", "z".repeat(100_000));
    let (status, reply) = raw_post(
        addr(&s),
        "/v1/chat/completions",
        ALL,
        &body_for(Dialect::Chat, &name, false),
    )
    .await;
    assert_eq!(status, 404, "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("model `no-such-model\\n") && message.contains("… (100014 bytes)`"),
        "{message}"
    );
    assert!(message.len() < 1024, "{}", message.len());
}

/// (path, query) of every request the mock received, in order; the log cleared.
fn upstream_paths(mock: &MockServer) -> Vec<(String, Option<String>)> {
    let seen = mock
        .requests()
        .into_iter()
        .map(|r| (r.path, r.query))
        .collect();
    mock.clear();
    seen
}

#[tokio::test]
async fn an_accepted_id_reaches_a_gemini_upstream_as_exactly_one_segment() {
    let s = setup().await;
    // Slashes, a colon, spaces, `+`, `@`, braces and non-ASCII: accepted, and each
    // escaped so that the id is one segment and decodes back to itself.
    let id = "say:Hi {W} a/b+c@d é";
    let sent = "say%3AHi%20%7BW%7D%20a%2Fb%2Bc%40d%20%C3%A9";
    let model = format!("mgem/{id}");
    for dialect in [Dialect::Chat, Dialect::Responses, Dialect::Messages] {
        for stream in [false, true] {
            let (status, reply) = raw_post(
                addr(&s),
                body_path(dialect),
                ALL,
                &body_for(dialect, &model, stream),
            )
            .await;
            assert_eq!(status, 200, "{dialect}: {reply}");
            let method = match stream {
                true => ":streamGenerateContent",
                false => ":generateContent",
            };
            assert_eq!(
                upstream_paths(&s.mock),
                [(
                    format!("/v1beta/models/{sent}{method}"),
                    stream.then(|| "alt=sse".to_string())
                )],
                "{dialect} stream {stream}"
            );
            if !stream {
                // The mock read the id back intact: its reply is the text after `say:`.
                assert!(reply.to_string().contains("Hi {W} a/b+c@d é"), "{reply}");
            }
        }
    }
    // A Gemini client may write the slashes as they are or as `%2F`, the model after
    // `models/` or as the resource itself: the same id goes.
    let roots = ["/v1beta/models/", "/v1/models/", "/v1beta/", "/v1/"];
    for (root, written) in roots.iter().flat_map(|root| {
        [encode(&model, false, false), encode(&model, true, true)].map(|w| (root, w))
    }) {
        for (method, query) in [
            (":generateContent", None),
            (":streamGenerateContent?alt=sse", Some("alt=sse")),
        ] {
            let path = format!("{root}{written}{method}");
            let (status, reply) =
                raw_post(addr(&s), &path, ALL, &body_for(Dialect::Gemini, "", false)).await;
            assert_eq!(status, 200, "{path}: {reply}");
            let method = method.split('?').next().unwrap();
            assert_eq!(
                upstream_paths(&s.mock),
                [(
                    format!("/v1beta/models/{sent}{method}"),
                    query.map(String::from)
                )],
                "{path}"
            );
        }
    }
    // A Gemini client of a chat upstream: the id goes in the body, as it was.
    for root in ["/v1beta/models/", "/v1beta/"] {
        let path = format!(
            "{root}{}:generateContent",
            encode(&format!("up-chat/{id}"), true, false)
        );
        let (status, reply) =
            raw_post(addr(&s), &path, ALL, &body_for(Dialect::Gemini, "", false)).await;
        assert_eq!(status, 200, "{path}: {reply}");
        let seen = s.mock.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].path, "/v1/chat/completions");
        assert_eq!(seen[0].json.as_ref().unwrap()["model"], id);
        s.mock.clear();
    }
}

#[tokio::test]
async fn embeddings_ids_reach_the_upstream_as_one_segment() {
    let s = setup().await;
    let id = "emb/x y:1";
    let sent = "/v1beta/models/emb%2Fx%20y%3A1:batchEmbedContents";
    let (status, reply) = raw_post(
        addr(&s),
        "/v1/embeddings",
        ALL,
        &json!({"model": format!("mgem/{id}"), "input": "hi"}),
    )
    .await;
    assert_eq!(status, 200, "{reply}");
    assert_eq!(upstream_paths(&s.mock), [(sent.to_string(), None)]);
    let forms = ["/v1beta/models/", "/v1beta/", "/v1/"]
        .into_iter()
        .flat_map(|root| [":embedContent", ":batchEmbedContents"].map(|m| (root, m)));
    for (root, method) in forms {
        let path = format!(
            "{root}{}{method}",
            encode(&format!("mgem/{id}"), true, false)
        );
        let body = json!({"content": {"parts": [{"text": "hi"}]},
            "requests": [{"content": {"parts": [{"text": "hi"}]}}]});
        let (status, reply) = raw_post(addr(&s), &path, ALL, &body).await;
        assert_eq!(status, 200, "{path}: {reply}");
        assert_eq!(
            upstream_paths(&s.mock),
            [(sent.to_string(), None)],
            "{path}"
        );
    }
}

/// Waits until `dir` holds `n` records.
async fn records(dir: &Path, n: usize) -> Vec<CallRecord> {
    for _ in 0..1000 {
        let got = read_records(dir).unwrap_or_default();
        if got.len() >= n {
            return got;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let got = read_records(dir).unwrap_or_default();
    panic!(
        "fewer than {n} records in {}: {:#?}",
        dir.display(),
        got.iter()
            .map(|r| (&r.reference, &r.error))
            .collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn keys_and_prices_follow_the_id_that_is_sent() {
    keys_and_prices_follow("/v1beta/models/").await;
}

#[tokio::test]
async fn keys_and_prices_follow_the_id_with_the_backend_first() {
    keys_and_prices_follow("/v1beta/").await;
}

/// Keys, aliases, prices and records of Gemini calls written `{root}{model}:…`.
async fn keys_and_prices_follow(root: &str) {
    let s = setup().await;
    let gemini = |written: &str| format!("{root}{written}:generateContent");
    // Refused before the key is asked: nothing upstream, the record says why.
    let (status, body) = raw_post(
        addr(&s),
        &gemini("mgem%2Fmock-small%2Bx%2F..%2Fmock-large"),
        KIM,
        &body_for(Dialect::Gemini, "", false),
    )
    .await;
    refusal_message(Dialect::Gemini, status, &body);
    // The model the key may not use, asked for plainly, is refused by the key.
    let (status, body) = raw_post(
        addr(&s),
        "/v1/chat/completions",
        KIM,
        &body_for(Dialect::Chat, "mgem/mock-large", false),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    // And asked for in the path.
    let (status, body) = raw_post(
        addr(&s),
        &gemini("mgem/mock-large"),
        KIM,
        &body_for(Dialect::Gemini, "", false),
    )
    .await;
    assert_eq!(
        (status, body["error"]["status"].as_str()),
        (403, Some("PERMISSION_DENIED")),
        "{body}"
    );
    assert!(s.mock.requests().is_empty());
    // An alias (`small` → `mock-small`) is allowed by what it resolves to, sent as that
    // id, priced and recorded under it.
    for (path, body) in [
        (gemini("mgem%2Fsmall"), body_for(Dialect::Gemini, "", false)),
        (
            gemini("mgem/mock-small"),
            body_for(Dialect::Gemini, "", false),
        ),
        (
            "/v1/chat/completions".to_string(),
            body_for(Dialect::Chat, "mgem/small", false),
        ),
    ] {
        let (status, reply) = raw_post(addr(&s), &path, KIM, &body).await;
        assert_eq!(status, 200, "{path}: {reply}");
        assert_eq!(
            upstream_paths(&s.mock),
            [(
                "/v1beta/models/mock-small:generateContent".to_string(),
                None
            )],
            "{path}"
        );
    }
    // The three refusals are counted and traced (not recorded in full, as every refusal
    // before an upstream call); the three calls are recorded.
    let recorded = records(s.dir.path(), 3).await;
    assert_eq!(recorded.len(), 3);
    let trace = std::fs::read_to_string(s.dir.path().join("refused.jsonl")).unwrap();
    let reasons: Vec<Value> = trace
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["reason"].clone())
        .collect();
    assert_eq!(
        reasons,
        [
            json!("gateway:BadRequest"),
            json!("gateway:Forbidden"),
            json!("gateway:Forbidden")
        ]
    );
    for r in &recorded {
        assert_eq!(
            (r.backend.as_str(), r.model.as_str()),
            ("mgem", "mock-small")
        );
        assert_eq!(r.reference, "mgem/mock-small");
        let usage = r.usage.as_ref().expect("usage");
        // mock-small's price: $1 in, $2 out per million tokens.
        let expected = (usage.input as f64 * 1.0 + usage.output as f64 * 2.0) / 1e6;
        let cost = r.cost_usd.expect("priced");
        assert!((cost - expected).abs() < 1e-12, "{cost} vs {expected}");
    }
}

#[tokio::test]
async fn a_models_table_entry_naming_a_hostile_id_stops_the_gateway_at_start() {
    let mock = MockServer::start().await;
    let config = GatewayConfig {
        models: [("sneaky".to_string(), "mock/a/../b".to_string())]
            .into_iter()
            .collect(),
        ..GatewayConfig::default()
    };
    let env = MapEnv::default();
    let mut opts = switchyard::LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec![format!("backends.mock.base_url={}", mock.base_url())];
    let loaded = switchyard::Config::load(&opts).unwrap();
    let e = switchyard_gateway::Gateway::new(&config, loaded.registry, std::sync::Arc::new(env))
        .err()
        .expect("refused");
    let text = format!("{e:?}");
    assert!(
        text.contains("models.sneaky") && text.contains("has a `..` segment"),
        "{text}"
    );
}
