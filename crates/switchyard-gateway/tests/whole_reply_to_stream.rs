//! An upstream that ignores `stream: true` and answers one whole JSON body (the mock's
//! `ignore-stream`, as LiteLLM's proxy does for a mocked model): every client dialect,
//! passed through or translated to every backend dialect, gets the stream it asked for,
//! at once, with one upstream request.

mod common;

use common::*;
use std::time::{Duration, Instant};
use switchyard_wire::Request;

#[tokio::test]
async fn a_whole_answer_to_a_streamed_request_reaches_every_client_as_its_stream() {
    let h = Harness::start().await;
    for client in DIALECTS {
        for backend in DIALECTS {
            let model = format!("up-{backend}/ignore-stream+echo");
            let prompt = format!("whole from {backend} to {client}");
            let before = h.mock.received();
            let started = Instant::now();
            // Before, pass-through read the body as a stream cut off before its first
            // event (a 502 after asking again); `ask` asserts the 200 and decodes it as
            // the client's own stream.
            let reply = h
                .ask(client, &model, &Request::user(prompt.clone()), true)
                .await;
            assert_eq!(reply.text(), prompt, "{client} → {backend}");
            // Named as the client named it, though the upstream answered whole.
            assert_eq!(
                reply.model.as_deref(),
                Some(model.as_str()),
                "{client} → {backend}"
            );
            assert!(reply.usage.is_some(), "{client} → {backend}: usage");
            assert_eq!(
                h.mock.received() - before,
                1,
                "{client} → {backend}: asked once"
            );
            assert!(started.elapsed() < Duration::from_secs(5));
        }
    }
}
