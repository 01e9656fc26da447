//! The official Python SDKs driving a gateway: a script under tests/python/ run with the
//! interpreter `.ci/run` prepares (a venv with requirements-test.txt, named by
//! SWITCHYARD_TEST_PYTHON). Without it the test fails under CI and is skipped loudly
//! elsewhere.

use std::process::Stdio;

/// Runs `tests/python/<script> <url>`; its stdout once it exited 0 and printed `all ok`,
/// or `None` when no interpreter is configured outside CI.
pub(crate) async fn run_sdk_script(test: &str, script: &str, url: &str) -> Option<String> {
    let Some(python) = std::env::var_os("SWITCHYARD_TEST_PYTHON") else {
        if std::env::var_os("CI").is_some() {
            panic!("SWITCHYARD_TEST_PYTHON is unset under CI: .ci/run must create the venv (requirements-test.txt) and set it");
        }
        eprintln!("\n\n*** SKIPPED {test}: set SWITCHYARD_TEST_PYTHON to a Python with the SDKs of requirements-test.txt (see .ci/run) ***\n\n");
        return None;
    };
    let path = format!("{}/tests/python/{script}", env!("CARGO_MANIFEST_DIR"));
    let mut command = tokio::process::Command::new(python);
    command.arg(path).arg(url).stdin(Stdio::null());
    // The SDKs must reach the gateway only, with the test's key.
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_GEMINI_BASE_URL",
        "GOOGLE_GENAI_USE_VERTEXAI",
    ] {
        command.env_remove(name);
    }
    let output = command
        .output()
        .await
        .expect("the Python interpreter named by SWITCHYARD_TEST_PYTHON runs");
    let out = String::from_utf8_lossy(&output.stdout).into_owned();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{script} failed:\n{out}\n{err}");
    assert!(out.contains("all ok"), "{out}\n{err}");
    Some(out)
}
