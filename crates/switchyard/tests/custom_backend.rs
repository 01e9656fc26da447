//! A backend of a program's own: the call carries the calling handle's role and the place
//! where the backend notes the body it sent, so a backend that does its work on a task of
//! its own still gets its record (before, both travelled in task-locals, and a spawned task
//! lost them).

use async_trait::async_trait;
use std::sync::Arc;
use switchyard::record::{read_records, RecorderOptions};
use switchyard::wire::{Part, Reply, Usage};
use switchyard::{Backend, Call, Llm, Recorder, Request, RunInfo};

/// Answers on a spawned task, noting there what it "sent" and the role it was called for.
struct OnItsOwnTask;

#[async_trait]
impl Backend for OnItsOwnTask {
    fn name(&self) -> &str {
        "own"
    }

    async fn complete(&self, call: &Call) -> switchyard::Result<Reply> {
        let call = call.clone();
        let handle = tokio::spawn(async move {
            let role = call.role.as_deref().unwrap_or("(none)").to_string();
            call.notes.sent_body(bytes::Bytes::from(format!(
                "{{\"model\":\"{}\",\"role\":\"{role}\"}}",
                call.model
            )));
            Reply {
                content: vec![Part::text(format!("answered for {role}"))],
                usage: Some(Usage {
                    input: 1,
                    output: 2,
                    ..Usage::default()
                }),
                ..Reply::default()
            }
        });
        handle
            .await
            .map_err(|e| switchyard::Error::Unsupported(format!("the task failed: {e}")))
    }

    async fn stream(&self, call: &Call) -> switchyard::Result<switchyard::ReplyStream> {
        Ok(switchyard::ReplyStream::from_reply(
            self.complete(call).await?,
        ))
    }
}

#[tokio::test]
async fn a_backend_working_on_its_own_task_keeps_the_role_and_the_sent_body() {
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let llm = Llm::new("own/m", Arc::new(OnItsOwnTask), "m")
        .with_role("planner")
        .with_recorder(recorder.clone());
    let outcome = llm.complete_detailed(Request::user("hi")).await;
    let reply = outcome.result.unwrap();
    assert_eq!(reply.text(), "answered for planner");
    // The sent body comes back with the outcome, and is in the record.
    assert_eq!(
        outcome.sent_body.as_deref(),
        Some(&b"{\"model\":\"m\",\"role\":\"planner\"}"[..])
    );
    recorder.close().unwrap();
    let records = read_records(tmp.path()).unwrap();
    assert_eq!(records.len(), 1);
    let body = switchyard::record::body_json(&records[0]).expect("the body is recorded");
    assert_eq!(body["role"], "planner");
    assert_eq!(records[0].role.as_deref(), Some("planner"));
}
