//! Redaction as a user meets it (docs/reliability.md, "Redaction"): `switchyard serve`'s
//! log (stderr, every event at trace level) and `switchyard ask`'s output hold no key the
//! process holds, when the provider echoes the backend's key (the mock's `echo-key`) and a
//! client's key of `keys:` is sent in a prompt and a model name.

mod common;

use common::serving::{exchange_with, serve, stop};
use common::{mock, run, switchyard};

const BACKEND_KEY: &str = "sk-cli-backend-0123456789abcdef";
const CLIENT_KEY: &str = "sk-cli-client-9876543210fedcba";
const MARKER: &str = "[redacted]";

fn chat(model: &str, text: &str, stream: bool) -> String {
    serde_json::json!({
        "model": model, "stream": stream,
        "messages": [{"role": "user", "content": text}]
    })
    .to_string()
}

#[test]
fn serve_s_log_and_replies_hold_no_key() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("gateway.yaml");
    std::fs::write(&config, "keys:\n  - name: alice\n    key_env: ALICE_KEY\n").unwrap();
    let data = home.path().join("data");
    let (child, addr) = serve(
        home.path(),
        &[
            ("MOCK_API_KEY", BACKEND_KEY),
            ("ALICE_KEY", CLIENT_KEY),
            ("RUST_LOG", "trace"),
        ],
        &[
            "--config".as_ref(),
            config.as_os_str(),
            "--data-dir".as_ref(),
            data.as_os_str(),
        ],
    );
    let auth = format!("Bearer {CLIENT_KEY}");
    let headers = [("authorization", auth.as_str())];
    let cases = [
        // The backend's key, echoed in an error and in a reply, whole and streamed.
        (chat("mock/echo-key", "a", false), 502),
        (chat("mock/echo-key-500", "b", true), 500),
        (chat("mock/echo-key-200", "c", false), 200),
        (chat("mock/echo-key-200", "d", true), 200),
        // The client's key in a prompt the model repeats, and in a model name (which the
        // access log and the metrics' labels show).
        (
            chat("mock/echo+chunk-1000", &format!("key {CLIENT_KEY}"), true),
            200,
        ),
        (chat(&format!("mock/say:{CLIENT_KEY}"), "e", false), 200),
    ];
    for (body, status) in &cases {
        let (got, reply) = exchange_with(&addr, "POST", "/v1/chat/completions", &headers, body);
        assert_eq!(got, *status, "{body}: {reply}");
        assert!(
            !reply.contains(BACKEND_KEY) && !reply.contains(CLIENT_KEY),
            "{reply}"
        );
        assert!(reply.contains(MARKER), "{body}: no echo came back: {reply}");
    }
    let (_, metrics) = exchange_with(&addr, "GET", "/metrics", &headers, "");
    assert!(!metrics.contains(CLIENT_KEY), "{metrics}");
    let (code, err) = stop(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("switchyard::access"),
        "the log was written: {err}"
    );
    assert!(
        !err.contains(BACKEND_KEY),
        "the backend's key in the log: {err}"
    );
    assert!(
        !err.contains(CLIENT_KEY),
        "a client's key in the log: {err}"
    );
    // The access line of the model named with the key, redacted by the log's writer.
    assert!(err.contains(&format!("mock/say:{MARKER}")), "{err}");
    for entry in std::fs::read_dir(data.join("llm_log")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(BACKEND_KEY) && !text.contains(CLIENT_KEY));
    }
}

#[test]
fn ask_shows_no_key_the_provider_echoes() {
    let mock = mock();
    let home = tempfile::tempdir().unwrap();
    let ask = |model: &str, stream: &str| {
        run(switchyard(home.path())
            .env("MOCK_API_KEY", BACKEND_KEY)
            .env("MOCK_BASE_URL", mock.base_url())
            .args(["ask", model, "hi", stream]))
    };
    for stream in ["--stream", "--no-stream"] {
        let refused = ask("mock/echo-key", stream);
        assert!(!refused.ok);
        assert!(!refused.err.contains(BACKEND_KEY), "{}", refused.err);
        assert!(
            refused
                .err
                .contains(&format!("Incorrect API key provided: {MARKER}")),
            "{}",
            refused.err
        );
        let answered = ask("mock/echo-key-200", stream);
        assert!(answered.ok, "{}", answered.err);
        assert!(
            answered
                .out
                .contains(&format!("The key you sent is {MARKER}.")),
            "{}",
            answered.out
        );
        assert!(!answered.out.contains(BACKEND_KEY) && !answered.err.contains(BACKEND_KEY));
    }
    assert!(mock
        .requests()
        .iter()
        .all(|r| r.headers.iter().any(|(_, v)| v.contains(BACKEND_KEY))));
}

#[test]
fn a_client_key_too_short_to_redact_is_warned_about_at_start() {
    let home = tempfile::tempdir().unwrap();
    let config = home.path().join("gateway.yaml");
    std::fs::write(&config, "keys:\n  - name: bob\n    key_env: BOB_KEY\n").unwrap();
    let (child, addr) = serve(
        home.path(),
        &[("BOB_KEY", "short")],
        &["--config".as_ref(), config.as_os_str()],
    );
    // Served (and its signals handled) before it is stopped.
    let (status, _) = exchange_with(&addr, "GET", "/healthz", &[], "");
    assert_eq!(status, 200);
    let (code, err) = stop(child);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("client key `bob` (in BOB_KEY) is shorter than 8 bytes")
            && err.contains("not redacted"),
        "{err}"
    );
}
