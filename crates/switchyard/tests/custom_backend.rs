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

/// Answers with text and no usage; says whether its replies always carry usage.
struct NoUsage {
    reports_usage: bool,
    calls: std::sync::atomic::AtomicU32,
}

#[async_trait]
impl Backend for NoUsage {
    fn name(&self) -> &str {
        "no-usage"
    }

    fn reports_usage(&self) -> bool {
        self.reports_usage
    }

    async fn complete(&self, _call: &Call) -> switchyard::Result<Reply> {
        self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(Reply {
            content: vec![Part::text("an answer")],
            ..Reply::default()
        })
    }
}

fn no_usage(reports_usage: bool) -> Arc<NoUsage> {
    Arc::new(NoUsage {
        reports_usage,
        calls: Default::default(),
    })
}

#[tokio::test]
async fn a_backend_that_cannot_know_its_usage_answers_with_usage_unknown() {
    let backend = no_usage(false);
    let llm = Llm::new("no-usage/m", backend.clone(), "m");
    let reply = llm.complete(Request::user("hi")).await.unwrap();
    assert_eq!(reply.text(), "an answer");
    assert_eq!(reply.usage, None);
    let mut stream = llm.stream(Request::user("hi")).await.unwrap();
    while let Some(event) = futures::StreamExt::next(&mut stream).await {
        event.unwrap();
    }
    assert_eq!(stream.reply().usage, None);
    assert_eq!(backend.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_backend_that_reports_usage_is_still_malformed_without_it() {
    let llm =
        Llm::new("no-usage/m", no_usage(true), "m").with_retry(switchyard::RetryPolicy::never());
    let err = llm.complete(Request::user("hi")).await.unwrap_err();
    assert!(
        matches!(&err, switchyard::Error::ProviderReplyMalformed { reason, .. } if reason.contains("no token usage")),
        "{err}"
    );
}

#[test]
fn a_run_config_held_in_memory_is_read_as_a_file_is() {
    let env = switchyard::env::MapEnv::new([("MOCK_BASE_URL", "http://127.0.0.1:9")]);
    let run = switchyard::Run::builder("<in memory>")
        .config_text("llm:\n  planner: {model: mock/echo, max_tokens: 5}\n")
        .env(&env)
        .user_file(false)
        .open()
        .unwrap();
    assert_eq!(run.role_names(), ["planner"]);
    let report = switchyard::Run::builder("<in memory>")
        .config_text("{\"llm\": {\"planner\": {\"model\": \"mock/echo\", \"thinking_budget\": 5}}}")
        .env(&env)
        .user_file(false)
        .check();
    assert!(!report.ok);
    assert!(
        report.problems_text().contains("<in memory>")
            && report
                .problems_text()
                .contains("does not take `thinking_budget`"),
        "{}",
        report.problems_text()
    );
}
