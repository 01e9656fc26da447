//! The official OpenAI, Anthropic and Google GenAI Python SDKs against a gateway on
//! 127.0.0.1:0: chat, Responses, Messages and Gemini, whole and streamed, with tool calls,
//! token counts and model lists, through pass-through and translation
//! (tests/python/sdk_clients.py). `.ci/run` installs the pinned SDKs in a
//! virtual environment and sets SWITCHYARD_TEST_PYTHON; without it the test fails under
//! CI and is skipped loudly elsewhere.

mod common;

use common::python::run_sdk_script;
use common::Harness;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_sdks_work_through_the_gateway() {
    let h = Harness::start().await;
    let test = "the_official_sdks_work_through_the_gateway";
    let Some(out) = run_sdk_script(test, "sdk_clients.py", &h.url).await else {
        return;
    };
    assert!(
        out.lines().filter(|l| l.starts_with("ok ")).count() >= 67,
        "{out}"
    );
}
