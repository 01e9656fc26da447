//! `Llm::embed` against the mock: both shapes, float and base64 as asked, recorded in the
//! call log and the index with usage and cost (unknown price → unknown), retried like any
//! call, refused by a backend that does not declare embeddings.

mod common;

use std::sync::Arc;
use switchyard::env::MapEnv;
use switchyard::record::{read_records, RecorderOptions};
use switchyard::wire::embed::{vector_to_base64, EmbedRequest, EmbedShape, EncodingFormat};
use switchyard::{ErrorKind, Llm, Recorder, RecordingSleeper, RunInfo};
use switchyard_mock::embeddings::{vector, DEFAULT_DIMENSIONS};
use switchyard_mock::MockServer;

fn handle(mock: &MockServer, overrides: &[&str], reference: &str) -> Llm {
    let env = MapEnv::default();
    let registry = common::registry(mock, overrides, &env);
    Llm::resolve(&registry, reference, &env).unwrap_or_else(|e| panic!("{reference}: {e}"))
}

#[tokio::test]
async fn embeds_through_openai_shape_recorded_and_priced() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    // mock-small is priced at $1 per million input tokens.
    let llm = handle(&mock, &[], "mock/mock-small")
        .with_role("indexer")
        .with_recorder(recorder.clone());
    let out = llm
        .embed(EmbedRequest::texts(["hello", "a longer text"]))
        .await
        .unwrap();
    assert_eq!(
        out.vectors,
        vec![
            vector("hello", DEFAULT_DIMENSIONS),
            vector("a longer text", DEFAULT_DIMENSIONS)
        ]
    );
    assert_eq!(out.input_tokens, Some(6));
    let sent = common::last(&mock);
    assert_eq!(sent.path, "/v1/embeddings");
    assert_eq!(
        common::body(&sent),
        serde_json::json!({"model": "mock-small", "input": ["hello", "a longer text"]})
    );

    // base64 asked: asked upstream, and the reply's bytes kept as they came.
    let b64 = llm
        .embed(
            EmbedRequest::texts(["hello"])
                .with_encoding(EncodingFormat::Base64)
                .with_dimensions(3),
        )
        .await
        .unwrap();
    assert_eq!(b64.vectors, vec![vector("hello", 3)]);
    let raw = String::from_utf8(b64.raw.to_vec()).unwrap();
    assert!(
        raw.contains(&vector_to_base64(&vector("hello", 3))),
        "{raw}"
    );
    recorder.close().unwrap();

    let records = read_records(tmp.path()).unwrap();
    assert_eq!(records.len(), 2);
    let first = &records[0];
    assert_eq!(first.role.as_deref(), Some("indexer"));
    assert_eq!(
        (first.backend.as_str(), first.model.as_str()),
        ("mock", "mock-small")
    );
    assert_eq!(first.dialect, None);
    let e = first.embedding.as_ref().expect("an embeddings record");
    assert_eq!(e.shape, EmbedShape::Openai);
    assert_eq!(e.request, EmbedRequest::texts(["hello", "a longer text"]));
    assert_eq!(first.usage.unwrap().input, 6);
    assert_eq!(first.cost_usd, Some(6.0 / 1_000_000.0));
    assert!(first.reply.is_none());
    assert_eq!(first.raw_bytes().unwrap(), out.raw);
    assert_eq!(
        first.usage_reported,
        Some(serde_json::json!({"prompt_tokens": 6, "total_tokens": 6}))
    );
    assert!(first.prompt_digest.len() == 32 && first.prompt_digest != records[1].prompt_digest);
    let second = &records[1];
    assert_eq!(second.parameters["encoding_format"], "base64");
    assert_eq!(second.parameters["dimensions"], 3);
    assert_eq!(
        second.body.as_ref().unwrap().get(),
        r#"{"model":"mock-small","input":["hello"],"dimensions":3,"encoding_format":"base64"}"#
    );

    // The index has them too, with their cost.
    let spend = switchyard::record::run_spend(tmp.path(), &Default::default()).unwrap();
    assert_eq!(spend.calls, 2);
    assert!(
        (spend.usd - (6.0 + 2.0) / 1_000_000.0).abs() < 1e-12,
        "{spend:?}"
    );
}

#[tokio::test]
async fn an_unpriced_model_costs_unknown_never_zero() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let llm = handle(&mock, &[], "mock/echo").with_recorder(recorder.clone());
    llm.embed(EmbedRequest::texts(["x"])).await.unwrap();
    recorder.close().unwrap();
    let records = read_records(tmp.path()).unwrap();
    assert_eq!(records[0].usage.unwrap().input, 1);
    assert_eq!(records[0].cost_usd, None);
}

#[tokio::test]
async fn a_reply_without_usage_is_billed_an_estimate_said_so() {
    let mock = MockServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(tmp.path(), &RunInfo::new(), RecorderOptions::default()).unwrap();
    let llm = handle(
        &mock,
        &["backends.mock.prices.no-usage={input: 1, output: 0}"],
        "mock/no-usage",
    )
    .with_recorder(recorder.clone());
    let out = llm
        .embed(EmbedRequest::texts(["twelve chars"]))
        .await
        .unwrap();
    // The caller is told what the provider said: nothing.
    assert_eq!(out.input_tokens, None);
    recorder.close().unwrap();
    let r = &read_records(tmp.path()).unwrap()[0];
    assert_eq!(r.usage.unwrap().input, 3);
    assert_eq!(r.cost_usd, Some(3.0 / 1_000_000.0));
    assert!(
        r.usage_estimated
            .as_deref()
            .unwrap()
            .contains("12 characters"),
        "{r:?}"
    );
}

#[tokio::test]
async fn a_gemini_family_backend_is_called_with_batch_embed_contents() {
    let mock = MockServer::start().await;
    let base = format!("backends.gm.base_url={}", mock.base_url());
    let llm = handle(
        &mock,
        &[
            "backends.gm.from=mock",
            &base,
            "backends.gm.apis=[gemini, embeddings]",
        ],
        "gm/gemini-embedding-001",
    );
    let out = llm
        .embed(
            EmbedRequest::texts(["x", "y"])
                .with_dimensions(4)
                .with_task_type("RETRIEVAL_DOCUMENT"),
        )
        .await
        .unwrap();
    assert_eq!(out.vectors, vec![vector("x", 4), vector("y", 4)]);
    assert_eq!(out.input_tokens, Some(2));
    let sent = common::last(&mock);
    assert_eq!(
        sent.path,
        "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    );
    assert_eq!(
        common::body(&sent)["requests"][1],
        serde_json::json!({"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "y"}]}, "taskType": "RETRIEVAL_DOCUMENT", "outputDimensionality": 4})
    );
    // Token ids cannot go to Gemini: said before anything is sent.
    let before = mock.received();
    let e = llm
        .embed(EmbedRequest::tokens(vec![vec![1, 2]]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.to_string().contains("text only"), "{e}");
    assert_eq!(mock.received(), before);
}

#[tokio::test]
async fn retried_like_any_call() {
    let mock = MockServer::start().await;
    let sleeper = Arc::new(RecordingSleeper::new());
    let llm = handle(&mock, &[], "mock/fault-429-then-ok").with_sleeper(sleeper.clone());
    let outcome = llm.embed_detailed(EmbedRequest::texts(["q"])).await;
    assert_eq!(
        outcome.result.unwrap().vectors,
        vec![vector("q", DEFAULT_DIMENSIONS)]
    );
    assert_eq!(outcome.attempts.len(), 2);
    assert_eq!(outcome.attempts[0].status, Some(429));
    // One wait, asked of the sleeper, never slept.
    assert_eq!(sleeper.waits().len(), 1);

    let e = handle(&mock, &[], "mock/quota")
        .embed(EmbedRequest::texts(["q"]))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ProviderQuotaExhausted);
}

#[tokio::test]
async fn a_backend_without_embeddings_says_so() {
    let mock = MockServer::start().await;
    let llm = handle(&mock, &["backends.mock.apis=[chat]"], "mock/echo");
    let e = llm.embed(EmbedRequest::texts(["q"])).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert_eq!(
        e.to_string(),
        "`mock/echo` cannot embed: backend `mock` does not list `embeddings` in its `apis`"
    );
    assert_eq!(mock.received(), 0);
}

#[tokio::test]
async fn a_recorded_run_of_embeddings_replays_without_calling_anyone() {
    let mock = MockServer::start().await;
    let original = tempfile::tempdir().unwrap();
    let info = RunInfo::new();
    let recorder = Recorder::create(original.path(), &info, RecorderOptions::default()).unwrap();
    let llm = handle(&mock, &[], "mock/mock-small")
        .with_role("indexer")
        .with_recorder(recorder.clone());
    let asks = [
        EmbedRequest::texts(["hello", "x"]),
        EmbedRequest::texts(["hello"]).with_encoding(EncodingFormat::Base64),
    ];
    let mut first = Vec::new();
    for r in &asks {
        first.push(llm.embed(r.clone()).await.unwrap());
    }
    let failed = handle(&mock, &[], "mock/quota")
        .with_role("indexer")
        .with_recorder(recorder.clone())
        .embed(EmbedRequest::texts(["q"]))
        .await
        .unwrap_err();
    recorder.close().unwrap();
    let called = mock.received();

    let replayed_dir = tempfile::tempdir().unwrap();
    let recorder =
        Recorder::create(replayed_dir.path(), &info, RecorderOptions::default()).unwrap();
    let replay = Llm::replaying(original.path(), Some("indexer"))
        .unwrap()
        .with_recorder(recorder.clone());
    for (r, want) in asks.iter().zip(&first) {
        let got = replay.embed(r.clone()).await.unwrap();
        assert_eq!(got.vectors, want.vectors);
        assert_eq!(got.raw, want.raw);
    }
    let again = replay.embed(EmbedRequest::texts(["q"])).await.unwrap_err();
    assert_eq!(again.kind(), failed.kind());
    let none = replay
        .embed(EmbedRequest::texts(["never asked"]))
        .await
        .unwrap_err();
    assert_eq!(none.kind(), ErrorKind::ReplayExhausted);
    assert!(
        none.to_string()
            .contains("no recorded embeddings call of that role has these inputs"),
        "{none}"
    );
    recorder.close().unwrap();
    assert_eq!(mock.received(), called, "the replay called no provider");

    let strip = |dir: &std::path::Path| {
        let mut v: Vec<_> = read_records(dir)
            .unwrap()
            .into_iter()
            .filter(|r| r.embedding.is_some())
            // The replay's own miss, asked above, was never recorded originally.
            .filter(|r| r.error.as_ref().is_none_or(|e| e.kind != "ReplayExhausted"))
            .map(|r| serde_json::to_value(r.without_timings()).unwrap())
            .collect();
        v.sort_by_key(|r| r["prompt_digest"].to_string() + &r["model"].to_string());
        v
    };
    assert_eq!(strip(original.path()), strip(replayed_dir.path()));
}

#[test]
fn apis_accept_embeddings_and_a_misspelling_is_named() {
    let env = MapEnv::default();
    let mut opts = switchyard::LoadOptions::new(&env);
    opts.user_file = false;
    opts.overrides = vec!["backends.mock.apis=[chat, embedings]".into()];
    let e = switchyard::Registry::load(&opts).unwrap_err().to_string();
    assert!(e.contains("embedings") && e.contains("embeddings"), "{e}");
    opts.overrides = vec![
        "backends.x.base_url=http://h/v1".into(),
        "backends.x.apis=[embeddings]".into(),
    ];
    let r = switchyard::Registry::load(&opts).unwrap();
    let x = r.backend("x").unwrap();
    assert_eq!(x.embed_shape(), Some(EmbedShape::Openai));
    assert!(x.apis.value.is_empty());
    assert_eq!(x.embed_url_template("m").unwrap(), "http://h/v1/embeddings");
    let gemini = r.backend("gemini").unwrap();
    assert_eq!(gemini.embed_shape(), Some(EmbedShape::Gemini));
    assert_eq!(
        gemini.embed_url_template("gemini-embedding-001").unwrap(),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-embedding-001:batchEmbedContents"
    );
    assert_eq!(r.backend("anthropic").unwrap().embed_shape(), None);
}

#[tokio::test]
async fn an_embeddings_only_backend_embeds_and_refuses_chat() {
    let mock = MockServer::start().await;
    let base = format!("backends.tei.base_url={}", mock.base_url());
    let llm = handle(
        &mock,
        &[
            &base,
            "backends.tei.key_required=false",
            "backends.tei.apis=[embeddings]",
        ],
        "tei/bge",
    );
    let out = llm.embed(EmbedRequest::texts(["x"])).await.unwrap();
    assert_eq!(out.vectors, vec![vector("x", DEFAULT_DIMENSIONS)]);
    let e = llm
        .complete(switchyard::Request::user("hi"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.to_string().contains("serves embeddings only"), "{e}");
}
