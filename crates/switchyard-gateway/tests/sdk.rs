//! The official OpenAI, Anthropic and Google GenAI Python SDKs against a gateway on
//! 127.0.0.1:0: chat, Responses, Messages and Gemini, whole and streamed, with tool calls,
//! token counts and model lists, through pass-through and translation
//! (tests/python/sdk_clients.py). `.ci/run` installs the pinned SDKs in a
//! virtual environment and sets SWITCHYARD_TEST_PYTHON; without it the test fails under
//! CI and is skipped loudly elsewhere.

mod common;

use common::Harness;
use std::process::Stdio;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_work_through_the_gateway() {
    let Some(python) = std::env::var_os("SWITCHYARD_TEST_PYTHON") else {
        if std::env::var_os("CI").is_some() {
            panic!("SWITCHYARD_TEST_PYTHON is unset under CI: .ci/run must create the venv (requirements-test.txt) and set it");
        }
        eprintln!("\n\n*** SKIPPED the_official_sdks_work_through_the_gateway: set SWITCHYARD_TEST_PYTHON to a Python with the SDKs of requirements-test.txt (see .ci/run) ***\n\n");
        return;
    };
    let h = Harness::start().await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/sdk_clients.py");
    let output = tokio::process::Command::new(python)
        .arg(script)
        .arg(&h.url)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("GOOGLE_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_GEMINI_BASE_URL")
        .env_remove("GOOGLE_GENAI_USE_VERTEXAI")
        .stdin(Stdio::null())
        .output()
        .await
        .expect("the Python interpreter named by SWITCHYARD_TEST_PYTHON runs");
    let out = String::from_utf8_lossy(&output.stdout);
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "SDK script failed:\n{out}\n{err}");
    assert!(out.contains("all ok"), "{out}\n{err}");
    assert!(
        out.lines().filter(|l| l.starts_with("ok ")).count() >= 67,
        "{out}"
    );
}
