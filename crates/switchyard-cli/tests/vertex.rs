//! Vertex AI with Application Default Credentials, end to end through the built binary:
//! a service-account file with a throwaway RSA key, whose `token_uri` is a fake OAuth
//! endpoint on 127.0.0.1, and the mock serving the Vertex path. Through the binary, so
//! that both the process environment and `--env-file` are the user's.

mod common;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use axum::{Json, Router};
use common::*;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use switchyard_mock::{MockConfig, MockServer};

const TOKEN: &str = "ya29.test-token";

/// One request the fake token endpoint received: its content type and form body.
#[derive(Debug, Clone)]
struct TokenRequest {
    content_type: String,
    form: String,
}

/// A fake OAuth token endpoint on its own thread, answering every POST with [`TOKEN`].
struct TokenServer {
    url: String,
    received: Arc<Mutex<Vec<TokenRequest>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TokenServer {
    fn start() -> TokenServer {
        let received = Arc::new(Mutex::new(Vec::new()));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        listener.set_nonblocking(true).unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = received.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let app = Router::new().route("/token", post(token)).with_state(state);
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(async {
                        let _ = stopped.await;
                    })
                    .await;
            });
        });
        TokenServer {
            url,
            received,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn received(&self) -> Vec<TokenRequest> {
        self.received.lock().unwrap().clone()
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn token(
    State(received): State<Arc<Mutex<Vec<TokenRequest>>>>,
    headers: HeaderMap,
    body: String,
) -> Json<Value> {
    received.lock().unwrap().push(TokenRequest {
        content_type: headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string(),
        form: body,
    });
    Json(json!({"access_token": TOKEN, "expires_in": 3600, "token_type": "Bearer"}))
}

/// A fresh 2048-bit RSA key in PKCS#8 PEM, made by `openssl` (required on the machine:
/// without it this test fails and says so, it does not skip).
fn rsa_key(dir: &Path) -> String {
    let path = dir.join("key.pem");
    let status = Command::new("openssl")
        .args([
            "genpkey",
            "-algorithm",
            "RSA",
            "-pkeyopt",
            "rsa_keygen_bits:2048",
            "-out",
        ])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| {
            panic!("this test needs the `openssl` command to make a throwaway RSA key: {e}")
        });
    assert!(
        status.status.success(),
        "openssl genpkey failed: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    std::fs::read_to_string(&path).unwrap()
}

/// A service-account key file whose `token_uri` is `token_uri`.
fn service_account(dir: &Path, token_uri: &str) -> PathBuf {
    let path = dir.join("service-account.json");
    let account = json!({
        "type": "service_account",
        "project_id": "test-proj",
        "private_key_id": "0123456789abcdef",
        "private_key": rsa_key(dir),
        "client_email": "switchyard-test@test-proj.iam.gserviceaccount.com",
        "client_id": "1234567890",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": token_uri,
    });
    std::fs::write(&path, serde_json::to_vec_pretty(&account).unwrap()).unwrap();
    path
}

/// The mock, with `gemini-2.5-flash` scripted (the name is not in the mock's grammar).
fn vertex_mock() -> MockServer {
    let config = MockConfig::from_yaml(
        "scenarios:\n  gemini-2.5-flash:\n    steps:\n      - text: \"Hello from Vertex\"\n",
    )
    .expect("the scenario parses");
    MockServer::start_in_thread(([127, 0, 0, 1], 0).into(), config).expect("a loopback port")
}

/// The override that sends the Vertex backend's Gemini calls to the mock.
fn vertex_override(mock: &MockServer) -> String {
    format!(
        "backends.vertex.gemini_url={}/v1/projects/{{GOOGLE_CLOUD_PROJECT}}/locations/{{GOOGLE_CLOUD_LOCATION}}/publishers/google",
        mock.url()
    )
}

/// `switchyard ask vertex/gemini-2.5-flash hello <extra…>` with the Vertex variables.
fn ask_vertex(home: &Path, credentials: &Path, mock: &MockServer, extra: &[&str]) -> Run {
    run(switchyard(home)
        .args(["ask", "vertex/gemini-2.5-flash", "hello"])
        .args(extra)
        .arg(vertex_override(mock))
        .env("GOOGLE_APPLICATION_CREDENTIALS", credentials)
        .env("GOOGLE_CLOUD_PROJECT", "test-proj")
        .env("GOOGLE_CLOUD_LOCATION", "us-central1"))
}

#[test]
fn vertex_calls_with_a_token_from_the_service_account() {
    let home = tempfile::tempdir().unwrap();
    let tokens = TokenServer::start();
    let credentials = service_account(home.path(), &tokens.url);
    let mock = vertex_mock();

    let r = ask_vertex(home.path(), &credentials, &mock, &["--no-stream"]);
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "Hello from Vertex\n");
    assert!(r.err.contains("[vertex/gemini-2.5-flash"), "{}", r.err);

    // The token endpoint got a JWT-bearer grant, signed with the key.
    let grants = tokens.received();
    assert_eq!(grants.len(), 1, "{grants:?}");
    assert_eq!(grants[0].content_type, "application/x-www-form-urlencoded");
    let form = &grants[0].form;
    assert!(
        form.contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"),
        "{form}"
    );
    let assertion = form
        .split('&')
        .find_map(|kv| kv.strip_prefix("assertion="))
        .expect("an assertion");
    assert_eq!(assertion.split('.').count(), 3, "a signed JWT: {assertion}");

    // The mock got the token, on the Vertex path for the project and location.
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(
        sent.path,
        "/v1/projects/test-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"
    );
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(sent.header("authorization"), Some(bearer.as_str()));
    assert_eq!(sent.header("x-goog-api-key"), None);
    let body = sent.json.clone().unwrap();
    assert_eq!(
        body["contents"],
        json!([{"role": "user", "parts": [{"text": "hello"}]}])
    );

    // The token is never printed.
    assert!(
        !r.out.contains(TOKEN) && !r.err.contains(TOKEN),
        "{}{}",
        r.out,
        r.err
    );
}

#[test]
fn vertex_streams_with_the_token_too() {
    let home = tempfile::tempdir().unwrap();
    let tokens = TokenServer::start();
    let credentials = service_account(home.path(), &tokens.url);
    let mock = vertex_mock();

    let r = ask_vertex(home.path(), &credentials, &mock, &["--stream"]);
    assert!(r.ok, "{}", r.err);
    assert_eq!(r.out, "Hello from Vertex\n");
    let sent = mock.requests().pop().unwrap();
    assert_eq!(
        sent.path,
        "/v1/projects/test-proj/locations/us-central1/publishers/google/models/gemini-2.5-flash:streamGenerateContent"
    );
    assert_eq!(sent.query.as_deref(), Some("alt=sse"));
    assert_eq!(
        sent.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );

    let r = ask_vertex(home.path(), &credentials, &mock, &["--json"]);
    assert!(r.ok, "{}", r.err);
    assert!(!r.out.contains(TOKEN) && !r.err.contains(TOKEN));
}

#[test]
fn an_unset_project_is_named() {
    let home = tempfile::tempdir().unwrap();
    let mock = vertex_mock();
    let r = run(switchyard(home.path())
        .args(["ask", "vertex/gemini-2.5-flash", "hello", "--no-stream"])
        .arg(vertex_override(&mock))
        .env("GOOGLE_CLOUD_LOCATION", "us-central1"));
    assert!(!r.ok);
    assert!(r.err.starts_with("error: "), "{}", r.err);
    assert!(r.err.contains("GOOGLE_CLOUD_PROJECT"), "{}", r.err);
    assert!(r.err.contains("vertex"), "{}", r.err);
    assert!(mock.requests().is_empty());
}

/// What `--env-file` sets is what the call uses: the key file `GOOGLE_APPLICATION_CREDENTIALS`
/// names (never in the process environment, where `gcp_auth` itself would look), the
/// project and the location; a location set nowhere is its default (`global`).
#[test]
fn credentials_project_and_location_from_an_env_file() {
    let home = tempfile::tempdir().unwrap();
    let tokens = TokenServer::start();
    let credentials = service_account(home.path(), &tokens.url);
    let mock = vertex_mock();
    let env_file = home.path().join(".env.switchyard");
    // The location in the env file, the URL as the test's other calls have it; then no
    // location, the URL in the built-in's form (its default written in).
    let default_url = format!(
        "backends.vertex.gemini_url={}/v1/projects/{{GOOGLE_CLOUD_PROJECT}}/locations/{{GOOGLE_CLOUD_LOCATION:-global}}/publishers/google",
        mock.url()
    );
    for (location, url, expected) in [
        (
            "GOOGLE_CLOUD_LOCATION=europe-west4\n",
            vertex_override(&mock),
            "europe-west4",
        ),
        ("", default_url, "global"),
    ] {
        std::fs::write(
            &env_file,
            format!(
                "GOOGLE_APPLICATION_CREDENTIALS={}\nGOOGLE_CLOUD_PROJECT=test-proj\n{location}",
                credentials.display()
            ),
        )
        .unwrap();
        let r = run(switchyard(home.path())
            .arg("--env-file")
            .arg(&env_file)
            .args(["ask", "vertex/gemini-2.5-flash", "hello", "--no-stream"])
            .arg(url));
        assert!(r.ok, "{expected}: {}", r.err);
        assert_eq!(r.out, "Hello from Vertex\n");
        let sent = mock.requests().pop().unwrap();
        assert_eq!(
            sent.path,
            format!("/v1/projects/test-proj/locations/{expected}/publishers/google/models/gemini-2.5-flash:generateContent")
        );
        assert_eq!(
            sent.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }
    assert!(
        !tokens.received().is_empty(),
        "the key file's token endpoint was asked"
    );
}

#[test]
fn unreadable_credentials_are_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    let mock = vertex_mock();
    let missing = home.path().join("no-such-key.json");
    let r = ask_vertex(home.path(), &missing, &mock, &["--no-stream"]);
    assert!(!r.ok);
    assert!(r.err.starts_with("error: "), "{}", r.err);
    assert!(
        r.err.contains("GOOGLE_APPLICATION_CREDENTIALS"),
        "{}",
        r.err
    );
    assert!(r.err.contains("no-such-key.json"), "{}", r.err);
    assert!(mock.requests().is_empty());
}

#[test]
fn a_refused_grant_is_an_auth_error() {
    // A token endpoint that does not exist on the fake server: 404 for the grant.
    let home = tempfile::tempdir().unwrap();
    let tokens = TokenServer::start();
    let wrong = tokens.url.replace("/token", "/nowhere");
    let credentials = service_account(home.path(), &wrong);
    let mock = vertex_mock();
    let r = ask_vertex(home.path(), &credentials, &mock, &["--no-stream"]);
    assert!(!r.ok);
    assert!(r.err.starts_with("error: "), "{}", r.err);
    assert!(r.err.contains("the key was refused"), "{}", r.err);
    assert!(r.err.contains("access token"), "{}", r.err);
    assert!(mock.requests().is_empty());
}

#[test]
fn an_unreachable_token_endpoint_is_a_transport_error() {
    // Not "the key was refused": nobody answered, which a retry may cure.
    let home = tempfile::tempdir().unwrap();
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/token", l.local_addr().unwrap())
    };
    let credentials = service_account(home.path(), &closed);
    let mock = vertex_mock();
    let r = ask_vertex(home.path(), &credentials, &mock, &["--no-stream"]);
    assert!(!r.ok);
    assert!(r.err.starts_with("error: could not reach"), "{}", r.err);
    assert!(r.err.contains("token endpoint"), "{}", r.err);
    assert!(!r.err.contains("refused:"), "{}", r.err);
    assert!(mock.requests().is_empty());
}
